// Which tensors train (training/parameters.h): the engines read one answer for the output layer.
#include <catch2/catch.hpp>

#include "training/parameters.h"

using namespace memfit;

namespace {

TrainingSetup with(Method m) {
  TrainingSetup t;
  t.method = m;
  t.lora_rank = 16;
  return t;
}

}  // namespace

TEST_CASE("the tensors outside the blocks train under full fine-tuning only", "[training][parameters]") {
  constexpr std::int64_t kLayers = 32;
  CHECK(globals_train(with(Method::kFull), kLayers));
  CHECK(head_weight_trains(with(Method::kFull), kLayers));
  // Freeze tuning trains its last blocks, not the output layer; its last block still trains.
  TrainingSetup freeze = with(Method::kFreeze);
  freeze.freeze_trainable_layers = 2;
  CHECK(layer_trains(freeze, kLayers - 1, kLayers));
  CHECK_FALSE(globals_train(freeze, kLayers));
  CHECK_FALSE(head_weight_trains(freeze, kLayers));
  // BAdam steps one block; the embeddings and output layer stay frozen.
  TrainingSetup badam = with(Method::kFull);
  badam.badam_active_layer = kLayers - 1;
  CHECK(layer_trains(badam, kLayers - 1, kLayers));
  CHECK_FALSE(head_weight_trains(badam, kLayers));
}

TEST_CASE("a PEFT run's output layer trains only as a module to save", "[training][parameters]") {
  TrainingSetup lora = with(Method::kLora);
  CHECK_FALSE(globals_train(lora, 32));
  CHECK_FALSE(head_weight_trains(lora, 32));
  lora.lora_saves_head = true;
  CHECK(head_weight_trains(lora, 32));
  CHECK_FALSE(globals_train(lora, 32));
}
