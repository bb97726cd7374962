// What PEFT's adapters other than LoRA save per token and per layer (activations.cpp
// add_peft_adapter_terms, prefix_kv_per_layer), on a toy Llama whose bytes count by hand.
#include <catch2/catch.hpp>

#include "block/activations.h"
#include "hf_config/parse_hf_config.h"

using namespace memfit;

namespace {

// h 8, 2 heads of 4, 1 K/V head (k and v 4 wide), f 16.
ModelArchitecture toy() {
  return parse_hf_config_text(R"({"model_type":"llama","vocab_size":32,"hidden_size":8,
    "num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":1,"intermediate_size":16})");
}

TrainingSetup peft(Method m, std::vector<std::string> targets, std::int64_t rank = 2) {
  TrainingSetup t;
  t.method = m;
  t.lora_rank = rank;
  t.lora_targets = std::move(targets);
  return t;
}

// The frozen block with no adapter inside it (a LoRA on the output layer only).
LayerActivations frozen_block(const ModelArchitecture& a) {
  return layer_activations(a, peft(Method::kLora, {"head"}), false, false, false);
}

}  // namespace

TEST_CASE("IA3 keeps k and v's frozen outputs and down's fp32 input", "[block][peft]") {
  const ModelArchitecture a = toy();
  const LayerActivations base = frozen_block(a);
  const LayerActivations ia3 = layer_activations(a, peft(Method::kIa3, {"k", "v", "down"}), false, false, false);
  // bf16 k and v outputs (2 x 4 x 2 B) + fp32 copy of down's input (16 x 4 B)
  CHECK(ia3.saved_per_token - base.saved_per_token == 2 * 4 * 2 + 16 * 4);
  CHECK(ia3.saved_per_layer == 4 * (4 + 4 + 16));  // each `1 * ia3_l` product
  CHECK(ia3.saved_per_layer_for_input_grad == 0);
}

TEST_CASE("LoHa and LoKr keep an fp32 input copy per linear and the delta weight per layer", "[block][peft]") {
  const ModelArchitecture a = toy();
  const LayerActivations base = frozen_block(a);
  for (Method m : {Method::kLoha, Method::kLokr}) {
    const LayerActivations acts = layer_activations(a, peft(m, {"q", "v"}), false, false, false);
    CHECK(acts.saved_per_token - base.saved_per_token == 2 * 8 * 4);  // q and v inputs in fp32
    // delta weights q (8 x 8) and v (4 x 8) in fp32, saved for the input's gradient
    CHECK(acts.saved_per_layer_for_input_grad == (8 * 8 + 4 * 8) * 4);
    CHECK(acts.saved_per_layer == acts.saved_per_layer_for_input_grad);
  }
}

TEST_CASE("VeRA keeps both frozen projections' outputs in fp32", "[block][peft]") {
  const ModelArchitecture a = toy();
  const LayerActivations base = frozen_block(a);
  const LayerActivations vera = layer_activations(a, peft(Method::kVera, {"q", "v"}, 2), false, false, false);
  CHECK(vera.saved_per_token - base.saved_per_token == 4 * (2 + 8) + 4 * (2 + 4));
  CHECK(vera.saved_per_layer == 0);
}

TEST_CASE("prefix tuning lengthens the saved keys and values by its virtual tokens", "[block][peft]") {
  const ModelArchitecture a = toy();
  TrainingSetup t = peft(Method::kPrefixTuning, {});
  t.virtual_tokens = 5;
  t.micro_batch = 3;
  const LayerActivations prefix = layer_activations(a, t, false, false, false);
  CHECK(prefix.saved_per_layer == 3 * 5 * 2 * (4 + 4));  // bf16 K and V of one head of 4
  CHECK(prefix.saved_per_token == frozen_block(a).saved_per_token);
}

TEST_CASE("a delta weight behind an adapted linear is saved even where the block input needs no gradient", "[block][peft]") {
  const ModelArchitecture a = toy();
  const LayerActivations all = layer_activations(a, peft(Method::kLokr, {"all-linear"}), false, false, false);
  // q (8 x 8), k and v (4 x 8) read the block input; o (8 x 8), gate and up (16 x 8) and down
  // (8 x 16) follow adapted linears, so their deltas are saved in every layer.
  CHECK(all.saved_per_layer_for_input_grad == 4 * (64 + 32 + 32));
  CHECK(all.saved_per_layer == 4 * (64 + 32 + 32) + 4 * (64 + 128 + 128 + 128));
  CHECK(all.backward_transient_per_layer == 2 * 4 * 128);  // LoKr's backward of the largest delta
}
