// MoE parallel folding (Megatron-Core from 2024-11): expert layers form their own etp x ep x edp
// grid over a stage's tp x cp x dp ranks. The layouts are those of Megatron-LM's MoE README
// (megatron/core/transformer/moe/README.md @ d98e8a64, "MoE Parallel Folding") and of the
// issue's 8-GPU case; the memory relations follow from the split (experts per rank, their width).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <vector>

#include "api/api.h"
#include "memory/model_states.h"
#include "memory/timeline.h"
#include "parallel/layout.h"
#include "perf/perf_model.h"
#include "search/search.h"
#include "../test_support.h"
#include "frameworks/profile.h"

using nlohmann::json;
using namespace memfit;
using namespace memfit_test;

namespace {

constexpr const char* kMoe = "Qwen/Qwen3-30B-A3B";  // 128 experts of width 768, 48 layers, 32 heads (4 kv)

ParallelLayout megatron_layout(std::int64_t dp, std::int64_t tp, std::int64_t pp, std::int64_t cp, std::int64_t ep,
                               std::int64_t etp, std::int64_t yyyymm = 0) {
  ParallelLayout l;
  l.dp = dp;
  l.tp = tp;
  l.pp = pp;
  l.cp = cp;
  l.ep = ep;
  l.etp = etp;
  l.sequence_parallel = tp > 1;  // Megatron's MoE layer refuses tp > 1 without it in training
  l.sharding = Sharding::kZero1;
  l.behaviour = framework_behaviour(framework_profile(Framework::kMegatron), yyyymm);
  return l;
}

// Expert parameters of the model (every layer, every copy).
std::int64_t expert_params(const TensorInventory& inv) {
  std::int64_t n = 0;
  for (const LayerGroup& g : inv.groups) {
    for (const TensorSpec& s : g.tensors) {
      if (s.kind == ModuleKind::kExpert) n += s.numel() * s.copies * g.layer_count;
    }
  }
  return n;
}

}  // namespace

TEST_CASE("MoE parallel folding admits the layouts Megatron's MoE README runs", "[distributed][moe]") {
  const ModelArchitecture a = preset(kMoe);
  TrainingSetup t = bf16(1, 4096, 8);
  // README: "TP=4, CP=2, DP=8, PP=4 ... MoE uses ETP=1, EP=64, EDP=1" (256 GPUs), and the issue's
  // 8 GPUs: tp 4 x dp 2 with ep 4 x etp 1 (ep = 4 does not divide dp x cp = 2).
  const ParallelLayout readme = megatron_layout(8, 4, 4, 2, 64, 1);
  const ParallelLayout eight = megatron_layout(2, 4, 1, 1, 4, 1);
  CHECK_FALSE(check_layout(readme, a, t).has_value());
  CHECK_FALSE(check_layout(eight, a, t).has_value());
  CHECK(readme.expert_shard() == 1);   // EDP = 4 x 2 x 8 / (64 x 1)
  CHECK(eight.expert_shard() == 2);    // EDP = 4 x 2 / 4
  // Before folding (a Megatron of 2024-10) the same layouts break the old rule.
  const ParallelLayout before = megatron_layout(2, 4, 1, 1, 4, 1, 202410);
  const std::optional<LayoutViolation> v = check_layout(before, a, t);
  REQUIRE(v.has_value());
  CHECK(v->code == "etp_needs_folding");
  ParallelLayout before_etp_tp = before;
  before_etp_tp.etp = 0;
  REQUIRE(check_layout(before_etp_tp, a, t).has_value());
  CHECK(check_layout(before_etp_tp, a, t)->code == "ep_divides_dp_cp");
  // ep x etp must divide tp x dp x cp (parallel_state.py expert rank generator).
  ParallelLayout too_wide = eight;
  too_wide.ep = 16;
  REQUIRE(check_layout(too_wide, a, t).has_value());
  CHECK(check_layout(too_wide, a, t)->code == "ep_etp_divide_tp_dp_cp");
  // The folded layouts estimate, with a step time.
  const TensorInventory inv = build_tensor_inventory(a);
  for (const ParallelLayout& l : {readme, eight}) {
    const DistributedEstimate d = estimate_distributed(a, inv, t, l);
    CHECK(d.peak().device_total_bytes > 0);
    const StepTime st = estimate_step_time(build_perf_basis(a, inv, t), t, l, cluster("H100-80GB", l.gpus()), PerfConstants{});
    CHECK(st.tokens_per_s > 0);
    CHECK(st.comm.ep_s > 0);
  }
}

