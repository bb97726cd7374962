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
/// Element bytes of a master-in-optimizer AMP run's gradient buffer (main_grad) as the framework
/// allocates it: the profile's main_grad_bytes, or the parameters' fp16 where the buffer takes
/// their dtype. Megatron-LM under --fp16 without --accumulate-allreduce-grads-in-fp32 (which only
/// --bf16 turns on): megatron/model/distributed.py _get_buffer_type @ 3d718bfc (2021-08), and
/// megatron/core/distributed/param_and_grad_buffer.py group_params_for_buffers (grad_dtype = param.dtype
/// unless grad_reduce_in_fp32) with arguments.py @ d98e8a64. Memory, the reduction and the step
/// time all read it from here.
inline std::int64_t main_grad_bytes_as_run(const TrainingSetup& t, const DistributedBehaviour& b) {
  return b.fp16_grads_reduce_in_fp16 && t.precision == Precision::kAmpFp16 ? 2 : t.main_grad_bytes;
}
/// Megatron's fp16 optimizers step on fp32 copies of a 16-bit main_grad: Float16OptimizerWithFloat16Params
/// main_param.grad = model_param.main_grad.float() for every parameter (megatron/optimizer/optimizer.py
/// _copy_model_grads_to_main_grads @ 3d718bfc; megatron/core/optimizer/optimizer.py @ d98e8a64), the
/// DistributedOptimizer for its shard (distrib_optimizer.py shard_main_param.grad = shard_model_grad.float()),
/// held until the next zero_grad (training.py train_step). An fp32 buffer's .float() is the buffer itself.
inline bool step_upcasts_main_grad(const TrainingSetup& t, const DistributedBehaviour& b) {
  return amp_like(t) && t.amp_weights == AmpWeights::kMasterInOptimizer && b.fp16_grads_reduce_in_fp16 &&
         main_grad_bytes_as_run(t, b) == 2;
}
/// The training setup as the distributed code runs it (FSDP mixed precision gathers 16-bit; the
/// gradient buffer's dtype, main_grad_bytes_as_run).
TrainingSetup resolve_distributed_setup(const ParallelLayout& l, const TrainingSetup& t);
/// Whether the layout runs `t` other than given (resolve_distributed_setup changes it).
inline bool setup_changes_as_run(const ParallelLayout& l, const TrainingSetup& t) {
  return gathers_16bit_params(l, t) || main_grad_bytes_as_run(t, l.behaviour) != t.main_grad_bytes;
}

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
  g.computed = gathered_16bit ? 2 : (master_in_optimizer ? main_grad_bytes_as_run(t, b) : wb);
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
