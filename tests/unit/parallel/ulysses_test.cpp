// DeepSpeed Ulysses sequence parallelism (parallel.cp_kind "ulysses"): its layout rules, the
// all-to-all buffers and NCCL connections it adds, its step time and its request field.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "api/api.h"
#include "frameworks/launch.h"
#include "memory/timeline.h"
#include "parallel/layout.h"
#include "perf/perf_model.h"
#include "search/search.h"
#include "../test_support.h"

using nlohmann::json;
using namespace memfit;
using memfit_test::preset;

namespace {

TrainingSetup long_bf16(std::int64_t seq_len) {
  TrainingSetup t = memfit_test::bf16(1, seq_len);
  t.checkpointing = Checkpointing::kFull;
  t.attention = AttentionKernel::kFlash;
  return t;
}

ParallelLayout sharded(std::int64_t dp, std::int64_t cp, ContextParallelKind kind) {
  ParallelLayout l;
  l.dp = dp;
  l.cp = cp;
  l.cp_kind = kind;
  l.sharding = Sharding::kZero3;
  return l;
}

Estimate peak_of(const ModelArchitecture& a, const TrainingSetup& t, const ParallelLayout& l) {
  return estimate_distributed(a, build_tensor_inventory(a), t, l).peak();
}

}  // namespace

TEST_CASE("Ulysses scatters heads: cp must divide them, and kv heads and cp one another", "[ulysses][layout]") {
  const ModelArchitecture a = preset("Qwen/Qwen3-4B");  // 32 heads, 8 kv heads
  TrainingSetup t = long_bf16(16384);
  ParallelLayout l = sharded(1, 16, ContextParallelKind::kUlysses);
  CHECK(broken_layout_rule(l, a, t) == nullptr);  // 16 > 8 kv heads: repeated, allowed
  l.cp = 64;
  l.dp = 1;
  REQUIRE(broken_layout_rule(l, a, t) != nullptr);
  CHECK(std::string(broken_layout_rule(l, a, t)) == "ulysses_divides_heads");
  // The ring has no head rule but needs 2 x cp load-balanced chunks; Ulysses needs cp shards.
  t.seq_len = 16 * 3;
  l.cp = 16;
  CHECK(broken_layout_rule(l, a, t) == nullptr);
  l.cp_kind = ContextParallelKind::kRing;
  CHECK(std::string(broken_layout_rule(l, a, t)) == "cp_divides_sequence");
}

TEST_CASE("Ulysses holds the whole sequence's q/k/v over heads / cp, not the ring's gathered K/V", "[ulysses][memory]") {
  const ModelArchitecture a = preset("Qwen/Qwen3-4B");  // 32 heads, 8 kv heads of 128
  const TrainingSetup t = long_bf16(32768);
  for (std::int64_t cp : {2, 8, 16}) {
    INFO("cp " << cp);
    const ParallelLayout l = sharded(16 / cp, cp, ContextParallelKind::kUlysses);
    const std::vector<RankContext> ranks = plan_ranks(l, a, t);
    REQUIRE(ranks.size() == 1);
    CHECK(plan_rank(l, t).cp_kind == ContextParallelKind::kUlysses);
    CHECK(ranks[0].nccl.p2p_peers == cp - 1);
    // Same tokens per rank as the ring; activations outside attention split alike.
    const Estimate u = peak_of(a, t, l);
    const Estimate r = peak_of(a, t, sharded(16 / cp, cp, ContextParallelKind::kRing));
    CHECK(u.tokens_per_micro_batch == 32768 / cp);
    CHECK(u.tokens_per_micro_batch == r.tokens_per_micro_batch);
    // NCCL: every other cp rank is an all-to-all peer (3.28 GB / 7 peers, NVIDIA/nccl #1685).
    const RuntimeProfile rt;
    CHECK(u.nccl_bytes - r.nccl_bytes == (cp - 1) * rt.nccl_p2p_peer_bytes);
  }
  // The exchange: send copy and received tensor of q (32 heads) and k, v (8 heads, repeated to
  // one per rank at cp 16), per local token, in bf16; the ring gathers cp chunks of K/V instead.
  // The backward holds the exchange twice (with the K/V gradients), nothing else communicates.
  const std::int64_t tokens = 32768 / 16;
  const auto most_communication = [](const Estimate& e) {
    std::int64_t most = 0;
    for (const TimelineEvent& ev : e.timeline) most = std::max(most, ev.live.communication_bytes);
    return most;
  };
  const Estimate u = peak_of(a, t, sharded(1, 16, ContextParallelKind::kUlysses));
  const Estimate r = peak_of(a, t, sharded(1, 16, ContextParallelKind::kRing));
  CHECK(most_communication(u) == 2 * (2 * tokens * 2 * (32 * 128 + 16 * 256)));
  CHECK(most_communication(r) == 2 * (tokens * 2 * 8 * 256 * 16));
}

