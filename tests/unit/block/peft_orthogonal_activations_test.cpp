// What OFT, BOFT, MiSS, GLoRA and LN tuning save per layer (block/activations.cpp add_peft_adapter_terms and
// the trained norms), against methods that differ from them by one mechanism.
#include <catch2/catch.hpp>

#include "block/activations.h"
#include "hf_config/parse_hf_config.h"
#include "../test_support.h"

using namespace memfit;

namespace {

ModelArchitecture toy() { return memfit_test::toy_llama(); }

LayerActivations acts(Method m, std::int64_t rank = 2) {
  TrainingSetup t;
  t.method = m;
  t.lora_rank = rank;
  t.lora_targets = {"q", "v"};
  t.orthogonal_block_size = 4;
  return layer_activations(toy(), t, false, false, false);
}

}  // namespace

TEST_CASE("OFT saves the fp32 input as LoRA does, and its rotation per layer", "[block][peft]") {
  const LayerActivations oft = acts(Method::kOft), lora = acts(Method::kLora, 2);
  CHECK(oft.saved_per_token == lora.saved_per_token - 2 * 4 * 2);  // no lora_A output (r fp32 values)
  // R and Q, Q², Q³: 4 fp32 [2, 4, 4] tensors per adapted linear
  CHECK(oft.saved_per_layer == 2 * 4 * 4 * 2 * 4 * 4);
}

TEST_CASE("BOFT saves its in x in rotation, P's copy and eye, and the base output", "[block][peft]") {
  const LayerActivations boft = acts(Method::kBoft), oft = acts(Method::kOft);
  // x once for q and v (2 x 8) and their outputs (2 x 8, 2 x 4) instead of two fp32 copies (2 x 4 x 8)
  CHECK(boft.saved_per_token == oft.saved_per_token - 2 * 4 * 8 + 2 * 8 + 2 * 8 + 2 * 4);
  CHECK(boft.saved_per_layer == 2 * 3 * 2 * 8 * 8);
  CHECK(boft.saved_per_layer_for_input_grad == 2 * 2 * 8 * 8);  // the rotation, for x's gradient
}

TEST_CASE("LN tuning's trained norms keep their normalised input", "[block][peft]") {
  // prompt tuning: the same frozen blocks with a gradient through them and nothing else trained
  CHECK(acts(Method::kLnTuning).saved_per_token == acts(Method::kPromptTuning).saved_per_token + 2 * 2 * 8);
}

TEST_CASE("MiSS and GLoRA per layer: the r-wide sum; one 16-bit input for q and v and their effective weights",
          "[block][peft]") {
  const LayerActivations lora = acts(Method::kLora, 2), miss = acts(Method::kMiss, 2), glora = acts(Method::kGlora, 2);
  // LoRA's two fp32 input copies (4 x 8 each) and r-wide outputs become MiSS's two fp32 r-wide sums
  CHECK(miss.saved_per_token == lora.saved_per_token - 2 * 4 * 8);
  CHECK(miss.saved_per_layer == 0);
  // GLoRA: the shared 16-bit input once, no r-wide output
  CHECK(glora.saved_per_token == lora.saved_per_token - 2 * 4 * 8 - 2 * 4 * 2 + 2 * 8);
  CHECK(glora.saved_per_layer_for_input_grad == 2 * 8 * 8 + 2 * 4 * 8);  // q's 8 x 8 and v's 4 x 8 weights
}
