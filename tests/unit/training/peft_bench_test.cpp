// PEFT method_comparison methods' shapes and saved tensors (training/peft_bench.h), per adapted
// linear, against the shapes peft v0.21.2 tuners/miss/layer.py gives them.
#include <catch2/catch.hpp>

#include "training/parameters.h"
#include "training/peft_bench.h"

using namespace memfit;

namespace {

TrainingSetup miss(MissShape shape, std::int64_t r = 4, std::int64_t mini_r = 1) {
  TrainingSetup t;
  t.method = Method::kMiss;
  t.lora_rank = r;
  t.miss_shape = shape;
  t.miss_mini_r = mini_r;
  return t;
}

}  // namespace

TEST_CASE("MiSS's shard: r x out, out/r blocks of r x r, or r x mini_r", "[training][peft]") {
  CHECK(adapter_params(miss(MissShape::kDefault), "q", 16, 32) == 4 * 32);
  CHECK(adapter_params(miss(MissShape::kBat), "q", 16, 32) == (32 / 4) * 4 * 4);
  CHECK(adapter_params(miss(MissShape::kMini, 4, 2), "q", 16, 32) == 4 * 2);
}

TEST_CASE("MiSS keeps the r-wide block sum; bat the fp32 input and two fp32 weights; mini the repeated shard",
          "[training][peft]") {
  const AdaptedLinearTerms plain = miss_saves(miss(MissShape::kDefault), 16, 32, 4);
  CHECK(plain.saved_per_token == 4 * 4);
  CHECK(plain.saved_weight == 0);
  CHECK(plain.saved_weight_for_input_grad == 0);
  const AdaptedLinearTerms mini = miss_saves(miss(MissShape::kMini, 4, 2), 16, 32, 4);
  CHECK(mini.saved_per_token == 4 * 4);
  CHECK(mini.saved_weight_for_input_grad == 4 * 4 * 32);  // the shard repeated to r x out
  const AdaptedLinearTerms bat = miss_saves(miss(MissShape::kBat), 16, 32, 4);
  CHECK(bat.saved_per_token == 4 * 16);                       // the input cast to fp32, saved by F.linear
  CHECK(bat.saved_weight == 4 * 32 * 16);                  // the fp32 weight the blocks' matmul saves
  CHECK(bat.saved_weight_for_input_grad == 4 * 32 * 16);   // the merged weight, for the input's gradient
}

TEST_CASE("GLoRA trains two rank-r pairs, two columns or two scalars", "[training][peft]") {
  TrainingSetup t;
  t.method = Method::kGlora;
  t.lora_rank = 2;
  CHECK(adapter_params(t, "q", 16, 32) == 2 * 2 * (16 + 32));
  t.glora_a_b = GloraPath::kVector;
  CHECK(adapter_params(t, "q", 16, 32) == 2 * 32);
  t.glora_a_b = GloraPath::kConstant;
  CHECK(adapter_params(t, "q", 16, 32) == 2);
}

TEST_CASE("GLoRA keeps the 16-bit input and, for its gradient, the 16-bit effective weight", "[training][peft]") {
  const AdaptedLinearTerms g = glora_saves(16, 32, 2);
  CHECK(g.saved_per_token == 2 * 16);
  CHECK(g.saved_weight == 0);
  CHECK(g.saved_weight_for_input_grad == 2 * 32 * 16);
}
