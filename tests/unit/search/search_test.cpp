// The search's exactness (its pruned walk finds the same best layout as estimating every
// candidate), its counts and constraints, mixed clusters, the model-states memo, and LLMem's
// Table 3 method order.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "api/api.h"
#include "memory/model_states.h"
#include "perf/perf_model.h"
#include "search/search.h"
#include "../test_support.h"
#include "frameworks/profile.h"

using nlohmann::json;
using namespace memfit;
using namespace memfit_test;

namespace {

/// A search over one 8-GPU node of `gpu`, bf16 at sequence 4096, with neither pipeline nor
/// context parallelism, full checkpointing and no offload.
SearchInput one_node_search(const ModelArchitecture& a, const TensorInventory& inv, const char* gpu, std::int64_t top) {
  SearchInput in;
  in.arch = &a;
  in.inv = &inv;
  in.training = bf16(1, 4096);
  in.cluster = cluster(gpu, 8);
  in.top = top;
  in.space.pp = {1};
  in.space.cp = {1};
  in.space.offload = {Offload::kNone};
  in.space.checkpointing = {Checkpointing::kFull};
  return in;
}

json call(std::string (*f)(std::string_view), const json& request) { return json::parse(f(request.dump())); }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("the pruned search finds the best layout that estimating every candidate finds", "[search]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TensorInventory inv = build_tensor_inventory(a);
  SearchInput in;
  in.arch = &a;
  in.inv = &inv;
  in.training = bf16(1, 4096);
  in.training.precision = Precision::kAmpBf16;
  in.cluster = cluster("A100-40GB", 8);
  in.global_batch = 32;
  in.top = 5;
  in.space.max_micro_batch = 4;
  in.space.offload = {Offload::kNone};
  const SearchResult r = run_search(in);
  REQUIRE(!r.top.empty());
  // Brute force: every valid candidate estimated.
  double best_tps = 0;
  double best_comfortable_tps = 0;  // verdict fits: under the 80 % line
  const PerfBasis basis = build_perf_basis(a, inv, in.training);
  std::int64_t brute_valid = 0;
  std::map<std::string, std::pair<double, double>> family_tps;  // fastest under the 80 % line, fastest tight
  for (std::int64_t tp : {1, 2, 4, 8}) {
    for (std::int64_t pp : {1, 2, 4, 8}) {
      if (tp * pp > 8) continue;
      for (std::int64_t cp : {1, 2, 4, 8}) {
        if (tp * pp * cp > 8) continue;
        const std::int64_t dp = 8 / (tp * pp * cp);
        for (Sharding sh : {Sharding::kNone, Sharding::kZero1, Sharding::kZero2, Sharding::kZero3}) {
          if (dp * cp == 1 && sh != Sharding::kNone) continue;
          for (bool sp : {false, true}) {
            if (sp && tp == 1) continue;
            for (std::int64_t v = 1; v <= 32; ++v) {
              if (v > 1 && (pp == 1 || 32 % (pp * v) != 0)) continue;
              for (Checkpointing ck : {Checkpointing::kNone, Checkpointing::kSelective, Checkpointing::kFull}) {
                for (std::int64_t mb = 1; mb <= 4; ++mb) {
                  if (32 % (dp * mb) != 0) continue;
                  ParallelLayout l;
                  l.tp = tp; l.pp = pp; l.cp = cp; l.dp = dp; l.vpp = v; l.sharding = sh; l.sequence_parallel = sp;
                  l.schedule = v > 1 ? PipelineSchedule::kInterleaved : PipelineSchedule::k1F1B;
                  TrainingSetup t = in.training;
                  t.checkpointing = ck;
                  t.micro_batch = mb;
                  t.grad_accum = 32 / (dp * mb);
                  if (check_layout(l, a, t)) continue;
                  ++brute_valid;
                  const StepTime s = estimate_step_time(basis, t, l, in.cluster);
                  const auto d = estimate_distributed(a, inv, t, l, {}, false);
                  const Verdict v = verdict_for(d.peak().device_total_bytes, in.cluster.gpu.memory_total_bytes);
                  if (v != Verdict::kOom) best_tps = std::max(best_tps, s.tokens_per_s);
                  if (v == Verdict::kFits) best_comfortable_tps = std::max(best_comfortable_tps, s.tokens_per_s);
                  auto& [comfortable, tight] = family_tps[method_name(l, Offload::kNone)];
                  if (v == Verdict::kFits) comfortable = std::max(comfortable, s.tokens_per_s);
                  if (v == Verdict::kTight) tight = std::max(tight, s.tokens_per_s);
                }
              }
            }
          }
        }
      }
    }
  }
  CHECK(r.valid == brute_valid);
  CHECK(r.top.front().perf.tokens_per_s == Approx(best_tps).epsilon(1e-12));
  REQUIRE(r.recommended);
  CHECK(r.recommended->verdict == Verdict::kFits);
  CHECK(r.recommended->perf.tokens_per_s == Approx(best_comfortable_tps).epsilon(1e-12));
  CHECK(r.memory_estimated < r.valid);  // the walk stopped early
  // Some layouts were settled by another sharding's activations, with the answers above intact.
  CHECK(r.settled_by_activations > 0);
  CHECK(r.timed < r.valid);             // structures the walk did not reach were never timed
  // Every family's best: its fastest layout under the 80 % line, else its fastest tight one.
  CHECK(r.methods.size() == family_tps.size());
  for (const MethodBest& m : r.methods) {
    INFO(m.method);
    REQUIRE(family_tps.count(m.method) == 1);
    const auto& [comfortable, tight] = family_tps.at(m.method);
    const double expected = comfortable > 0 ? comfortable : tight;
    CHECK(m.best.has_value() == (expected > 0));
    if (m.best) {
      CHECK(m.best->perf.tokens_per_s == Approx(expected).epsilon(1e-12));
      CHECK(m.best->verdict == (comfortable > 0 ? Verdict::kFits : Verdict::kTight));
    }
  }
  // Every reported candidate fits and the list is sorted fastest first.
  for (std::size_t i = 0; i < r.top.size(); ++i) {
    CHECK(r.top[i].verdict != Verdict::kOom);
    if (i > 0) CHECK(r.top[i - 1].perf.tokens_per_s >= r.top[i].perf.tokens_per_s);
  }
  // Counts add up.
  std::int64_t rejected = 0;
  for (const auto& [code, n] : r.rejected) rejected += n;
  CHECK(r.enumerated == r.valid + rejected);
}

TEST_CASE("torchtitan and torchtune are offered tensor parallelism only with sequence parallelism", "[search][tp]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TensorInventory inv = build_tensor_inventory(a);
  SearchInput in = one_node_search(a, inv, "H100-80GB", 50);
  in.space.tp = {1, 8};
  in.space.max_micro_batch = 1;
  // Two structures at tp 8 (dp 1, so no sharding stage; sequence parallel off and on) and the
  // rest at tp 1: each framework's plan decides whether tp 8 without sequence parallel is offered.
  auto run = [&](Framework f) {
    in.behaviour = framework_profile(f).dist;
    return run_search(in);
  };
  const SearchResult titan = run(Framework::kTorchtitan), megatron = run(Framework::kMegatron);
  const auto rejected = [](const SearchResult& r, const char* code) {
    std::int64_t n = 0;
    for (const auto& [rule, count] : r.rejected) n += rule == code ? count : 0;
    return n;
  };
  CHECK(rejected(titan, "framework_tp_needs_sequence_parallel") == 1);
  CHECK(rejected(megatron, "framework_tp_needs_sequence_parallel") == 0);
  CHECK(titan.valid + 1 == megatron.valid);
  bool titan_tp_without_sp = false, megatron_tp_without_sp = false;
  for (const Candidate& c : titan.top) titan_tp_without_sp |= c.layout.tp > 1 && !c.layout.sequence_parallel;
  for (const Candidate& c : megatron.top) megatron_tp_without_sp |= c.layout.tp > 1 && !c.layout.sequence_parallel;
  CHECK_FALSE(titan_tp_without_sp);
  CHECK(megatron_tp_without_sp);
  CHECK(framework_profile(Framework::kTorchtune).dist.tp_sequence_parallel_only);
}

TEST_CASE("every method family reports a per-GPU peak: its best that fits, or its least-memory layout", "[search]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-70B-Instruct");
  const TensorInventory inv = build_tensor_inventory(a);
  SearchInput in = one_node_search(a, inv, "A100-80GB", 3);
  in.space.max_micro_batch = 2;
  const SearchResult r = run_search(in);
  // Brute force at micro-batch 1 (memory grows with the micro-batch, so it settles each family).
  std::map<std::string, std::pair<bool, std::int64_t>> brute;  // family -> (fits, least bytes)
  for (std::int64_t tp : {1, 2, 4, 8}) {
    for (Sharding sh : {Sharding::kNone, Sharding::kZero1, Sharding::kZero2, Sharding::kZero3}) {
      for (bool sp : {false, true}) {
        ParallelLayout l;
        l.tp = tp;
        l.dp = 8 / tp;
        l.sharding = sh;
        l.sequence_parallel = sp;
        TrainingSetup t = in.training;
        t.checkpointing = Checkpointing::kFull;
        if (check_layout(l, a, t) || (l.dp == 1 && sh != Sharding::kNone)) continue;
        const std::int64_t bytes = estimate_distributed(a, inv, t, l).peak().device_total_bytes;
        auto [it, fresh] = brute.try_emplace(method_name(l, Offload::kNone), false, bytes);
        it->second.first |= bytes <= in.cluster.gpu.memory_total_bytes;
        it->second.second = std::min(it->second.second, bytes);
      }
    }
  }
  std::size_t oom_families = 0;
  for (const MethodBest& m : r.methods) {
    INFO(m.method);
    REQUIRE(brute.count(m.method) == 1);
    const auto& [fits, least] = brute.at(m.method);
    CHECK(m.best.has_value() == fits);
    if (fits) {
      CHECK(!m.closest);
      continue;
    }
    ++oom_families;
    REQUIRE(m.closest);
    CHECK(m.closest->verdict == Verdict::kOom);
    CHECK(m.closest->device_total_bytes == least);
    CHECK(m.closest->device_total_bytes > in.cluster.gpu.memory_total_bytes);
  }
  CHECK(oom_families > 0);
  CHECK(r.methods.size() == brute.size());
}

