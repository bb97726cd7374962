// The framework profiles. Each default names where it comes from; revisions are those read for
// docs/frameworks.md (transformers v5.15.0, peft 5d602fdb, torchtune bd2a0fc7, torchtitan
// b5bcd76c, litgpt 26857050, Megatron-LM d98e8a64, DeepSpeed edaa7221, fsdp_qlora 05ed9f2,
// ColossalAI 4f9953be).
// The shared machinery: the list (registry.h), the lookups, the dated-history application, and the
// behaviours that depend on the model type or the DeepSpeed engine under a wrapper. Each framework's
// profile is in its folder (frameworks/<key>/profile.cpp).
#include "frameworks/profile.h"

#include <algorithm>
#include <iterator>

#include "frameworks/registry.h"

namespace memfit {

// DTensor sequence parallelism (torchtitan, torchtune): PyTorch's functional all-gather copied
// its output into sequence order at every micro-batch until _maybe_view_chunk_cat returned a view
// for a batch of 1; the month is the first in which the helper is known to be in the code.
DatedBehaviour sp_batch1_gather_copied() {
  return {202604, "a sequence-parallel all-gather at micro-batch 1 is copied into sequence order too (no view)",
          "pytorch/pytorch #169404 (opened 2025-12-02, \"Optimize bs=1 case for allgather on dim 1 to not "
          "split/cat\"); torch/_utils.py _maybe_view_chunk_cat is in the code by #180389 (2026-04-15)",
          nullptr, [](DistributedBehaviour& d) { d.sp_gather_view_at_batch_1 = false; }};
}

// transformers v4.44.2, by model type. *ForCausalLM.forward: `logits = logits.float()` (or
// `.to(torch.float32)`) before the loss, returned as fp32 (llama ... codegen); an upcast for the
// loss only, the returned logits cast back (gpt_neo); none, the loss in the logits dtype (gpt2 ...
// biogpt; mpt: MptForCausalLM shifts lm_logits and calls CrossEntropyLoss on them as bloom does).
// *RotaryEmbedding with cos_cached/sin_cached buffers per attention layer (qwen2 ... stablelm).
// Model types that arrived later are left as the current code has them.
void apply_model_code(TrainingSetup& t, const ModelArchitecture& a) {
  static const char* const kUpcastInModel[] = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "gemma", "gemma2",
                                               "phi",   "phi3",    "starcoder2", "gptj", "codegen"};
  static const char* const kNoUpcast[] = {"gpt2", "opt", "bloom", "gpt_neox", "falcon", "stablelm", "gpt_bigcode", "biogpt", "mpt"};
  static const char* const kRotaryCache[] = {"qwen2", "qwen2_moe", "mixtral", "phi", "starcoder2", "falcon", "gpt_neox", "stablelm"};
  auto listed = [&](const auto& types) {
    return std::any_of(std::begin(types), std::end(types), [&](const char* m) { return a.model_type == m; });
  };
  static const char* const kLossFunctionLate[] = {"gpt2", "opt", "bloom", "gpt_neox", "falcon", "gpt_bigcode", "biogpt", "mpt"};
  if (t.rotary_cache_per_layer) t.rotary_cache_per_layer = listed(kRotaryCache);
  // torchtune's Qwen2RotaryPositionalEmbeddings caches cos and sin over the whole head dimension;
  // lora_qwen2_self_attention builds one per layer (torchtune v0.6.1 models/qwen2/_component_builders.py).
  if (t.model_rotary_cache_values_per_dim > 0 && a.model_type == "qwen2") {
    t.model_rotary_cache_values_per_dim = 2;
    t.model_rotary_cache_per_layer = is_lora_like(t.method);
  }
  // PEFT v0.21.2 utils/transformers_weight_conversion.py _convert_peft_config_moe moves LoRA's
  // MLP targets onto transformers 5's 3-d expert stacks only for the model types transformers
  // maps to a conversion pattern (v5.24.0 conversion_mapping.py _MODEL_TO_CONVERSION_PATTERN:
  // qwen3_moe, deepseek_v2/v3 ... -> qwen2_moe) and for mixtral (PEFT adds it); qwen2_moe itself
  // and llama4_text are no key there, and a 3-d parameter is no nn.Linear for target_modules:
  // their routed experts keep no adapter (the oracle's qwen2moe_shared records).
  static const char* const kUnmappedMoe[] = {"qwen2_moe", "llama4_text"};
  if (t.lora_merges_fused_experts && listed(kUnmappedMoe)) t.lora_routed_experts_unadapted = true;
  if (t.own_loss_in_logits_dtype && listed(kLossFunctionLate)) t.logits_upcast = false;
  if (!t.model_computes_loss) return;
  if (listed(kUpcastInModel)) {
    t.logits_upcast = true;
    t.logits_upcast_in_model = true;
  } else if (listed(kNoUpcast)) {
    t.logits_upcast = false;
  }
}

