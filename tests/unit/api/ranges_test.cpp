// Ranges for settings a request leaves unknown (api.cpp add_unknown_ranges): a framework named
// without framework_version spans its dated behaviours; the verdict is judged by the high end.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <nlohmann/json.hpp>

#include "api/api.h"
#include "frameworks/profile.h"

using nlohmann::json;
using namespace memfit;

namespace {

json request(const char* gpu) {
  // transformers before 2025-01 copied the shifted logits (hf_trainer's dated behaviour).
  return {{"schema_version", 1},
          {"model", {{"preset", "Qwen/Qwen3-4B"}}},
          {"training", {{"framework", "hf_trainer"}, {"method", "full"}, {"micro_batch", 4}, {"seq_len", 8192},
                        {"activation_checkpointing", "full"}}},
          {"cluster", {{"gpu", {{"preset", gpu}}}, {"gpus", 1}}}};
}

std::int64_t bytes(const json& j, const char* key) { return j[key].get<std::int64_t>(); }

}  // namespace

TEST_CASE("an unstated framework_version gives a range over the framework's dated behaviours", "[api][ranges]") {
  const json now = json::parse(api::estimate(request("H100-80GB").dump()));
  REQUIRE(now["ok"] == true);
  const json& r = now["result"];
  REQUIRE(r.contains("ranges"));
  const json& ranges = r["ranges"];
  CHECK(ranges["unknown"] == json::array({"/training/framework_version"}));
  // Every dated entry gives a variant besides the current code (entries ending the same month
  // share one), each a different version, and the range covers each.
  const FrameworkProfile& p = framework_profile(Framework::kHfTrainer);
  std::set<std::string> versions;
  for (const json& v : ranges["variants"]) versions.insert(v["framework_version"].get<std::string>());
  CHECK(versions.size() == ranges["variants"].size());
  CHECK(ranges["variants"].size() >= 2);
  CHECK(ranges["variants"].size() <= p.history.size() + 1);
  for (const json& v : ranges["variants"]) {
    CHECK(bytes(v, "device_total_bytes") >= bytes(ranges["device_total_bytes"], "low"));
    CHECK(bytes(v, "device_total_bytes") <= bytes(ranges["device_total_bytes"], "high"));
  }
  // The range's ends are the estimates of those versions asked for outright.
  json old = request("H100-80GB");
  old["training"]["framework_version"] = "2024-12";
  const json before = json::parse(api::estimate(old.dump()));
  REQUIRE(before["ok"] == true);
  CHECK_FALSE(before["result"].contains("ranges"));  // stated: no range
  CHECK(bytes(ranges["device_total_bytes"], "high") ==
        std::max(bytes(r, "device_total_bytes"), bytes(before["result"], "device_total_bytes")));
  CHECK(bytes(ranges["peak_allocated_bytes"], "low") ==
        std::min(bytes(r, "peak_allocated_bytes"), bytes(before["result"], "peak_allocated_bytes")));
  // The shifted-logits copy costs memory: the old code is the high end of the allocated peak.
  CHECK(bytes(before["result"], "peak_allocated_bytes") > bytes(r, "peak_allocated_bytes"));
  CHECK(bytes(ranges["peak_allocated_bytes"], "high") == bytes(before["result"], "peak_allocated_bytes"));
  // The fit is judged on the high end of the device total, and says so when that is above the point.
  const std::int64_t high = bytes(ranges["device_total_bytes"], "high");
  CHECK(bytes(r["fit"], "compared_bytes") == high);
  CHECK(r["fit"].contains("judged_on") == (high > bytes(r, "device_total_bytes")));
}

TEST_CASE("the verdict follows the range's high end", "[api][ranges]") {
  // torchtune's older recipes hold far more (docs/frameworks.md, its dated entries): on a 24 GB
  // card the current code fits and an older one does not, so the run is judged on the older.
  json req = request("L4");
  req["training"] = {{"framework", "torchtune"}, {"method", "qlora"}, {"micro_batch", 2}, {"seq_len", 4096}};
  const json r = json::parse(api::estimate(req.dump()))["result"];
  const std::int64_t point = bytes(r, "device_total_bytes"), high = bytes(r["ranges"]["device_total_bytes"], "high");
  const std::int64_t memory = bytes(r["fit"], "gpu_memory_bytes");
  REQUIRE(static_cast<double>(point) < 0.8 * static_cast<double>(memory));  // the point estimate fits
  REQUIRE(static_cast<double>(high) > 0.8 * static_cast<double>(memory));   // the high end does not
  CHECK(r["fit"]["judged_on"] == "range_high");
  CHECK(bytes(r["fit"], "compared_bytes") == high);
  CHECK(bytes(r["fit"], "headroom_bytes") == memory - high);
  CHECK(r["fit"]["verdict"] == (high > memory ? "oom" : "tight"));
  // Stating the version removes the range and judges the point estimate.
  req["training"]["framework_version"] = "2026-01";
  const json stated = json::parse(api::estimate(req.dump()))["result"];
  CHECK_FALSE(stated.contains("ranges"));
  CHECK_FALSE(stated["fit"].contains("judged_on"));
}

