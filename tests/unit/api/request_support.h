// Helpers of the request-schema tests: a Llama-3.1-8B request on one H100, its envelope, and a coded
// error's pointer.
#pragma once
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "api/api.h"

namespace request_support {

inline nlohmann::json request(nlohmann::json training, std::int64_t seq_len = 512) {
  training["micro_batch"] = 1;
  training["seq_len"] = seq_len;
  return {{"schema_version", 1}, {"model", {{"preset", "meta-llama/Llama-3.1-8B"}}}, {"training", training},
          {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 1}}}};
}

inline nlohmann::json run(const nlohmann::json& r) { return nlohmann::json::parse(memfit::api::estimate(r.dump())); }

inline void expect_error(const nlohmann::json& request, const char* path, const char* code = "invalid_value") {
  const nlohmann::json out = run(request);
  REQUIRE(out["ok"] == false);
  CHECK(out["error"]["code"] == code);
  CHECK(out["error"]["path"] == path);
}

}  // namespace request_support
