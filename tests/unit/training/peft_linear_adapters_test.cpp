// PEFT's newer adapters per adapted linear: parameters from PEFT's layer shapes and what
// each forward keeps (peft v0.21.2 tuners/{fourierft,waveft,hira,shira,c3a,delora,gralora,peanut}/layer.py).
#include <catch2/catch.hpp>

#include "training/parameters.h"
#include "training/peft_linear_adapters.h"

using namespace memfit;

namespace {

TrainingSetup setup(Method m) {
  TrainingSetup t;
  t.method = m;
  return t;
}

}  // namespace

TEST_CASE("newer PEFT adapters train PEFT's entries per linear", "[training][peft]") {
  CHECK(adapter_params(setup(Method::kFourierFt), "q", 3072, 1024) == 1000);  // n_frequency default
  CHECK(adapter_params(setup(Method::kWaveFt), "q", 3072, 1024) == 2592);
  TrainingSetup hira = setup(Method::kHira);
  hira.lora_rank = 32;
  CHECK(adapter_params(hira, "v", 3072, 1024) == 32 * (3072 + 1024));  // A (r, in), B (out, r)
  TrainingSetup shira = setup(Method::kShira);
  shira.lora_rank = 32;
  CHECK(adapter_params(shira, "v", 3072, 1024) == 32 * (3072 + 1024));  // as many as LoRA's
  TrainingSetup c3a = setup(Method::kC3a);
  c3a.circulant_block_size = 64;
  CHECK(adapter_params(c3a, "v", 3072, 1024) == 16 * 48 * 64);  // (out/b, in/b, b)
}

TEST_CASE("FourierFT and HiRA keep an fp32 weight for the input's gradient, SHiRA a 16-bit one", "[training][peft]") {
  const std::int64_t in = 3072, out = 1024, delta = 4 * in * out;
  const AdaptedLinearTerms fourier = adapted_linear_terms(setup(Method::kFourierFt), in, out, 4, 2);
  CHECK(fourier.saved_per_token == 4 * in);  // the input's fp32 copy
  CHECK(fourier.saved_weight_for_input_grad == delta);
  CHECK(fourier.saved_weight == 0);
  CHECK(fourier.backward_transient == 3 * delta);  // complex gradients of ifft2
  const AdaptedLinearTerms wave = adapted_linear_terms(setup(Method::kWaveFt), in, out, 4, 2);
  CHECK(wave.saved_weight == delta);  // the stacked sub-bands conv_transpose2d keeps
  const AdaptedLinearTerms hira = adapted_linear_terms(setup(Method::kHira), in, out, 4, 2);
  CHECK(hira.saved_weight_for_input_grad == delta);
  CHECK(hira.saved_per_token == 4 * in);
  TrainingSetup s = setup(Method::kShira);
  s.lora_rank = 32;
  const AdaptedLinearTerms shira = adapted_linear_terms(s, in, out, 4, 2);
  CHECK(shira.saved_per_token == 0);  // the base linear's own input, not a copy
  CHECK(shira.saved_weight_for_input_grad == 2 * in * out);
  CHECK(shira.buffer_bytes == 8 * 32 * (in + out));  // int32 row and column indices
  const AdaptedLinearTerms c3a = adapted_linear_terms(setup(Method::kC3a), in, out, 4, 2);
  CHECK(c3a.saved_per_token == 4 * in);
  CHECK(c3a.saved_weight + c3a.saved_weight_for_input_grad == 0);
}

TEST_CASE("DeLoRA and GraLoRA save LoRA's fp32 input copy and more rank-sized values", "[training][peft]") {
  const std::int64_t in = 3072, out = 1024;
  TrainingSetup t = setup(Method::kDelora);
  t.lora_rank = 32;
  const AdaptedLinearTerms delora = adapted_linear_terms(t, in, out, 4, 2);
  CHECK(delora.trainable_params == 32 * (in + out) + 1);  // A, B and lambda
  CHECK(delora.saved_per_token == 4 * (in + 2 * 32));     // A's output before and after its scaling
  CHECK(delora.buffer_bytes == 4 * in);                   // the weight's per-channel norm
  t.method = Method::kGralora;
  const AdaptedLinearTerms gralora = adapted_linear_terms(t, in, out, 4, 2);
  CHECK(gralora.trainable_params == 32 * (in + out));
  CHECK(gralora.saved_per_token == 4 * (in + kGraloraBlocks * 32));  // the permuted block outputs
}

TEST_CASE("PEANUT keeps the frozen weight's fp32 copy always and its delta for the input's gradient", "[training][peft]") {
  const std::int64_t in = 3072, out = 1024, delta = 4 * in * out;
  TrainingSetup t = setup(Method::kPeanut);
  t.lora_rank = 32;
  const AdaptedLinearTerms peanut = adapted_linear_terms(t, in, out, 4, 2);
  CHECK(peanut.trainable_params == 2 * 32 * out);  // Linear(out, r) and Linear(r, out)
  CHECK(peanut.saved_weight == delta + 4 * in * 32);  // Wᵀ's fp32 copy and the activation's output
  CHECK(peanut.saved_weight_for_input_grad == delta);
  CHECK(peanut.saved_per_token == 4 * in);
}
