// The training setup as a layout runs it: decided once here and read by the memory replay and the
// step time alike (FSDP mixed precision gathering 16-bit parameters, the gradient dtypes).
#pragma once
#include <cstdint>

#include "parallel/layout.h"
#include "training/training_setup.h"

namespace memfit {

/// ZeRO-3 under autocast AMP with a framework that shards 16-bit parameters (FSDP2
/// MixedPrecisionPolicy(param_dtype=bf16)): the compute copies are gathered in 16 bits.
inline bool gathers_16bit_params(const ParallelLayout& l, const TrainingSetup& t) {
  return l.sharding == Sharding::kZero3 && amp_like(t) && t.amp_weights == AmpWeights::kAutocast &&
         l.behaviour.sharded_params_16bit;
}
/// The training setup as the distributed code runs it (FSDP mixed precision gathers 16-bit).
TrainingSetup resolve_distributed_setup(const ParallelLayout& l, const TrainingSetup& t);

/// Element bytes of a trainable base weight's gradient: as backward computes it, and as a
/// ZeRO-2/3 reduce-scatter moves it (FSDP reduce_dtype fp32 upcasts 16-bit gradients before the
/// collective; Megatron's main_grad buffer holds them in main_grad_bytes). `t` as resolved.
struct GradientBytes {
  std::int64_t computed = 0;
  std::int64_t reduced = 0;
};
/// `gathers_16bit`: the layout gathers 16-bit parameters for `t` unresolved (gathers_16bit_params).
inline GradientBytes base_gradient_bytes(const TrainingSetup& t, const DistributedBehaviour& b, bool gathers_16bit = false) {
  const bool master_in_optimizer = amp_like(t) && t.amp_weights == AmpWeights::kMasterInOptimizer;
  const bool gathered_16bit = gathers_16bit || (amp_like(t) && t.amp_weights == AmpWeights::kGathered16bit);
  // A 16-bit-or-stored weight as the model holds it (AMP masters in the optimizer: 16-bit).
  const std::int64_t wb = master_in_optimizer ? 2 : stored_weight_bytes(t);
  GradientBytes g;
  g.computed = gathered_16bit ? 2 : (master_in_optimizer ? t.main_grad_bytes : wb);
  const bool reduce_fp32 = b.reduce_in_fp32 && (gathered_16bit || wb == 2);
  g.reduced = reduce_fp32 && g.computed == 2 ? 4 : g.computed;
  return g;
}

/// Element bytes of a LoRA/DoRA adapter and of its gradient: fp32 where the framework keeps
/// adapters in fp32 (PEFT autocast_adapter_dtype, since 0.12), else the parameter dtype.
inline std::int64_t adapter_bytes(const TrainingSetup& t) {
  if (t.adapters_fp32) return 4;
  return amp_like(t) && t.amp_weights == AmpWeights::kMasterInOptimizer ? 2 : stored_weight_bytes(t);
}

}  // namespace memfit
