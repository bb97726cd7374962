// PEFT's RoAd, OSF, DEFT and BEFT per adapted linear (peft v0.21.2 tuners/{road,osf,deft,beft}/layer.py):
// their trainable entries, frozen buffers and what each forward keeps for backward.
#include <catch2/catch.hpp>

#include "training/parameters.h"
#include "training/peft_linear_adapters.h"
#include "../test_support.h"

using namespace memfit;

namespace {

TrainingSetup setup(Method m, std::int64_t rank = 0) { return memfit_test::peft_setup(m, rank); }

}  // namespace

TEST_CASE("RoAd trains angles and scales by variant and saves two fp32 copies of the output", "[training][peft]") {
  const std::int64_t in = 3072, out = 1024;
  TrainingSetup t = setup(Method::kRoad);
  CHECK(adapter_params(t, "v", in, out) == out);  // road_1: out/2 angles and out/2 scales
  t.road_variant = RoadVariant::kRoad2;
  CHECK(adapter_params(t, "v", in, out) == 2 * out);
  t.road_variant = RoadVariant::kRoad4;
  CHECK(adapter_params(t, "v", in, out) == 4 * out);
  const AdaptedLinearTerms road = adapted_linear_terms(t, in, out, 4, 2);
  CHECK(road.saved_per_token == 2 * 4 * out);  // the output's fp32 copy and its half-swapped copy
  CHECK(road.saved_weight_for_input_grad == 2 * 4 * out);  // first_col, second_col
  CHECK(road.buffer_bytes == 0);
}

TEST_CASE("OSF splits each weight at half its smaller side by default, or keeps lora.rank trainable", "[training][peft]") {
  const std::int64_t in = 4096, out = 1024;  // a GQA k projection: out < in keeps V_high
  const AdaptedLinearTerms half = adapted_linear_terms(setup(Method::kOsf), in, out, 4, 2);
  CHECK(half.trainable_params == 512 * (in + out + 1));  // U_low, S_low, V_low
  CHECK(half.buffer_bytes == 4 * (512 * (in + out + 1) + 512 * in));  // initial copies and V_high
  CHECK(half.saved_per_token == 4 * (in + 2 * 512));  // x's fp32 copy and h
  CHECK(half.saved_weight == 4 * out * 2 * 512);      // A
  CHECK(half.saved_weight_for_input_grad == 4 * 2 * 512 * in);  // B
  CHECK(half.gradient_extra_bytes == 4 * 512 * in);  // V_low's .grad is a slice of B's gradient
  const AdaptedLinearTerms r128 = adapted_linear_terms(setup(Method::kOsf, 128), in, out, 4, 2);
  CHECK(r128.trainable_params == 128 * (in + out + 1));
  CHECK(r128.buffer_bytes == 4 * (128 * (in + out + 1) + (1024 - 128) * in));
  const AdaptedLinearTerms square = adapted_linear_terms(setup(Method::kOsf, 128), in, in, 4, 2);
  CHECK(square.buffer_bytes == 4 * 128 * (2 * in + 1));  // no high part kept for a square weight
  CHECK(osf_trainable_rank(setup(Method::kOsf, 5000), in, out) == 1023);  // one direction stays frozen
}

TEST_CASE("DEFT saves the output's and the input's fp32 copies, PaRa the output's only", "[training][peft]") {
  const std::int64_t in = 3072, out = 1024;
  TrainingSetup t = setup(Method::kDeft, 32);
  const AdaptedLinearTerms deft = adapted_linear_terms(t, in, out, 4, 2);
  CHECK(deft.trainable_params == 32 * (in + out));  // P (out x r), R (r x in)
  CHECK(deft.saved_per_token == 4 * (out + 32 + in + 32));
  CHECK(deft.saved_weight == 4 * out * 32);  // relu(P)
  t.deft_para = true;
  const AdaptedLinearTerms para = adapted_linear_terms(t, in, out, 4, 2);
  CHECK(para.trainable_params == 32 * out);
  CHECK(para.saved_per_token == 4 * (out + 32));
}

TEST_CASE("BEFT trains one bias per output and saves nothing", "[training][peft]") {
  const AdaptedLinearTerms beft = adapted_linear_terms(setup(Method::kBeft), 3072, 1024, 4, 2);
  CHECK(beft.trainable_params == 1024);
  CHECK(beft.saved_per_token + beft.saved_weight + beft.saved_weight_for_input_grad + beft.buffer_bytes == 0);
}