bool runs_deepspeed_engine(Framework f) {
  return f == Framework::kHfTrainer || f == Framework::kTrl || f == Framework::kAxolotl || f == Framework::kLlamaFactory;
}

// accelerate/accelerator.py (Accelerator.__init__): native_amp is set for fp16/bf16 only when the
// distributed type is not DEEPSPEED or MEGATRON_LM; DeepSpeed's bf16/fp16 optimizer keeps the fp32
// master partitions (deepspeed/runtime/engine.py, as the deepspeed profile above).
// Buckets: `accelerate launch` from an accelerate config without a DeepSpeed file (TRL's
// examples/accelerate_configs and its benchmark's deepspeed_zero3.yaml.j2) leaves DeepSpeed's
// defaults (the engine's resolved config, TG-14: reduce_bucket_size 5e8, prefetch 5e7 elements).
// Axolotl's deepspeed_configs/*.json (@1aaebb0) and LLaMA-Factory's examples/deepspeed/*.json
// (@1d6e8b2) say "auto", which transformers integrations/deepspeed.py
// (HfTrainerDeepSpeedConfig.trainer_config_finalize) fills as reduce_bucket_size = hidden²,
// stage3_prefetch_bucket_size = 0.9 hidden² elements, in the 16-bit model dtype. Axolotl's
// zero3*.json set stage3_max_live_parameters 0 (no block kept gathered past its forward); LLaMA-Factory's
// ds_z3_config.json keeps DeepSpeed's 1e9.
void apply_deepspeed_engine(Framework wrapper, TrainingSetup& t, DistributedBehaviour& b, std::int64_t hidden_size) {
  const TrainingSetup engine = framework_profile(Framework::kDeepspeed).defaults;
  if (amp_like(t)) t.amp_weights = engine.amp_weights;
  t.main_grad_bytes = engine.main_grad_bytes;
  if (wrapper != Framework::kAxolotl && wrapper != Framework::kLlamaFactory) return;
  const std::int64_t square = hidden_size * hidden_size;
  b.reduce_bucket_bytes = square * 2;
  b.prefetch_bytes = square * 9 / 10 * 2;
  if (wrapper == Framework::kAxolotl) b.zero3_max_live_elements = 0;
}

const std::vector<FrameworkProfile>& framework_profiles() {
  static const std::vector<FrameworkProfile> all = [] {
    std::vector<FrameworkProfile> profiles;
    for (const FrameworkEntry& e : kFrameworks) profiles.push_back(e.profile());
    return profiles;
  }();
  return all;
}

TrainingSetup framework_defaults(const FrameworkProfile& p, std::int64_t yyyymm) {
  TrainingSetup t = p.defaults;
  for (const DatedBehaviour& b : p.history) {
    if (b.apply && b.applies_to(yyyymm)) b.apply(t);
  }
  return t;
}

DistributedBehaviour framework_behaviour(const FrameworkProfile& p, std::int64_t yyyymm) {
  DistributedBehaviour d = p.dist;
  for (const DatedBehaviour& b : p.history) {
    if (b.apply_dist && b.applies_to(yyyymm)) b.apply_dist(d);
  }
  return d;
}

const FrameworkProfile& framework_profile(Framework f) {
  for (const FrameworkProfile& p : framework_profiles()) {
    if (p.id == f) return p;
  }
  return framework_profiles().back();
}

const FrameworkProfile* find_framework(std::string_view key) {
  for (const FrameworkProfile& p : framework_profiles()) {
    if (p.key == key) return &p;
  }
  return nullptr;
}

}  // namespace memfit
