// The request schema of PEFT's RoAd, OSF, DEFT, BEFT and trainable tokens: PEFT's defaults, the
// estimate's echo and coded errors with the JSON Pointer of the field at fault.
#include "request_support.h"

using nlohmann::json;
using namespace memfit;
using request_support::request;
using request_support::run;

TEST_CASE("RoAd, OSF, DEFT, BEFT and trainable tokens estimate with PEFT's defaults", "[api][peft]") {
  const json road = run(request({{"method", "road"}}));
  REQUIRE(road["ok"] == true);
  CHECK(road["result"]["training"]["road"]["variant"] == "road_1");
  const json road2 = run(request({{"method", "road"}, {"road", {{"variant", "road_2"}}}}));
  REQUIRE(road2["ok"] == true);
  CHECK(road2["result"]["states"]["trainable_params"].get<std::int64_t>() ==
        2 * road["result"]["states"]["trainable_params"].get<std::int64_t>());
  const json deft = run(request({{"method", "deft"}}));
  REQUIRE(deft["ok"] == true);
  CHECK(deft["result"]["training"]["lora"]["rank"] == 8);
  CHECK(deft["result"]["training"]["deft"]["para"] == false);
  const json para = run(request({{"method", "deft"}, {"deft", {{"para", true}}}}));
  REQUIRE(para["ok"] == true);
  CHECK(para["result"]["states"]["trainable_params"].get<std::int64_t>() <
        deft["result"]["states"]["trainable_params"].get<std::int64_t>());
  const json osf = run(request({{"method", "osf"}, {"lora", {{"targets", "all-linear"}}}}));
  REQUIRE(osf["ok"] == true);
  CHECK_FALSE(osf["result"]["training"]["lora"].contains("rank"));  // PEFT's half of each linear
  const json osf128 = run(request({{"method", "osf"}, {"lora", {{"targets", "all-linear"}, {"rank", 128}}}}));
  REQUIRE(osf128["ok"] == true);
  CHECK(osf128["result"]["states"]["trainable_params"].get<std::int64_t>() <
        osf["result"]["states"]["trainable_params"].get<std::int64_t>());
  CHECK(run(request({{"method", "beft"}}))["ok"] == true);
  const json tokens = run(request({{"method", "trainable_tokens"}, {"trainable_tokens", {{"count", 2}}}}));
  REQUIRE(tokens["ok"] == true);
  CHECK(tokens["result"]["training"]["trainable_tokens"]["count"] == 2);
}

TEST_CASE("RoAd, DEFT and trainable tokens settings that do not fit are refused with their pointer", "[api][peft]") {
  const auto expect = [](const json& training, const char* path, const char* code = "invalid_value") {
    request_support::expect_error(request(training), path, code);
  };
  expect({{"method", "road"}, {"lora", {{"rank", 8}}}}, "/training/lora/rank");
  expect({{"method", "beft"}, {"lora", {{"rank", 8}}}}, "/training/lora/rank");
  expect({{"method", "road"}, {"road", {{"variant", "road_3"}}}}, "/training/road/variant");
  expect({{"method", "road"}, {"road", {{"group", 64}}}}, "/training/road/group", "unknown_field");
  expect({{"method", "lora"}, {"road", {{"variant", "road_2"}}}}, "/training/road");
  expect({{"method", "deft"}, {"deft", "para"}}, "/training/deft", "invalid_type");
  expect({{"method", "osf"}, {"deft", {{"para", true}}}}, "/training/deft");
  expect({{"method", "trainable_tokens"}}, "/training/trainable_tokens", "missing_field");
  expect({{"method", "trainable_tokens"}, {"trainable_tokens", json::object()}}, "/training/trainable_tokens/count", "missing_field");
  expect({{"method", "trainable_tokens"}, {"trainable_tokens", {{"count", 0}}}}, "/training/trainable_tokens/count", "out_of_range");
  expect({{"method", "trainable_tokens"}, {"trainable_tokens", {{"count", 2}}}, {"lora", {{"targets", {"q"}}}}}, "/training/lora");
}

TEST_CASE("PVeRA and UniLoRA estimate with PEFT's ranks; UniLoRA's theta_d counts once", "[api][peft]") {
  const json pvera = run(request({{"method", "pvera"}}));
  REQUIRE(pvera["ok"] == true);
  CHECK(pvera["result"]["training"]["lora"]["rank"] == 256);
  const json unilora = run(request({{"method", "unilora"}}));
  REQUIRE(unilora["ok"] == true);
  CHECK(unilora["result"]["training"]["lora"]["rank"] == 4);
  CHECK(unilora["result"]["states"]["trainable_params"] == 256);
  request_support::expect_error(request({{"method", "pvera"}, {"lora", {{"dropout", 0.1}}}}), "/training/lora/dropout");
}

TEST_CASE("AdaLoRA, PSOFT and RandLoRA estimate with PEFT's ranks and take lora.rank only", "[api][peft]") {
  const json ada = run(request({{"method", "adalora"}}));
  REQUIRE(ada["ok"] == true);
  CHECK(ada["result"]["training"]["lora"]["rank"] == 12);  // AdaLoraConfig init_r
  const json ada64 = run(request({{"method", "adalora"}, {"lora", {{"rank", 64}}}}));
  REQUIRE(ada64["ok"] == true);
  CHECK(ada64["result"]["states"]["trainable_params"].get<std::int64_t>() >
        ada["result"]["states"]["trainable_params"].get<std::int64_t>());
  for (const char* m : {"psoft", "randlora"}) {
    const json j = run(request({{"method", m}}));
    REQUIRE(j["ok"] == true);
    CHECK(j["result"]["training"]["lora"]["rank"] == 32);
  }
  request_support::expect_error(request({{"method", "psoft"}, {"lora", {{"dropout", 0.1}}}}), "/training/lora/dropout");
  request_support::expect_error(request({{"method", "randlora"}, {"lora", {{"n_frequency", 100}}}}), "/training/lora/n_frequency");
}
