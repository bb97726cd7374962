// The search's memo of layer activations (activations.h LayerActivationsMemo): it answers what
// layer_activations answers, and two keys that differ in one field the fold reads stay apart.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "block/activations.h"
#include "hf_config/parse_hf_config.h"
#include "../test_support.h"
#include "toy_models.h"

using namespace memfit;

namespace {

// One call of layer_activations: its arguments but the architecture.
struct Call {
  TrainingSetup t;
  bool moe = false, cross_attention = false, base_trains = true;
  ActivationSplit split;
};

LayerActivations direct(const ModelArchitecture& a, const Call& c) {
  return layer_activations(a, c.t, c.moe, c.cross_attention, c.base_trains, c.split);
}

LayerActivations memoised(LayerActivationsMemo& memo, const ModelArchitecture& a, const Call& c) {
  return memo.get(a, c.t, c.moe, c.cross_attention, c.base_trains, c.split);
}

Call lora(std::vector<std::string> targets) {
  Call c;
  c.t.method = Method::kLora;
  c.t.lora_targets = std::move(targets);
  c.base_trains = false;
  return c;
}

// Variants of a LoRA on q and v at tp 2, each changing one field that the fold reads (and that
// changes its result on the dense toy), named for the failure message.
std::vector<std::pair<std::string, std::function<void(Call&)>>> one_field_changes() {
  return {
      {"split.tp", [](Call& c) { c.split.tp = 4; }},
      {"split.sequence_parallel", [](Call& c) { c.split.sequence_parallel = true; }},
      {"precision", [](Call& c) { c.t.precision = Precision::kFp32; }},
      {"attention", [](Call& c) { c.t.attention = AttentionKernel::kEager; }},
      {"checkpointing", [](Call& c) { c.t.checkpointing = Checkpointing::kSelective; }},
      {"checkpoint_saved_inputs_per_block", [](Call& c) { c.t.checkpoint_saved_inputs_per_block = 4; }},
      {"cross_attention", [](Call& c) { c.cross_attention = true; }},
      {"lora_rank", [](Call& c) { c.t.lora_rank = 8; }},
      {"lora_dropout", [](Call& c) { c.t.lora_dropout = 0.05; }},
      {"lora_targets", [](Call& c) { c.t.lora_targets = {"q", "v", "down"}; }},
      {"method", [](Call& c) { c.t.method = Method::kDora; }},
      {"base_trains", [](Call& c) { c.base_trains = true; }},
  };
}

}  // namespace

TEST_CASE("the layer activations memo answers what layer_activations answers", "[block][search]") {
  const ModelArchitecture dense = memfit_test::toy_llama(), moe = memfit_test::moe_toy();
  std::vector<std::pair<const ModelArchitecture*, Call>> calls;
  Call full;  // full fine-tuning, no split
  calls.push_back({&dense, full});
  for (std::int64_t tp : {2, 4}) {
    Call c = full;
    c.split.tp = tp;
    c.split.sequence_parallel = tp == 4;
    calls.push_back({&dense, c});
  }
  Call gathered = full;
  gathered.split = {2, true, true, 0};
  calls.push_back({&dense, gathered});
  Call selective = full;
  selective.t.checkpointing = Checkpointing::kSelective;
  calls.push_back({&dense, selective});
  calls.push_back({&dense, lora({"all-linear"})});
  Call prefix;
  prefix.t.method = Method::kPrefixTuning;
  prefix.t.micro_batch = 3;
  prefix.base_trains = false;
  calls.push_back({&dense, prefix});
  Call ia3 = lora({"k", "v", "down"});  // PEFT's other adapters: no key, every call folded
  ia3.t.method = Method::kIa3;
  calls.push_back({&dense, ia3});
  Call experts = full;
  experts.moe = true;
  experts.split = {2, true, false, 1};
  calls.push_back({&moe, experts});
  Call experts_lora = lora({"all-linear", "shared_gate"});
  experts_lora.moe = true;
  calls.push_back({&moe, experts_lora});

  LayerActivationsMemo memo;
  for (int round = 0; round < 2; ++round) {  // the second round is answered from the memo
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const auto& [arch, c] = calls[i];
      INFO("round " << round << ", call " << i);
      CHECK(memoised(memo, *arch, c) == direct(*arch, c));
    }
  }
  // The calls of the last architecture are kept (the IA3 call has no key).
  CHECK(memo.size() == 2);
  for (const auto& [arch, c] : calls) {
    if (arch == &dense) CHECK(memoised(memo, *arch, c) == direct(*arch, c));
  }
  CHECK(memo.size() == 7);
}

