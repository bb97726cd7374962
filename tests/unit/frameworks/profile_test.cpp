// Dated behaviours of the framework profiles (src/frameworks/<key>/profile.cpp): which knobs a
// framework_version month switches, and which of them depend on the model type's code.
#include <algorithm>

#include <catch2/catch.hpp>

#include "hf_config/parse_hf_config.h"
#include "frameworks/profile.h"

using namespace memfit;

namespace {

ModelArchitecture of_type(const char* model_type) {
  ModelArchitecture a;
  a.model_type = model_type;
  return a;
}

// The transformers loop's setup as of `yyyymm`, resolved for a model of `model_type`.
TrainingSetup loop_setup(std::int64_t yyyymm, const char* model_type) {
  TrainingSetup t = framework_defaults(framework_profile(Framework::kTransformersLoop), yyyymm);
  apply_model_code(t, of_type(model_type));
  return t;
}

}  // namespace

TEST_CASE("the plain transformers loop holds its outputs across steps; the Trainer does not", "[framework]") {
  CHECK(framework_defaults(framework_profile(Framework::kTransformersLoop), 0).outputs_held_across_steps);
  CHECK_FALSE(framework_defaults(framework_profile(Framework::kHfTrainer), 0).outputs_held_across_steps);
}

TEST_CASE("before transformers 4.46 the model's forward computes the loss, by the model's code", "[framework]") {
  // Current code: ForCausalLMLoss upcasts inside the loss for every model; the logits stay 16-bit.
  for (const char* type : {"llama", "gpt2", "falcon", "qwen3"}) {
    const TrainingSetup now = loop_setup(0, type);
    CHECK(now.logits_upcast);
    CHECK_FALSE(now.logits_upcast_in_model);
    CHECK_FALSE(now.model_computes_loss);
  }
  CHECK_FALSE(loop_setup(202411, "gpt2").model_computes_loss);  // v4.46.0 is of 2024-10
  // v4.44.2: LlamaForCausalLM returns logits.float(); GPT2LMHeadModel and FalconForCausalLM run the
  // loss in the logits dtype; a model type that arrived later keeps the current code.
  const TrainingSetup llama = loop_setup(202408, "llama");
  CHECK(llama.logits_upcast);
  CHECK(llama.logits_upcast_in_model);
  for (const char* type : {"gpt2", "falcon"}) {
    const TrainingSetup none = loop_setup(202408, type);
    CHECK_FALSE(none.logits_upcast);
    CHECK_FALSE(none.logits_upcast_in_model);
  }
  const TrainingSetup later = loop_setup(202408, "qwen3");
  CHECK(later.logits_upcast);
  CHECK_FALSE(later.logits_upcast_in_model);
}

TEST_CASE("transformers 4.46-4.48: GPT-2-style models still run their own loss in the logits dtype", "[framework]") {
  for (const char* type : {"gpt2", "falcon"}) {
    CHECK_FALSE(loop_setup(202411, type).logits_upcast);  // v4.46.3 GPT2LMHeadModel: CrossEntropyLoss on bf16 logits
    CHECK_FALSE(loop_setup(202501, type).logits_upcast);  // v4.48.1 still
    CHECK(loop_setup(202502, type).logits_upcast);        // ForCausalLMLoss from v4.49.0
  }
  CHECK(loop_setup(202411, "llama").logits_upcast);       // moved to self.loss_function in v4.46.0
  CHECK_FALSE(loop_setup(202411, "llama").logits_upcast_in_model);
}

TEST_CASE("the Trainer's default AdamW is foreach before transformers picked the fused one", "[framework]") {
  const FrameworkProfile& trainer = framework_profile(Framework::kHfTrainer);
  CHECK(framework_defaults(trainer, 0).optimizer_impl == OptimizerImpl::kFused);
  CHECK(framework_defaults(trainer, 202509).optimizer_impl == OptimizerImpl::kFused);
  CHECK(framework_defaults(trainer, 202506).optimizer_impl == OptimizerImpl::kForeach);
  CHECK(framework_defaults(framework_profile(Framework::kTrl), 202411).optimizer_impl == OptimizerImpl::kForeach);
}

TEST_CASE("the Trainer keeps 32-bit states for embeddings under bitsandbytes' 8-bit optimizers from transformers 4.52", "[framework]") {
  const FrameworkProfile& trainer = framework_profile(Framework::kHfTrainer);
  CHECK(framework_defaults(trainer, 0).bnb8_embedding_states_fp32);
  CHECK(framework_defaults(trainer, 202505).bnb8_embedding_states_fp32);       // v4.52.0
  CHECK_FALSE(framework_defaults(trainer, 202504).bnb8_embedding_states_fp32); // v4.51.3: matched "Adam8bit" only
  CHECK(framework_defaults(framework_profile(Framework::kAxolotl), 202605).bnb8_embedding_states_fp32);
  CHECK_FALSE(framework_defaults(framework_profile(Framework::kTransformersLoop), 0).bnb8_embedding_states_fp32);
}

