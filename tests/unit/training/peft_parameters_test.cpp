// PEFT adapters other than LoRA: their trainable parameters per adapted linear, from PEFT's layer
// shapes (peft v0.21.2 tuners/{ia3,loha,lokr,vera}/layer.py).
#include <catch2/catch.hpp>

#include "training/parameters.h"
#include "../test_support.h"

using namespace memfit;

namespace {

TrainingSetup with(Method m, std::int64_t rank) { return memfit_test::peft_setup(m, rank); }

}  // namespace

TEST_CASE("LoKr factorises a dimension as PEFT's factorization does", "[training][peft]") {
  // PEFT's own docstring examples, and the Llama widths the oracle ran.
  CHECK(lokr_factorization(256) == std::make_pair<std::int64_t, std::int64_t>(16, 16));
  CHECK(lokr_factorization(128) == std::make_pair<std::int64_t, std::int64_t>(8, 16));
  CHECK(lokr_factorization(127) == std::make_pair<std::int64_t, std::int64_t>(1, 127));
  CHECK(lokr_factorization(4096) == std::make_pair<std::int64_t, std::int64_t>(64, 64));
  CHECK(lokr_factorization(14336) == std::make_pair<std::int64_t, std::int64_t>(112, 128));
}

TEST_CASE("adapter parameters per linear follow each method's shapes", "[training][peft]") {
  // IA3: one vector, of the output width except on the feed-forward (down) linear.
  CHECK(adapter_params(with(Method::kIa3, 0), "k", 4096, 1024) == 1024);
  CHECK(adapter_params(with(Method::kIa3, 0), "down", 14336, 4096) == 14336);
  // LoHa: two rank-r pairs.
  CHECK(adapter_params(with(Method::kLoha, 8), "q", 4096, 4096) == 2 * 8 * (4096 + 4096));
  // LoKr r 8: w1 64 x 64 whole, w2 (64 x 64) as 64 x 8 + 8 x 64 since 8 < 64 / 2; v (1024 x 4096):
  // w1 32 x 64, w2 32 x 8 + 8 x 64. The oracle's AdamW states for q and v of two Llama-3.1-8B layers
  // agree: 2 x (5120 + 2816) x 8 bytes.
  CHECK(adapter_params(with(Method::kLokr, 8), "q", 4096, 4096) == 64 * 64 + 8 * (64 + 64));
  CHECK(adapter_params(with(Method::kLokr, 8), "v", 4096, 1024) == 32 * 64 + 8 * (32 + 64));
  // A rank at or above half the second factor keeps w2 whole.
  CHECK(adapter_params(with(Method::kLokr, 32), "q", 4096, 4096) == 64 * 64 + 64 * 64);
  // VeRA: lambda_d (r) and lambda_b (out); the projections are shared and frozen.
  CHECK(adapter_params(with(Method::kVera, 256), "q", 4096, 4096) == 256 + 4096);
  CHECK(adapter_params(with(Method::kLora, 16), "q", 4096, 1024) == 16 * (4096 + 1024));
}

TEST_CASE("every PEFT method freezes the base", "[training][peft]") {
  for (Method m : {Method::kIa3, Method::kLoha, Method::kLokr, Method::kVera, Method::kPromptTuning, Method::kPrefixTuning}) {
    CHECK_FALSE(layer_trains(with(m, 8), 0, 2));
    CHECK_FALSE(layer_trains(with(m, 8), -1, 2));
  }
  CHECK(layer_trains(with(Method::kFull, 8), 0, 2));
}
