// The setup as the layout runs it (see as_run.h).
#include "parallel/as_run.h"

namespace memfit {

namespace {
bool master_in_optimizer(const TrainingSetup& t) { return amp_like(t) && t.amp_weights == AmpWeights::kMasterInOptimizer; }
// Bytes of a 16-bit-or-stored weight as the model holds it (AMP masters in the optimizer: 16-bit).
std::int64_t model_weight_bytes(const TrainingSetup& t) { return master_in_optimizer(t) ? 2 : stored_weight_bytes(t); }
}  // namespace

bool gathers_16bit_params(const ParallelLayout& l, const TrainingSetup& t) {
  return l.sharding == Sharding::kZero3 && amp_like(t) && t.amp_weights == AmpWeights::kAutocast &&
         l.behaviour.sharded_params_16bit;
}

TrainingSetup resolve_distributed_setup(const ParallelLayout& l, const TrainingSetup& t) {
  TrainingSetup out = t;
  if (gathers_16bit_params(l, t)) out.amp_weights = AmpWeights::kGathered16bit;
  return out;
}

GradientBytes base_gradient_bytes(const TrainingSetup& t, const DistributedBehaviour& b, bool gathers_16bit) {
  const bool gathered_16bit = gathers_16bit || (amp_like(t) && t.amp_weights == AmpWeights::kGathered16bit);
  const std::int64_t wb = model_weight_bytes(t);
  GradientBytes g;
  g.computed = gathered_16bit ? 2 : (master_in_optimizer(t) ? t.main_grad_bytes : wb);
  const bool reduce_fp32 = b.reduce_in_fp32 && (gathered_16bit || wb == 2);
  g.reduced = reduce_fp32 && g.computed == 2 ? 4 : g.computed;
  return g;
}

std::int64_t adapter_bytes(const TrainingSetup& t) { return t.adapters_fp32 ? 4 : model_weight_bytes(t); }

}  // namespace memfit
