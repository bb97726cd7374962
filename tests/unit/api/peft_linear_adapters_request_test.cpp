// The request schema of PEFT's newer adapters on linears: PEFT's defaults and coded errors with the
// JSON Pointer of the field at fault.
#include "request_support.h"

using nlohmann::json;
using namespace memfit;
using request_support::request;
using request_support::run;

TEST_CASE("newer PEFT adapters estimate with PEFT's defaults", "[api][peft]") {
  const json fourier = run(request({{"method", "fourierft"}}));
  REQUIRE(fourier["ok"] == true);
  CHECK(fourier["result"]["training"]["lora"]["n_frequency"] == 1000);
  const json more = run(request({{"method", "fourierft"}, {"lora", {{"n_frequency", 5000}}}}));
  REQUIRE(more["ok"] == true);
  CHECK(more["result"]["states"]["trainable_params"].get<std::int64_t>() -
            fourier["result"]["states"]["trainable_params"].get<std::int64_t>() ==
        4000 * 2 * 32);  // q and v in 32 layers
  CHECK(run(request({{"method", "waveft"}}))["result"]["training"]["lora"]["n_frequency"] == 2592);
  CHECK(run(request({{"method", "hira"}}))["result"]["training"]["lora"]["rank"] == 32);
  CHECK(run(request({{"method", "shira"}}))["result"]["training"]["lora"]["rank"] == 32);
  CHECK(run(request({{"method", "gralora"}}))["result"]["training"]["lora"]["rank"] == 32);
  const json delora = run(request({{"method", "delora"}, {"lora", {{"rank", 16}}}}));
  REQUIRE(delora["ok"] == true);
  CHECK(delora["result"]["training"]["lora"]["rank"] == 16);
  const json c3a = run(request({{"method", "c3a"}, {"lora", {{"block_size", 64}}}}));
  REQUIRE(c3a["ok"] == true);
  CHECK(c3a["result"]["training"]["lora"]["block_size"] == 64);
}

TEST_CASE("newer PEFT adapter settings that do not fit are refused with their pointer", "[api][peft]") {
  const auto expect = [](const json& training, const char* path, const char* code = "invalid_value") {
    request_support::expect_error(request(training), path, code);
  };
  expect({{"method", "fourierft"}, {"lora", {{"rank", 8}}}}, "/training/lora/rank");
  expect({{"method", "hira"}, {"lora", {{"n_frequency", 100}}}}, "/training/lora/n_frequency");
  expect({{"method", "lora"}, {"lora", {{"n_frequency", 100}}}}, "/training/lora/n_frequency");
  expect({{"method", "c3a"}, {"lora", {{"dropout", 0.1}}}}, "/training/lora/dropout");
  expect({{"method", "delora"}, {"lora", {{"init", "pissa"}}}}, "/training/lora/init");
  expect({{"method", "shira"}, {"lora", {{"block_size", 16}}}}, "/training/lora/block_size");
  expect({{"method", "waveft"}, {"lora", {{"n_frequency", 0}}}}, "/training/lora/n_frequency", "out_of_range");
}
