// What every rank of a layout does with one micro-batch, decided once from the setup, the layout
// and the framework behaviour it carries: its tokens, how its activations split, whether ZeRO-3
// gathers again for backward, the gradient dtype on the wire, what checkpointing recomputes,
// what it shards and offloads. The memory replay (memory/timeline.cpp), the step time
// (perf/perf_model.cpp) and the search's group keys (search/group_keys.h) read it here; the
// per-stage part (layers, micro-batches in flight) is RankKind (parallel/layout.h).
#pragma once
#include <algorithm>
#include <cstdint>

#include "block/activations.h"
#include "common/units.h"
#include "parallel/as_run.h"
#include "parallel/layout.h"
#include "training/training_setup.h"

namespace memfit {

/// What the checkpointing policy reruns in backward (layer_keep, block/activations.h, says what
/// it keeps): whole blocks (full; selective every period-th layer, torchtitan), the attention
/// core (selective, Korthikanti et al. 2022 §4.2), or torchtitan's op-level policy (every other
/// matmul and every memory-bound op of the block's forward).
struct RecomputePolicy {
  Checkpointing mode = Checkpointing::kNone;
  double whole_block_share = 0;  // share of the blocks whose forward reruns
  bool attention_core = false;
  bool op_level = false;
};
inline RecomputePolicy recompute_policy(const TrainingSetup& t) {
  RecomputePolicy r;
  r.mode = t.checkpointing;
  if (t.checkpointing == Checkpointing::kFull) {
    r.whole_block_share = 1;
  } else if (t.checkpointing == Checkpointing::kSelective) {
    if (t.selective_layer_period > 0) r.whole_block_share = 1.0 / static_cast<double>(t.selective_layer_period);
    else if (t.selective_every_other_mm) r.op_level = true;
    else r.attention_core = true;
  }
  return r;
}

struct RankPlan {
  std::int64_t cp = 1;  // context parallel: the rank sees positions / cp of each sequence
  ContextParallelKind cp_kind = ContextParallelKind::kRing;
  std::int64_t positions = 0;               // the rank's positions of one sequence: model_positions / cp
  std::int64_t tokens_per_micro_batch = 0;  // micro_batch x positions (checked: units.h)
  ActivationSplit split;                    // activation_split: heads and MLP width by tp, full width by SP
  /// Tensor parallel with row-split linears (Colossal-AI 1D): the matmuls split, activations stay whole.
  bool row_split_linears = false;
  /// ZeRO-3 frees gathered parameters after forward and gathers them again for backward (FSDP
  /// reshard_after_forward; frameworks that keep them under pipeline parallelism do so there).
  bool reshard_after_forward = false;
  bool gathers_16bit_params = false;  // gathers_16bit_params (as_run.h)
  /// Element bytes of the gradients the data-parallel collective moves: adapters in their own
  /// dtype; base weights as a ZeRO-2/3 reduce-scatter moves them, else as backward computes them.
  std::int64_t reduced_gradient_bytes = 0;
  RecomputePolicy recompute;
  Sharding sharding = Sharding::kNone;
  Offload offload = Offload::kNone;
  /// The tensor-parallel degree that splits activations (1 under row-split linears).
  std::int64_t activation_tp() const { return split.tp; }
  /// Full-width activations are split by sequence parallelism only.
  std::int64_t sequence_split() const { return split.sequence_parallel ? split.tp : 1; }
  bool offloads_activations() const { return offload == Offload::kActivations; }
  /// The same plan for micro-batches of `micro_batch` sequences (only the tokens change).
  void set_micro_batch(std::int64_t micro_batch) {
    tokens_per_micro_batch = checked_mul(micro_batch, positions, "tokens per micro-batch");
  }
};

/// The plan of every rank of `l` running `t` (as given or as resolved for `l`: the same plan).
/// Inline: the search asks it of every structure for the few fields its keys read, and plans in
/// full only the structures it times.
inline RankPlan plan_rank(const ParallelLayout& l, const TrainingSetup& t) {
  RankPlan p;
  p.cp = std::max<std::int64_t>(1, l.cp);
  p.cp_kind = l.cp_kind;
  // Context parallelism gives each rank positions / cp tokens of every sequence; attention still
  // spans the whole sequence (each query attends to all keys).
  p.positions = model_positions(t) / p.cp;
  p.set_micro_batch(t.micro_batch);
  p.split = activation_split(l);
  p.row_split_linears = l.behaviour.tp_row_linears && l.tp > 1;
  p.reshard_after_forward = l.behaviour.reshard_after_forward && (l.pp == 1 || l.behaviour.reshard_after_forward_with_pp);
  const bool gathers_now = gathers_16bit_params(l, t);
  p.gathers_16bit_params = gathers_now || (amp_like(t) && t.amp_weights == AmpWeights::kGathered16bit);
  if (base_frozen(t.method)) {
    p.reduced_gradient_bytes = adapter_bytes(t);
  } else {
    const GradientBytes g = base_gradient_bytes(t, l.behaviour, gathers_now);
    p.reduced_gradient_bytes = l.sharding == Sharding::kZero2 || l.sharding == Sharding::kZero3 ? g.reduced : g.computed;
  }
  p.recompute = recompute_policy(t);
  p.sharding = l.sharding;
  p.offload = t.offload;
  return p;
}

/// One GPU: the whole model, no split.
inline RankPlan plan_single_gpu(const TrainingSetup& t) {
  RankPlan p = plan_rank(ParallelLayout{}, t);
  p.split = {};
  return p;
}

}  // namespace memfit
