// bitsandbytes' 8-bit optimizers under the HF Trainer: nn.Embedding weights keep 32-bit states
// (model_states.cpp, TrainingSetup::bnb8_embedding_states_fp32).
#include <catch2/catch.hpp>

#include "memory/model_states.h"
#include "toy_llama.h"

using namespace memfit;

namespace {

TrainingSetup full(Optimizer o, bool embedding_fp32_states) {
  TrainingSetup t;
  t.method = Method::kFull;
  t.precision = Precision::kBf16;
  t.optimizer = o;
  t.micro_batch = 1;
  t.seq_len = 16;
  t.bnb8_embedding_states_fp32 = embedding_fp32_states;
  return t;
}

}  // namespace

TEST_CASE("the Trainer's 8-bit AdamW keeps fp32 states for the embedding table only", "[memory][optimizer]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  const std::int64_t embedding = 32 * 8;  // vocab x hidden
  const ModelStates plain = compute_model_states(a, inv, full(Optimizer::kAdamW8bit, false));
  const ModelStates trainer = compute_model_states(a, inv, full(Optimizer::kAdamW8bit, true));
  CHECK(plain.optimizer_states_bytes == 2 * inv.total_params);                       // two uint8 moments
  CHECK(trainer.optimizer_states_bytes - plain.optimizer_states_bytes == 6 * embedding);  // 8 bytes instead of 2
  CHECK(trainer.weights_bytes == plain.weights_bytes);
  CHECK(trainer.gradients_bytes == plain.gradients_bytes);
}

TEST_CASE("the 32-bit embedding states follow the optimizer: none for AdamW, unified memory when paged", "[memory][optimizer]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  const std::int64_t embedding = 32 * 8;
  CHECK(compute_model_states(a, inv, full(Optimizer::kAdamW, true)).optimizer_states_bytes ==
        compute_model_states(a, inv, full(Optimizer::kAdamW, false)).optimizer_states_bytes);
  const ModelStates paged = compute_model_states(a, inv, full(Optimizer::kPagedAdamW8bit, true));
  CHECK(paged.optimizer_states_bytes == 0);
  CHECK(paged.unmanaged_optimizer_states_bytes == 2 * inv.total_params + 6 * embedding);
}

TEST_CASE("a frozen embedding has no states to keep in 32 bits", "[memory][optimizer]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  TrainingSetup lora = full(Optimizer::kAdamW8bit, true);
  lora.method = Method::kLora;
  lora.lora_rank = 2;
  lora.lora_targets = {"q", "v"};
  TrainingSetup without = lora;
  without.bnb8_embedding_states_fp32 = false;
  CHECK(compute_model_states(a, inv, lora).optimizer_states_bytes == compute_model_states(a, inv, without).optimizer_states_bytes);
}
