// prime-rl's SFT trainer profile (src/frameworks/prime_rl/profile.cpp): its current defaults, one
// test per dated behaviour, and what the 2026-01 loop's held output dict adds at the loss backward
// (tools/oracle/prime_rl_sft_probe.py: four fp32 tokens x vocabulary tensors live there, three
// once the loop deletes its output).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "api/api.h"
#include "frameworks/registry.h"

using nlohmann::json;
using namespace memfit;

namespace {

const FrameworkProfile& prime_rl() {
  const FrameworkProfile* p = find_framework("prime_rl");
  REQUIRE(p != nullptr);
  return *p;
}

json estimate(const char* version, std::int64_t seq_len) {
  const json req{{"model", {{"preset", "Qwen/Qwen3-0.6B"}}},
                 {"training", {{"framework", "prime_rl"}, {"framework_version", version}, {"method", "full"},
                               {"seq_len", seq_len}, {"micro_batch", 1}, {"grad_accum", 2},
                               {"activation_checkpointing", "full"}}},
                 {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 1}}},
                 {"options", {{"timeline", false}, {"max_micro_batch", false}}}};
  const json r = json::parse(api::estimate(req.dump()));
  INFO(r.dump().substr(0, 400));
  REQUIRE(r["ok"] == true);
  return r["result"];
}

}  // namespace

TEST_CASE("prime_rl: the current SFT trainer's defaults", "[frameworks][prime_rl]") {
  const TrainingSetup t = framework_defaults(prime_rl(), 0);
  CHECK(t.precision == Precision::kAmpBf16);
  CHECK(t.optimizer_impl == OptimizerImpl::kForeach);
  CHECK(t.checkpointing == Checkpointing::kNone);
  CHECK_FALSE(t.compile);
  CHECK_FALSE(t.compile_loss);
  CHECK(t.attention == AttentionKernel::kFlash);
  CHECK(t.loss == LossKernel::kTrlFusedHead);  // the chunked LM head: no [tokens, vocabulary] logits
  CHECK_FALSE(t.outputs_held_across_steps);
  CHECK(t.expandable_segments);
  CHECK(t.logged_counter == MemoryCounter::kMaxReserved);
  CHECK_FALSE(framework_behaviour(prime_rl(), 0).last_unit_kept);  // every block reshards after forward
  const FrameworkCapabilities c = framework_capabilities(Framework::kPrimeRl);
  CHECK(c.launch_formats.empty());
  CHECK_FALSE(c.sharding[static_cast<int>(Sharding::kNone)]);  // FSDP2 on every layout, no DDP
  CHECK(c.sharding[static_cast<int>(Sharding::kZero3)]);
  CHECK_FALSE(c.tp);  // no tensor-parallel plan is applied
  CHECK_FALSE(c.pp);
  CHECK(c.ep);
}

TEST_CASE("prime_rl: before 2026-07 the SFT loss runs on the whole fp32 logits", "[frameworks][prime_rl]") {
  CHECK(framework_defaults(prime_rl(), 202607).loss == LossKernel::kTrlFusedHead);
  const TrainingSetup t = framework_defaults(prime_rl(), 202606);
  CHECK(t.loss == LossKernel::kStandard);
  CHECK(t.logits_upcast_in_model);
  CHECK_FALSE(t.outputs_held_across_steps);  // 2026-03 on: the loss function ends `del out`
}

TEST_CASE("prime_rl: 2026-01 and 2026-02 hold the output dict through backward and the step", "[frameworks][prime_rl]") {
  CHECK_FALSE(framework_defaults(prime_rl(), 202603).outputs_held_across_steps);
  CHECK(framework_defaults(prime_rl(), 202602).outputs_held_across_steps);
  CHECK(framework_defaults(prime_rl(), 202601).outputs_held_across_steps);
  CHECK_FALSE(framework_defaults(prime_rl(), 202512).outputs_held_across_steps);
}

TEST_CASE("prime_rl: before 2026-02 the sft command leaves the allocator at PyTorch's defaults", "[frameworks][prime_rl]") {
  CHECK(framework_defaults(prime_rl(), 202602).expandable_segments);
  CHECK_FALSE(framework_defaults(prime_rl(), 202601).expandable_segments);
}

TEST_CASE("prime_rl: 2025-09 to 2025-12 the loss runs on the bf16 logits the model returns", "[frameworks][prime_rl]") {
  CHECK(framework_defaults(prime_rl(), 202601).logits_upcast_in_model);
  for (std::int64_t month : {202509, 202512}) {
    const TrainingSetup t = framework_defaults(prime_rl(), month);
    INFO(month);
    CHECK_FALSE(t.logits_upcast);
    CHECK_FALSE(t.logits_upcast_in_model);
    CHECK(t.loss == LossKernel::kStandard);
  }
}

TEST_CASE("prime_rl: before 2025-09 forward() returns the logits upcast to fp32", "[frameworks][prime_rl]") {
  const TrainingSetup t = framework_defaults(prime_rl(), 202508);
  CHECK(t.logits_upcast);
  CHECK(t.logits_upcast_in_model);
  CHECK_FALSE(t.outputs_held_across_steps);
  CHECK(t.loss == LossKernel::kStandard);
}

TEST_CASE("prime_rl: the held output dict adds one fp32 logits tensor at the loss backward", "[frameworks][prime_rl]") {
  const std::int64_t seq = 8192, vocab = 151936;
  const json held = estimate("2026-01", seq), dropped = estimate("2026-03", seq);
  const std::int64_t held_bytes = held["breakdown"]["logits_loss_bytes"].get<std::int64_t>();
  const std::int64_t dropped_bytes = dropped["breakdown"]["logits_loss_bytes"].get<std::int64_t>();
  // 2026-01: the held fp32 logits, the saved log-probs, the nll's and log_softmax's gradients.
  CHECK(held_bytes == 16 * seq * vocab);
  CHECK(dropped_bytes == 12 * seq * vocab);
  CHECK(held["framework"]["outputs_held_across_steps"] == true);
  // The chunked head of the current code never holds a logits-sized tensor.
  CHECK(estimate("2026-08", seq)["breakdown"]["logits_loss_bytes"].get<std::int64_t>() < seq * vocab);
}
