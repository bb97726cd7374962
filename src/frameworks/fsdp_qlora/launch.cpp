// Answer.AI fsdp_qlora: its launch file (frameworks/launch.h; the writers' shared machinery:
// launch_common.h; its profile: profile.cpp).
// Option names:
//   fsdp_qlora: train.py @ 05ed9f2 (--train_type, --world_size, --batch_size,
//     --gradient_accumulation_steps, --context_length, --precision, --sharding_strategy,
//     --use_gradient_checkpointing, --use_cpu_offload, --lora_rank, --lora_target_modules).
#include "frameworks/launch_common.h"

namespace memfit::launch_files {

// Answer.AI fsdp_qlora train.py @ 05ed9f2 (fsdp_main's arguments): one node, mp.spawn over
// world_size GPUs.
LaunchFormat fsdp_qlora(const LaunchInput& in) {
  LaunchFormat f = named("fsdp_qlora_command", "fsdp_qlora.sh");
  const ParallelLayout& l = in.layout;
  const TrainingSetup& t = in.setup;
  std::string why;
  if (model_parallel(l)) why = "fsdp_qlora runs FSDP data parallelism only (no tp, pp, cp or ep)";
  else if (nodes(in) > 1) why = "fsdp_qlora's train.py spawns its ranks on one node";
  else if (l.sharding == Sharding::kZero1) why = "fsdp_qlora's sharding strategies are full_shard, shard_grad_op and ddp (no ZeRO-1)";
  else if (t.offload == Offload::kOptimizer) why = "fsdp_qlora offloads parameters with their optimizer states (use_cpu_offload), not the optimizer alone";
  else if (t.method != Method::kFull && t.method != Method::kLora && t.method != Method::kQlora) why = "fsdp_qlora trains full, lora or qlora";
  if (!why.empty()) {
    f.supported = false;
    f.notes.push_back(why);
    return f;
  }
  const char* strategy = l.sharding == Sharding::kZero3 ? "full_shard" : l.sharding == Sharding::kZero2 ? "shard_grad_op" : "ddp";
  const char* precision = t.precision == Precision::kFp32      ? "fp32"
                          : t.precision == Precision::kAmpBf16 ? "bf16_autocast"
                          : t.precision == Precision::kAmpFp16 ? "fp16_autocast"
                                                               : "bf16";
  Text c;
  c << "python train.py --model_name " << in.model_id << " --train_type " << (t.method == Method::kFull ? "full" : t.method == Method::kLora ? "lora" : "qlora")
    << " --world_size " << l.gpus() << " --batch_size " << t.micro_batch << " --gradient_accumulation_steps " << t.grad_accum
    << " --context_length " << t.seq_len << " --precision " << precision << " --sharding_strategy " << strategy
    << " --use_gradient_checkpointing " << (t.checkpointing != Checkpointing::kNone ? "true" : "false")
    << " --use_cpu_offload " << (t.offload == Offload::kParamsOptimizer ? "true" : "false")
    << " --optimizer " << (t.optimizer == Optimizer::kSgd ? "sgd" : "adamw");  // get_optimizer: adamw, adam, sgd, adadelta
  if (is_lora_like(t.method)) {
    const bool all = t.lora_targets.size() == 1 && t.lora_targets[0] == "all-linear";
    c << " --lora_rank " << t.lora_rank << " --lora_target_modules " << (all ? "all" : "default");
    if (!all) f.notes.emplace_back("--lora_target_modules default adapts k, q, v, up and down projections; other target sets need code");
    if (t.lora_saves_embedding || t.lora_saves_head) f.notes.emplace_back("train.py has no option for PEFT's modules_to_save: it needs code");
  }
  c << " --dataset <yours>\n";
  f.text = c.str();
  if (t.checkpointing == Checkpointing::kSelective) f.notes.emplace_back("use_gradient_checkpointing checkpoints whole blocks (full)");
  return f;
}

}  // namespace memfit::launch_files
