// The caching allocator's loss segments across steps (memory/caching_allocator.cpp) and what they
// add to reserved memory in an estimate (memory/timeline.cpp), with and without expandable segments.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "api/api.h"
#include "memory/caching_allocator.h"

using nlohmann::json;
using namespace memfit;

namespace {

constexpr std::int64_t kMiB = 1LL << 20;

json estimate(const json& request) { return json::parse(api::estimate(request.dump())); }

json result_of(const json& request) {
  const json r = estimate(request);
  REQUIRE(r["ok"] == true);
  return r["result"];
}

// GC-04 of the H200 cross-check: Llama-3.2-1B, full fine-tuning under autocast, AdamW (foreach),
// micro-batch 4 x 1024 tokens, full checkpointing, the plain transformers loop.
json gc04_like(bool expandable) {
  json training{{"framework", "transformers_loop"}, {"method", "full"}, {"precision", "amp_bf16"},
                {"optimizer", "adamw"}, {"optimizer_impl", "foreach"}, {"micro_batch", 4}, {"seq_len", 1024},
                {"activation_checkpointing", "full"}, {"attention", "sdpa"}};
  if (expandable) training["expandable_segments"] = true;
  return json{{"model", {{"preset", "meta-llama/Llama-3.2-1B-Instruct"}}},
              {"training", training},
              {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}}}};
}

}  // namespace

TEST_CASE("large requests map segments rounded up to 2 MiB", "[allocator]") {
  CHECK(large_segment_bytes(4096LL * 128256 * 4) == 2004 * kMiB);  // fp32 logits of 4 x 1024 tokens
  CHECK(large_segment_bytes(10 * kMiB + 1) == 12 * kMiB);
}

