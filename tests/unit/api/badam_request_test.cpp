// BAdam's request (training.badam, api/request.cpp read_badam): one decoder layer trains with an
// fp32 copy and fp32 AdamW states over a 16-bit model; coded errors with the field's pointer.
#include "request_support.h"

using nlohmann::json;
using request_support::run;

namespace {

// One Llama-3.1-8B decoder layer: q, o 4096 x 4096; k, v 1024 x 4096; gate, up, down 14336 x 4096; two norms.
constexpr std::int64_t kLayerParams = 2 * 4096 * 4096 + 2 * 1024 * 4096 + 3 * 14336 * 4096 + 2 * 4096;

// Full fine-tuning in pure bf16 at 1 x 1024 tokens unless the test says otherwise.
json request(json training) {
  if (!training.contains("method")) training["method"] = "full";
  if (!training.contains("precision")) training["precision"] = "bf16";
  return request_support::request(training, 1024);
}

void expect_error(const json& training, const char* path, const char* code = "invalid_value") {
  request_support::expect_error(request(training), path, code);
}

}  // namespace

TEST_CASE("BAdam trains one layer: its bf16 gradient, fp32 copy and fp32 AdamW moments", "[api][badam]") {
  const json out = run(request({{"badam", {{"active_block", "last"}}}}));
  REQUIRE(out["ok"] == true);
  CHECK(out["result"]["training"]["badam"]["active_layer"] == 31);
  const json& s = out["result"]["states"];
  CHECK(s["trainable_params"] == kLayerParams);
  CHECK(s["gradients_bytes"] == 2 * kLayerParams);
  CHECK(s["optimizer_states_bytes"] == 12 * kLayerParams);
  const json full = run(request({}));
  REQUIRE(full["ok"] == true);
  CHECK(full["result"]["states"]["trainable_params"] > 32 * kLayerParams);
  CHECK(run(request({{"badam", {{"active_block", "first"}}}}))["result"]["training"]["badam"]["active_layer"] == 0);
  CHECK(run(request({{"badam", {{"active_block", 7}}}}))["result"]["training"]["badam"]["active_layer"] == 7);
  CHECK(run(request({{"badam", json::object()}}))["result"]["training"]["badam"]["active_layer"] == 0);  // the run's peak
}

TEST_CASE("BAdam's first block passes the gradient through the frozen layers above it", "[api][badam]") {
  const auto activations = [](const char* block, const char* ac) {
    const json out = run(request({{"badam", {{"active_block", block}}}, {"activation_checkpointing", ac}}));
    REQUIRE(out["ok"] == true);
    return out["result"]["breakdown"]["activations_bytes"].get<std::int64_t>();
  };
  // Without checkpointing the 31 frozen layers above the first save what their input gradients
  // need; below the last nothing needs a gradient.
  CHECK(activations("first", "none") > 10 * activations("last", "none"));
  CHECK(activations("first", "full") == activations("last", "full"));
}

TEST_CASE("BAdam settings that do not fit are refused with their pointer", "[api][badam]") {
  expect_error({{"method", "lora"}, {"badam", {{"active_block", "first"}}}}, "/training/badam");
  expect_error({{"precision", "amp_bf16"}, {"badam", {{"active_block", "first"}}}}, "/training/badam");
  expect_error({{"optimizer", "sgd"}, {"badam", {{"active_block", "first"}}}}, "/training/badam");
  expect_error({{"badam", {{"active_block", "middle"}}}}, "/training/badam/active_block");
  expect_error({{"badam", {{"active_block", 32}}}}, "/training/badam/active_block");
  expect_error({{"badam", 3}}, "/training/badam", "invalid_type");
  json sharded = request({{"badam", {{"active_block", "first"}}}});
  sharded["cluster"]["gpus"] = 8;
  sharded["parallel"] = {{"dp", 8}, {"sharding", "zero3"}};
  request_support::expect_error(sharded, "/training/badam", "unsupported");
  sharded["parallel"] = {{"dp", 8}};
  CHECK(run(sharded)["ok"] == true);
  const json unknown = run(request({{"badam", {{"active_block", "first"}, {"switch", 50}}}}));
  REQUIRE(unknown["ok"] == false);
  CHECK(unknown["error"]["path"] == "/training/badam/switch");
}
