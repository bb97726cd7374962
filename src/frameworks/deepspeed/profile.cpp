// DeepSpeed: its profile (the defaults it runs with, its distributed behaviours and its dated
// history), what it runs (its capabilities) and, beside this file, its launch file writer
// (launch.cpp: deepspeed_json). Registered in frameworks/registry.h (kFrameworks).
#include "frameworks/registry.h"

namespace memfit {

FrameworkProfile deepspeed_profile() {
  FrameworkProfile p{.id = Framework::kDeepspeed, .key = "deepspeed", .name = "DeepSpeed"};
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
  // ZeRO-2 with offload_optimizer cpu: gradients reduced to the host, no device partition
  // (v0.14.2 stage_1_and_2.py copy_grads_in_partition, temp_grad_buffer_for_gpu_offload; the same
  // at v0.12.6 and v0.19.8). v0.19.6 on: each gradient's norm in fp64 (set_norm_for_param_grad_in_gpu,
  // zero/utils.py get_norm_dtype), its inf/nan check reduced without a copy (runtime/utils.py has_inf_or_nan).
  p.dist.zero_offload_grads_on_host = true;
  p.dist.zero_offload_grad_check_bytes_per_element = 8;
  p.history = {
      {202608,
       "ZeRO-2's offloaded gradients checked elementwise for inf/nan (an fp32 copy, three boolean masks and an fp32 "
       "cast: 11 bytes per element)",
       "deepspeedai/DeepSpeed v0.14.2 (2024-04) and v0.19.5 (2026-08): runtime/zero/stage_1_and_2.py _has_inf_or_nan, "
       "update_overflow_tracker_for_param_grad; v0.12.6 (2023-12) summed an fp32 copy (4 bytes, under the fp64 norm's 8); "
       "v0.19.6: has_inf_or_nan",
       nullptr, [](DistributedBehaviour& b) { b.zero_offload_grad_check_bytes_per_element = 11; }, 202401}};
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
  deepspeed_cpu_optimizers_only(c.optimizer_offload_runs);
  deepspeed_cpu_optimizers_only(c.params_offload_runs);
  // AutoTP (tensor_parallel.autotp_size) without sequence parallelism, rejected with stage 3
  // (runtime/engine.py); pipeline parallelism needs the model rebuilt as a deepspeed.pipe
  // PipelineModule and MoE its deepspeed.moe layers: code, not a config, and not offered.
  c.sequence_parallel = c.tp_with_zero3 = false;
  c.pp = c.vpp = c.cp = c.ep = false;
  c.selective_checkpointing = false;
  // The engine trains what the client script builds; memfit's DeepSpeed runs are full training
  // (adapters: hf_trainer with parallel.backend deepspeed).
  only_methods(c, {Method::kFull});
  // ds_config's optimizer.type as the engine builds it (runtime/engine.py _configure_basic_optimizer
  // @ v0.16.4): AdamW, Lion (FusedLion / DeepSpeedCPULion from v0.11.0).
  only_optimizers(c, {Optimizer::kAdamW, Optimizer::kLion});
  c.launch_formats = {"deepspeed_json", "python_script"};
  c.sources = {"deepspeedai/DeepSpeed v0.16.4: docs/_pages/config-json.md (zero_optimization, offload, tensor_parallel.autotp_size)",
               "deepspeedai/DeepSpeed v0.16.4: deepspeed/runtime/engine.py (AutoTP rejected with ZeRO stage 3)",
               "deepspeedai/DeepSpeed: deepspeed/runtime/pipe/module.py (PipelineModule), deepspeed/moe/layer.py (MoE)"};
  return c;
}

std::vector<DatedCapability> deepspeed_dated_capabilities() {
  return {{202502, "tensor parallelism (AutoTP training, tensor_parallel.autotp_size)",
          "deepspeedai/DeepSpeed v0.16.4 (2025-02): AutoTP training", [](FrameworkCapabilities& c) { c.tp = false; }},
          {202310, "Lion (FusedLion; on the CPU under ZeRO-Offload, DeepSpeedCPULion)",
           "deepspeedai/DeepSpeed v0.11.0 (2023-10): deepspeed/ops/lion/", [](FrameworkCapabilities& c) {
             c.optimizers[static_cast<int>(Optimizer::kLion)] = false;
             c.optimizer_offload_runs[static_cast<int>(Optimizer::kLion)] = false;
             c.params_offload_runs[static_cast<int>(Optimizer::kLion)] = false;
           }}};
}

}  // namespace memfit