namespace {

// The estimate request of a search candidate: its layout and searched training fields.
json candidate_request(json req, const json& c) {
  const json& p = c["parallel"];
  req["parallel"] = {{"dp", p["dp"]}, {"tp", p["tp"]}, {"pp", p["pp"]}, {"vpp", p["vpp"]}, {"cp", p["cp"]}, {"ep", p["ep"]},
                     {"sequence_parallel", p["sequence_parallel"]}, {"sharding", p["sharding"]}, {"schedule", p["schedule"]}};
  for (const char* key : {"micro_batch", "grad_accum", "activation_checkpointing", "offload"}) req["training"][key] = c["training"][key];
  return req;
}

// The device total an estimate's verdict is judged on: the range's high end, else the point.
std::int64_t judged_bytes(const json& e) {
  return e["fit"].contains("compared_bytes") ? e["fit"]["compared_bytes"].get<std::int64_t>() : e["device_total_bytes"].get<std::int64_t>();
}

json search_result(json req) {
  req["search"] = {{"top", 20}, {"launch", false}};
  const json s = json::parse(api::search(req.dump()));
  REQUIRE(s["ok"] == true);
  return s["result"];
}

}  // namespace

TEST_CASE("an unstated framework_version: the search judges every layout by the range's high end", "[api][ranges][search]") {
  // As above, the micro-batch searched: torchtune QLoRA on one L4, where older recipes keep
  // more per micro-batch (the current code's ★ runs 3, the high end's 1).
  json req = request("L4");
  req["training"] = {{"framework", "torchtune"}, {"method", "qlora"}, {"seq_len", 4096}};
  const json unknown = search_result(req);
  json stated = req;
  stated["training"]["framework_version"] = "2026-01";
  const json current = search_result(stated);
  REQUIRE(unknown.contains("judged_on"));
  CHECK(unknown["judged_on"]["unknown"] == json::array({"/training/framework_version"}));
  CHECK_FALSE(current.contains("judged_on"));
  // The current code's recommendation runs out of memory (or is tight) at the high end ...
  REQUIRE(current["recommended"].is_object());
  const json was = json::parse(api::estimate(candidate_request(req, current["recommended"]).dump()))["result"];
  CHECK(was["fit"]["judged_on"] == "range_high");
  CHECK(was["fit"]["verdict"] != "fits");
  // ... the search's, judged by the high end, fits there: its memory is the estimate's high end.
  REQUIRE(unknown["recommended"].is_object());
  const json& star = unknown["recommended"];
  CHECK(star["memory"]["verdict"] == "fits");
  const json now = json::parse(api::estimate(candidate_request(req, star).dump()))["result"];
  CHECK(now["fit"]["verdict"] == "fits");
  CHECK(bytes(star["memory"], "device_total_bytes") == judged_bytes(now));
  if (now.contains("ranges")) {
    CHECK(bytes(star["memory"], "device_total_bytes") == bytes(now["ranges"]["device_total_bytes"], "high"));
    CHECK(bytes(star["memory"]["device_total_range"], "low") == bytes(now["ranges"]["device_total_bytes"], "low"));
  }
  // Every row of the methods table is judged so: its verdict is the estimate's at the high end.
  for (const json& m : unknown["methods"]) {
    const json& c = m["best"].is_object() ? m["best"] : m["closest"];
    if (!c.is_object() || !c["memory"].is_object()) continue;
    const json e = json::parse(api::estimate(candidate_request(req, c).dump()))["result"];
    CHECK(c["memory"]["verdict"] == e["fit"]["verdict"]);
    CHECK(bytes(c["memory"], "device_total_bytes") == judged_bytes(e));
  }
  // The search is never faster at the high end than on the current code.
  CHECK(unknown["recommended"]["perf"]["tokens_per_s"].get<double>() <= current["recommended"]["perf"]["tokens_per_s"].get<double>());
}

