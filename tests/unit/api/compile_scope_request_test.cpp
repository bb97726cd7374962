// training.compile_scope: accelerate's regional compilation (TorchDynamoPlugin use_regional_compilation,
// utils/other.py compile_regions @ v1.13.0 3a2230ac) compiles each repeated block and each leaf child; the
// causal LM's own forward, which computes the loss, stays eager, so the loss keeps its eager bytes.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "request_support.h"

using nlohmann::json;
using request_support::expect_error;
using request_support::request;
using request_support::run;

namespace {

// The logits and loss bytes at the loss backward, from the timeline.
long long loss_backward_bytes(const json& out) {
  for (const json& e : out["result"]["timeline"]) {
    if (e["label"] == "loss backward") return e["logits_loss_bytes"].get<long long>();
  }
  FAIL("no loss backward event");
  return 0;
}

}  // namespace

TEST_CASE("regional compilation leaves the loss eager", "[api][estimate][compile]") {
  const json eager = run(request({{"framework", "hf_trainer"}, {"compile", false}}));
  const json whole = run(request({{"framework", "hf_trainer"}, {"compile", true}}));
  const json regions = run(request({{"framework", "hf_trainer"}, {"compile", true}, {"compile_scope", "regions"}}));
  REQUIRE(eager["ok"] == true);
  REQUIRE(whole["ok"] == true);
  REQUIRE(regions["ok"] == true);
  // torch.compile(model) compiles the loss the model computes in its forward: fewer bytes than eager.
  CHECK(loss_backward_bytes(whole) < loss_backward_bytes(eager));
  // Regions: the loss is the eager one.
  CHECK(loss_backward_bytes(regions) == loss_backward_bytes(eager));
  CHECK(regions["result"]["training"]["compile_scope"] == "regions");
  CHECK_FALSE(whole["result"]["training"].contains("compile_scope"));
  // "model" is the default scope.
  const json model = run(request({{"framework", "hf_trainer"}, {"compile", true}, {"compile_scope", "model"}}));
  REQUIRE(model["ok"] == true);
  CHECK(loss_backward_bytes(model) == loss_backward_bytes(whole));
}

TEST_CASE("compile_scope needs compile and names model or regions", "[api][estimate][compile]") {
  expect_error(request({{"compile", false}, {"compile_scope", "regions"}}), "/training/compile_scope");
  expect_error(request({{"compile", true}, {"compile_scope", "layers"}}), "/training/compile_scope");
}
