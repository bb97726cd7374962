// LitGPT's LLaMA-Adapter and its v2 (litgpt v0.5.13 adapter.py, adapter_v2.py): the states of the
// prefix, gates, biases and scales (model_states.cpp), what an adapted layer saves
// (activations.cpp add_litgpt_adapter_terms) and which layers save at all (timeline.cpp).
#include <catch2/catch.hpp>

#include "block/activations.h"
#include "hf_config/parse_hf_config.h"
#include "memory/timeline.h"

using namespace memfit;

namespace {

// h 8, 2 heads of 4, 1 K/V head, f 16, vocab 32, 4 layers, untied.
ModelArchitecture toy() {
  return parse_hf_config_text(R"({"model_type":"llama","vocab_size":32,"hidden_size":8,
    "num_hidden_layers":4,"num_attention_heads":2,"num_key_value_heads":1,"intermediate_size":16})");
}

TrainingSetup adapter(Method m, std::int64_t start_layer = 2) {
  TrainingSetup t;
  t.method = m;
  t.precision = Precision::kBf16;
  t.adapters_fp32 = false;  // LitGPT: bf16-true, the adapter in the model dtype
  t.adapter_prompt_length = 10;
  t.adapter_start_layer = start_layer;
  t.micro_batch = 1;
  t.seq_len = 16;
  return t;
}

std::int64_t kept(const TrainingSetup& t) {
  const ModelArchitecture a = toy();
  return estimate_single_gpu(a, build_tensor_inventory(a), t).kept_activation_bytes_per_micro_batch;
}

}  // namespace

TEST_CASE("LitGPT adapter: only the gates train; the prefix is a weight without a gradient", "[memory][litgpt]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  const ModelStates m = compute_model_states(a, inv, adapter(Method::kAdapter));
  const std::int64_t adapted = 2, gates = adapted * 2, prompt = adapted * 10 * 8;
  CHECK(m.trainable_params == gates);
  CHECK(m.adapter_params == gates + prompt);
  CHECK(m.weights_bytes == 2 * (inv.total_params + gates + prompt));
  CHECK(m.optimizer_states_bytes == 2 * 2 * gates);  // bf16 AdamW moments
}

TEST_CASE("LitGPT adapter v2: a bias and a scale per output of every linear, and the norms", "[memory][litgpt]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  const ModelStates m = compute_model_states(a, inv, adapter(Method::kAdapterV2));
  const std::int64_t outs = 8 + 4 + 4 + 8 + 16 + 16 + 8;  // q k v o gate up down
  const std::int64_t norms = 4 * 2 * 8 + 8;               // two per block and the final one
  const std::int64_t head = 2 * 32;                       // lm_head is an AdapterV2Linear too
  CHECK(m.trainable_params == 4 * 2 * outs + norms + head + 2 * 2);
  CHECK(m.optimizer_states_bytes == 2 * 2 * m.trainable_params);
}

TEST_CASE("LitGPT adapter: the prefix attention saves its output and logsumexp; v2 each linear's sum", "[block][litgpt]") {
  const ModelArchitecture a = toy();
  const LayerActivations lora = layer_activations(a, adapter(Method::kLora), false, false, false);
  const LayerActivations v1 = layer_activations(a, adapter(Method::kAdapter), false, false, false);
  CHECK(v1.adapter_prompt_per_token == 2 * 2 * 4 + 4 * 2);
  CHECK(v1.saved_per_token - v1.adapter_prompt_per_token == layer_activations(a, adapter(Method::kFreeze), false, false, false).saved_per_token);
  const LayerActivations v2 = layer_activations(a, adapter(Method::kAdapterV2), false, false, false);
  // linear(x) + adapter_bias per output (bf16) and the two RMSNorms' fp32 normalised inputs
  CHECK(v2.saved_per_token - v1.saved_per_token == 2 * (8 + 4 + 4 + 8 + 16 + 16 + 8) + 2 * 4 * 8);
  CHECK(lora.adapter_prompt_per_token == 0);
}