TEST_CASE("search honours constraints and is deterministic", "[search][api]") {
  const json req = {{"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
                    {"training", {{"seq_len", 4096}, {"micro_batch", 1}}},
                    {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 16}}},
                    {"search", {{"top", 8}, {"space", {{"pp", {1}}, {"sharding", {"zero3"}}}}}}};
  const json a = call(api::search, req);
  REQUIRE(a["ok"] == true);
  const json& r = a["result"];
  REQUIRE(!r["top"].empty());
  for (const json& c : r["top"]) {
    CHECK(c["parallel"]["pp"] == 1);
    CHECK(c["parallel"]["sharding"] == "zero3");
    CHECK(c["training"]["micro_batch"] == 1);
    CHECK(c["memory"]["verdict"] != "oom");
  }
  CHECK(r["best"] == r["top"][0]);
  CHECK(r["launch"].size() == 11);
  CHECK(call(api::search, req).dump() == a.dump());
}

TEST_CASE("when nothing fits the search suggests what would", "[search]") {
  const json req = {{"model", {{"preset", "meta-llama/Llama-3.1-70B-Instruct"}}},
                    {"training", {{"seq_len", 2048}, {"precision", "amp_bf16"}}},
                    {"cluster", {{"gpu", {{"preset", "RTX-4090"}}}, {"gpus", 1}}}};
  const json r = call(api::search, req);
  REQUIRE(r["ok"] == true);
  CHECK(r["result"]["best"].is_null());
  REQUIRE(!r["result"]["suggestions"].empty());
  std::set<std::string> changes;
  for (const json& s : r["result"]["suggestions"]) {
    changes.insert(s["change"].get<std::string>());
    CHECK(s["candidate"]["memory"]["verdict"] != "oom");
  }
  CHECK(changes.count("gpus") == 1);
}

