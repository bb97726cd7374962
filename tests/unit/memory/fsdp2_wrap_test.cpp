// FSDP2 through accelerate shards a bitsandbytes 4-bit model where it was loaded, whole, on every
// GPU, with the original state dict alive beside the shards (the "wrap" event before the first
// step, DistributedBehaviour::fsdp2_wraps_loaded_4bit_model).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "api/api.h"
#include "memory/timeline.h"
#include "../test_support.h"

using nlohmann::json;
using namespace memfit;
using memfit_test::preset;

namespace {

TrainingSetup qlora_short() {
  TrainingSetup t = memfit_test::bf16(1, 256);
  t.precision = Precision::kAmpBf16;
  t.method = Method::kQlora;
  t.checkpointing = Checkpointing::kFull;
  return t;
}

ParallelLayout fsdp(std::int64_t dp, bool wraps_loaded) {
  ParallelLayout l;
  l.dp = dp;
  l.sharding = Sharding::kZero3;
  l.behaviour.fsdp2_wraps_loaded_4bit_model = wraps_loaded;
  return l;
}

Estimate peak_of(const ModelArchitecture& a, const TrainingSetup& t, const ParallelLayout& l) {
  return estimate_distributed(a, build_tensor_inventory(a), t, l).peak();
}

}  // namespace

TEST_CASE("sharding a 4-bit model loaded whole holds every loaded weight beside the shards", "[memory][fsdp2][qlora]") {
  const ModelArchitecture a = preset("meta-llama/Llama-2-13b-hf");
  const TrainingSetup t = qlora_short();
  ParallelLayout whole;  // one GPU: the weights as loaded
  const Estimate single = peak_of(a, t, whole);
  const Estimate plain = peak_of(a, t, fsdp(4, false));
  const Estimate wrapped = peak_of(a, t, fsdp(4, true));
  // What ZeRO-3 shards is what one GPU holds unsharded.
  CHECK(plain.states.loaded_weights_bytes == single.states.weights_bytes);
  CHECK(plain.states.weights_bytes < plain.states.loaded_weights_bytes / 3);
  // At seq 256 the step stays below the wrap: the run's peak is the wrap.
  REQUIRE(wrapped.peak_phase == "wrap");
  CHECK(wrapped.peak_tensor_bytes == plain.states.loaded_weights_bytes + plain.states.weights_bytes);
  CHECK(wrapped.timeline.front().phase == "wrap");
  CHECK(plain.peak_phase != "wrap");
  CHECK(wrapped.peak_allocated_bytes > 2 * plain.peak_allocated_bytes);
  // The peaks-only replay (the search's) agrees.
  CHECK(estimate_distributed(a, build_tensor_inventory(a), t, fsdp(4, true), {}, false).peak().peak_allocated_bytes ==
        wrapped.peak_allocated_bytes);
}

TEST_CASE("only 4-bit (Params4bit) models are sharded where they were loaded", "[memory][fsdp2][qlora]") {
  const ModelArchitecture a = preset("meta-llama/Llama-2-13b-hf");
  TrainingSetup t = qlora_short();
  t.method = Method::kLora;  // bf16 base: accelerate moves it to meta before fully_shard
  const Estimate lora = peak_of(a, t, fsdp(4, true));
  CHECK(lora.peak_phase != "wrap");
  CHECK(lora.peak_allocated_bytes == peak_of(a, t, fsdp(4, false)).peak_allocated_bytes);
}

TEST_CASE("parallel.fsdp_version 2 under hf_trainer: fully_shard, dated by accelerate's FSDP2 QLoRA support", "[api][fsdp2]") {
  json req = {{"schema_version", 1},
              {"model", {{"preset", "meta-llama/Llama-2-13b-hf"}}},
              {"training", {{"framework", "hf_trainer"}, {"framework_version", "2026-05"}, {"method", "qlora"},
                            {"micro_batch", 1}, {"seq_len", 256}, {"activation_checkpointing", "full"}}},
              {"cluster", {{"gpu", {{"preset", "RTX-3090"}}}, {"gpus", 4}}},
              {"parallel", {{"sharding", "zero3"}, {"fsdp_version", 2}}}};
  const auto behaviour = [](const json& r) { return r["result"]["parallel"]["behaviour"]; };
  json now = json::parse(api::estimate(req.dump()));
  REQUIRE(now["ok"] == true);
  CHECK(behaviour(now)["fsdp2_wraps_loaded_4bit_model"] == true);
  CHECK(behaviour(now)["gather_copy_out"] == true);
  req["training"]["framework_version"] = "2025-03";  // before accelerate v1.7.0
  json before = json::parse(api::estimate(req.dump()));
  REQUIRE(before["ok"] == true);
  CHECK(behaviour(before)["fsdp2_wraps_loaded_4bit_model"] == false);
  CHECK(before["result"]["peak_allocated_bytes"].get<std::int64_t>() < now["result"]["peak_allocated_bytes"].get<std::int64_t>());
  req["parallel"]["fsdp_version"] = 1;
  CHECK(behaviour(json::parse(api::estimate(req.dump())))["fsdp2_wraps_loaded_4bit_model"] == false);
  req["parallel"]["fsdp_version"] = 3;
  CHECK(json::parse(api::estimate(req.dump()))["error"]["path"] == "/parallel/fsdp_version");
  req["parallel"]["fsdp_version"] = 2;
  req["training"]["framework"] = "torchtune";
  const json other = json::parse(api::estimate(req.dump()));
  CHECK(other["ok"] == false);
  CHECK(other["error"]["path"] == "/parallel/fsdp_version");
}
