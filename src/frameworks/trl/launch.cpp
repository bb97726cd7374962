// TRL's SFTTrainer (+ PEFT): its launch file (frameworks/launch.h; the writers' shared machinery:
// launch_common.h; its profile: profile.cpp).
// Option names:
//   TRL: `trl sft --config` YAML, fields of SFTConfig / TrainingArguments and ModelConfig @ f2cd5771
//     (trl/trainer/sft_config.py, base_config.py, model_config.py: model_name_or_path, dtype,
//     attn_implementation, use_peft, lora_r, lora_dropout, lora_target_modules, use_dora, load_in_4bit,
//     bnb_4bit_quant_type, use_bnb_nested_quant; per_device_train_batch_size,
//     gradient_accumulation_steps, max_length, packing, gradient_checkpointing, bf16, fp16, optim,
//     loss_type, use_liger_kernel, activation_offloading); several GPUs through `accelerate launch`.
#include "frameworks/launch_common.h"

namespace memfit::launch_files {

LaunchFormat trl_sft(const LaunchInput& in) {
  LaunchFormat f = named("trl_sft_yaml", "sft_config.yaml");
  if (model_parallel(in.layout)) {
    f.supported = false;
    f.notes.emplace_back("TRL's SFTTrainer runs data parallelism through accelerate (DDP, FSDP, DeepSpeed ZeRO); for tp/pp/cp/ep use Megatron-LM or torchtitan");
    return f;
  }
  const TrainingSetup& t = in.setup;
  const std::string dt = dtype_name(t.precision);
  const bool lora = is_lora_like(t.method);
  Text y;
  y << "model_name_or_path: " << in.model_id << "\n";
  // AMP: the float32 model under bf16/fp16 autocast; pure 16-bit: the model loaded in that dtype.
  y << "dtype: " << (dt == "fp32" || amp_like(t) ? "float32" : dt == "fp16" ? "float16" : "bfloat16") << "\n";
  y << "attn_implementation: " << (t.attention == AttentionKernel::kFlash || t.attention == AttentionKernel::kFlashTriton ? "flash_attention_2" : t.attention == AttentionKernel::kEager ? "eager" : "sdpa") << "\n";
  y << "bf16: " << (dt == "bf16" ? "true" : "false") << "\n";
  y << "fp16: " << (dt == "fp16" ? "true" : "false") << "\n";
  y << "per_device_train_batch_size: " << t.micro_batch << "\n";
  y << "gradient_accumulation_steps: " << t.grad_accum << "\n";
  y << "max_length: " << t.seq_len << "\n";
  y << "packing: " << (t.packed ? "true" : "false") << "\n";
  y << "gradient_checkpointing: " << (t.checkpointing == Checkpointing::kNone ? "false" : "true") << "\n";
  if (t.offload == Offload::kActivations) y << "activation_offloading: true\n";
  if (const std::string optim = hf_optim_name(t); !optim.empty()) y << "optim: " << optim << "\n";
  hf_low_rank_optim(y, t);
  y << "use_liger_kernel: " << (t.liger_kernels ? "true" : "false") << "\n";
  if (t.loss == LossKernel::kChunkedNll || t.loss == LossKernel::kStandard || t.loss == LossKernel::kTrlFusedHead) {
    y << "loss_type: " << (t.loss == LossKernel::kChunkedNll ? "chunked_nll" : "nll") << "\n";
  }
  if (lora) {
    y << "use_peft: true\n";
    y << "lora_r: " << t.lora_rank << "\n";
    y << "lora_dropout: " << t.lora_dropout << "\n";
    y << "lora_target_modules: [" << lora_modules(t) << "]\n";
    if (const std::string saved = saved_modules(t, *in.arch); !saved.empty()) y << "lora_modules_to_save: [" << saved << "]\n";
    if (t.method == Method::kDora) y << "use_dora: true\n";
    if (effective_base_quant(t) == BaseQuant::kNf4) y << "load_in_4bit: true\nbnb_4bit_quant_type: nf4\nuse_bnb_nested_quant: true\n";
    if (effective_base_quant(t) == BaseQuant::kInt8) y << "load_in_8bit: true\n";
  }
  f.text = y.str();
  f.notes.emplace_back("run: trl sft --config sft_config.yaml --dataset_name <dataset>" +
                       std::string(in.layout.gpus() > 1 ? " under accelerate launch --config_file accelerate_config.yaml (the accelerate format)" : ""));
  if (!(t.loss == LossKernel::kChunkedNll || t.loss == LossKernel::kStandard || t.loss == LossKernel::kTrlFusedHead || (t.loss == LossKernel::kLigerFlce && t.liger_kernels))) {
    f.notes.emplace_back(std::string("SFTConfig has no loss_type for the ") + (t.loss == LossKernel::kCutCe ? "Cut Cross-Entropy" : "chosen") +
                         " loss kernel; it is patched into the model by the training script");
  }
  if (base_frozen(t.method) && !lora) {
    f.notes.emplace_back(std::string("trl sft's command line builds LoRA adapters only (ModelConfig use_peft, lora_*): pass peft_config=") +
                         peft_config_class(t.method) + "(...) to SFTTrainer in Python, as the python_script format writes it");
  }
  if (lora && t.lora_init != LoraInit::kDefault) {
    f.notes.emplace_back("trl sft's command line has no init_lora_weights: pass peft_config=LoraConfig(..." + lora_init_argument(t) +
                         ") to SFTTrainer in Python, as the python_script format writes it");
  }
  if (lora && t.loss == LossKernel::kChunkedNll) {
    f.notes.emplace_back("chunked_nll refuses a LoRA adapter on lm_head: keep lm_head out of lora_target_modules");
  }
  return f;
}

}  // namespace memfit::launch_files