TEST_CASE("search request errors name the field", "[search][errors]") {
  auto err = [](const json& search) {
    const json req = {{"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
                      {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 8}}},
                      {"search", search}};
    return call(api::search, req)["error"];
  };
  CHECK(err({{"top", 0}})["path"] == "/search/top");
  CHECK(err({{"objective", "cheapest"}})["path"] == "/search/objective");
  CHECK(err({{"space", {{"tp", {2, "x"}}}}})["path"] == "/search/space/tp/1");
  CHECK(err({{"space", {{"sharding", {"zero4"}}}}})["code"] == "invalid_value");
  CHECK(err({{"space", {{"warp", 1}}}})["path"] == "/search/space/warp");
  // tokens_per_step: whole sequences (of the default seq_len, 2048), and not with global_batch.
  const json partial = err({{"tokens_per_step", 2048 * 6 + 1}});
  CHECK(partial["path"] == "/search/tokens_per_step");
  CHECK(partial["code"] == "invalid_value");
  CHECK(partial["message"].get<std::string>().find("12288 or 14336 tokens") != std::string::npos);
  CHECK(err({{"tokens_per_step", 8192}, {"global_batch", 2}})["path"] == "/search/tokens_per_step");
  CHECK(err({{"tokens_per_step", 0}})["code"] == "out_of_range");
  CHECK(err({{"tokens_per_step", "4M"}})["code"] == "invalid_type");
  CHECK(err({{"tokens_per_step", std::int64_t{1} << 62}})["path"] == "/search/tokens_per_step");
}

