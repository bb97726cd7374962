// Adapter shapes per adapted linear (see adapters.h).
#include "block/adapters.h"

#include "training/parameters.h"

namespace memfit {

std::optional<AdaptedLinear> adapted_linear(const TrainingSetup& t, const TensorSpec& s) {
  if (s.shape.size() != 2 || !lora_targets_role(t, s)) return std::nullopt;
  AdaptedLinear a;
  a.out = s.shape[0];
  a.in = s.shape[1];
  a.params = adapter_params(t, s.role, a.in, a.out);
  a.lora_factor_elems = t.lora_rank * (a.in + a.out);
  return a;
}

}  // namespace memfit
