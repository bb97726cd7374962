// PEFT's modules_to_save: a trainable full copy of the token embedding or the output layer beside
// the frozen original (peft v0.21.2 utils/other.py ModulesToSaveWrapper.update deep-copies it;
// the oracle's OR-cur202611-*-lora16all-linear+head / +embhead cases).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "api/api.h"

using nlohmann::json;

namespace {

constexpr std::int64_t kTable8B = 128'256LL * 4096;  // Llama-3.1-8B: vocabulary x hidden, untied
constexpr std::int64_t kTable1B = 128'256LL * 2048;  // Llama-3.2-1B: tied

json request(const char* model, json saved) {
  json lora = {{"rank", 16}, {"targets", "all-linear"}};
  if (!saved.is_null()) lora["modules_to_save"] = saved;
  return {{"schema_version", 1},
          {"model", {{"preset", model}}},
          {"training", {{"method", "lora"}, {"lora", lora}, {"precision", "bf16"}, {"micro_batch", 1}, {"seq_len", 512}}},
          {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 1}}}};
}

json estimate(const json& req) { return json::parse(memfit::api::estimate(req.dump())); }

json result_of(const json& req) {
  json out = estimate(req);
  REQUIRE(out["ok"] == true);
  return out["result"];
}

std::int64_t state(const json& r, const char* key) { return r["states"][key].get<std::int64_t>(); }

}  // namespace

TEST_CASE("modules_to_save trains a bf16 copy of each saved module: weights, gradients and AdamW states",
          "[peft][modules_to_save]") {
  const char* model = "meta-llama/Llama-3.1-8B";
  const json plain = result_of(request(model, nullptr));
  for (const auto& [saved, copies] : {std::pair{json{"head"}, 1}, std::pair{json{"embed_tokens", "lm_head"}, 2}}) {
    const json r = result_of(request(model, saved));
    const std::int64_t n = copies * kTable8B;
    CHECK(state(r, "trainable_params") - state(plain, "trainable_params") == n);
    CHECK(state(r, "weights_bytes") - state(plain, "weights_bytes") == 2 * n);    // the copy, as the model's dtype
    CHECK(state(r, "gradients_bytes") - state(plain, "gradients_bytes") == 2 * n);
    CHECK(state(r, "optimizer_states_bytes") - state(plain, "optimizer_states_bytes") == 4 * n);  // exp_avg, exp_avg_sq in bf16
    CHECK(r["peak_allocated_bytes"].get<std::int64_t>() > plain["peak_allocated_bytes"].get<std::int64_t>() + 4 * n);
    CHECK(r["perf"]["step_time_s"].get<double>() > plain["perf"]["step_time_s"].get<double>());
  }
  CHECK(result_of(request(model, json{"head"}))["training"]["lora"]["modules_to_save"] == json{"head"});
}

TEST_CASE("modules_to_save on a tied output layer copies the shared table into storage of its own",
          "[peft][modules_to_save]") {
  const char* model = "meta-llama/Llama-3.2-1B-Instruct";
  const json plain = result_of(request(model, nullptr));
  const json head = result_of(request(model, json{"head"}));
  CHECK(state(head, "weights_bytes") - state(plain, "weights_bytes") == 2 * kTable1B);
  CHECK(state(head, "trainable_params") - state(plain, "trainable_params") == kTable1B);
  const json both = result_of(request(model, json{"embedding", "head"}));
  CHECK(state(both, "weights_bytes") - state(plain, "weights_bytes") == 4 * kTable1B);
}

TEST_CASE("modules_to_save: bad input is an error with its pointer", "[peft][modules_to_save][errors]") {
  const char* model = "meta-llama/Llama-3.1-8B";
  json out = estimate(request(model, json{"head", "norm"}));
  CHECK(out["error"]["code"] == "invalid_value");
  CHECK(out["error"]["path"] == "/training/lora/modules_to_save/1");
  out = estimate(request(model, "head"));
  CHECK(out["error"]["code"] == "invalid_type");
  CHECK(out["error"]["path"] == "/training/lora/modules_to_save");
  json both = request(model, json{"lm_head"});
  both["training"]["lora"]["targets"] = json{"q", "v", "head"};
  out = estimate(both);
  CHECK(out["error"]["code"] == "invalid_value");
  CHECK(out["error"]["path"] == "/training/lora/modules_to_save");
}
