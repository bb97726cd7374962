// Model states of OFT, BOFT, LN tuning and P-tuning's LSTM encoder (model_states.cpp: adapters,
// their frozen buffers, the trained norm copies, add_method_extras).
#include <catch2/catch.hpp>

#include "hf_config/parse_hf_config.h"
#include "memory/timeline.h"
#include "toy_llama.h"
#include "training/parameters.h"

using namespace memfit;

namespace {

TrainingSetup with(Method m) {
  TrainingSetup t;
  t.method = m;
  t.lora_targets = {"q", "v"};
  t.orthogonal_block_size = 4;
  t.micro_batch = 1;
  t.seq_len = 16;
  return t;
}

}  // namespace

TEST_CASE("OFT trains fp32 skew blocks and keeps their int64 index buffers", "[memory][peft]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  const ModelStates m = compute_model_states(a, inv, with(Method::kOft));
  CHECK(m.adapter_params == 2 * 2 * (2 * 6));  // layers x (q, v) x 2 blocks of 4 * 3 / 2
  // bf16 base, fp32 adapters, rows and cols (6 int64 each) per adapted linear
  CHECK(m.weights_bytes == 2 * inv.total_params + 4 * m.adapter_params + 4 * 2 * 6 * 8);
  CHECK(m.optimizer_states_bytes == 8 * m.adapter_params);
}

TEST_CASE("BOFT keeps an fp32 in x in permutation buffer per adapted linear", "[memory][peft]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  const ModelStates m = compute_model_states(a, inv, with(Method::kBoft));
  CHECK(m.adapter_params == 2 * ((8 * 4 + 8) + (8 * 4 + 4)));  // boft_R (in x b) and boft_s (out), q and v
  CHECK(m.weights_bytes == 2 * inv.total_params + 4 * m.adapter_params + 4 * 4 * 8 * 8);
}

TEST_CASE("LN tuning trains copies of the block and final norms beside the frozen originals", "[memory][peft]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  const ModelStates m = compute_model_states(a, inv, with(Method::kLnTuning));
  const std::int64_t norms = 2 * 2 * 8 + 8;
  CHECK(m.trainable_params == norms);
  CHECK(m.weights_bytes == 2 * inv.total_params + 2 * norms);  // the copies in the model dtype
  CHECK(m.optimizer_states_bytes == 4 * norms);                 // bf16 AdamW moments
}

TEST_CASE("P-tuning's LSTM encoder trains in fp32, far above its MLP one", "[memory][peft]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  TrainingSetup t = with(Method::kPTuning);
  t.virtual_tokens = 5;
  const ModelStates mlp = compute_model_states(a, inv, t);
  CHECK(mlp.trainable_params == p_tuning_encoder_params(t, 8));
  t.prompt_encoder = PromptEncoder::kLstm;
  const ModelStates lstm = compute_model_states(a, inv, t);
  CHECK(lstm.trainable_params == p_tuning_encoder_params(t, 8));
  CHECK(lstm.optimizer_states_bytes - mlp.optimizer_states_bytes ==
        8 * (p_tuning_encoder_params(t, 8) - mlp.trainable_params));
}
