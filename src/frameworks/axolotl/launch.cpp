// Axolotl (HF Trainer + PEFT): its launch file (frameworks/launch.h; the writers' shared machinery:
// launch_common.h; its profile: profile.cpp).
// Option names: the comment above the writer.
#include "frameworks/launch_common.h"

namespace memfit::launch_files {

// Axolotl `axolotl train` YAML @ 067b021c (src/axolotl/utils/schemas/config.py, training.py,
// peft.py, fsdp.py: base_model, adapter, load_in_4bit / load_in_8bit, lora_r, lora_dropout,
// lora_target_linear, lora_target_modules, peft_use_dora, sequence_len, sample_packing,
// micro_batch_size, gradient_accumulation_steps, optimizer, bf16, fp16, gradient_checkpointing,
// activation_offloading, attn_implementation, torch_compile, plugins + liger_* / cut_cross_entropy,
// deepspeed, fsdp_version, fsdp_config.{reshard_after_forward, offload_params, ...}).
LaunchFormat axolotl_yaml(const LaunchInput& in) {
  LaunchFormat f = named("axolotl_yaml", "axolotl.yaml");
  if (model_parallel(in.layout) || deepspeed_ignores_offload(in)) return hf_yaml_unsupported(f, in, "Axolotl");
  const TrainingSetup& t = in.setup;
  const std::string dt = dtype_name(t.precision);
  Text y;
  y << accelerate_launch_comment(in, "-m axolotl.cli.train axolotl.yaml");
  y << "base_model: " << in.model_id << "\n";
  if (is_lora_like(t.method)) {
    y << "adapter: " << (t.method == Method::kQlora ? "qlora" : "lora") << "\n";
    y << "load_in_4bit: " << (effective_base_quant(t) == BaseQuant::kNf4 ? "true" : "false") << "\n";
    y << "load_in_8bit: " << (effective_base_quant(t) == BaseQuant::kInt8 ? "true" : "false") << "\n";
    y << "lora_r: " << t.lora_rank << "\n";
    y << "lora_alpha: " << 2 * t.lora_rank << "\n";
    y << "lora_dropout: " << t.lora_dropout << "\n";
    if (t.lora_targets == std::vector<std::string>{"all-linear"}) y << "lora_target_linear: true\n";
    else y << "lora_target_modules: [" << lora_modules(t) << "]\n";
    if (const std::string saved = saved_modules(t, *in.arch); !saved.empty()) y << "lora_modules_to_save: [" << saved << "]\n";
    if (t.method == Method::kDora) y << "peft_use_dora: true\n";
  }
  y << "sequence_len: " << t.seq_len << "\n";
  y << "sample_packing: " << (t.packed ? "true" : "false") << "\n";
  y << "micro_batch_size: " << t.micro_batch << "\n";
  y << "gradient_accumulation_steps: " << t.grad_accum << "\n";
  if (t.optimizer == Optimizer::kAdamMini) y << "optimizer: adamw_torch  # Adam-mini: no Axolotl optimizer name\n";
  else if (const std::string optim = hf_optim_name(t); !optim.empty()) y << "optimizer: " << optim << "\n";
  hf_low_rank_optim(y, t);
  y << "bf16: " << (dt == "bf16" ? "true" : "false") << "\n";
  y << "fp16: " << (dt == "fp16" ? "true" : "false") << "\n";
  y << "gradient_checkpointing: " << (t.checkpointing == Checkpointing::kNone ? "false" : "true") << "\n";
  if (t.offload == Offload::kActivations) y << "activation_offloading: true\n";
  y << "attn_implementation: " << (t.attention == AttentionKernel::kFlash || t.attention == AttentionKernel::kFlashTriton ? "flash_attention_2" : t.attention == AttentionKernel::kEager ? "eager" : "sdpa") << "\n";
  if (t.compile) y << "torch_compile: true\n";
  if (t.liger_kernels || t.loss == LossKernel::kLigerFlce) {
    y << "plugins: [axolotl.integrations.liger.LigerPlugin]\n";
    y << "liger_fused_linear_cross_entropy: " << (t.loss == LossKernel::kLigerFlce ? "true" : "false") << "\n";
    if (t.liger_kernels) y << "liger_rms_norm: true\nliger_glu_activation: true\nliger_rope: true\n";
  } else if (t.loss == LossKernel::kCutCe) {
    y << "plugins: [axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin]\ncut_cross_entropy: true\n";
  }
  const HfSharding how = hf_sharding(in);
  if (how == HfSharding::kDeepspeed) inline_deepspeed(y, in);
  if (how == HfSharding::kFsdp) {
    y << "fsdp_version: 2\n";
    y << "fsdp_config:\n";
    y << "  reshard_after_forward: " << (in.layout.sharding == Sharding::kZero2 ? "false" : "true") << "\n";
    y << "  offload_params: " << (t.offload == Offload::kParamsOptimizer ? "true" : "false") << "\n";
    y << "  auto_wrap_policy: TRANSFORMER_BASED_WRAP\n  state_dict_type: SHARDED_STATE_DICT\n";
    y << "  activation_checkpointing: " << (t.checkpointing == Checkpointing::kNone ? "false" : "true") << "\n";
  }
  f.text = y.str();
  f.notes.emplace_back("add datasets: and output_dir:; multi-node: --machine_rank and --main_process_ip per node");
  if (amp_like(t)) f.notes.emplace_back("Axolotl loads the weights in the bf16 / fp16 it trains in: fp32 weights under autocast are not an Axolotl setting");
  if (is_lora_like(t.method) && t.lora_init != LoraInit::kDefault) {
    f.notes.emplace_back(std::string("LoRA's init_lora_weights=") + name_of(t.lora_init, kLoraInitNames) +
                         " is not written to this YAML (same memory as LoRA's default)");
  }
  if (how == HfSharding::kNone && t.embeddings_fp32) f.notes.emplace_back("Axolotl upcasts the embeddings and lm_head to fp32 outside FSDP (the estimate counts them)");
  return f;
}

}  // namespace memfit::launch_files
