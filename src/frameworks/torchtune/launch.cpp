// torchtune: its launch file (frameworks/launch.h; the writers' shared machinery: launch_common.h;
// its profile: profile.cpp).
// Option names:
//   torchtune: recipes/full_finetune_distributed.py and lora_finetune_distributed.py config keys
//     @ v0.6.1 (batch_size, gradient_accumulation_steps, enable_activation_checkpointing,
//     enable_activation_offloading, dtype, fsdp_cpu_offload, compile, optimizer_in_bwd (full recipes
//     only), tensor_parallel_dim (full recipe, with a tensor_parallel_plan), model.lora_attn_modules,
//     apply_lora_to_mlp, apply_lora_to_output, lora_rank, quantize_base, use_dora (models/llama3_1
//     _model_builders.py), optimizer._component_ (CPUOffloadOptimizer, memory_optimizations.rst)) and
//     `tune run` with torchrun's --nnodes / --nproc_per_node. The distributed recipes always shard with FSDP.
#include "frameworks/launch_common.h"

namespace memfit::launch_files {

namespace {

bool targets_any(const std::vector<std::string>& roles, std::initializer_list<const char*> wanted) {
  for (const std::string& r : roles) {
    if (r == "all-linear") return true;
    for (const char* w : wanted) {
      if (r == w) return true;
    }
  }
  return false;
}

}  // namespace

LaunchFormat torchtune(const LaunchInput& in) {
  LaunchFormat f = named("torchtune_command", "torchtune.sh");
  const ParallelLayout& l = in.layout;
  if (l.pp > 1 || l.cp > 1 || l.ep > 1 || l.sharding == Sharding::kZero1 || l.sharding == Sharding::kZero2) {
    f.supported = false;
    f.notes.emplace_back("torchtune's recipes run one GPU or FSDP (with optional tensor parallelism); pp, cp, ep and ZeRO-1/2 are not options");
    return f;
  }
  const bool lora = is_lora_like(in.setup.method);
  const bool distributed = l.gpus() > 1;
  if (in.setup.method == Method::kFreeze) {
    f.supported = false;
    f.notes.emplace_back("torchtune's recipes train all weights or LoRA/DoRA adapters; freezing all but the last blocks is not an option");
    return f;
  }
  if (distributed && l.sharding == Sharding::kNone && !one_data_rank(l)) {
    f.supported = false;
    f.notes.emplace_back("torchtune's distributed recipes always shard with FSDP; a replicated (DDP) layout is not an option");
    return f;
  }
  if (lora && l.tp > 1) {
    f.supported = false;
    f.notes.emplace_back("torchtune's LoRA recipe (v0.6.1) has no tensor parallelism");
    return f;
  }
  if (distributed && in.setup.offload == Offload::kOptimizer) {
    f.supported = false;
    f.notes.emplace_back("torchtune offloads the optimizer alone only on one GPU (torchao CPUOffloadOptimizer); distributed recipes offload with fsdp_cpu_offload");
    return f;
  }
  std::string recipe = std::string(lora ? "lora" : "full") + "_finetune_" + (distributed ? "distributed" : "single_device");
  Text c;
  c << "tune run";
  if (distributed) c << " --nnodes " << nodes(in) << " --nproc_per_node " << std::min(in.gpus_per_node, l.gpus());
  c << " " << recipe << " --config <model config>";
  c << " batch_size=" << in.setup.micro_batch;
  c << " gradient_accumulation_steps=" << in.setup.grad_accum;
  c << " tokenizer.max_seq_len=" << in.setup.seq_len;
  c << " enable_activation_checkpointing=" << (in.setup.checkpointing != Checkpointing::kNone ? "True" : "False");
  c << " dtype=" << (dtype_name(in.setup.precision) == "fp32" ? "fp32" : "bf16");
  c << " compile=" << (in.setup.compile ? "True" : "False");
  if (distributed && in.setup.offload == Offload::kParamsOptimizer) c << " fsdp_cpu_offload=True";
  // memory_optimizations.rst: torchao's CPUOffloadOptimizer wraps AdamW, its states and step on the
  // CPU; otherwise the optimizer class as the recipes' configs name it (capabilities: these only).
  const Optimizer o = in.setup.optimizer;
  const bool bnb = o == Optimizer::kAdamW8bit || o == Optimizer::kPagedAdamW8bit || o == Optimizer::kPagedAdamW32bit;
  if (in.setup.offload == Offload::kOptimizer) {
    c << " optimizer._component_=torchao.prototype.low_bit_optim.CPUOffloadOptimizer";
  } else {
    c << " optimizer._component_="
      << (o == Optimizer::kAdamW8bit         ? "bitsandbytes.optim.AdamW8bit"
          : o == Optimizer::kPagedAdamW8bit  ? "bitsandbytes.optim.PagedAdamW8bit"
          : o == Optimizer::kPagedAdamW32bit ? "bitsandbytes.optim.PagedAdamW32bit"
          : o == Optimizer::kSgd || o == Optimizer::kSgdMomentum ? "torch.optim.SGD"
                                                                 : "torch.optim.AdamW");
    if (o == Optimizer::kSgdMomentum) c << " optimizer.momentum=0.9";
  }
  if (distributed && l.tp > 1) c << " tensor_parallel_dim=" << l.tp;
  if (in.setup.offload == Offload::kActivations) c << " enable_activation_offloading=True";
  if (in.setup.optimizer_in_backward && !lora) c << " optimizer_in_bwd=True clip_grad_norm=null";
  if (lora) {
    // The llama3 LoRA builders (_model_builders.py): adapted attention projections, MLP and
    // output flags, rank; quantize_base (QLoRA's NF4 base) and use_dora.
    std::vector<std::string> attn;
    for (const char* r : {"q", "k", "v", "o"}) {
      if (targets_any(in.setup.lora_targets, {r})) attn.push_back(std::string(r) + "_proj");
    }
    for (std::string& a : attn) {
      if (a == "o_proj") a = "output_proj";
    }
    c << " model.lora_attn_modules=\"" << python_list(attn) << "\"";
    c << " model.apply_lora_to_mlp=" << (targets_any(in.setup.lora_targets, {"gate", "up", "down"}) ? "True" : "False");
    c << " model.apply_lora_to_output=" << (targets_any(in.setup.lora_targets, {"head"}) ? "True" : "False");
    c << " model.lora_rank=" << in.setup.lora_rank;
    if (in.setup.method == Method::kQlora) c << " model.quantize_base=True";
    if (in.setup.method == Method::kDora) c << " model.use_dora=True";
  }
  c << "\n";
  f.text = c.str();
  if (distributed && l.tp > 1) f.notes.emplace_back("tensor_parallel_dim needs a tensor_parallel_plan in the config (torchtune ships one for the Llama 3 70B configs)");
  if (in.setup.optimizer_in_backward && lora) f.notes.emplace_back("optimizer_in_bwd is a full-finetune option; the LoRA recipes step the optimizer after backward");
  if (lora && (in.setup.lora_saves_embedding || in.setup.lora_saves_head)) {
    f.notes.emplace_back("torchtune's LoRA recipes train no full copy of the embedding or output layer (PEFT's modules_to_save): not expressed");
  }
  if (bnb && in.setup.offload != Offload::kOptimizer) {
    f.notes.emplace_back("bitsandbytes' optimizers take no `fused` argument: drop it (~optimizer.fused) where the config sets one");
  }
  if (in.setup.checkpointing == Checkpointing::kSelective) f.notes.emplace_back("enable_activation_checkpointing checkpoints whole blocks (full); selective is ac_mode/ac_option in the full distributed recipe");
  if (dtype_name(in.setup.precision) == "fp16") f.notes.emplace_back("torchtune trains in bf16 or fp32, not fp16");
  if (dtype_name(in.setup.precision) == "bf16") f.notes.emplace_back("torchtune's bf16 keeps no fp32 master weights (pure bf16)");
  if (nodes(in) > 1) f.notes.emplace_back("multi-node: add torchrun's --rdzv_endpoint and --node_rank per node");
  return f;
}

}  // namespace memfit::launch_files
