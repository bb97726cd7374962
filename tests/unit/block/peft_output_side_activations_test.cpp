// What RoAd, DEFT and OSF save per layer on q and v (block/activations.cpp add_adapted_linear_terms),
// against BEFT, which adds a bias and saves nothing of its own.
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
  t.road_variant = RoadVariant::kRoad2;
  return layer_activations(toy(), t, false, false, false);
}

}  // namespace

TEST_CASE("RoAd saves two fp32 copies of q's and v's outputs and their columns", "[block][peft]") {
  const LayerActivations beft = acts(Method::kBeft), road = acts(Method::kRoad);
  CHECK(beft.saved_per_layer == 0);
  CHECK(road.saved_per_token - beft.saved_per_token == 2 * 4 * (8 + 4));
  CHECK(road.saved_per_layer_for_input_grad == 2 * 4 * (8 + 4));               // first_col, second_col
  CHECK(road.saved_per_layer == road.saved_per_layer_for_input_grad + 2 * 4 * (8 + 4));  // cos, sin
}

TEST_CASE("DEFT saves the output's and the input's fp32 copies; OSF its concatenated factors", "[block][peft]") {
  const LayerActivations beft = acts(Method::kBeft), deft = acts(Method::kDeft);
  CHECK(deft.saved_per_token - beft.saved_per_token == 4 * ((8 + 2 + 8 + 2) + (4 + 2 + 8 + 2)));
  CHECK(deft.saved_per_layer == 4 * 2 * (8 + 4));  // relu(P) of q and v
  const LayerActivations osf = acts(Method::kOsf, 0);  // PEFT's half: r 4 for q (8 x 8), 2 for v (8 -> 4)
  CHECK(osf.saved_per_token - beft.saved_per_token == 4 * ((8 + 2 * 4) + (8 + 2 * 2)));
  CHECK(osf.saved_per_layer_for_input_grad == 4 * (2 * 4 * 8 + 2 * 2 * 8));   // B of q and v
  CHECK(osf.saved_per_layer == osf.saved_per_layer_for_input_grad + 4 * (8 * 2 * 4 + 4 * 2 * 2));  // and A
}
