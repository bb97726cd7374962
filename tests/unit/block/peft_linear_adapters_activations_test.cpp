// What PEFT's weight-space adapters save per layer (block/activations.cpp add_adapted_linear_terms),
// against C3A, which saves the same fp32 input copies and builds no weight.
#include <catch2/catch.hpp>

#include "block/activations.h"
#include "hf_config/parse_hf_config.h"
#include "../test_support.h"

using namespace memfit;

namespace {

ModelArchitecture toy() { return memfit_test::toy_llama(); }

LayerActivations acts(Method m) {
  TrainingSetup t;
  t.method = m;
  t.lora_rank = 2;
  t.lora_targets = {"q", "v"};
  t.circulant_block_size = 4;
  return layer_activations(toy(), t, false, false, false);
}

}  // namespace

TEST_CASE("FourierFT and HiRA keep their fp32 q and v weights only for the input's gradient", "[block][peft]") {
  const LayerActivations c3a = acts(Method::kC3a);
  for (Method m : {Method::kFourierFt, Method::kHira}) {
    const LayerActivations a = acts(m);
    CHECK(a.saved_per_token == c3a.saved_per_token);
    CHECK(a.saved_per_layer_for_input_grad == 4 * (8 * 8 + 4 * 8));
    CHECK(a.saved_per_layer == a.saved_per_layer_for_input_grad);
  }
  CHECK(c3a.saved_per_layer == 0);
}

TEST_CASE("WaveFT also keeps its stacked sub-bands; SHiRA replaces the base linear by its own", "[block][peft]") {
  const LayerActivations wave = acts(Method::kWaveFt);
  CHECK(wave.saved_per_layer == 2 * 4 * (8 * 8 + 4 * 8));
  CHECK(wave.saved_per_layer_for_input_grad == 4 * (8 * 8 + 4 * 8));
  const LayerActivations shira = acts(Method::kShira), c3a = acts(Method::kC3a);
  CHECK(shira.saved_per_token == c3a.saved_per_token - 2 * 4 * 8);  // no fp32 input copies
  CHECK(shira.saved_per_layer_for_input_grad == 2 * (8 * 8 + 4 * 8));
}
