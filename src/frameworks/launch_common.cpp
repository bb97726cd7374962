// The launch writers' shared machinery (see launch_common.h).
#include "frameworks/launch_common.h"

namespace memfit::launch_files {

LaunchFormat named(const char* format, const char* file_name) {
  LaunchFormat f;
  f.format = format;
  f.file_name = file_name;
  return f;
}

std::string dtype_name(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32";
    case Precision::kAmpFp16:
    case Precision::kFp16: return "fp16";
    default: return "bf16";
  }
}

std::int64_t global_batch(const LaunchInput& in) { return in.layout.dp * in.setup.micro_batch * in.setup.grad_accum; }

std::int64_t nodes(const LaunchInput& in) {
  const std::int64_t g = in.layout.gpus();
  return (g + in.gpus_per_node - 1) / in.gpus_per_node;
}

bool model_parallel(const ParallelLayout& l) { return l.tp > 1 || l.pp > 1 || l.cp > 1 || l.ep > 1; }

int zero_stage(Sharding s) {
  switch (s) {
    case Sharding::kNone: return 0;
    case Sharding::kZero1: return 1;
    case Sharding::kZero2: return 2;
    case Sharding::kZero3: return 3;
  }
  return 0;
}

bool one_data_rank(const ParallelLayout& l) { return l.dp * l.cp == 1; }

// The ZeRO stage that runs the layout: on one data-parallel rank a stage shards nothing, so an
// optimizer offload there runs as stage 1 (the same memory as no sharding).
int deepspeed_stage(const LaunchInput& in) {
  if (in.setup.offload == Offload::kOptimizer && in.layout.sharding == Sharding::kNone && one_data_rank(in.layout)) return 1;
  return zero_stage(in.layout.sharding);
}

bool deepspeed_ignores_offload(const LaunchInput& in) {
  const int stage = deepspeed_stage(in);
  if (in.setup.offload == Offload::kParamsOptimizer) return stage != 3;
  return in.setup.offload == Offload::kOptimizer && stage == 0;
}

bool ulysses_layout(const ParallelLayout& l) { return l.cp > 1 && l.cp_kind == ContextParallelKind::kUlysses; }

std::string python_list(const std::vector<std::string>& items) {
  std::string s = "[";
  for (const std::string& i : items) s += (s.size() > 1 ? ", " : "") + ("'" + i + "'");
  return s + "]";
}

// The TrainingArguments optimizer name of a setup's optimizer ("" when it has none).
std::string hf_optim_name(const TrainingSetup& t) {
  switch (t.optimizer) {
    case Optimizer::kAdamW: return t.optimizer_impl == OptimizerImpl::kFused ? "adamw_torch_fused" : "adamw_torch";
    case Optimizer::kAdamW8bit: return "adamw_8bit";
    case Optimizer::kPagedAdamW8bit: return "paged_adamw_8bit";
    case Optimizer::kPagedAdamW32bit: return "paged_adamw_32bit";
    case Optimizer::kAdamW4bit: return "adamw_torch_4bit";
    case Optimizer::kSgd:
    case Optimizer::kSgdMomentum: return "sgd";
    case Optimizer::kAdafactor: return "adafactor";
    case Optimizer::kLion: return "lion_32bit";
    case Optimizer::kMuon:
    case Optimizer::kAdamMini: return "";
    case Optimizer::kGaloreAdamW: return "galore_adamw";
    case Optimizer::kApolloAdamW:
    case Optimizer::kApolloMini: return "apollo_adamw";
  }
  return "";
}

std::string lora_modules(const TrainingSetup& t) {
  static const std::pair<const char*, const char*> kHfNames[] = {{"q", "q_proj"}, {"k", "k_proj"}, {"v", "v_proj"},
                                                                  {"o", "o_proj"}, {"gate", "gate_proj"}, {"up", "up_proj"},
                                                                  {"down", "down_proj"}, {"head", "lm_head"}};
  std::string list;
  for (const std::string& role : t.lora_targets) {
    std::string name = role;
    for (const auto& [short_name, hf] : kHfNames) {
      if (role == short_name) name = hf;
    }
    list += (list.empty() ? "" : ", ") + (role == "all-linear" ? std::string("all-linear") : "\"" + name + "\"");
  }
  return list;
}

// PEFT's modules_to_save as the checkpoint names them, quoted ("" when none): the token
// embedding is wte in GPT-2 and Qwen-1, word_embeddings in Falcon and BLOOM, embed_tokens elsewhere.
std::string saved_modules(const TrainingSetup& t, const ModelArchitecture& a) {
  std::string list;
  if (t.lora_saves_embedding) {
    const std::string& type = a.model_type;
    const char* name = type == "gpt2" || type == "qwen" ? "wte" : type == "falcon" || type == "bloom" ? "word_embeddings" : "embed_tokens";
    list = "\"" + std::string(name) + "\"";
  }
  if (t.lora_saves_head) list += (list.empty() ? "" : ", ") + std::string("\"lm_head\"");
  return list;
}

// LoraConfig's init_lora_weights for a non-default initialisation (peft v0.21.2 tuners/lora/config.py).
std::string lora_init_argument(const TrainingSetup& t) {
  if (t.lora_init == LoraInit::kDefault) return "";
  return std::string(", init_lora_weights=\"") + name_of(t.lora_init, kLoraInitNames) + "\"";
}

