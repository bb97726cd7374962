// Invariants over generated models and layouts (a seeded generator: the same cases every run).
// Memory is monotone where it must be (micro-batch, sequence length, more shards, a higher ZeRO
// stage), ZeRO shards add up to the whole, every breakdown sums to its total, the same request
// always gets the same JSON text, and the search's two bounds (device-total floor, speed bound)
// hold.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/api.h"
#include "api/request.h"
#include "common/error.h"
#include "memory/timeline.h"
#include "perf/perf_model.h"
#include "search/bounds.h"
#include "hf_config/parse_hf_config.h"
#include "memory/model_states.h"
#include "model/tensor_inventory.h"

using nlohmann::json;
using namespace memfit;

namespace {

// splitmix64: portable, so a failing case number means the same case everywhere.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::int64_t in(std::int64_t lo, std::int64_t hi) { return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo + 1)); }
  template <typename T>
  const T& pick(const std::vector<T>& v) { return v[static_cast<std::size_t>(in(0, static_cast<std::int64_t>(v.size()) - 1))]; }
  bool chance(int percent) { return in(1, 100) <= percent; }

 private:
  std::uint64_t s_;
};

// A config.json of a random decoder: llama-style dense or mixtral-style MoE, or gpt2.
json random_config(Rng& r) {
  const std::int64_t heads = r.pick<std::int64_t>({1, 2, 4, 8, 12, 16, 32});
  const std::int64_t head_dim = r.pick<std::int64_t>({16, 32, 64, 128});
  const std::int64_t hidden = heads * head_dim;
  const std::int64_t layers = r.in(1, 40);
  const std::int64_t vocab = r.in(100, 160'000);
  if (r.chance(15)) {
    return json{{"model_type", "gpt2"}, {"vocab_size", vocab}, {"n_embd", hidden}, {"n_layer", layers},
                {"n_head", heads}, {"n_positions", 2048}};
  }
  std::vector<std::int64_t> kv;
  for (std::int64_t k = 1; k <= heads; ++k) {
    if (heads % k == 0) kv.push_back(k);
  }
  json c{{"model_type", "llama"}, {"vocab_size", vocab}, {"hidden_size", hidden}, {"num_hidden_layers", layers},
         {"num_attention_heads", heads}, {"num_key_value_heads", r.pick(kv)},
         {"intermediate_size", hidden * r.in(2, 4) + 8 * r.in(0, 16)}, {"tie_word_embeddings", r.chance(30)},
         {"max_position_embeddings", 131072}};
  if (r.chance(25)) {
    const std::int64_t experts = r.in(2, 16);
    c["model_type"] = "mixtral";
    c["num_local_experts"] = experts;
    c["num_experts_per_tok"] = r.in(1, std::min<std::int64_t>(experts, 4));
  }
  return c;
}

// A request for a random model, training setup and layout of a small cluster. Options keep the
// timeline and the largest-micro-batch search off: the invariants are about the peak.
json random_request(Rng& r) {
  const std::int64_t gpus = r.pick<std::int64_t>({1, 1, 2, 4, 8, 16});
  json training{{"method", r.pick<std::string>({"full", "full", "lora", "freeze"})},
                {"precision", r.pick<std::string>({"bf16", "amp_bf16", "fp32", "amp_fp16"})},
                {"optimizer", r.pick<std::string>({"adamw", "sgd", "adamw_8bit", "adafactor", "lion"})},
                {"micro_batch", r.in(1, 8)},
                {"seq_len", r.pick<std::int64_t>({64, 128, 512, 1024, 2048})},
                {"activation_checkpointing", r.pick<std::string>({"none", "full", "selective"})},
                {"framework", r.pick<std::string>({"hf_trainer", "deepspeed", "megatron", "torchtitan", "torchtune"})}};
  json request{{"model", {{"config", random_config(r)}}},
               {"training", training},
               {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", gpus}}},
               {"options", {{"timeline", false}, {"max_micro_batch", false}}}};
  if (gpus > 1) {
    const std::int64_t tp = r.pick<std::int64_t>({1, 1, 2});
    const std::int64_t pp = gpus / tp >= 2 && r.chance(30) ? 2 : 1;
    request["parallel"] = {{"tp", tp}, {"pp", pp}, {"sharding", r.pick<std::string>({"none", "zero1", "zero2", "zero3"})}};
  }
  return request;
}

json estimate(const json& request) { return json::parse(api::estimate(request.dump())); }

std::int64_t peak_of(const json& result, const char* key) { return result[key].get<std::int64_t>(); }

constexpr int kCases = 1500;

// Calls body(case number, request, parsed request) for `cases` generated requests that parse
// (a generated layout may break a rule).
template <typename Body>
void for_each_parsed_request(std::uint64_t seed, int cases, Body body) {
  Rng r(seed);
  for (int i = 0; i < cases; ++i) {
    const json request = random_request(r);
    std::optional<api::EstimateRequest> req;
    try {
      req = api::read_estimate_request(request);
    } catch (const Error&) {
      continue;
    }
    body(i, request, *req, r);  // r: the generator, for the body's own draws
  }
}

}  // namespace

TEST_CASE("generated requests: breakdowns sum to totals and answers are deterministic", "[property]") {
  Rng r(20240611);
  int answered = 0;
  for (int i = 0; i < kCases; ++i) {
    const json request = random_request(r);
    const std::string text = api::estimate(request.dump());
    const json env = json::parse(text);
    if (env["ok"] != true) continue;
    ++answered;
    INFO("case " << i << ": " << request.dump());
    const json& e = env["result"];
    for (const json& rank : e["ranks"]) {
      std::int64_t sum = 0;
      for (const auto& [key, bytes] : rank["breakdown"].items()) sum += bytes.get<std::int64_t>();
      CHECK(sum == rank["device_total_bytes"].get<std::int64_t>());
      CHECK(rank["peak_allocated_bytes"].get<std::int64_t>() <= rank["peak_reserved_bytes"].get<std::int64_t>());
      CHECK(rank["peak_reserved_bytes"].get<std::int64_t>() <= rank["device_total_bytes"].get<std::int64_t>());
    }
    std::int64_t sum = 0;
    for (const auto& [key, bytes] : e["breakdown"].items()) sum += bytes.get<std::int64_t>();
    CHECK(sum == peak_of(e, "device_total_bytes"));
    // Same request, same text, also after other requests have warmed the caches.
    if (i % 3 == 0) CHECK(api::estimate(request.dump()) == text);
  }
  INFO(answered << " of " << kCases << " generated requests answered");
  CHECK(answered > kCases * 7 / 10);
}

TEST_CASE("generated requests: memory never falls as the micro-batch or the sequence grows", "[property]") {
  Rng r(77);
  int compared = 0;
  for (int i = 0; i < kCases / 3; ++i) {
    json request = random_request(r);
    const json base = estimate(request);
    if (base["ok"] != true) continue;
    INFO("case " << i << ": " << request.dump());
    json more = request;
    more["training"]["micro_batch"] = request["training"]["micro_batch"].get<std::int64_t>() + 1;
    json longer = request;
    longer["training"]["seq_len"] = request["training"]["seq_len"].get<std::int64_t>() * 2;
    for (const json& bigger : {more, longer}) {
      const json e = estimate(bigger);
      REQUIRE(e["ok"] == true);
      ++compared;
      // Rank by rank: the headline is the most-loaded rank kind by device total, which may change
      // hands between pipeline stages whose totals are close.
      const json& ranks = e["result"]["ranks"];
      const json& base_ranks = base["result"]["ranks"];
      REQUIRE(ranks.size() == base_ranks.size());
      for (std::size_t k = 0; k < ranks.size(); ++k) {
        for (const char* key : {"peak_allocated_bytes", "peak_reserved_bytes", "device_total_bytes"}) {
          INFO(key << " of rank kind " << k << " after " << bigger["training"].dump());
          CHECK(peak_of(ranks[k], key) >= peak_of(base_ranks[k], key));
        }
      }
      INFO("activations_peak_bytes after " << bigger["training"].dump());
      CHECK(peak_of(e["result"], "activations_peak_bytes") >= peak_of(base["result"], "activations_peak_bytes"));
    }
  }
  CHECK(compared > kCases / 3);
}

TEST_CASE("generated requests: more shards never add model states on a rank", "[property]") {
  Rng r(4242);
  int compared = 0;
  for (int i = 0; i < kCases / 3; ++i) {
    json request = random_request(r);
    request["cluster"]["gpus"] = 2;
    request["parallel"] = {{"sharding", "none"}};
    std::int64_t previous = -1;
    // ZeRO 0 -> 1 -> 2 -> 3 over 2 ranks, then ZeRO-3 over 4 and 8 ranks.
    for (const auto& [sharding, gpus] : std::vector<std::pair<std::string, std::int64_t>>{
             {"none", 2}, {"zero1", 2}, {"zero2", 2}, {"zero3", 2}, {"zero3", 4}, {"zero3", 8}}) {
      request["parallel"]["sharding"] = sharding;
      request["cluster"]["gpus"] = gpus;
      const json e = estimate(request);
      if (e["ok"] != true) break;
      const std::int64_t states = e["result"]["model_states_bytes"].get<std::int64_t>();
      INFO("case " << i << " " << sharding << " over " << gpus << ": " << request.dump());
      if (previous >= 0) CHECK(states <= previous);
      previous = states;
      ++compared;
    }
  }
  CHECK(compared > kCases);
}

TEST_CASE("generated models: ZeRO shards of the states add up to the whole", "[property]") {
  Rng r(9001);
  int compared = 0;
  for (int i = 0; i < kCases; ++i) {
    const ModelArchitecture arch = parse_hf_config(random_config(r));
    const TensorInventory inv = build_tensor_inventory(arch);
    TrainingSetup t;
    t.precision = r.chance(50) ? Precision::kAmpBf16 : Precision::kBf16;
    t.optimizer = r.chance(70) ? Optimizer::kAdamW : Optimizer::kSgdMomentum;
    const ModelStates whole = compute_model_states(arch, inv, t);
    const std::int64_t n = r.pick<std::int64_t>({2, 3, 4, 8, 64, 1000});
    INFO("case " << i << ": " << n << " shards");
    RankShard shard;
    shard.dense_shard = shard.expert_shard = shard.data_parallel = n;
    // Each of the two parameter classes (dense, expert) rounds its shard up by less than a byte
    // per rank: n shards hold the whole, plus under 2n bytes of rounding.
    const auto adds_up = [n](std::int64_t part, std::int64_t all) { return part * n >= all && part * n < all + 2 * n; };
    shard.sharding = Sharding::kZero1;
    const ModelStates z1 = compute_model_states(arch, inv, t, shard);
    CHECK(adds_up(z1.optimizer_states_bytes, whole.optimizer_states_bytes));
    CHECK(z1.gradients_bytes == whole.gradients_bytes);
    shard.sharding = Sharding::kZero2;
    const ModelStates z2 = compute_model_states(arch, inv, t, shard);
    CHECK(adds_up(z2.gradients_bytes, whole.gradients_bytes));
    CHECK(z2.weights_bytes == whole.weights_bytes);
    shard.sharding = Sharding::kZero3;
    const ModelStates z3 = compute_model_states(arch, inv, t, shard);
    CHECK(adds_up(z3.weights_bytes, whole.weights_bytes));
    CHECK(adds_up(z3.gradients_bytes, whole.gradients_bytes));
    CHECK(adds_up(z3.optimizer_states_bytes, whole.optimizer_states_bytes));
    ++compared;
  }
  CHECK(compared == kCases);
}

TEST_CASE("generated layouts: the peaks-only replay gives the full replay's peaks", "[property][search]") {
  // The search and the largest-micro-batch probe replay only the dominating step (steady, or an
  // accumulating micro-batch), and the search shares model states between layouts that differ
  // only in sequence parallelism, checkpointing, micro-batch and accumulation; the full replay
  // also runs the first step and the other one, and computes its own states.
  int compared = 0;
  for_each_parsed_request(4242, kCases / 5, [&](int i, const json& request, const api::EstimateRequest& req, Rng&) {
    if (check_layout(req.parallel, req.model.arch, req.training)) return;
    INFO("case " << i << ": " << request.dump());
    const TensorInventory& inv = *req.model.inventory;
    for (std::int64_t ga : {1, 3}) {
      TrainingSetup t = req.training;
      t.grad_accum = ga;
      if (check_layout(req.parallel, req.model.arch, t)) continue;
      const DistributedEstimate full = estimate_distributed(req.model.arch, inv, t, req.parallel, {}, true);
      const DistributedEstimate peaks = estimate_distributed(req.model.arch, inv, t, req.parallel, {}, false);
      REQUIRE(full.ranks.size() == peaks.ranks.size());
      CHECK(full.peak_rank == peaks.peak_rank);
      for (std::size_t k = 0; k < full.ranks.size(); ++k) {
        const Estimate& a = full.ranks[k].estimate;
        const Estimate& b = peaks.ranks[k].estimate;
        CHECK(a.peak_allocated_bytes == b.peak_allocated_bytes);
        CHECK(a.peak_reserved_bytes == b.peak_reserved_bytes);
        CHECK(a.device_total_bytes == b.device_total_bytes);
        CHECK(a.activations_peak_bytes == b.activations_peak_bytes);
        CHECK(a.first_step_peak_allocated_bytes <= a.peak_allocated_bytes);
        ++compared;
      }
      // The search's path: the most-loaded rank alone, with the model states of a layout that
      // differs in sequence parallelism, checkpointing, micro-batch and accumulation.
      TrainingSetup other = t;
      other.micro_batch = t.micro_batch + 2;
      other.grad_accum = ga == 1 ? 4 : 1;
      other.checkpointing = t.checkpointing == Checkpointing::kFull ? Checkpointing::kNone : Checkpointing::kFull;
      ParallelLayout other_layout = req.parallel;
      other_layout.sequence_parallel = req.parallel.tp > 1 && !req.parallel.sequence_parallel;
      const std::vector<ModelStates> shared = rank_model_states(req.model.arch, inv, other, other_layout);
      for (const std::vector<ModelStates>* states : {static_cast<const std::vector<ModelStates>*>(nullptr), &shared}) {
        const PeakSummary p = estimate_peak(req.model.arch, inv, t, req.parallel, {}, states);
        CHECK(p.device_total_bytes == full.peak().device_total_bytes);
        CHECK(p.peak_allocated_bytes == full.peak().peak_allocated_bytes);
        CHECK(p.peak_reserved_bytes == full.peak().peak_reserved_bytes);
        CHECK(p.peak_rank == full.peak_rank);
        CHECK(p.rank_kind == full.ranks[full.peak_rank].context.kind.name);
      }
      CHECK(device_total_floor_bytes(shared, t, req.parallel) ==
            device_total_floor_bytes(req.model.arch, inv, t, req.parallel));
    }
  });
  CHECK(compared > kCases / 5);
}

TEST_CASE("generated layouts: the device-total floor never exceeds an estimate at any micro-batch", "[property][search]") {
  // The search settles a layout as out of memory when this floor passes the GPU's memory, and
  // shares one floor between layouts that differ only in sequence parallelism or checkpointing.
  int compared = 0;
  for_each_parsed_request(31337, kCases / 5, [&](int i, const json& request, const api::EstimateRequest& req, Rng&) {
    if (check_layout(req.parallel, req.model.arch, req.training)) return;
    INFO("case " << i << ": " << request.dump());
    const TensorInventory& inv = *req.model.inventory;
    const std::int64_t floor = device_total_floor_bytes(req.model.arch, inv, req.training, req.parallel);
    for (std::int64_t mb : {1, 3}) {
      for (std::int64_t ga : {1, 4}) {
        TrainingSetup t = req.training;
        t.micro_batch = mb;
        t.grad_accum = ga;
        ParallelLayout l = req.parallel;
        for (bool sp : {false, true}) {
          if (sp && l.tp == 1) continue;
          l.sequence_parallel = sp;
          for (Checkpointing ck : {Checkpointing::kNone, Checkpointing::kSelective, Checkpointing::kFull}) {
            t.checkpointing = ck;
            if (check_layout(l, req.model.arch, t)) continue;
            CHECK(device_total_floor_bytes(req.model.arch, inv, t, l) == floor);
            CHECK(floor <= estimate_distributed(req.model.arch, inv, t, l, {}, false).peak().device_total_bytes);
            ++compared;
          }
        }
      }
    }
  });
  CHECK(compared > kCases);
}

TEST_CASE("generated layouts: the forward floor never exceeds the estimate, and cuts only what is out of memory", "[property][search]") {
  // The search's fastest-first walk stops a memory estimate at a rank kind whose forward floor
  // passes the GPU: the floor must bound the peak from below for every setup, and the cut must
  // give the uncut answer whenever it does not fire.
  int compared = 0;
  for_each_parsed_request(8128, kCases / 5, [&](int i, const json& request, const api::EstimateRequest& req, Rng&) {
    if (check_layout(req.parallel, req.model.arch, req.training)) return;
    INFO("case " << i << ": " << request.dump());
    const TensorInventory& inv = *req.model.inventory;
    for (std::int64_t ga : {1, 4}) {
      TrainingSetup t = req.training;
      t.grad_accum = ga;
      for (Checkpointing ck : {Checkpointing::kNone, Checkpointing::kSelective, Checkpointing::kFull}) {
        t.checkpointing = ck;
        if (check_layout(req.parallel, req.model.arch, t)) continue;
        const PeakSummary peak = estimate_peak(req.model.arch, inv, t, req.parallel);
        const std::int64_t floor = forward_floor_device_total_bytes(req.model.arch, inv, t, req.parallel);
        CHECK(floor > 0);
        CHECK(floor <= peak.device_total_bytes);
        // A limit at the floor leaves the estimate whole; one below it cuts it.
        const std::optional<PeakSummary> at = estimate_peak_within(req.model.arch, inv, t, req.parallel, {}, nullptr, floor);
        REQUIRE(at.has_value());
        CHECK(at->device_total_bytes == peak.device_total_bytes);
        CHECK_FALSE(estimate_peak_within(req.model.arch, inv, t, req.parallel, {}, nullptr, floor - 1).has_value());
        ++compared;
      }
    }
  });
  CHECK(compared > kCases / 5);
}

TEST_CASE("generated layouts: the first kind's activations are shared by every sharding and offload, and bound its floor", "[property][search]") {
  // The search settles a layout from the activations another sharding or offload of it was
  // estimated to keep (forward_floor_lower_bound): they must not depend on either (ZeRO-3 apart),
  // and the bound must stay under the first kind's forward floor, hence under the estimate.
  int compared = 0;
  for_each_parsed_request(8129, kCases / 5, [&](int i, const json& request, const api::EstimateRequest& req, Rng&) {
    if (check_layout(req.parallel, req.model.arch, req.training)) return;
    INFO("case " << i << ": " << request.dump());
    const ModelArchitecture& a = req.model.arch;
    const TensorInventory& inv = *req.model.inventory;
    // Sharding none, ZeRO-1 and ZeRO-2 share one value, ZeRO-3 another, whatever the offload.
    std::optional<std::int64_t> shared, shared_zero3;
    for (Sharding sh : {Sharding::kNone, Sharding::kZero1, Sharding::kZero2, Sharding::kZero3}) {
      for (Offload off : {Offload::kNone, Offload::kOptimizer, Offload::kParamsOptimizer}) {
        ParallelLayout l = req.parallel;
        l.sharding = sh;
        TrainingSetup t = req.training;
        if (t.offload != Offload::kActivations) t.offload = off;
        if (check_layout(l, a, t)) continue;
        std::int64_t acts = -1;
        const std::optional<PeakSummary> peak =
            unless_beyond_exact([&] { return estimate_peak_within(a, inv, t, l, {}, nullptr, kNoMemoryLimit, &acts); })
                .value_or(std::nullopt);
        if (!peak) continue;  // past 2^53
        REQUIRE(acts >= 0);
        const std::vector<ModelStates> states = rank_model_states(a, inv, t, l);
        const std::int64_t bound = forward_floor_lower_bound(states.front(), acts, l, {});
        CHECK(bound <= forward_floor_device_total_bytes(a, inv, t, l));
        CHECK(bound <= peak->device_total_bytes);
        std::optional<std::int64_t>& same = sh == Sharding::kZero3 ? shared_zero3 : shared;
        if (same) CHECK(acts == *same);
        same = acts;
        ++compared;
      }
    }
  });
  CHECK(compared > kCases / 5);
}

TEST_CASE("generated layouts: the speed bound covers every micro-batch, accumulation and offload under it", "[property][search]") {
  // The search ranks a structure by this bound before timing its candidates, and shares it
  // between layouts of one sharding stage that differ only in the offload.
  int compared = 0;
  for_each_parsed_request(2718, kCases / 5, [&](int i, const json& request, const api::EstimateRequest& req, Rng& r) {
    INFO("case " << i << ": " << request.dump());
    ClusterSpec c;
    c.gpu = req.gpu;
    c.gpus = req.gpus;
    c.gpus_per_node = r.pick<std::int64_t>({1, 2, 8});
    const PerfBasis basis = build_perf_basis(req.model.arch, *req.model.inventory, req.training);
    TrainingSetup largest = req.training;
    largest.micro_batch = r.in(1, 8);
    largest.grad_accum = r.in(1, 16);
    for (Sharding sh : {Sharding::kNone, Sharding::kZero1, Sharding::kZero2, Sharding::kZero3}) {
      // Sequence parallelism too: DTensor's all-gathers are views at micro-batch 1 only.
      for (bool sp : {false, true}) {
        if (sp && req.parallel.tp == 1) continue;
        ParallelLayout l = req.parallel;
        l.sharding = sh;
        l.sequence_parallel = sp;
        const double bound = tokens_per_s_upper_bound(basis, largest, l, c);
        CHECK(std::isfinite(bound));
        for (std::int64_t mb = 1; mb <= largest.micro_batch; ++mb) {
          for (std::int64_t ga : {1, 2, 3, 8, 64}) {
            for (Offload off : {Offload::kNone, Offload::kOptimizer, Offload::kParamsOptimizer}) {
              TrainingSetup t = req.training;
              t.micro_batch = mb;
              t.grad_accum = ga;
              t.offload = off;
              CHECK(estimate_step_time(basis, t, l, c).tokens_per_s <= bound);
              ++compared;
            }
          }
        }
      }
    }
  });
  CHECK(compared > kCases);
}