TEST_CASE("a step given in tokens searches as the global batch of that many sequences", "[search][api]") {
  json req = {{"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
              {"training", {{"seq_len", 8192}}},
              {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 16}}},
              {"search", {{"top", 3}, {"global_batch", 64}, {"space", {{"max_micro_batch", 2}}}}}};
  const json by_batch = call(api::search, req);
  req["search"].erase("global_batch");
  req["search"]["tokens_per_step"] = 64 * 8192;  // 512Ki tokens
  const json by_tokens = call(api::search, req);
  REQUIRE(by_batch["ok"] == true);
  REQUIRE(by_tokens["ok"] == true);
  CHECK(by_tokens["result"]["global_batch"] == 64);
  CHECK(by_tokens["result"]["tokens_per_step"] == 64 * 8192);
  CHECK(by_tokens["result"]["top"] == by_batch["result"]["top"]);
  CHECK(by_tokens["result"]["top"][0]["perf"]["tokens_per_step"] == 64 * 8192);
}

// LLMem Table 3 (Kim et al. 2024; docs/search_validation.md): on 4 x V100 16 GB the measured order of
// 4DP, 2DP+2TP and 4TP for the rows the table decides and memfit's parser covers.
TEST_CASE("LLMem Table 3: methods ranked in the measured order where memfit agrees", "[search][validation]") {
  auto best = [](const json& model, std::int64_t tp) -> json {
    const json req = {{"model", model},
                      {"training", {{"framework", "colossalai"}, {"precision", "amp_fp16"}, {"seq_len", 512},
                                    {"activation_checkpointing", "full"}, {"attention", "eager"}, {"offload", "none"}}},
                      {"cluster", {{"gpu", {{"preset", "V100-16GB"}}}, {"gpus", 4}, {"gpus_per_node", 4}}},
                      {"search", {{"top", 1}, {"launch", false},
                                  {"space", {{"tp", {tp}}, {"pp", {1}}, {"cp", {1}}, {"max_micro_batch", 64},
                                             {"sharding", {tp == 4 ? "none" : "zero3"}}}}}}};
    const json r = call(api::search, req);
    REQUIRE(r["ok"] == true);
    return r["result"]["best"];
  };
  const std::string dir = std::string(MEMFIT_SOURCE_DIR) + "/tests/validation/llmem/";
  for (const char* file : {"facebook__opt-1.3b.json", "bigscience__bloom-1b1.json", "EleutherAI__gpt-neo-1.3B.json",
                           "bigcode__gpt_bigcode-santacoder.json", "microsoft__BioGPT-Large.json"}) {
    const json model = {{"config", json::parse(read_file(dir + file))}};
    const json dp = best(model, 1), dptp = best(model, 2), tp = best(model, 4);
    REQUIRE(!dp.is_null());
    REQUIRE(!dptp.is_null());
    REQUIRE(!tp.is_null());
    CHECK(dp["perf"]["tokens_per_s"] > dptp["perf"]["tokens_per_s"]);
    CHECK(dptp["perf"]["tokens_per_s"] > tp["perf"]["tokens_per_s"]);
  }
  const json llama = {{"preset", "meta-llama/Llama-2-7b-hf"}};
  CHECK(best(llama, 1).is_null());
  CHECK(best(llama, 2).is_null());
  CHECK(best(llama, 4).is_null());
  CHECK(best({{"config", json::parse(read_file(dir + "bigscience__bloom-3b.json"))}}, 1).is_null());
}

