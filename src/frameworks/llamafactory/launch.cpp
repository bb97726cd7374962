// LLaMA-Factory (HF Trainer + PEFT): its launch file (frameworks/launch.h; the writers' shared
// machinery: launch_common.h; its profile: profile.cpp).
// Option names: the comment above the writer.
#include "frameworks/launch_common.h"

namespace memfit::launch_files {

namespace {

std::string unquoted(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), '"'), text.end());
  text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
  return text;
}

}  // namespace

// LLaMA-Factory `llamafactory-cli train` YAML @ ff6d4d12 (hparams/*_args.py: model_name_or_path,
// stage, finetuning_type, lora_rank, lora_dropout, lora_target, use_dora, quantization_bit,
// cutoff_len, packing, pure_bf16, disable_gradient_checkpointing, flash_attn, enable_liger_kernel,
// use_galore / galore_rank / galore_update_interval / galore_target / galore_layerwise, use_apollo /
// apollo_rank / apollo_scale_type, use_adam_mini; TrainingArguments: per_device_train_batch_size,
// gradient_accumulation_steps, bf16, fp16, optim, deepspeed, fsdp).
LaunchFormat llamafactory_yaml(const LaunchInput& in) {
  LaunchFormat f = named("llamafactory_yaml", "llamafactory.yaml");
  if (model_parallel(in.layout) || deepspeed_ignores_offload(in)) return hf_yaml_unsupported(f, in, "LLaMA-Factory");
  const TrainingSetup& t = in.setup;
  const std::string dt = dtype_name(t.precision);
  Text y;
  y << accelerate_launch_comment(in, "-m llamafactory.launcher llamafactory.yaml");
  y << "model_name_or_path: " << in.model_id << "\nstage: sft\ndo_train: true\n";
  const bool lora = is_lora_like(t.method);
  y << "finetuning_type: " << (lora ? "lora" : t.method == Method::kFreeze ? "freeze" : "full") << "\n";
  if (t.method == Method::kFreeze) y << "freeze_trainable_layers: " << t.freeze_trainable_layers << "\n";
  // finetuning_args.py use_badam, badam_mode, badam_start_block, badam_switch_mode (ascending),
  // badam_switch_interval (50): the estimated block starts; every block has its turn.
  if (t.method == Method::kFull && t.badam_active_layer >= 0) {
    y << "use_badam: true\nbadam_mode: layer\nbadam_start_block: " << t.badam_active_layer << "\nbadam_switch_mode: ascending\nbadam_switch_interval: 50\n";
  }
  if (lora) {
    y << "lora_rank: " << t.lora_rank << "\n";
    y << "lora_dropout: " << t.lora_dropout << "\n";
    const std::string targets = unquoted(lora_modules(t));
    y << "lora_target: " << (targets == "all-linear" ? "all" : targets) << "\n";
    if (const std::string saved = saved_modules(t, *in.arch); !saved.empty()) y << "additional_target: " << unquoted(saved) << "\n";
    if (t.method == Method::kDora) y << "use_dora: true\n";
    if (t.lora_init == LoraInit::kPissa) y << "pissa_init: true\n";  // init_adapter: init_lora_weights "pissa"
    if (effective_base_quant(t) == BaseQuant::kNf4) y << "quantization_bit: 4\nquantization_method: bnb\n";
    if (effective_base_quant(t) == BaseQuant::kInt8) y << "quantization_bit: 8\nquantization_method: bnb\n";
  }
  y << "cutoff_len: " << t.seq_len << "\n";
  y << "packing: " << (t.packed ? "true" : "false") << "\n";
  y << "per_device_train_batch_size: " << t.micro_batch << "\n";
  y << "gradient_accumulation_steps: " << t.grad_accum << "\n";
  const bool pure16 = !amp_like(t) && dt == "bf16" && !lora;
  if (pure16) y << "pure_bf16: true\n";
  else y << "bf16: " << (dt == "bf16" ? "true" : "false") << "\nfp16: " << (dt == "fp16" ? "true" : "false") << "\n";
  y << "disable_gradient_checkpointing: " << (t.checkpointing == Checkpointing::kNone ? "true" : "false") << "\n";
  y << "flash_attn: " << (t.attention == AttentionKernel::kFlash || t.attention == AttentionKernel::kFlashTriton ? "fa2" : t.attention == AttentionKernel::kEager ? "disabled" : "sdpa") << "\n";
  if (t.liger_kernels || t.loss == LossKernel::kLigerFlce) y << "enable_liger_kernel: true\n";
  if (t.optimizer == Optimizer::kGaloreAdamW) {
    y << "use_galore: true\ngalore_target: all\ngalore_rank: " << t.projection_rank << "\ngalore_update_interval: " << t.projection_update_gap << "\n";
    if (t.optimizer_in_backward) y << "galore_layerwise: true\n";
  } else if (t.optimizer == Optimizer::kApolloAdamW || t.optimizer == Optimizer::kApolloMini) {
    y << "use_apollo: true\napollo_target: all\napollo_rank: " << t.projection_rank << "\napollo_update_interval: " << t.projection_update_gap << "\n";
    if (t.optimizer == Optimizer::kApolloMini) y << "apollo_scale_type: tensor\n";
    if (t.optimizer_in_backward) y << "apollo_layerwise: true\n";
  } else if (t.optimizer == Optimizer::kAdamMini) {
    y << "use_adam_mini: true\n";
  } else if (const std::string optim = hf_optim_name(t); !optim.empty()) {
    y << "optim: " << optim << "\n";
  }
  const HfSharding how = hf_sharding(in);
  if (how == HfSharding::kDeepspeed) inline_deepspeed(y, in);
  if (how == HfSharding::kFsdp) {
    y << "fsdp: \"" << (in.layout.sharding == Sharding::kZero2 ? "shard_grad_op" : "full_shard") << " auto_wrap"
      << (t.offload == Offload::kParamsOptimizer ? " offload" : "") << "\"\n";
  }
  f.text = y.str();
  f.notes.emplace_back("add dataset:, template: and output_dir:; or run FORCE_TORCHRUN=1 llamafactory-cli train llamafactory.yaml");
  if (lora && t.lora_init != LoraInit::kDefault && t.lora_init != LoraInit::kPissa) {
    f.notes.emplace_back("LLaMA-Factory's YAML sets LoRA's initialisation only through pissa_init: init_lora_weights=" +
                         std::string(name_of(t.lora_init, kLoraInitNames)) + " is not written (same memory as LoRA's default)");
  }
  if (t.loss == LossKernel::kCutCe || t.loss == LossKernel::kUnslothFusedCe || t.loss == LossKernel::kChunkedNll) {
    f.notes.emplace_back("LLaMA-Factory has no switch for the estimate's loss kernel: it computes the model's own loss (or Liger's with enable_liger_kernel)");
  }
  return f;
}

}  // namespace memfit::launch_files