TEST_CASE("activation_checkpointing unknown: the range spans none and full, judged by the high end", "[api][ranges]") {
  // torchtune full fine-tuning of an 8B model on one 48 GB card at 2,048 tokens: its default
  // checkpoints every block; without checkpointing the activations are several times larger.
  json req = {{"schema_version", 1},
              {"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
              {"training", {{"framework", "torchtune"}, {"framework_version", "2024-09"}, {"method", "lora"},
                            {"micro_batch", 2}, {"seq_len", 2048}, {"activation_checkpointing", "unknown"}}},
              {"cluster", {{"gpu", {{"preset", "RTX-A6000"}}}, {"gpus", 1}}}};
  const json out = json::parse(api::estimate(req.dump()));
  REQUIRE(out["ok"] == true);
  const json& r = out["result"];
  REQUIRE(r.contains("ranges"));
  const json& ranges = r["ranges"];
  CHECK(ranges["unknown"] == json::array({"/training/activation_checkpointing"}));  // the version is stated
  // The point estimate is the framework's default (full); each alternative is asked for outright.
  CHECK(r["training"]["activation_checkpointing"] == "full");
  std::map<std::string, json> stated;
  for (const char* ac : {"none", "full"}) {
    json q = req;
    q["training"]["activation_checkpointing"] = ac;
    const json e = json::parse(api::estimate(q.dump()));
    REQUIRE(e["ok"] == true);
    CHECK_FALSE(e["result"].contains("ranges"));
    stated[ac] = e["result"];
  }
  CHECK(bytes(r, "device_total_bytes") == bytes(stated["full"], "device_total_bytes"));
  REQUIRE(bytes(stated["none"], "peak_allocated_bytes") > bytes(stated["full"], "peak_allocated_bytes"));
  // The range covers both documented alternatives, end to end, on every counter it reports.
  for (const char* counter : {"peak_allocated_bytes", "peak_active_bytes", "peak_reserved_bytes", "device_total_bytes"}) {
    CHECK(bytes(ranges[counter], "low") == bytes(stated["full"], counter));
    CHECK(bytes(ranges[counter], "high") == bytes(stated["none"], counter));
  }
  std::set<std::string> listed;
  for (const json& v : ranges["variants"]) {
    listed.insert(v["activation_checkpointing"].get<std::string>());
    CHECK_FALSE(v.contains("framework_version"));
  }
  CHECK(listed == std::set<std::string>{"none", "full"});
  CHECK(bytes(r["fit"], "compared_bytes") == bytes(stated["none"], "device_total_bytes"));
  CHECK(r["fit"]["judged_on"] == "range_high");
  // With the version unknown too, the variants cross both: the range still covers each alternative.
  req["training"].erase("framework_version");
  const json both = json::parse(api::estimate(req.dump()))["result"];
  CHECK(both["ranges"]["unknown"] == json::array({"/training/framework_version", "/training/activation_checkpointing"}));
  CHECK(bytes(both["ranges"]["device_total_bytes"], "high") >= bytes(stated["none"], "device_total_bytes"));
  CHECK(both["ranges"]["variants"].size() > listed.size());
}

TEST_CASE("activation_checkpointing unknown is refused where no range can be judged", "[api][ranges]") {
  json req = {{"schema_version", 1},
              {"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
              {"training", {{"framework", "torchtune"}, {"activation_checkpointing", "unknown"}, {"micro_batch", 1}}},
              {"cluster", {{"gpu_mix", json::array({{{"gpu", {{"preset", "A100-40GB"}}}, {"count", 8}},
                                                     {{"gpu", {{"preset", "A100-40GB"}}}, {"count", 8}}})}}}};
  const json out = json::parse(api::estimate(req.dump()));
  REQUIRE(out["ok"] == false);
  CHECK(out["error"]["path"] == "/training/activation_checkpointing");
  // A search has no "unknown" to span: it searches the setting instead.
  json search = {{"schema_version", 1},
                 {"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
                 {"training", {{"framework", "torchtune"}, {"activation_checkpointing", "unknown"}}},
                 {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 1}}},
                 {"search", {{"top", 1}}}};
  const json s = json::parse(api::search(search.dump()));
  CHECK(s["ok"] == false);
}
