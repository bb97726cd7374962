// DeepSpeed: its profile (the defaults it runs with, its distributed behaviours and its dated
// history), what it runs (its capabilities) and, beside this file, its launch file writer
// (launch.cpp: deepspeed_json). Registered in frameworks/registry.h (kFrameworks).
#include "frameworks/registry.h"

namespace memfit {

FrameworkProfile deepspeed_profile() {
  FrameworkProfile p{Framework::kDeepspeed, "deepspeed", "DeepSpeed", {}, {}, {}, {}};
  TrainingSetup& t = p.defaults;
  t.precision = Precision::kAmpBf16;             // bf16 model + fp32 master partitions
  t.optimizer = Optimizer::kAdamW;
  t.optimizer_impl = OptimizerImpl::kFused;      // deepspeed.ops.adam.FusedAdam
  t.checkpointing = Checkpointing::kNone;        // the client's choice
  t.loss = LossKernel::kStandard;
  t.logged_counter = MemoryCounter::kMaxAllocated;  // see_memory_usage: Max_MA
  // bf16/fp16 optimizers: 16-bit model, fp32 master partitions in the optimizer; gradients in
  // the model dtype (an fp32 copy only transiently at step()).
  t.amp_weights = AmpWeights::kMasterInOptimizer;
  t.main_grad_bytes = 2;
  // zero/config.py (v0.16.2): reduce_bucket_size 5e8 elements, an ipg buffer in the model dtype;
  // stage3_prefetch_bucket_size 5e7 elements.
  p.dist.ddp_bucket_copy = false;
  p.dist.reduce_bucket_bytes = 500'000'000LL * 2;
  p.dist.prefetch_bytes = 50'000'000LL * 2;
  // zero/config.py (v0.18.9): stage3_max_live_parameters 1e9 elements.
  p.dist.zero3_max_live_elements = 1'000'000'000LL;
  p.dist.reduce_in_fp32 = false;
  // v0.19.8 stage3.py / stage_1_and_2.py (measured: TG-14..18, TD-16): ZeRO-3's gradient partition
  // and reduce bucket from engine init; fp32 gradient copies at the step, ZeRO-3 by sub-groups of
  // sub_group_size (zero/config.py default 1e9 elements).
  p.dist.zero3_grad_partition_at_init = true;
  p.dist.fp32_grads_at_step = true;
  p.dist.fp32_grad_sub_group_elements = 1'000'000'000LL;
  // v0.18.9 utils/groups.py _clone_world_group (or Ulysses' sequence-data-parallel group) reduces
  // the gradients; the default group serves zero.Init's parameter gathers (layout.h).
  p.dist.shard_group_apart_from_world = true;
  p.sources = {"deepspeedai/DeepSpeed @ edaa7221: deepspeed/runtime/engine.py (get_data_types, optimizer)",
               "deepspeedai/DeepSpeed @ b344c04: deepspeed/runtime/zero/config.py, stage_1_and_2.py (ipg buffers)",
               "deepspeedai/DeepSpeed @ edaa7221: deepspeed/runtime/utils.py (see_memory_usage)"};
  return p;
}

FrameworkCapabilities deepspeed_capabilities() {
  FrameworkCapabilities c;
  off(c.optimizer_offload_with, {Sharding::kNone});
  // AutoTP (tensor_parallel.autotp_size) without sequence parallelism, rejected with stage 3
  // (runtime/engine.py); pipeline parallelism needs the model rebuilt as a deepspeed.pipe
  // PipelineModule and MoE its deepspeed.moe layers: code, not a config, and not offered.
  c.sequence_parallel = c.tp_with_zero3 = false;
  c.pp = c.vpp = c.cp = c.ep = false;
  c.selective_checkpointing = false;
  // The engine trains what the client script builds; memfit's DeepSpeed runs are full training
  // (adapters: hf_trainer with parallel.backend deepspeed).
  only_methods(c, {Method::kFull});
  c.launch_formats = {"deepspeed_json", "python_script"};
  c.sources = {"deepspeedai/DeepSpeed v0.16.4: docs/_pages/config-json.md (zero_optimization, offload, tensor_parallel.autotp_size)",
               "deepspeedai/DeepSpeed v0.16.4: deepspeed/runtime/engine.py (AutoTP rejected with ZeRO stage 3)",
               "deepspeedai/DeepSpeed: deepspeed/runtime/pipe/module.py (PipelineModule), deepspeed/moe/layer.py (MoE)"};
  return c;
}

std::vector<DatedCapability> deepspeed_dated_capabilities() {
  return {{202502, "tensor parallelism (AutoTP training, tensor_parallel.autotp_size)",
          "deepspeedai/DeepSpeed v0.16.4 (2025-02): AutoTP training", [](FrameworkCapabilities& c) { c.tp = false; }}};
}

}  // namespace memfit
