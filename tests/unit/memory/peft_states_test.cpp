// Model states and timeline of PEFT's other methods and of the optimizers whose states are not
// AdamW's (model_states.cpp add_method_extras, Muon and Adafactor; timeline.cpp first layer).
#include <catch2/catch.hpp>

#include "block/activations.h"
#include "hf_config/parse_hf_config.h"
#include "memory/timeline.h"
#include "toy_llama.h"

using namespace memfit;

namespace {

TrainingSetup with(Method m) {
  TrainingSetup t;
  t.method = m;
  t.lora_rank = 2;
  t.lora_targets = {"q", "v"};
  t.virtual_tokens = 5;
  t.micro_batch = 1;
  t.seq_len = 16;
  return t;
}

}  // namespace

TEST_CASE("VeRA holds its shared frozen projections once, in fp32", "[memory][peft]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  const ModelStates m = compute_model_states(a, inv, with(Method::kVera));
  CHECK(m.adapter_params == 2 * ((2 + 8) + (2 + 4)));  // 2 layers x (q, v): lambda_d + lambda_b
  // bf16 base + fp32 vectors + vera_A (r x 8) and vera_B (8 x r) in fp32
  CHECK(m.weights_bytes == 2 * inv.total_params + 4 * m.adapter_params + 4 * 2 * (8 + 8));
}

TEST_CASE("prompt and prefix tuning train their virtual tokens only", "[memory][peft]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  const ModelStates prompt = compute_model_states(a, inv, with(Method::kPromptTuning));
  CHECK(prompt.trainable_params == 5 * 8);
  CHECK(prompt.optimizer_states_bytes == 8 * 5 * 8);  // fp32 AdamW moments
  const ModelStates prefix = compute_model_states(a, inv, with(Method::kPrefixTuning));
  CHECK(prefix.trainable_params == 5 * 2 * 2 * 4);  // n x layers x (K, V) x K/V width
  CHECK(prefix.weights_bytes == 2 * inv.total_params + 4 * prefix.trainable_params);
}

TEST_CASE("prompt tuning runs the model over seq_len + virtual tokens", "[memory][peft]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  TrainingSetup t = with(Method::kPromptTuning);
  const Estimate five = estimate_single_gpu(a, inv, t);
  t.seq_len = 20;
  t.virtual_tokens = 1;
  const Estimate one = estimate_single_gpu(a, inv, t);
  // 21 positions either way: the same logits and saved activations (the prompts' states differ).
  CHECK(five.tokens_per_micro_batch == 21);
  CHECK(five.kept_activation_bytes_per_micro_batch == one.kept_activation_bytes_per_micro_batch);
  t.method = Method::kLora;  // LoRA over 16 positions keeps fewer than prompt tuning over 16 + 5
  t.seq_len = 16;
  t.lora_targets = {"head"};
  CHECK(estimate_single_gpu(a, inv, t).kept_activation_bytes_per_micro_batch < five.kept_activation_bytes_per_micro_batch);
}

TEST_CASE("LoHa's delta weights are not saved in the first layer, which no gradient reaches", "[memory][peft]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  TrainingSetup t = with(Method::kLoha);
  const LayerActivations acts = layer_activations(a, t, false, false, false);
  REQUIRE(acts.saved_per_layer_for_input_grad > 0);
  const std::int64_t per_layer = acts.saved_per_token * 16 + acts.saved_per_layer;
  CHECK(estimate_single_gpu(a, inv, t).kept_activation_bytes_per_micro_batch ==
        2 * per_layer - acts.saved_per_layer_for_input_grad);
  // Full checkpointing: each layer keeps only its input, as before.
  t.checkpointing = Checkpointing::kFull;
  CHECK(estimate_single_gpu(a, inv, t).kept_activation_bytes_per_micro_batch == 2 * acts.checkpoint_per_token * 16);
}

TEST_CASE("Muon keeps one momentum on the block matrices and AdamW's two on the rest", "[memory][optimizer]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  TrainingSetup t;
  t.optimizer = Optimizer::kMuon;
  const ModelStates m = compute_model_states(a, inv, t);
  // block matrices: q 64, k 32, v 32, o 64, gate/up/down 3 x 128, per layer
  const std::int64_t matrices = 2 * (64 + 32 + 32 + 64 + 3 * 128);
  CHECK(m.optimizer_states_bytes == 2 * matrices + 4 * (inv.total_params - matrices));
  // foreach AdamW's sqrt copy of its group (embedding, head, norms) beats Newton–Schulz on the toy
  CHECK(m.optimizer_step_temp_bytes == 2 * (inv.total_params - matrices));
}

TEST_CASE("Adafactor's step holds four fp32 copies of a 16-bit tensor, two of an fp32 one", "[memory][optimizer]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  TrainingSetup t;
  t.optimizer = Optimizer::kAdafactor;
  t.precision = Precision::kBf16;
  CHECK(compute_model_states(a, inv, t).optimizer_step_temp_bytes == 4 * 4 * 32 * 8);  // the 32 x 8 embedding
  t.precision = Precision::kFp32;
  CHECK(compute_model_states(a, inv, t).optimizer_step_temp_bytes == 2 * 4 * 32 * 8);
}
