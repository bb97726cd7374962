// Adapter shapes per adapted linear (block/adapters.h), and the block program's adapted matmuls,
// which follow the same targeting rule.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "block/adapters.h"
#include "block/block_program.h"
#include "hf_config/parse_hf_config.h"
#include "model/tensor_inventory.h"

using namespace memfit;

namespace {

// Llama-3-8B's block: h 4096, 32 heads and 8 K/V heads of 128, MLP 14336.
ModelArchitecture llama3_8b() {
  return parse_hf_config_text(R"({"model_type":"llama","vocab_size":128256,"hidden_size":4096,
    "num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336})");
}

const TensorSpec& tensor(const TensorInventory& inv, const std::string& role) {
  for (const TensorSpec& s : inv.groups.front().tensors) {
    if (s.role == role && s.linear_weight) return s;
  }
  FAIL("no tensor of role " << role);
  return inv.groups.front().tensors.front();
}

TrainingSetup lora(Method m, std::vector<std::string> targets) {
  TrainingSetup t;
  t.method = m;
  t.lora_rank = 16;
  t.lora_targets = std::move(targets);
  return t;
}

}  // namespace

TEST_CASE("an adapted linear is the inventory weight's shape; DoRA adds its magnitude to LoRA's r(in + out)", "[block]") {
  const TensorInventory inv = build_tensor_inventory(llama3_8b());
  const TensorSpec& k = tensor(inv, "k");
  const auto lo = adapted_linear(lora(Method::kLora, {"k"}), k);
  REQUIRE(lo);
  CHECK(lo->in == 4096);
  CHECK(lo->out == 1024);
  CHECK(lo->lora_factor_elems == 16 * (4096 + 1024));
  CHECK(lo->params == 16 * (4096 + 1024));
  const auto dora = adapted_linear(lora(Method::kDora, {"k"}), k);
  REQUIRE(dora);
  CHECK(dora->params == 16 * (4096 + 1024) + 1024);
  CHECK(dora->lora_factor_elems == lo->lora_factor_elems);
  CHECK_FALSE(adapted_linear(lora(Method::kLora, {"q", "v"}), k));
  CHECK(adapted_linear(lora(Method::kLora, {"all-linear"}), tensor(inv, "down")));
}

TEST_CASE("the block program carries an adapter on the matmuls whose roles the targets name", "[block]") {
  ModelArchitecture a = llama3_8b();
  auto adapted = [&](const TrainingSetup& t) {
    std::string roles;
    const BlockProgram p = block_program(a, t, false, false);
    for (std::size_t i = 0; i < p.op_count; ++i) {
      if (p.ops[i].adapted) roles += std::string(p.ops[i].role) + " ";
    }
    return roles;
  };
  CHECK(adapted(lora(Method::kLora, {"q", "v"})) == "q v ");
  CHECK(adapted(lora(Method::kDora, {"all-linear"})) == "q k v o gate up down ");
  CHECK(adapted(lora(Method::kIa3, {"k", "v", "down"})).empty());  // not LoRA-like: its own terms
  // Fused projections carry one adapter when any of their parts is named, as in the inventory.
  a.attention.layout = QkvLayout::kFused;
  a.mlp.fused_gate_up = true;
  CHECK(adapted(lora(Method::kLora, {"v", "up"})) == "qkv gate_up ");
  const TensorInventory inv = build_tensor_inventory(a);
  CHECK(adapted_linear(lora(Method::kLora, {"v", "up"}), tensor(inv, "qkv")));
  CHECK(adapted_linear(lora(Method::kLora, {"v", "up"}), tensor(inv, "gate_up")));
}

TEST_CASE("under tensor parallelism an adapter spans its base linear's widths on the rank", "[block]") {
  // PEFT's LoraParallelLinear: a column-parallel base splits lora_B's output, a row-parallel one
  // lora_A's input; the other factor stays whole.
  const TensorInventory inv = build_tensor_inventory(llama3_8b());
  const TrainingSetup t = lora(Method::kLora, {"all-linear"});
  const auto q = adapted_linear_on_rank(t, tensor(inv, "q"), 4, 0);
  REQUIRE(q);
  CHECK(q->in == 4096);
  CHECK(q->out == 1024);
  CHECK(q->params == 16 * (4096 + 1024));
  const auto down = adapted_linear_on_rank(t, tensor(inv, "down"), 4, 0);
  REQUIRE(down);
  CHECK(down->in == 14336 / 4);
  CHECK(down->out == 4096);
  const auto whole = adapted_linear_on_rank(t, tensor(inv, "down"), 1, 0);
  REQUIRE(whole);
  CHECK(whole->in == 14336);
  // The block program's ops give the same widths (adapter_widths).
  const BlockProgram p = block_program(llama3_8b(), t, false, false);
  for (std::size_t i = 0; i < p.op_count; ++i) {
    if (std::string(p.ops[i].role) != "down") continue;
    CHECK(adapter_widths(p.ops[i], 4).in == down->in);
    CHECK(adapter_widths(p.ops[i], 4).out == down->out);
  }
  // Methods PEFT does not divide under tensor parallelism keep the whole linear.
  CHECK(adapted_linear_on_rank(lora(Method::kIa3, {"down"}), tensor(inv, "down"), 4, 0)->in == 14336);
}