TEST_CASE("the layer activations memo keeps keys that differ in one field apart", "[block][search]") {
  const ModelArchitecture a = memfit_test::toy_llama();
  Call base = lora({"q", "v"});
  base.split.tp = 2;
  const LayerActivations expected_base = direct(a, base);
  for (const auto& [field, change] : one_field_changes()) {
    INFO(field);
    Call changed = base;
    change(changed);
    const LayerActivations expected = direct(a, changed);
    REQUIRE(!(expected == expected_base));  // the field moves the fold's result
    REQUIRE(layer_activations_key(base.t, base.moe, base.cross_attention, base.base_trains, base.split) !=
            layer_activations_key(changed.t, changed.moe, changed.cross_attention, changed.base_trains, changed.split));
    LayerActivationsMemo memo;
    CHECK(memoised(memo, a, base) == expected_base);
    CHECK(memoised(memo, a, changed) == expected);
    CHECK(memoised(memo, a, base) == expected_base);
    CHECK(memo.size() == 2);
  }
}

TEST_CASE("the layer activations memo keys micro-batch, prefix and expert fields", "[block][search]") {
  const ModelArchitecture dense = memfit_test::toy_llama(), moe = memfit_test::moe_toy();
  // Prefix tuning: the kernel's K/V per sequence grow with the virtual tokens, per micro-batch.
  Call prefix;
  prefix.t.method = Method::kPrefixTuning;
  prefix.base_trains = false;
  Call more_sequences = prefix, more_tokens = prefix;
  more_sequences.t.micro_batch = 2;
  more_tokens.t.virtual_tokens = 40;
  // LLaMA-Adapter's prefix length.
  Call adaption;
  adaption.t.method = Method::kAdaptionPrompt;
  adaption.base_trains = false;
  Call longer_prompt = adaption;
  longer_prompt.t.adapter_prompt_length = 20;
  // Expert tensor parallelism apart from tp, and a LoRA on the shared expert's gate.
  Call experts;
  experts.moe = true;
  experts.split.tp = 2;
  Call folded = experts;
  folded.split.expert_tp = 1;
  Call gate = lora({"q", "v"}), gate_targeted = lora({"q", "v", "shared_gate"});
  gate.moe = gate_targeted.moe = true;
  const std::vector<std::tuple<const char*, const ModelArchitecture*, Call, Call>> pairs = {
      {"micro_batch", &dense, prefix, more_sequences},
      {"virtual_tokens", &dense, prefix, more_tokens},
      {"adapter_prompt_length", &dense, adaption, longer_prompt},
      {"split.expert_tp", &moe, experts, folded},
      {"shared_gate", &moe, gate, gate_targeted},
  };
  for (const auto& [field, arch, one, other] : pairs) {
    INFO(field);
    const LayerActivations expected_one = direct(*arch, one), expected_other = direct(*arch, other);
    REQUIRE(!(expected_one == expected_other));
    LayerActivationsMemo memo;
    CHECK(memoised(memo, *arch, one) == expected_one);
    CHECK(memoised(memo, *arch, other) == expected_other);
    CHECK(memo.size() == 2);
  }
}

TEST_CASE("the layer activations key leaves out what the fold does not read", "[block][search]") {
  Call c = lora({"q", "v"});
  Call other = c;
  other.t.seq_len = 8192;       // per token: the sequence length is the caller's
  other.t.grad_accum = 4;
  other.t.offload = Offload::kOptimizer;
  CHECK(layer_activations_key(c.t, c.moe, c.cross_attention, c.base_trains, c.split) ==
        layer_activations_key(other.t, other.moe, other.cross_attention, other.base_trains, other.split));
  Call ia3 = c;
  ia3.t.method = Method::kIa3;  // its terms read fields the key does not hold
  CHECK_FALSE(layer_activations_key(ia3.t, ia3.moe, ia3.cross_attention, ia3.base_trains, ia3.split).has_value());
}
