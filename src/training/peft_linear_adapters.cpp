#include "training/peft_linear_adapters.h"

#include "common/units.h"

namespace memfit {

namespace {

// FourierFT (peft v0.21.2 tuners/fourierft/layer.py): the spectrum's n trained entries; each forward
// scatters them into a dense fp32 (out, in) spectrum, takes ifft2's real part times the scale as
// delta_w, and adds F.linear(x.to(fp32), delta_w): F.linear saves the input's fp32 copy and, for
// the input's gradient, delta_w. Backward: delta_w's gradient, its scaled copy, the complex
// gradient of .real and ifft2's complex output (2 + 2 of 4-byte units: 4 deltas, 3 beyond the freed one).
AdaptedLinearTerms fourierft(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab) {
  const std::int64_t delta = checked_mul(ab * out, in, "adapter bytes");
  AdaptedLinearTerms l;
  l.trainable_params = spectral_frequencies(t);
  l.saved_per_token = ab * in;
  l.saved_weight_for_input_grad = delta;
  l.backward_transient = 3 * delta;
  return l;
}

// WaveFT (tuners/waveft/layer.py get_delta_weight, waverec2d.py; db1, use_idwt): the four
// quarter sub-bands of the dense spectrum stacked (one (out, in) copy) and conv_transpose2d'd
// with the fixed filters, which saves the stack; then scaled as delta_w and added as FourierFT's.
// Backward: delta_w's gradient and its scaled copy, the stack's gradient, the dense gradient.
AdaptedLinearTerms waveft(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab) {
  AdaptedLinearTerms l = fourierft(t, in, out, ab);
  l.saved_weight = l.saved_weight_for_input_grad;  // the stack
  l.backward_transient = 2 * l.saved_weight;
  return l;
}

// HiRA (tuners/hira/layer.py Linear.forward): A (r, in) and B (out, r); W * (A^T B^T)^T, a dense
// fp32 (out, in) Hadamard product with the frozen weight (mul saves W, the parameter itself), goes
// through F.linear with the input's fp32 copy, which saves both. Backward: the product's gradient
// and, through the mul, A^T B^T's (2 deltas, 1 beyond the freed product).
AdaptedLinearTerms hira(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab) {
  const std::int64_t delta = checked_mul(ab * out, in, "adapter bytes");
  AdaptedLinearTerms l;
  l.trainable_params = t.lora_rank * (in + out);
  l.saved_per_token = ab * in;
  l.saved_weight_for_input_grad = delta;
  l.backward_transient = delta;
  return l;
}

// SHiRA (tuners/shira/layer.py): r (in + out) trained entries at fixed random positions (int32
// indices [2, nnz] moved to the device at the first forward); the forward replaces the base
// linear by F.linear(x, W.clone() + sparse delta), which saves the 16-bit input (the one the base
// linear saved) and the new (out, in) weight in the model dtype. Backward: the weight's gradient.
AdaptedLinearTerms shira(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t e) {
  const std::int64_t nnz = t.lora_rank * (in + out);
  AdaptedLinearTerms l;
  l.trainable_params = nnz;
  l.buffer_bytes = 8 * nnz;
  l.saved_weight_for_input_grad = checked_mul(e * out, in, "adapter bytes");
  return l;
}

// C3A (tuners/c3a/layer.py, utils.py BlockCircularConvolution): an fp32 kernel of (out/b, in/b, b)
// entries; the forward's block-circulant convolution runs on the input's fp32 copy, which it saves
// with the kernel (its FFTs are transients).
AdaptedLinearTerms c3a(const TrainingSetup& t, std::int64_t in, std::int64_t out) {
  const std::int64_t b = circulant_block(t);
  AdaptedLinearTerms l;
  l.trainable_params = out / b * in;
  l.saved_per_token = 4 * in;
  return l;
}

// DeLoRA (tuners/delora/layer.py Linear.forward): A (r, in), B (out, r) and lambda; the input times
// the frozen fp32 per-channel weight norm (delora_w_norm, in) is saved by A's linear, A's output
// by the scaling's mul and the scaled one by B's linear: the input's fp32 copy and 2 r values.
AdaptedLinearTerms delora(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab) {
  AdaptedLinearTerms l;
  l.trainable_params = t.lora_rank * (in + out) + 1;
  l.buffer_bytes = 4 * in;
  l.saved_per_token = ab * (in + 2 * t.lora_rank);
  return l;
}

// GraLoRA (tuners/gralora/layer.py Linear.forward): k x k blocks of rank r/k, A and B of LoRA's
// sizes; the first einsum saves the input's fp32 copy, the second the permuted k·r values it reads.
AdaptedLinearTerms gralora(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab) {
  AdaptedLinearTerms l;
  l.trainable_params = t.lora_rank * (in + out);
  l.saved_per_token = ab * (in + kGraloraBlocks * t.lora_rank);
  return l;
}

// PEANUT (tuners/peanut/layer.py _compute_delta_weight, depth 0): A = Linear(out, r), B = Linear(r,
// out); the frozen Wᵀ cast to fp32 goes through A (whose matmul saves that copy), the activation
// (which saves its in x r output, B's input too) and B, scaled as the delta; matmul(x.to(fp32),
// deltaᵀ) saves the input's copy and, for its gradient, the delta. Backward: the delta's gradient
// and its scaled copy (1 beyond the freed delta).
AdaptedLinearTerms peanut(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab) {
  const std::int64_t delta = checked_mul(ab * out, in, "adapter bytes");
  AdaptedLinearTerms l;
  l.trainable_params = 2 * t.lora_rank * out;
  l.saved_per_token = ab * in;
  l.saved_weight = delta + ab * in * t.lora_rank;
  l.saved_weight_for_input_grad = delta;
  l.backward_transient = delta;
  return l;
}

}  // namespace

AdaptedLinearTerms adapted_linear_terms(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab,
                                      std::int64_t e) {
  switch (t.method) {
    case Method::kFourierFt: return fourierft(t, in, out, ab);
    case Method::kWaveFt: return waveft(t, in, out, ab);
    case Method::kHira: return hira(t, in, out, ab);
    case Method::kShira: return shira(t, in, out, e);
    case Method::kC3a: return c3a(t, in, out);
    case Method::kDelora: return delora(t, in, out, ab);
    case Method::kGralora: return gralora(t, in, out, ab);
    case Method::kPeanut: return peanut(t, in, out, ab);
    default: return {};
  }
}

}  // namespace memfit
