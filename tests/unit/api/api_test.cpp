// The api facade: envelope shape, never throws, strict requests, preset resolution.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "api/api.h"

using nlohmann::json;
using namespace memfit;

TEST_CASE("inspect returns the envelope with exact counts", "[api]") {
  const json r = json::parse(api::inspect(R"({"model":{"preset":"meta-llama/Llama-3.1-8B"}})"));
  REQUIRE(r["ok"] == true);
  CHECK(r["schema_version"] == api::kSchemaVersion);
  CHECK(r["result"]["total_params"] == 8030261248LL);
  CHECK(r["result"]["params_by_kind"]["lm_head"] == 128256LL * 4096);
  CHECK(r["result"]["architecture"]["attention"] == "gqa");
  CHECK_FALSE(r["result"].contains("tensors"));
}

TEST_CASE("by-kind breakdown sums to the total", "[api]") {
  for (const char* id : {"deepseek-ai/DeepSeek-V3", "google-t5/t5-base", "openai-community/gpt2",
                         "google-bert/bert-base-uncased", "Qwen/Qwen3-30B-A3B"}) {
    INFO(id);
    const json r = json::parse(api::inspect(std::string(R"({"model":{"preset":")") + id + R"("}})"));
    REQUIRE(r["ok"] == true);
    long long sum = 0;
    for (auto& [k, v] : r["result"]["params_by_kind"].items()) sum += v.get<long long>();
    CHECK(sum == r["result"]["total_params"].get<long long>());
  }
}

TEST_CASE("tensor listing covers every parameter", "[api]") {
  const json r = json::parse(api::inspect(R"({"model":{"preset":"openai-community/gpt2"},"include_tensors":true})"));
  REQUIRE(r["ok"] == true);
  long long sum = 0;
  for (const json& t : r["result"]["tensors"]) {
    if (t["tied"].get<bool>()) continue;
    const long long layers = t.contains("layer_count") ? t["layer_count"].get<long long>() : 1;
    sum += t["numel"].get<long long>() * t["copies"].get<long long>() * layers;
  }
  CHECK(sum == 124439808LL);
}

TEST_CASE("inline configs report errors at their pointer inside the request", "[api]") {
  const json r = json::parse(api::inspect(R"({"model":{"config":{"model_type":"llama","vocab_size":10,
    "hidden_size":16,"num_hidden_layers":-1,"num_attention_heads":2,"intermediate_size":8}}})"));
  REQUIRE(r["ok"] == false);
  CHECK(r["error"]["code"] == "out_of_range");
  CHECK(r["error"]["path"] == "/model/config/num_hidden_layers");
}

TEST_CASE("requests are strict", "[api]") {
  const json unknown = json::parse(api::inspect(R"({"model":{"preset":"openai-community/gpt2"},"modle":1})"));
  CHECK(unknown["error"]["code"] == "unknown_field");
  CHECK(unknown["error"]["path"] == "/modle");
  const json preset = json::parse(api::inspect(R"({"model":{"preset":"nope/nothing"}})"));
  CHECK(preset["error"]["code"] == "unknown_preset");
  CHECK(preset["error"]["path"] == "/model/preset");
  const json both = json::parse(api::inspect(R"({"model":{"preset":"a","config":{}}})"));
  CHECK(both["error"]["message"] == "model needs exactly one of preset or config");
  const json missing = json::parse(api::inspect(R"({})"));
  CHECK(missing["error"]["code"] == "missing_field");
  CHECK(missing["error"]["path"] == "/model");
}

TEST_CASE("every entry point answers garbage with an envelope", "[api]") {
  for (const std::string& garbage : {std::string(""), std::string("nul"), std::string("\xff\xfe{"),
                                     std::string("{\"model\":"), std::string(200, '{'), std::string("42")}) {
    for (const std::string& out : {api::inspect(garbage), api::inspect_config(garbage)}) {
      const json r = json::parse(out);
      CHECK(r["ok"] == false);
      CHECK(r["error"]["code"].is_string());
      CHECK(r["error"]["path"].is_string());
    }
  }
}

TEST_CASE("presets list models and gpus", "[api][presets]") {
  const json r = json::parse(api::presets());
  REQUIRE(r["ok"] == true);
  CHECK(r["result"]["models"].size() >= 60);
  CHECK(r["result"]["gpus"].size() >= 20);
  const json v = json::parse(api::version());
  CHECK(v["result"]["version"] == MEMFIT_VERSION);
}