// A cluster of two GPU kinds (cluster.gpu_mix): stages on blocks of consecutive ranks, placed by
// memory, each checked against its own GPUs; the slowest kind sets the pace.
TEST_CASE("a mixed cluster places stages by memory on their own GPUs and runs at the slowest kind's pace", "[search][mix]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TensorInventory inv = build_tensor_inventory(a);
  const GpuSpec big = *presets::find_gpu("H100-80GB"), small = *presets::find_gpu("A100-40GB");
  SearchInput in;
  in.arch = &a;
  in.inv = &inv;
  in.training = bf16(1, 8192);
  in.cluster = cluster("H100-80GB", 16);
  in.gpu_mix = {GpuGroup{big, 8}, GpuGroup{small, 8}};
  in.global_batch = 32;
  in.top = 20;
  in.space.max_micro_batch = 2;
  const SearchResult r = run_search(in);
  REQUIRE(r.top.size() == 20);
  std::vector<const Candidate*> checked;
  for (const Candidate& c : r.top) checked.push_back(&c);
  for (const MethodBest& m : r.methods) {
    if (m.best) checked.push_back(&*m.best);
  }
  bool staged = false;
  for (const Candidate* c : checked) {
    INFO(c->method << " tp " << c->layout.tp << " pp " << c->layout.pp << " mb " << c->setup.micro_batch);
    REQUIRE(c->placement.size() == (c->layout.pp == 1 ? 1u : c->layout.pp == 2 ? 2u : 3u));
    // Each kind's bytes are its own replay's; the headline is the most-loaded kind.
    const std::vector<RankPeak> kinds = estimate_rank_peaks(a, inv, c->setup, c->layout);
    REQUIRE(kinds.size() == c->placement.size());
    std::int64_t most = 0;
    double worst = 0;
    for (std::size_t k = 0; k < kinds.size(); ++k) {
      const StagePlacement& p = c->placement[k];
      CHECK(p.rank_kind == kinds[k].rank_kind);
      CHECK(p.device_total_bytes == kinds[k].device_total_bytes);
      const std::int64_t memory = p.gpu == big.id ? big.memory_total_bytes : small.memory_total_bytes;
      CHECK((p.gpu == big.id || p.gpu == small.id));
      CHECK(p.usage_fraction == Approx(static_cast<double>(p.device_total_bytes) / static_cast<double>(memory)));
      CHECK(p.device_total_bytes <= memory);  // every stage fits its own GPUs
      most = std::max(most, kinds[k].device_total_bytes);
      worst = std::max(worst, p.usage_fraction);
    }
    CHECK(c->device_total_bytes == most);
    CHECK(c->usage_fraction == Approx(worst));
    CHECK(c->verdict == (worst > kTightFraction ? Verdict::kTight : Verdict::kFits));
    if (c->layout.pp == 1) {
      // One block spans both kinds: it has the smaller GPU's memory.
      CHECK(c->placement[0].gpu == small.id);
    } else {
      staged = true;
      // Half the stages sit on each kind; the most-loaded stage gets the larger GPU.
      for (const StagePlacement& p : c->placement) {
        if (p.device_total_bytes == most && p.rank_kind == c->rank_kind && p.stages == 1) CHECK(p.gpu == big.id);
      }
    }
    // The pace is the slower kind's step time.
    ClusterSpec on_big = in.cluster, on_small = in.cluster;
    on_small.gpu = small;
    const double big_rate = estimate_step_time(build_perf_basis(a, inv, in.training), c->setup, c->layout, on_big).tokens_per_s;
    const double small_rate = estimate_step_time(build_perf_basis(a, inv, in.training), c->setup, c->layout, on_small).tokens_per_s;
    CHECK(c->perf.tokens_per_s == std::min(big_rate, small_rate));
  }
  CHECK(staged);
  CHECK(std::any_of(r.assumptions.begin(), r.assumptions.end(), [](const std::string& line) {
    return line.rfind("mixed cluster (8 x H100-80GB + 8 x A100-40GB)", 0) == 0;
  }));
}