TEST_CASE("rotary caches per layer before transformers 4.45, for the models that kept them", "[framework]") {
  CHECK(loop_setup(202408, "qwen2").rotary_cache_per_layer);
  CHECK(loop_setup(202408, "phi").rotary_cache_per_layer);
  CHECK_FALSE(loop_setup(202408, "llama").rotary_cache_per_layer);  // LlamaRotaryEmbedding computes them per forward
  CHECK_FALSE(loop_setup(202410, "qwen2").rotary_cache_per_layer);
  CHECK_FALSE(loop_setup(0, "qwen2").rotary_cache_per_layer);
}

TEST_CASE("LoRA merges fused expert stacks from transformers 5 on", "[framework]") {
  CHECK(loop_setup(0, "mixtral").lora_merges_fused_experts);
  CHECK(loop_setup(202601, "mixtral").lora_merges_fused_experts);
  CHECK_FALSE(loop_setup(202512, "mixtral").lora_merges_fused_experts);
  CHECK_FALSE(loop_setup(202506, "qwen3_moe").lora_merges_fused_experts);
}

TEST_CASE("PEFT leaves the routed experts of MoE types transformers maps to no conversion pattern unadapted", "[framework]") {
  CHECK(loop_setup(0, "qwen2_moe").lora_routed_experts_unadapted);     // a pattern itself, no key
  CHECK(loop_setup(0, "llama4_text").lora_routed_experts_unadapted);
  CHECK_FALSE(loop_setup(0, "qwen3_moe").lora_routed_experts_unadapted);   // mapped to qwen2_moe
  CHECK_FALSE(loop_setup(0, "mixtral").lora_routed_experts_unadapted);     // PEFT maps it
  CHECK_FALSE(loop_setup(0, "deepseek_v3").lora_routed_experts_unadapted);
  CHECK_FALSE(loop_setup(202512, "qwen2_moe").lora_routed_experts_unadapted);  // v4: nn.Linear experts, each adapted
}

TEST_CASE("PEFT before 0.12 keeps LoRA adapters in the model's dtype; transformers 4.48 still copies the shifted logits", "[framework]") {
  const FrameworkProfile& loop = framework_profile(Framework::kTransformersLoop);
  CHECK_FALSE(framework_defaults(loop, 202405).adapters_fp32);  // peft v0.11.1
  CHECK(framework_defaults(loop, 202407).adapters_fp32);        // v0.12.0 autocast_adapter_dtype
  CHECK(framework_defaults(loop, 202501).loss_shift_copy);      // v4.48.1 ForCausalLMLoss
  CHECK_FALSE(framework_defaults(loop, 202502).loss_shift_copy);  // v4.49.0 pads the labels
}

TEST_CASE("torchtune's AdamW configs are foreach before they said fused: True", "[framework][torchtune]") {
  // cca50f02e (#1575, 2024-09-14) added fused: True; the configs before it name AdamW bare.
  const FrameworkProfile& tt = framework_profile(Framework::kTorchtune);
  CHECK(framework_defaults(tt, 0).optimizer_impl == OptimizerImpl::kFused);
  CHECK(framework_defaults(tt, 202409).optimizer_impl == OptimizerImpl::kFused);
  CHECK(framework_defaults(tt, 202408).optimizer_impl == OptimizerImpl::kForeach);
  CHECK(framework_defaults(tt, 202404).optimizer_impl == OptimizerImpl::kForeach);
}

TEST_CASE("torchtune's distributed recipes ran FSDP1 before the FSDP2 migration", "[framework][torchtune]") {
  // FSDP1: views of the gathered flat parameter (no copy-out), the root unit kept gathered after
  // its forward; FSDP2 (#1287, 2024-08-11): copy-out, custom-sharded embeddings and output.
  const FrameworkProfile& tt = framework_profile(Framework::kTorchtune);
  const DistributedBehaviour fsdp1 = framework_behaviour(tt, 202407);
  CHECK_FALSE(fsdp1.gather_copy_out);
  CHECK(fsdp1.root_unit_gathered);
  for (const std::int64_t month : {std::int64_t{0}, std::int64_t{202408}, std::int64_t{202411}}) {
    const DistributedBehaviour fsdp2 = framework_behaviour(tt, month);
    CHECK(fsdp2.gather_copy_out);
    CHECK_FALSE(fsdp2.root_unit_gathered);
  }
}

TEST_CASE("torchtune's memory log prints three counters; most frameworks name one", "[framework][torchtune]") {
  const FrameworkProfile& tt = framework_profile(Framework::kTorchtune);
  REQUIRE(tt.logged_counters.size() == 3);
  CHECK(tt.logged_counters.front() == tt.defaults.logged_counter);  // the default is among them
  CHECK(std::find(tt.logged_counters.begin(), tt.logged_counters.end(), MemoryCounter::kMaxReserved) != tt.logged_counters.end());
  CHECK(framework_profile(Framework::kHfTrainer).logged_counters.empty());
  // Axolotl's logs print allocated, reserved and NVML used (bench.py, 2023-08) and the active peak (2026).
  const FrameworkProfile& ax = framework_profile(Framework::kAxolotl);
  REQUIRE(ax.logged_counters.size() == 4);
  CHECK(ax.logged_counters.front() == ax.defaults.logged_counter);
  CHECK(std::find(ax.logged_counters.begin(), ax.logged_counters.end(), MemoryCounter::kNvidiaSmi) != ax.logged_counters.end());
}
