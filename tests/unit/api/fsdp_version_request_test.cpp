// parallel.fsdp_version: accelerate's FSDP plugin under the frameworks that run it (api/request.cpp
// fsdp_through_accelerate), Axolotl's fsdp_version among them.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "api/api.h"

using nlohmann::json;

namespace {

json request(const char* framework, int fsdp_version) {
  return {{"schema_version", 1},
          {"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
          {"training", {{"framework", framework}, {"method", "full"}, {"precision", "bf16"}, {"micro_batch", 1}, {"seq_len", 512}}},
          {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 4}}},
          {"parallel", {{"sharding", "zero3"}, {"fsdp_version", fsdp_version}}}};
}

json answer(const json& req) { return json::parse(memfit::api::estimate(req.dump())); }

}  // namespace

TEST_CASE("Axolotl's fsdp_version picks accelerate's FSDP2 as under the Trainer", "[api][fsdp]") {
  const json fsdp2 = answer(request("axolotl", 2));
  REQUIRE(fsdp2["ok"] == true);
  const json fsdp1 = answer(request("axolotl", 1));
  REQUIRE(fsdp1["ok"] == true);
  // FSDP2 copies each all-gather out per parameter: its peak differs from FSDP1's flat parameters.
  CHECK(fsdp2["result"]["peak_allocated_bytes"] != fsdp1["result"]["peak_allocated_bytes"]);
}

TEST_CASE("a framework with FSDP of its own refuses fsdp_version at its pointer", "[api][fsdp]") {
  const json refused = answer(request("torchtitan", 2));
  REQUIRE(refused["ok"] == false);
  CHECK(refused["error"]["path"] == "/parallel/fsdp_version");
}

TEST_CASE("accelerate's CPU-RAM-efficient loading leaves FSDP1's wrap cached, not FSDP2's", "[api][fsdp]") {
  json plain = request("axolotl", 1);
  plain["training"]["method"] = "qlora";
  plain["training"]["precision"] = "amp_bf16";
  json efficient = plain;
  efficient["parallel"]["cpu_ram_efficient_loading"] = true;
  const json a = answer(plain), b = answer(efficient);
  REQUIRE(a["ok"] == true);
  REQUIRE(b["ok"] == true);
  CHECK(b["result"]["peak_reserved_bytes"].get<double>() > a["result"]["peak_reserved_bytes"].get<double>());
  CHECK(b["result"]["peak_allocated_bytes"] == a["result"]["peak_allocated_bytes"]);
  json fsdp2 = efficient;
  fsdp2["parallel"]["fsdp_version"] = 2;
  json fsdp2_plain = plain;
  fsdp2_plain["parallel"]["fsdp_version"] = 2;
  CHECK(answer(fsdp2)["result"]["peak_reserved_bytes"] == answer(fsdp2_plain)["result"]["peak_reserved_bytes"]);
  json other = request("torchtitan", 1);
  other["parallel"].erase("fsdp_version");
  other["parallel"]["cpu_ram_efficient_loading"] = true;
  const json refused = answer(other);
  REQUIRE(refused["ok"] == false);
  CHECK(refused["error"]["path"] == "/parallel/cpu_ram_efficient_loading");
}