TEST_CASE("a mix of one GPU kind answers as the plain cluster of that kind", "[search][mix][api]") {
  json req = {{"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
              {"training", {{"seq_len", 4096}}},
              {"cluster", {{"gpu", {{"preset", "A100-40GB"}}}, {"gpus", 16}}},
              {"search", {{"top", 6}, {"global_batch", 64}, {"space", {{"max_micro_batch", 2}}}}}};
  const json plain = call(api::search, req);
  req["cluster"] = {{"gpu_mix", {{{"gpu", {{"preset", "A100-40GB"}}}, {"count", 8}}, {{"gpu", {{"preset", "A100-40GB"}}}, {"count", 8}}}}};
  const json mixed = call(api::search, req);
  REQUIRE(plain["ok"] == true);
  REQUIRE(mixed["ok"] == true);
  const json& p = plain["result"];
  const json& m = mixed["result"];
  CHECK(m["counts"] == p["counts"]);
  REQUIRE(m["top"].size() == p["top"].size());
  for (std::size_t i = 0; i < p["top"].size(); ++i) {
    json pm = m["top"][i];
    CHECK(pm["memory"]["placement"].size() >= 1);
    pm["memory"].erase("placement");
    CHECK(pm == p["top"][i]);
  }
  CHECK(m["cluster"]["gpu_mix"].size() == 2);
}

TEST_CASE("mixed-cluster request errors name the field", "[search][mix][errors]") {
  const json model = {{"preset", "meta-llama/Llama-3.1-8B"}};
  const json h100 = {{"preset", "H100-80GB"}}, a100 = {{"preset", "A100-40GB"}};
  auto err = [&](const json& cluster, std::string (*f)(std::string_view) = api::search) {
    return call(f, {{"model", model}, {"cluster", cluster}})["error"];
  };
  const json mix = json::array({{{"gpu", h100}, {"count", 8}}, {{"gpu", a100}, {"count", 8}}});
  CHECK(err({{"gpu", h100}, {"gpu_mix", mix}})["path"] == "/cluster/gpu_mix");
  CHECK(err({{"gpu_mix", mix}, {"gpus", 12}})["path"] == "/cluster/gpus");
  CHECK(err({{"gpu_mix", json::array({{{"gpu", h100}, {"count", 8}}})}})["code"] == "invalid_type");
  const json ragged = json::array({{{"gpu", h100}, {"count", 8}}, {{"gpu", a100}, {"count", 4}}});
  const json e = err({{"gpu_mix", ragged}});
  CHECK(e["path"] == "/cluster/gpu_mix/1/count");
  CHECK_THAT(e["message"].get<std::string>(), Catch::Contains("whole number of nodes"));
  CHECK(err({{"gpu_mix", json::array({{{"gpu", h100}}, {{"gpu", a100}, {"count", 8}}})}})["path"] == "/cluster/gpu_mix/0/count");
  CHECK(err({{"gpu_mix", json::array({{{"gpu", {{"preset", "B999"}}}, {"count", 8}}, {{"gpu", a100}, {"count", 8}}})}})["path"] ==
        "/cluster/gpu_mix/0/gpu/preset");
}

TEST_CASE("an estimate on a mixed cluster checks each placed stage against its own GPUs", "[mix][api]") {
  const json h100 = {{"preset", "H100-80GB"}}, a100 = {{"preset", "A100-40GB"}};
  json req = {{"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
              {"training", {{"seq_len", 8192}, {"micro_batch", 1}}},
              {"cluster", {{"gpu_mix", {{{"gpu", h100}, {"count", 8}}, {{"gpu", a100}, {"count", 8}}}}}},
              {"parallel", {{"tp", 4}, {"pp", 4}}}};
  const json r = call(api::estimate, req);
  REQUIRE(r["ok"] == true);
  const json& res = r["result"];
  const json& placement = res["fit"]["placement"];
  REQUIRE(placement.size() == res["ranks"].size());
  double worst = 0;
  for (std::size_t k = 0; k < placement.size(); ++k) {
    const json& p = placement[k];
    CHECK(p["rank_kind"] == res["ranks"][k]["kind"]);
    CHECK(p["device_total_bytes"] == res["ranks"][k]["device_total_bytes"]);
    const std::int64_t memory = p["gpu"] == "H100-80GB" ? res["cluster"]["gpu_mix"][0]["memory_total_bytes"].get<std::int64_t>()
                                                        : res["cluster"]["gpu_mix"][1]["memory_total_bytes"].get<std::int64_t>();
    CHECK(p["gpu_memory_bytes"] == memory);
    CHECK(p["usage_fraction"].get<double>() == Approx(p["device_total_bytes"].get<double>() / static_cast<double>(memory)));
    worst = std::max(worst, p["usage_fraction"].get<double>());
  }
  CHECK(res["fit"]["usage_fraction"].get<double>() == Approx(worst));
  // Two stages on each kind: the two largest demands on the H100s.
  std::int64_t on_big = 0;
  for (const json& p : placement) on_big += p["gpu"] == "H100-80GB" ? 1 : 0;
  CHECK(on_big >= 1);
  // The pace is the A100's: the same layout on 16 A100s runs at the same tokens/s.
  json plain = req;
  plain["cluster"] = {{"gpu", a100}, {"gpus", 16}};
  const json a = call(api::estimate, plain);
  REQUIRE(a["ok"] == true);
  CHECK(res["perf"]["tokens_per_s"] == a["result"]["perf"]["tokens_per_s"]);
  // The largest micro-batch keeps every placed stage within its GPUs: one more does not fit.
  const std::int64_t max_mb = res["fit"]["max_micro_batch"].get<std::int64_t>();
  REQUIRE(max_mb >= 1);
  req["training"]["micro_batch"] = max_mb + 1;
  CHECK(call(api::estimate, req)["result"]["fit"]["verdict"] == "oom");
  req["training"]["micro_batch"] = max_mb;
  CHECK(call(api::estimate, req)["result"]["fit"]["verdict"] != "oom");
}

// The search shares model states between layouts whose ranks hold the same shards
// (ModelStatesMemo): across a search-like variety of layouts, one memo must give exactly what
// computing each rank's states directly gives — dense, MoE with dense first layers, freeze and
// LoRA, with and without AMP.
TEST_CASE("model states remembered by shard equal the states computed directly", "[search][memo]") {
  struct Case {
    const char* model;
    Method method;
    Precision precision;
    std::int64_t gpus;
  };
  for (const Case& k : {Case{"meta-llama/Llama-3.1-70B-Instruct", Method::kFull, Precision::kBf16, 64},
                        Case{"meta-llama/Llama-3.1-70B-Instruct", Method::kFreeze, Precision::kAmpBf16, 64},
                        Case{"deepseek-ai/DeepSeek-V3", Method::kFull, Precision::kAmpBf16, 256},
                        Case{"Qwen/Qwen3-8B", Method::kLora, Precision::kBf16, 16}}) {
    const ModelArchitecture a = preset(k.model);
    const TensorInventory inv = build_tensor_inventory(a);
    TrainingSetup t = bf16(1, 4096);
    t.method = k.method;
    t.precision = k.precision;
    t.freeze_trainable_layers = 3;
    ModelStatesMemo memo;
    std::size_t layouts = 0;
    const std::int64_t layers = a.num_layers;
    for (const std::int64_t tp : {1, 4}) {
      for (const std::int64_t pp : {1, 2, 4}) {
        for (const std::int64_t vpp : {1, 2, 4}) {
          if (vpp > 1 && (pp == 1 || layers % (pp * vpp) != 0)) continue;
          for (const Sharding sh : {Sharding::kNone, Sharding::kZero1, Sharding::kZero3}) {
            for (const Offload off : {Offload::kNone, Offload::kOptimizer}) {
              ParallelLayout l;
              l.tp = tp;
              l.pp = pp;
              l.vpp = vpp;
              l.schedule = vpp > 1 ? PipelineSchedule::kInterleaved : PipelineSchedule::k1F1B;
              l.dp = k.gpus / (tp * pp);
              l.ep = a.is_moe() ? 8 : 1;
              l.sharding = sh;
              TrainingSetup u = t;
              u.offload = off;
              if (check_layout(l, a, u)) continue;
              INFO(k.model << " tp " << tp << " pp " << pp << " vpp " << vpp << " sharding " << static_cast<int>(sh));
              CHECK(rank_model_states(a, inv, u, l, &memo) == rank_model_states(a, inv, u, l));
              ++layouts;
            }
          }
        }
      }
    }
    CHECK(layouts > 20);
    CHECK(memo.size() < layouts * 3);  // some layouts shared their ranks' states
  }
}
