// Ranges for settings a request leaves unknown (api.cpp add_unknown_ranges): a framework named
// without framework_version spans its dated behaviours; the verdict is judged by the high end.
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <nlohmann/json.hpp>

#include "api/api.h"
#include "training/framework_profile.h"

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