TEST_CASE("folded experts: each rank holds 1 / (ep x etp) of the expert weights and their share of tokens", "[distributed][moe]") {
  const ModelArchitecture a = preset(kMoe);
  const TensorInventory inv = build_tensor_inventory(a);
  const TrainingSetup t = bf16(1, 4096);
  // Same dense split (tp 4, dp 2): ep 4 x etp 1 against ep 2 x etp 4 (the pre-folding layout).
  const ParallelLayout folded = megatron_layout(2, 4, 1, 1, 4, 1);
  const ParallelLayout plain = megatron_layout(2, 4, 1, 1, 2, 0);
  const ModelStates f = estimate_distributed(a, inv, t, folded).peak().states;
  const ModelStates p = estimate_distributed(a, inv, t, plain).peak().states;
  // bf16 weights: 2 bytes per expert parameter; the dense part is the same on both.
  const std::int64_t experts = expert_params(inv);
  REQUIRE(experts % 8 == 0);
  CHECK(f.weights_bytes - p.weights_bytes == 2 * (experts / 4 - experts / 8));
  // Activations: an expert rank computes the tokens of its etp group (etp / tp of the sequence's
  // per tp rank), each at width / etp: less kept than at etp = tp for the same tokens in.
  ActivationSplit at_tp{4, true, false, 4};
  ActivationSplit at_one{4, true, false, 1};
  const LayerActivations wide = layer_activations(a, t, true, false, true, at_tp);
  const LayerActivations folded_acts = layer_activations(a, t, true, false, true, at_one);
  CHECK(folded_acts.saved_per_token < wide.saved_per_token);
  // At etp = tp the folding split changes nothing.
  const LayerActivations unset = layer_activations(a, t, true, false, true, ActivationSplit{4, true, false, 0});
  CHECK(unset.saved_per_token == wide.saved_per_token);
}

TEST_CASE("the search folds experts for Megatron and the launch sets --expert-tensor-parallel-size", "[search][moe]") {
  const json request = {{"model", {{"preset", kMoe}}},
                        {"training", {{"framework", "megatron"}, {"seq_len", 4096}}},
                        {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 8}}},
                        {"search", {{"top", 50}, {"global_batch", 64}}}};
  const json r = json::parse(api::search(request.dump())).at("result");
  // Each method family's best layout: some fold ep beyond dp x cp or run experts at etp 1 under tp > 1.
  auto best_layouts = [](const json& result) {
    std::vector<json> out;
    for (const json& m : result.at("methods")) {
      if (!m.at("best").is_null()) out.push_back(m.at("best").at("parallel"));
    }
    return out;
  };
  int folded = 0;
  for (const json& p : best_layouts(r)) {
    const bool beyond = p.at("ep").get<int>() > p.at("dp").get<int>() * p.at("cp").get<int>();
    if (beyond || p.at("etp") != p.at("tp")) ++folded;
  }
  CHECK(folded > 0);
  // The same request for a Megatron before folding offers none.
  json old = request;
  old["training"]["framework_version"] = "2024-10";
  const json ro = json::parse(api::search(old.dump())).at("result");
  for (const json& p : best_layouts(ro)) {
    CHECK(p.at("ep").get<int>() <= p.at("dp").get<int>() * p.at("cp").get<int>());
    CHECK(p.at("etp") == p.at("tp"));
  }
  // A folded layout's launch arguments carry the expert tensor-parallel degree.
  json launch = request;
  launch.erase("search");
  launch["parallel"] = {{"tp", 4}, {"dp", 2}, {"ep", 4}, {"etp", 1}, {"sequence_parallel", true}, {"sharding", "zero1"}};
  const json formats = json::parse(api::launch(launch.dump())).at("result").at("formats");
  bool found = false;
  for (const json& f : formats) {
    if (f.at("format") != "megatron_args") continue;
    found = true;
    const std::string text = f.at("text");
    CHECK(text.find("--expert-model-parallel-size 4") != std::string::npos);
    CHECK(text.find("--expert-tensor-parallel-size 1") != std::string::npos);
  }
  CHECK(found);
}