// PEFT's config class of a method other than LoRA (peft v0.21.2 tuners/*/config.py).
const char* peft_config_class(Method m) {
  switch (m) {
    case Method::kIa3: return "IA3Config";
    case Method::kLoha: return "LoHaConfig";
    case Method::kLokr: return "LoKrConfig";
    case Method::kVera: return "VeraConfig";
    case Method::kPromptTuning: return "PromptTuningConfig";
    case Method::kAdaptionPrompt: return "AdaptionPromptConfig";
    case Method::kPTuning: return "PromptEncoderConfig";
    case Method::kOft: return "OFTConfig";
    case Method::kBoft: return "BOFTConfig";
    case Method::kLnTuning: return "LNTuningConfig";
    case Method::kMiss: return "MissConfig";
    case Method::kGlora: return "GloraConfig";
    case Method::kFourierFt: return "FourierFTConfig";
    case Method::kWaveFt: return "WaveFTConfig";
    case Method::kHira: return "HiraConfig";
    case Method::kShira: return "ShiraConfig";
    case Method::kC3a: return "C3AConfig";
    case Method::kDelora: return "DeloraConfig";
    case Method::kGralora: return "GraloraConfig";
    case Method::kPeanut: return "PeanutConfig";
    case Method::kLily: return "LilyConfig";
    case Method::kTinyLora: return "TinyLoraConfig";
    case Method::kVblora: return "VBLoRAConfig";
    case Method::kFrod: return "FrodConfig";
    case Method::kAdamss: return "AdamssConfig";
    case Method::kRoad: return "RoadConfig";
    case Method::kOsf: return "OSFConfig";
    case Method::kDeft: return "DeftConfig";
    case Method::kBeft: return "BeftConfig";
    case Method::kTrainableTokens: return "TrainableTokensConfig";
    case Method::kPvera: return "PveraConfig";
    case Method::kUnilora: return "UniLoraConfig";
    case Method::kAdalora: return "AdaLoraConfig";
    case Method::kPsoft: return "PsoftConfig";
    case Method::kRandlora: return "RandLoraConfig";
    default: return "PrefixTuningConfig";
  }
}

// The GaLore / APOLLO / Adam-mini settings under HF TrainingArguments names (optim,
// optim_target_modules, optim_args: transformers _get_galore_optimizer / _get_apollo_optimizer).
void hf_low_rank_optim(Text& y, const TrainingSetup& t) {
  if (!projects_gradients(t.optimizer)) return;
  y << "optim_target_modules: [attn, mlp]\n";
  y << "optim_args: \"rank=" << t.projection_rank << ",update_proj_gap=" << t.projection_update_gap
    << (t.optimizer == Optimizer::kApolloMini ? ",scale_type=tensor,scale=128" : "") << "\"\n";
}

HfSharding hf_sharding(const LaunchInput& in) {
  const ParallelLayout& l = in.layout;
  if (l.sharding == Sharding::kZero1 || in.setup.offload == Offload::kOptimizer) return HfSharding::kDeepspeed;
  if (l.sharding == Sharding::kZero2 || l.sharding == Sharding::kZero3) return HfSharding::kFsdp;
  return HfSharding::kNone;
}

// The DeepSpeed config inline under `deepspeed:` (both take a dict: transformers
// TrainingArguments.deepspeed, Axolotl's schema `deepspeed: str | dict`), "auto" where the
// trainer fills it in.
void inline_deepspeed(Text& y, const LaunchInput& in) {
  y << "deepspeed:\n";
  y << "  train_micro_batch_size_per_gpu: auto\n  gradient_accumulation_steps: auto\n";
  y << "  bf16: {enabled: auto}\n  fp16: {enabled: auto}\n";
  y << "  zero_optimization:\n    stage: " << deepspeed_stage(in) << "\n";
  if (in.setup.offload == Offload::kOptimizer || in.setup.offload == Offload::kParamsOptimizer) {
    y << "    offload_optimizer: {device: cpu, pin_memory: true}\n";
  }
  if (in.setup.offload == Offload::kParamsOptimizer) y << "    offload_param: {device: cpu, pin_memory: true}\n";
}

// The launch line both write as the file's first comment (gpus and nodes are not YAML keys).
std::string accelerate_launch_comment(const LaunchInput& in, const std::string& command) {
  return "# run: accelerate launch --num_processes " + std::to_string(in.layout.gpus()) + " --num_machines " +
         std::to_string(nodes(in)) + " " + command + "\n";
}

LaunchFormat hf_yaml_unsupported(LaunchFormat f, const LaunchInput& in, const char* framework) {
  f.supported = false;
  if (model_parallel(in.layout)) {
    f.notes.emplace_back(std::string(framework) + " runs data parallelism (DDP, FSDP, DeepSpeed ZeRO) under the HF Trainer; "
                         "for tp/pp/cp/ep use Megatron-LM or torchtitan");
  } else {
    f.notes.emplace_back(kDeepSpeedOffloadStages);
  }
  return f;
}

}  // namespace memfit::launch_files
