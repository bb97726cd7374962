// Adapter shapes per adapted linear (see adapters.h).
#include "block/adapters.h"

#include <algorithm>

#include "common/units.h"
#include "training/parameters.h"

namespace memfit {

namespace {

AdaptedLinear adapter_of(const TrainingSetup& t, const TensorSpec& s, std::int64_t in, std::int64_t out) {
  AdaptedLinear a;
  a.out = out;
  a.in = in;
  a.params = adapter_params(t, s.role, a.in, a.out);
  a.lora_factor_elems = t.lora_rank * (a.in + a.out);
  return a;
}

}  // namespace

std::optional<AdaptedLinear> adapted_linear(const TrainingSetup& t, const TensorSpec& s) {
  if (s.shape.size() != 2 || !lora_targets_role(t, s)) return std::nullopt;
  return adapter_of(t, s, s.shape[1], s.shape[0]);
}

AdapterWidths adapter_widths_on_rank(std::int64_t in, std::int64_t out, AdapterSplit split, std::int64_t tp) {
  tp = std::max<std::int64_t>(1, tp);
  switch (split) {
    case AdapterSplit::kColumn: return {in, ceil_div(out, tp)};
    case AdapterSplit::kRow: return {ceil_div(in, tp), out};
    case AdapterSplit::kWhole: break;
  }
  return {in, out};
}

AdapterSplit adapter_split(const TensorSpec& s) {
  switch (s.tp_split) {
    case TpSplit::kColumn:
    case TpSplit::kVocab: return AdapterSplit::kColumn;  // the output layer: column-parallel over the vocabulary
    case TpSplit::kRow: return AdapterSplit::kRow;
    case TpSplit::kExpert: return s.role == "down" ? AdapterSplit::kRow : AdapterSplit::kColumn;
    case TpSplit::kReplicated: break;
  }
  return AdapterSplit::kWhole;
}

std::optional<AdaptedLinear> adapted_linear_on_rank(const TrainingSetup& t, const TensorSpec& s, std::int64_t tp,
                                                    std::int64_t expert_tp) {
  if (s.shape.size() != 2 || !lora_targets_role(t, s)) return std::nullopt;
  if (!is_lora_like(t.method)) return adapter_of(t, s, s.shape[1], s.shape[0]);
  const std::int64_t split_by = s.kind == ModuleKind::kExpert && expert_tp > 0 ? expert_tp : tp;
  const AdapterWidths w = adapter_widths_on_rank(s.shape[1], s.shape[0], adapter_split(s), split_by);
  return adapter_of(t, s, w.in, w.out);
}

}  // namespace memfit