TEST_CASE("Ulysses pays four waited all-to-alls per pass, each (cp - 1) / cp of a local tensor", "[ulysses][perf]") {
  RingAttentionShape s;
  s.tokens = 4096;
  s.q_width = 32 * 128;
  s.kv_width = 16 * 256;  // k and v, repeated to 16 heads
  s.out_width = 32 * 128;
  s.act_bytes = 2;
  s.cp = 16;
  const double bw = 100e9, latency = 20e-6;
  const double sent = 4096.0 * 2 * 15 / 16 * (32 * 128 + 16 * 128 + 16 * 128 + 32 * 128);
  CHECK(ulysses_all_to_all_s(s, bw, latency) == Approx(sent / bw + 4 * latency).epsilon(1e-12));
  s.cp = 1;
  CHECK(ulysses_all_to_all_s(s, bw, latency) == 0);

  // In the step (the API's exposed cp time): the 4B at 32k on 16 H100s, every pass over NVLink
  // (360 GB/s with the 0.8 collective efficiency, NCCL's point-to-point latency a call), three passes per layer under full
  // checkpointing: cp 2 sends 1/2 of 16,384 tokens, cp 8 sends 7/8 of 4,096, of q, k, v (8 heads
  // each, no repetition) and the output, 10,240 elements a token in bf16.
  const auto exposed_cp = [](std::int64_t cp) {
    const json req = {{"schema_version", 1},
                      {"model", {{"preset", "Qwen/Qwen3-4B"}}},
                      {"training", {{"method", "full"}, {"precision", "bf16"}, {"micro_batch", 1}, {"seq_len", 32768},
                                    {"activation_checkpointing", "full"}, {"attention", "flash"}}},
                      {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 16}}},
                      {"parallel", {{"cp", cp}, {"cp_kind", "ulysses"}, {"sharding", "zero3"}}}};
    return json::parse(api::estimate(req.dump()))["result"]["perf"]["exposed_communication_s"]["cp"].get<double>();
  };
  const PerfConstants k;
  const double call_s = k.nccl_base_latency_s + k.nccl_ring_hop_nvlink_s;  // nccl_p2p_latency_s within a node
  const auto pass_s = [&](double tokens, double share) { return tokens * 2 * share * 10240 / 360e9 + 4 * call_s; };
  CHECK(exposed_cp(2) == Approx(36 * 3 * pass_s(16384, 0.5)).epsilon(1e-6));
  CHECK(exposed_cp(8) == Approx(36 * 3 * pass_s(4096, 0.875)).epsilon(1e-6));
}

TEST_CASE("parallel.cp_kind is read, echoed, and a wrong value names its field", "[ulysses][api]") {
  json req = {{"schema_version", 1},
              {"model", {{"preset", "Qwen/Qwen3-4B"}}},
              {"training", {{"method", "full"}, {"micro_batch", 1}, {"seq_len", 16384}, {"activation_checkpointing", "full"}}},
              {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 8}}},
              {"parallel", {{"dp", 4}, {"cp", 2}, {"cp_kind", "ulysses"}, {"sharding", "zero3"}}}};
  const json ok = json::parse(api::estimate(req.dump()));
  REQUIRE(ok["ok"] == true);
  CHECK(ok["result"]["parallel"]["cp_kind"] == "ulysses");
  req["parallel"]["cp_kind"] = "spiral";
  const json bad = json::parse(api::estimate(req.dump()));
  CHECK(bad["ok"] == false);
  CHECK(bad["error"]["path"] == "/parallel/cp_kind");
}

TEST_CASE("a Ulysses layout gets no Megatron or torchtitan launch: their context parallelism is a ring", "[ulysses][launch]") {
  const ModelArchitecture a = preset("Qwen/Qwen3-4B");
  LaunchInput in;
  in.arch = &a;
  in.model_id = "Qwen/Qwen3-4B";
  in.layout = sharded(4, 2, ContextParallelKind::kRing);
  in.setup = long_bf16(16384);
  const auto by_format = [](const std::vector<LaunchFormat>& fs, const std::string& format) {
    for (const LaunchFormat& f : fs) {
      if (f.format == format) return f;
    }
    FAIL("no launch format " << format);
    return LaunchFormat{};
  };
  CHECK(by_format(launch_configs(in), "megatron_args").supported);
  CHECK(by_format(launch_configs(in), "torchtitan_toml").supported);
  in.layout.cp_kind = ContextParallelKind::kUlysses;
  for (const char* format : {"megatron_args", "torchtitan_toml"}) {
    const LaunchFormat f = by_format(launch_configs(in), format);
    CHECK_FALSE(f.supported);
    REQUIRE(f.notes.size() == 1);
    CHECK(f.notes[0].find("Ulysses") != std::string::npos);
  }
}

TEST_CASE("a search with cp_kind ulysses runs every cp > 1 candidate as Ulysses, under its head rule", "[ulysses][search]") {
  const ModelArchitecture a = preset("Qwen/Qwen3-4B");  // 32 heads: cp 64 breaks the head rule
  const TensorInventory inv = build_tensor_inventory(a);
  SearchInput in;
  in.arch = &a;
  in.inv = &inv;
  in.training = long_bf16(65536);
  in.cluster = memfit_test::cluster("H100-80GB", 64);
  in.top = 1000;
  in.space.tp = {1};
  in.space.pp = {1};
  in.space.cp = {16, 64};
  in.space.sharding = {Sharding::kZero3};
  in.space.offload = {Offload::kNone};
  in.space.checkpointing = {Checkpointing::kFull};
  in.space.micro_batch = {1};
  in.space.cp_kind = ContextParallelKind::kUlysses;
  const SearchResult r = run_search(in);
  REQUIRE_FALSE(r.top.empty());
  for (const Candidate& c : r.top) {
    CHECK(c.layout.cp == 16);
    CHECK(c.layout.cp_kind == ContextParallelKind::kUlysses);
    CHECK(c.method.find("Ulysses SP") != std::string::npos);
  }
  std::int64_t head_rule = 0;
  for (const auto& [code, n] : r.rejected) head_rule += code == "ulysses_divides_heads" ? n : 0;
  CHECK(head_rule > 0);
}
