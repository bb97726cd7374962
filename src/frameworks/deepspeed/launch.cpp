// DeepSpeed: its launch file (frameworks/launch.h; the writers' shared machinery: launch_common.h;
// its profile: profile.cpp).
// Option names:
//   DeepSpeed: docs/_pages/config-json.md (deepspeed.ai/docs/config-json) @ v0.16.4: train_batch_size,
//     train_micro_batch_size_per_gpu, gradient_accumulation_steps, bf16/fp16.enabled,
//     zero_optimization.{stage, offload_optimizer.device (stages 1-3), offload_param.device (stage
//     3 only), overlap_comm, contiguous_gradients}, optimizer.{type, params}, gradient_clipping, tensor_parallel.autotp_size
//     (runtime/engine.py @ v0.16.4 rejects it with ZeRO stage 3; runtime/config.py checks
//     train_batch_size against every rank, before the AutoTP groups exist).
#include "frameworks/launch_common.h"
#include "hf_config/json_input.h"

namespace memfit::launch_files {

LaunchFormat deepspeed(const LaunchInput& in) {
  LaunchFormat f = named("deepspeed_json", "ds_config.json");
  const ParallelLayout& l = in.layout;
  if (l.pp > 1 || l.cp > 1 || l.ep > 1) {
    f.supported = false;
    f.notes.emplace_back("DeepSpeed's JSON config does not set pipeline, context or expert parallel degrees (they are built in code); use Megatron-LM or torchtitan");
    return f;
  }
  const bool offload_opt = in.setup.offload == Offload::kOptimizer || in.setup.offload == Offload::kParamsOptimizer;
  if (deepspeed_ignores_offload(in)) {
    f.supported = false;
    f.notes.emplace_back(kDeepSpeedOffloadStages);
    return f;
  }
  if (l.tp > 1 && l.sharding == Sharding::kZero3) {
    f.supported = false;
    f.notes.emplace_back("DeepSpeed 0.16 rejects AutoTP (tensor_parallel.autotp_size) with ZeRO stage 3");
    return f;
  }
  Json j;
  // With AutoTP DeepSpeed checks train_batch_size against all ranks before the tensor-parallel
  // groups exist: left out, it follows from the micro-batch and the accumulation.
  if (l.tp == 1) j["train_batch_size"] = global_batch(in);
  j["train_micro_batch_size_per_gpu"] = in.setup.micro_batch;
  j["gradient_accumulation_steps"] = in.setup.grad_accum;
  const std::string dt = dtype_name(in.setup.precision);
  j["bf16"] = {{"enabled", dt == "bf16"}};
  j["fp16"] = {{"enabled", dt == "fp16"}};
  Json zero{{"stage", deepspeed_stage(in)}, {"overlap_comm", true}, {"contiguous_gradients", true}};
  if (offload_opt) zero["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
  if (in.setup.offload == Offload::kParamsOptimizer) zero["offload_param"] = {{"device", "cpu"}, {"pin_memory", true}};
  j["zero_optimization"] = zero;
  if (l.tp > 1) j["tensor_parallel"] = {{"autotp_size", l.tp}};  // DeepSpeed AutoTP (>= 0.16.4)
  // The engine builds its optimizer from this (runtime/engine.py _configure_basic_optimizer): fused
  // AdamW / Lion on the GPU, DeepSpeedCPUAdam / DeepSpeedCPULion under offload_optimizer.
  j["optimizer"] = {{"type", in.setup.optimizer == Optimizer::kLion ? "Lion" : "AdamW"},
                    {"params", {{"lr", in.setup.optimizer == Optimizer::kLion ? 1e-5 : 2e-5}, {"weight_decay", 0.0}}}};
  j["gradient_clipping"] = 1.0;
  f.text = j.dump(2) + "\n";
  if (l.tp > 1) {
    f.notes.emplace_back("AutoTP: train_batch_size is left out (DeepSpeed would count every rank); in DeepSpeed 0.16 shard the model with deepspeed.tp_model_init before deepspeed.initialize");
  }
  if (in.setup.checkpointing != Checkpointing::kNone) {
    f.notes.emplace_back("activation checkpointing is switched on in the model (model.gradient_checkpointing_enable(), train.py), not in this file");
  }
  return f;
}

}  // namespace memfit::launch_files
