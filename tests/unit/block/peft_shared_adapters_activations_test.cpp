// What PEFT's shared-bank adapters add to a layer's saved tensors (block/activations.cpp through
// training/peft_shared_adapters.h): FRoD's device copies against TinyLoRA's r-wide h.
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
  return layer_activations(toy(), t, false, false, false);
}

}  // namespace

TEST_CASE("FRoD keeps U's copy always and V's and the dense core's for the input's gradient", "[block][peft]") {
  const LayerActivations frod = acts(Method::kFrod), tiny = acts(Method::kTinyLora);
  const std::int64_t input_grad = 2 * (2 * 8 * 8) * 2;  // V and the core, in x in, 16-bit, on q and v
  CHECK(frod.saved_per_layer_for_input_grad == input_grad);
  // U (out x in) and the core's one nonzero (int64 indices twice, two 16-bit values) and lambda's cast.
  CHECK(frod.saved_per_layer == input_grad + 2 * (8 * 8 + 4 * 8) + 2 * (36 + 2 * 8));
  // FRoD's z (2·in) against TinyLoRA's fp32 h (4·r), per adapted linear.
  CHECK(frod.saved_per_token - tiny.saved_per_token == 2 * (2 * 8 - 4 * 2));
  CHECK(tiny.saved_per_layer_for_input_grad == 0);
}