TEST_CASE("PVeRA saves VeRA's outputs with its sampled middle; UniLoRA LoRA's with gathered factors", "[training][peft]") {
  const std::int64_t in = 3072, out = 1024;
  const AdaptedLinearTerms pvera = adapted_linear_terms(setup(Method::kPvera, 256), in, out, 4, 2);
  CHECK(pvera.trainable_params == out + 2 * 256);           // lambda_b, lambda_d
  CHECK(pvera.saved_per_token == 4 * (2 * 256 + 256 + 256 + out));  // A·x, exp(logvar/2), eps, B's output
  CHECK(pvera.saved_weight + pvera.saved_weight_for_input_grad + pvera.buffer_bytes == 0);
  const AdaptedLinearTerms unilora = adapted_linear_terms(setup(Method::kUnilora, 32), in, out, 4, 2);
  CHECK(unilora.trainable_params == 0);  // theta_d is shared, counted once per model
  CHECK(unilora.buffer_bytes == (8 + 4) * 32 * (in + out));  // int64 indices and fp32 scales
  CHECK(unilora.saved_per_token == 4 * (in + 32));
  CHECK(unilora.saved_weight == 4 * out * 32);                 // B
  CHECK(unilora.saved_weight_for_input_grad == 4 * 32 * in);  // A
}

TEST_CASE("AdaLoRA trains A, E, B and ranknum at init_r and keeps the rank allocator's three states of each", "[training][peft]") {
  const std::int64_t in = 3072, out = 1024;
  const AdaptedLinearTerms ada = adapted_linear_terms(setup(Method::kAdalora, 64), in, out, 4, 2);
  CHECK(ada.trainable_params == 64 * (in + out + 1) + 1);  // A (r x in), B (out x r), E (r x 1), ranknum
  CHECK(ada.buffer_bytes == 3 * 4 * 64 * (in + out + 1));  // ipt, exp_avg_ipt, exp_avg_unc of A, E, B
  CHECK(ada.saved_per_token == 4 * (in + 64 + out));  // x's fp32 copy, h, the dividend of / ranknum
  CHECK(ada.saved_weight_for_input_grad == 4 * 64 * in);  // A * E
}

TEST_CASE("PSOFT trains an r x r skew map and two vectors between frozen fp32 SVD factors, saving r values a token", "[training][peft]") {
  const std::int64_t in = 3072, out = 1024, r = 256;
  const AdaptedLinearTerms ps = adapted_linear_terms(setup(Method::kPsoft, r), in, out, 4, 2);
  CHECK(ps.trainable_params == r * (r - 1) / 2 + 2 * r);
  CHECK(ps.buffer_bytes == 4 * r * (in + out) + 2 * 8 * (r * (r - 1) / 2));  // A, B; triu rows and cols
  CHECK(ps.saved_per_token == 4 * r);  // xa only: x meets frozen A
  CHECK(ps.saved_weight == 4 * 4 * r * r);  // solve's A, LU, result; the first magnitude product
  CHECK(ps.saved_weight_for_input_grad == 4 * r * r);  // R
}

TEST_CASE("RandLoRA trains scales of the shared bases; which side saves per token depends on the linear's shape", "[training][peft]") {
  const std::int64_t r = 32;
  CHECK(randlora_bases(r, 3072, 1024) == 32);
  CHECK(randlora_bases(r, 100, 4096) == 4);  // rounded up to full rank
  CHECK(randlora_shared_elems(r, 3072, 3072) == r * 3072 + 3072 * 96 * r);
  const TrainingSetup t = setup(Method::kRandlora, r);
  // q (in <= out): x's fp32 copy per token; the scaled bases (r·n x in) for x's gradient.
  const AdaptedLinearTerms q = adapted_linear_terms(t, 3072, 3072, 4, 2);
  CHECK(q.trainable_params == r * 96 + 96 * 3072);  // lambda, gamma
  CHECK(q.saved_per_token == 4 * 3072);
  CHECK(q.saved_weight_for_input_grad == 4 * 96 * r * 3072);
  CHECK(q.saved_weight == 0);  // B is a view of the shared bank
  // v (out < in): the n·r-wide hidden per token.
  const AdaptedLinearTerms v = adapted_linear_terms(t, 3072, 1024, 4, 2);
  CHECK(v.saved_per_token == 4 * 32 * r);
  CHECK(v.saved_weight_for_input_grad == 4 * 32 * r * 1024);
}
