// OFT, BOFT and P-tuning's encoders: trainable parameters from PEFT's layer shapes (peft v0.21.2
// tuners/oft/layer.py, boft/layer.py, p_tuning/model.py).
#include <catch2/catch.hpp>

#include "training/parameters.h"

using namespace memfit;

TEST_CASE("OFT's block size follows PEFT's divisor adjustment", "[training][peft]") {
  CHECK(nearest_divisor(32, 4096) == 32);
  CHECK(nearest_divisor(32, 3072) == 32);
  CHECK(nearest_divisor(5000, 4096) == 4096);  // larger than the width: one block
  CHECK(nearest_divisor(7, 20) == 5);          // 5 and 10 are 2 and 3 away
  CHECK(nearest_divisor(3, 8) == 2);           // a tie (2 and 4) takes the lower
  TrainingSetup t;
  t.method = Method::kOft;
  CHECK(orthogonal_block_for(t, 2048) == 32);  // PEFT's default oft_block_size
  t.oft_blocks = 32;                           // r = 32 blocks of a 3072-wide input
  CHECK(orthogonal_block_for(t, 3072) == 96);
  t.method = Method::kBoft;
  t.oft_blocks = 0;
  CHECK(orthogonal_block_for(t, 2048) == 4);   // PEFT's default boft_block_size
}

TEST_CASE("OFT and BOFT parameters per adapted linear", "[training][peft]") {
  TrainingSetup t;
  t.method = Method::kOft;
  // 2048 / 32 = 64 blocks of 32 * 31 / 2 upper-triangle entries
  CHECK(adapter_params(t, "q", 2048, 2048) == 64 * 496);
  t.orthogonal_block_size = 8;
  CHECK(adapter_params(t, "q", 2048, 512) == 256 * 28);
  t.method = Method::kBoft;
  t.orthogonal_block_size = 0;
  // boft_R [1, 512, 4, 4] and boft_s [out, 1]
  CHECK(adapter_params(t, "v", 2048, 512) == 512 * 16 + 512);
}

TEST_CASE("P-tuning's LSTM encoder is a two-layer bidirectional LSTM and a two-linear head", "[training][peft]") {
  TrainingSetup t;
  t.method = Method::kPTuning;
  t.virtual_tokens = 20;
  const std::int64_t h = 2048;
  CHECK(p_tuning_encoder_params(t, h) == 20 * h + 3 * h * (h + 1));
  t.prompt_encoder = PromptEncoder::kLstm;
  // per direction: W_ih 4h x in, W_hh 4h x h, b_ih and b_hh 4h; layer 2 reads 2h; head 2h->2h->h
  const std::int64_t lstm = 2 * (8 * h * h + 8 * h) + 2 * (12 * h * h + 8 * h);
  CHECK(p_tuning_encoder_params(t, h) == 20 * h + lstm + (4 * h * h + 2 * h) + (2 * h * h + h));
  // the oracle's Llama-3.2-1B record: 772.2 MB more fp32 weights than the frozen model's
  CHECK(p_tuning_encoder_params(t, h) * 4 / 1'000'000 == 772);
}