TEST_CASE("optimizer states created in the loss's freed segments make the second step map them again", "[allocator]") {
  const std::int64_t buffer = 4096LL * 128256 * 4;
  // Llama-3.2-1B's 9.2 GiB of AdamW states fill all three 2004 MiB segments (GC-04: +5.87 GiB).
  CHECK(second_step_loss_segment_bytes(buffer, 3, 9'887'000'000, false) == 3 * 2004 * kMiB);
  // Fewer states than one segment holds still split one (Qwen2-0.5B, micro-batch 8: one 4748 MiB segment).
  CHECK(second_step_loss_segment_bytes(2 * buffer, 3, 1 * kMiB + 1, false) == large_segment_bytes(2 * buffer));
  // Two segments' worth: two.
  CHECK(second_step_loss_segment_bytes(buffer, 3, 2 * 2004 * kMiB, false) == 2 * 2004 * kMiB);
  // No large-pool states (LoRA adapters' states are small-pool tensors), or expandable segments: none.
  CHECK(second_step_loss_segment_bytes(buffer, 3, 0, false) == 0);
  CHECK(second_step_loss_segment_bytes(buffer, 3, 9'887'000'000, true) == 0);
  // A loss buffer of the small pool is served from shared 2 MiB segments.
  CHECK(second_step_loss_segment_bytes(512 * 1024, 3, 9'887'000'000, false) == 0);
}

TEST_CASE("the first step's loss maps a segment per buffer and one for logits no buffer fits in", "[allocator]") {
  const std::int64_t logits16 = 16384LL * 151936 * 2;  // Qwen3-4B's bf16 logits at 16k tokens: 4748 MiB
  const std::int64_t fp32 = 2 * logits16;              // the upcast and the loss buffers: 9496 MiB
  // Upcast loss: three fp32 segments and the bf16 logits' one, which no fp32 buffer fits in
  // (TG-03: 44.83 GiB reserved in step 1 = 12.33 before the loss + 4.64 + 3 x 9.27).
  CHECK(first_step_loss_segment_bytes(logits16, fp32, 3, false, false) == 4748 * kMiB + 3 * 9496 * kMiB);
  // Logits as wide as the loss buffers and freed before backward: a buffer reuses their segment.
  CHECK(first_step_loss_segment_bytes(fp32, fp32, 3, false, false) == 3 * 9496 * kMiB);
  // Held through the backward (a loop keeping `outputs`): their segment stays theirs.
  CHECK(first_step_loss_segment_bytes(fp32, fp32, 3, true, false) == 4 * 9496 * kMiB);
  // A logits-free kernel (no logits, no large loss buffer), the small pool, or expandable segments: none.
  CHECK(first_step_loss_segment_bytes(0, 0, 0, false, false) == 0);
  CHECK(first_step_loss_segment_bytes(256 * 1024, 512 * 1024, 3, false, false) == 0);
  CHECK(first_step_loss_segment_bytes(logits16, fp32, 3, false, true) == 0);
}

// TG-03 of the H200 trainer runs: TRL 1.4's SFTTrainer (May 2026: the standard loss), Qwen3-4B in bf16
// with --bf16, 16k packed tokens, full checkpointing, micro-batch 1.
json tg03_like(bool expandable) {
  json training{{"framework", "trl"}, {"framework_version", "2026-05"}, {"method", "full"}, {"precision", "bf16"},
                {"optimizer", "adamw"}, {"micro_batch", 1}, {"seq_len", 16384}, {"packed", true},
                {"activation_checkpointing", "full"}, {"attention", "sdpa"}};
  if (expandable) training["expandable_segments"] = true;
  return json{{"model", {{"preset", "Qwen/Qwen3-4B"}}},
              {"training", training},
              {"cluster", {{"gpu", {{"preset", "H200"}}}}},
              {"options", {{"timeline", false}, {"max_micro_batch", false}}}};
}

TEST_CASE("the second step holds the first step's cached logits segment beside its remapped ones", "[allocator][estimate]") {
  const json p = result_of(tg03_like(false));
  const std::int64_t first_step = p["first_step_peak_allocated_bytes"];
  const std::int64_t remapped = p["loss_segments_remapped_bytes"];
  CHECK(remapped == 2 * 9496 * kMiB);  // 15 GiB of AdamW states break two of the three fp32 segments
  // Measured (TG-03): 38.53 GiB allocated and 44.83 reserved in step 1, 63.38 reserved in step 2.
  CHECK(p["peak_reserved_bytes"].get<std::int64_t>() >= first_step + 4748 * kMiB + remapped);
  // With expandable segments neither the first step's segments nor the remapped ones.
  CHECK(result_of(tg03_like(true))["peak_reserved_bytes"].get<std::int64_t>() < first_step + 4748 * kMiB + remapped);
}

TEST_CASE("reserved exceeds allocated by the loss segments without expandable segments, not with them", "[allocator][estimate]") {
  const json p = result_of(gc04_like(false));
  const json x = result_of(gc04_like(true));
  CHECK(p["training"]["expandable_segments"] == false);
  CHECK(x["training"]["expandable_segments"] == true);
  const std::int64_t remapped = p["loss_segments_remapped_bytes"];
  CHECK(remapped == 3 * 2004 * kMiB);
  CHECK(x["loss_segments_remapped_bytes"] == 0);
  // The same tensors either way.
  CHECK(p["peak_allocated_bytes"] == x["peak_allocated_bytes"]);
  const std::int64_t gap = p["peak_reserved_bytes"].get<std::int64_t>() - p["peak_allocated_bytes"].get<std::int64_t>();
  const std::int64_t gap_expandable =
      x["peak_reserved_bytes"].get<std::int64_t>() - x["peak_allocated_bytes"].get<std::int64_t>();
  // Measured on one H200: 5.88 GiB without, 0.06 GiB with expandable segments (GC-04, GC-05).
  CHECK(gap > remapped * 9 / 10);
  CHECK(gap < remapped + 512 * kMiB);
  CHECK(gap_expandable < 512 * kMiB);
  CHECK(p["device_total_bytes"].get<std::int64_t>() - x["device_total_bytes"].get<std::int64_t>() == gap - gap_expandable);
}

TEST_CASE("expandable_segments must be a bool", "[allocator][errors]") {
  json r = gc04_like(false);
  r["training"]["expandable_segments"] = "yes";
  const json e = estimate(r);
  REQUIRE(e["ok"] == false);
  CHECK(e["error"]["path"] == "/training/expandable_segments");
  CHECK_FALSE(e["error"]["code"].get<std::string>().empty());
}
