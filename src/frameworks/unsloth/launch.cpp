// Unsloth (FastLanguageModel + TRL): its launch file (frameworks/launch.h; the writers' shared
// machinery: launch_common.h; its profile: profile.cpp).
// Option names:
//   Unsloth: FastLanguageModel.from_pretrained / get_peft_model arguments @ 015bdef0
//     (unsloth/models/loader.py, llama.py: max_seq_length, load_in_4bit, dtype, r, target_modules,
//     lora_dropout, use_gradient_checkpointing) and TRL's SFTConfig.
#include "frameworks/launch_common.h"

namespace memfit::launch_files {

LaunchFormat unsloth_script(const LaunchInput& in) {
  LaunchFormat f = named("unsloth_python", "train_unsloth.py");
  const TrainingSetup& t = in.setup;
  if (in.layout.gpus() > 1) {
    f.supported = false;
    f.notes.emplace_back("this script trains on one GPU; Unsloth on several GPUs goes through accelerate (DDP) with the same script");
    return f;
  }
  const bool lora = is_lora_like(t.method);
  const std::string dt = dtype_name(t.precision);
  Text py;
  py << "from unsloth import FastLanguageModel\n";
  py << "import torch\n";
  py << "from trl import SFTConfig, SFTTrainer\n\n";
  py << "model, tokenizer = FastLanguageModel.from_pretrained(\n";
  py << "    model_name=\"" << in.model_id << "\",\n";
  py << "    max_seq_length=" << t.seq_len << ",\n";
  py << "    dtype=" << (dt == "fp16" ? "torch.float16" : dt == "fp32" ? "torch.float32" : "None") << ",\n";
  py << "    load_in_4bit=" << (effective_base_quant(t) == BaseQuant::kNf4 ? "True" : "False") << ",\n";
  py << "    load_in_8bit=" << (effective_base_quant(t) == BaseQuant::kInt8 ? "True" : "False") << ",\n";
  py << "    full_finetuning=" << (t.method == Method::kFull ? "True" : "False") << ",\n";
  const std::string gc = t.checkpointing == Checkpointing::kNone ? "False"
                         : t.offload == Offload::kActivations  ? "\"unsloth\""
                                                               : "True";
  if (!lora) py << "    use_gradient_checkpointing=" << gc << ",\n";  // full fine-tuning: set at load
  py << ")\n";
  if (lora) {
    py << "model = FastLanguageModel.get_peft_model(\n";
    py << "    model,\n";
    py << "    r=" << t.lora_rank << ",\n";
    py << "    target_modules=[" << lora_modules(t) << "],\n";
    if (const std::string saved = saved_modules(t, *in.arch); !saved.empty()) py << "    modules_to_save=[" << saved << "],\n";
    py << "    lora_dropout=" << t.lora_dropout << ",\n";
    py << "    use_gradient_checkpointing=" << gc << ",\n";
    py << ")\n";
  }
  py << "args = SFTConfig(\n";
  py << "    per_device_train_batch_size=" << t.micro_batch << ",\n";
  py << "    gradient_accumulation_steps=" << t.grad_accum << ",\n";
  py << "    max_length=" << t.seq_len << ",\n";
  if (const std::string optim = hf_optim_name(t); !optim.empty()) py << "    optim=\"" << optim << "\",\n";
  py << ")\n";
  py << "trainer = SFTTrainer(model=model, processing_class=tokenizer, train_dataset=dataset, args=args)\n";
  py << "trainer.train()\n";
  f.text = py.str();
  f.notes.emplace_back("define `dataset` (a datasets.Dataset) before SFTTrainer");
  if (t.loss != LossKernel::kUnslothFusedCe) {
    f.notes.emplace_back("Unsloth computes the loss with its fused cross-entropy unless UNSLOTH_RETURN_LOGITS=1; the estimate's loss kernel differs");
  }
  return f;
}

}  // namespace memfit::launch_files