TEST_CASE("LitGPT adapter v1: layers below the start save nothing, the first adapted one no attention inputs",
          "[memory][litgpt]") {
  const ModelArchitecture a = toy();
  const LayerActivations acts = layer_activations(a, adapter(Method::kAdapter), false, false, false);
  REQUIRE(acts.entry_layer_unsaved_per_token > 0);
  const std::int64_t layer = acts.saved_per_token * 16, entry = layer - acts.entry_layer_unsaved_per_token * 16;
  CHECK(kept(adapter(Method::kAdapter, 2)) == entry + layer);
  CHECK(kept(adapter(Method::kAdapter, 1)) == entry + 2 * layer);
  CHECK(kept(adapter(Method::kAdapter, 4)) == 0);  // no adapted layer: no graph at all
  // With checkpointing the adapted layers keep their inputs, the ones below nothing.
  TrainingSetup t = adapter(Method::kAdapter, 1);
  t.checkpointing = Checkpointing::kFull;
  CHECK(kept(t) == 3 * acts.checkpoint_per_token * 16);
}

TEST_CASE("LitGPT adapter v2: every layer saves, only the adapted ones the prefix attention", "[memory][litgpt]") {
  const ModelArchitecture a = toy();
  const LayerActivations acts = layer_activations(a, adapter(Method::kAdapterV2), false, false, false);
  const std::int64_t adapted = acts.saved_per_token * 16;
  const std::int64_t plain = (acts.saved_per_token - acts.adapter_prompt_per_token) * 16;
  CHECK(kept(adapter(Method::kAdapterV2, 2)) == 2 * plain + 2 * adapted);
  CHECK(kept(adapter(Method::kAdapterV2, 0)) == 4 * adapted);
}

TEST_CASE("PEFT adaption prompt: prompt and gate train in the model dtype, from the top layers", "[memory][peft]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  TrainingSetup t = adapter(Method::kAdaptionPrompt, 1);  // adapter_layers 3
  t.adapters_fp32 = true;  // PEFT's autocast_adapter_dtype does not reach AdaptedAttention
  const ModelStates m = compute_model_states(a, inv, t);
  CHECK(m.trainable_params == 3 * (10 * 8 + 1));
  CHECK(m.optimizer_states_bytes == 2 * 2 * m.trainable_params);
}

TEST_CASE("PEFT adaption prompt: q, the prefix scores and the batch's adapter K and V are saved", "[block][peft]") {
  const ModelArchitecture a = toy();
  TrainingSetup t = adapter(Method::kAdaptionPrompt, 1);
  t.micro_batch = 3;
  const LayerActivations acts = layer_activations(a, t, false, false, false);
  CHECK(acts.adapter_prompt_per_token == 2 * 2 * 4 + (4 + 2 * 2) * 2 * 10);
  CHECK(acts.saved_per_layer == 3 * 10 * 2 * 2 * (4 + 4));
  // No checkpointing: layer 0 saves nothing, layer 1 no attention inputs (its input needs no gradient).
  const std::int64_t tokens = 3 * 16, layer = acts.saved_per_token * tokens + acts.saved_per_layer;
  CHECK(kept(t) == 3 * layer - acts.entry_layer_unsaved_per_token * tokens);
}

TEST_CASE("PEFT P-tuning trains its embeddings and MLP encoder and lengthens the sequence", "[memory][peft]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  TrainingSetup t = adapter(Method::kPTuning);
  t.virtual_tokens = 5;
  CHECK(compute_model_states(a, inv, t).trainable_params == 5 * 8 + 3 * 8 * (8 + 1));
  const Estimate p = estimate_single_gpu(a, inv, t);
  t.method = Method::kPromptTuning;
  const Estimate prompt = estimate_single_gpu(a, inv, t);
  CHECK(p.tokens_per_micro_batch == 21);
  CHECK(p.kept_activation_bytes_per_micro_batch == prompt.kept_activation_bytes_per_micro_batch);
}
