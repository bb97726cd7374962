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

// DEFT (tuners/deft/layer.py DeftLinear.forward): P (out x r) and, unless PaRa, R (r x in) train.
// The frozen output cast to fp32 goes through (· @ right) @ Q_Pᵀ, which saves that copy (ab·out)
// and the r-wide product (ab·r); the injection F.linear(x.to(fp32), R) @ Q_Pᵀ saves the input's
// copy (ab·in) and its r-wide output. right (relu(P), or qr's Q under PaRa's "qr") is saved once per
// layer (ab·out·r).
AdaptedLinearTerms deft(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab) {
  const std::int64_t r = t.lora_rank < out ? t.lora_rank : out;  // update_layer: r = min(r, out_features)
  AdaptedLinearTerms l;
  l.trainable_params = r * (t.deft_para ? out : out + in);
  l.saved_per_token = ab * (out + r + (t.deft_para ? 0 : in + r));
  l.saved_weight = ab * out * r;
  return l;
}

// RoAd (tuners/road/layer.py Linear.forward, _apply_road): the frozen output cast to the adapter
// dtype is rotated in pairs, x * first_col + rotate_half(x) * second_col: the muls save that copy
// and the half-swapped one (2 ab·out per token) and, where the output needs a gradient, the two
// out-wide columns; cos and sin of the angles (with road_1 the angles and scales repeated to out)
// are saved whether or not.
AdaptedLinearTerms road(const TrainingSetup& t, std::int64_t out, std::int64_t ab) {
  const std::int64_t size = t.road_variant == RoadVariant::kRoad1 ? out / 2 : (t.road_variant == RoadVariant::kRoad2 ? out : 2 * out);
  AdaptedLinearTerms l;
  l.trainable_params = 2 * size;  // road_theta, road_alpha
  l.saved_per_token = 2 * ab * out;
  l.saved_weight = ab * out * (t.road_variant == RoadVariant::kRoad1 ? 4 : 2);
  l.saved_weight_for_input_grad = 2 * ab * out;
  return l;
}

// OSF (tuners/osf/layer.py, utils.py decompose_weight_matrix): the weight's SVD split at
// k = min(in, out) - r. U_low (out x r), S_low (r) and V_low (r x in) train; their initial copies
// and the frozen top singular vectors of the longer side (U_high out x k where out > in, V_high
// k x in where in > out) are buffers, upcast to the adapter dtype like the parameters
// (tuners_utils.py cast_adapter_dtype casts BufferDicts too). Each forward concatenates
// A = [U_low S_low, -U_init S_init] (out x 2r) and B = [V_low; V_init] (2r x in): F.linear(x.to(fp32), B)
// saves the input's copy and, for its gradient, B; F.linear(h, A) saves h (2r wide) and A. cat's
// backward hands V_low a row slice of B's (2r x in) gradient, which AccumulateGrad keeps as .grad
// (a contiguous view obeys the layout contract: torch/csrc/autograd/functions/accumulate_grad.h), so
// the frozen half's r x in gradient lives as long as V_low's. (The gradient projection hooks
// update_layer registers sit on the parameters cast_adapter_dtype then replaces: they never run.)
AdaptedLinearTerms osf(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab) {
  const std::int64_t r = osf_trainable_rank(t, in, out);
  const std::int64_t k = (in < out ? in : out) - r;
  const std::int64_t low = r * (in + out + 1);
  const std::int64_t high = out > in ? out * k : (in > out ? k * in : 0);
  AdaptedLinearTerms l;
  l.trainable_params = low;
  l.buffer_bytes = checked_mul(ab, low + high, "buffer bytes");
  l.saved_per_token = ab * (in + 2 * r);
  l.saved_weight = checked_mul(ab * out, 2 * r, "adapter bytes");
  l.saved_weight_for_input_grad = checked_mul(ab * in, 2 * r, "adapter bytes");
  l.gradient_extra_bytes = checked_mul(ab * in, r, "gradient bytes");
  return l;
}

// PVeRA (tuners/pvera/layer.py Linear.forward, _reparametrize): VeRA's frozen shared projections, A
// of 2r rows (model.py _init_pvera_A_pvera_B; counted once per model, memory/model_states.cpp);
// lambda_d (2r) and lambda_b (out) train. The 2r-wide A·x is saved by lambda_d's mul, exp(logvar/2)
// by exp and the sampled eps by its mul (r each), and B's out-wide output by lambda_b's mul; the
// input's fp32 copy meets only frozen A and is not saved.
AdaptedLinearTerms pvera(const TrainingSetup& t, std::int64_t out, std::int64_t ab) {
  AdaptedLinearTerms l;
  l.trainable_params = out + 2 * t.lora_rank;
  l.saved_per_token = ab * (4 * t.lora_rank + out);
  return l;
}

// UniLoRA (tuners/unilora/layer.py _get_lora_matrices, Linear.forward): A (r x in) and B (out x r)
// gathered each forward from the shared trained vector theta_d by int64 indices and scaled by
// fixed per-entry scales (buffers: 8 + ab bytes per entry; cast_adapter_dtype upcasts the scales
// with theta_d: executed, 12 bytes per entry under autocast); F.linear(x.to(fp32), A) saves the input's copy and, for its
// gradient, A; F.linear(h, B) saves the r-wide h and B.
AdaptedLinearTerms unilora(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab) {
  const std::int64_t r = t.lora_rank;
  AdaptedLinearTerms l;
  l.buffer_bytes = checked_mul(8 + ab, r * (in + out), "buffer bytes");
  l.saved_per_token = ab * (in + r);
  l.saved_weight = checked_mul(ab * out, r, "adapter bytes");
  l.saved_weight_for_input_grad = checked_mul(ab * in, r, "adapter bytes");
  return l;
}

// BEFT (tuners/beft/layer.py Linear.forward): an out-wide bias added to the frozen output; the add
// (promoted to the bias's dtype, cast back) saves nothing.
AdaptedLinearTerms beft(std::int64_t out) {
  AdaptedLinearTerms l;
  l.trainable_params = out;
  return l;
}

// AdaLoRA (peft v0.21.2 tuners/adalora/layer.py SVDLinear.forward, RankAllocator.update_ipt): A (r x in),
// E (r x 1) and B (out x r) train at init_r. ranknum, moved to the base layer's dtype and upcast by
// cast_adapter_dtype into a fresh ParameterDict entry, trains too (one value; requires_grad defaults
// to True). x cast to A's dtype goes through (A * E)ᵀ, whose matmul saves that copy and, for x's
// gradient, the r x in product; the r-wide h is saved for B's gradient, and the division by the
// trained ranknum keeps its out-wide fp32 dividend. The loop's update_and_allocate keeps three tensors
// of each lora_ tensor's size (ipt, exp_avg_ipt, exp_avg_unc) from the first step on. The orthogonal
// regulariser (model.py forward) keeps r x r products only (its early gradients: model_states.cpp).
AdaptedLinearTerms adalora(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab) {
  const std::int64_t r = t.lora_rank;
  const std::int64_t svd = r * (in + out + 1);
  AdaptedLinearTerms l;
  l.trainable_params = svd + 1;  // and ranknum
  l.buffer_bytes = checked_mul(3 * ab, svd, "buffer bytes");  // the allocator's states
  l.saved_per_token = ab * (in + r + out);
  l.saved_weight_for_input_grad = checked_mul(ab * r, in, "adapter bytes");
  return l;
}

// PSOFT (tuners/psoft/layer.py Linear.forward, OrthLayer): frozen fp32 SVD factors A (r x in) and
// B (out x r), built after the layer's dtype move and so kept fp32, and OrthLayer's int64 triu
// indices (rows and cols, one 2 x r(r-1)/2 storage); trained: the r(r-1)/2 skew entries and the two
// r-wide magnitude vectors. xa = x Aᵀ meets frozen A (x's copy is not saved); xa Rᵀ saves the r-wide
// xa for R's gradient and, where x needs a gradient, R. Building R each forward keeps four r x r
// tensors (linalg.solve's A, LU and result, the first magnitude product; Cayley-Neumann keeps Q, Q²,
// Q³, the series and the product: one more). Executed with saved-tensor hooks on CPU, peft 0.21.2.
AdaptedLinearTerms psoft(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab) {
  const std::int64_t r = t.lora_rank;
  const std::int64_t square = checked_mul(ab * r, r, "adapter bytes");
  AdaptedLinearTerms l;
  l.trainable_params = r * (r - 1) / 2 + 2 * r;
  l.buffer_bytes = checked_add(checked_mul(4 * r, in + out, "buffer bytes"), 8 * r * (r - 1), "buffer bytes");
  l.saved_per_token = ab * r;
  l.saved_weight = 4 * square;
  l.saved_weight_for_input_grad = square;
  return l;
}

// RandLoRA (tuners/randlora/layer.py get_scaled_bases, Linear.forward, UniqueBaseGrad): lambda (r x n)
// and gamma (n x min) train, n = randlora_bases; each forward scales the shared A into an r·n x min
// tensor (the custom function saves only its inputs). Where in <= out, F.linear(x.to(fp32), scaled)
// saves x's copy and, for x's gradient, the scaled bases; the frozen B (a view of the shared bank:
// flatten merges its contiguous last two dims) is kept for h's gradient at no cost. Where out < in,
// the frozen B maps x (nothing saved), and F.linear(h, scaledᵀ) saves the n·r-wide h and, where x
// needs a gradient, the scaled bases. Backward: the scaled bases' gradient and the einsums' broadcast
// products (2 beyond the freed one). Executed with saved-tensor hooks on CPU, peft 0.21.2.
AdaptedLinearTerms randlora(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab) {
  const std::int64_t r = t.lora_rank;
  const std::int64_t n = randlora_bases(r, in, out);
  const std::int64_t lo = in < out ? in : out;
  const std::int64_t scaled = checked_mul(ab * r * n, lo, "adapter bytes");
  AdaptedLinearTerms l;
  l.trainable_params = r * n + n * lo;
  l.saved_per_token = in <= out ? ab * in : ab * n * r;
  l.saved_weight_for_input_grad = scaled;
  l.backward_transient = 2 * scaled;
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
    case Method::kDeft: return deft(t, in, out, ab);
    case Method::kRoad: return road(t, out, ab);
    case Method::kOsf: return osf(t, in, out, ab);
    case Method::kBeft: return beft(out);
    case Method::kPvera: return pvera(t, out, ab);
    case Method::kUnilora: return unilora(t, in, out, ab);
    case Method::kAdalora: return adalora(t, in, out, ab);
    case Method::kPsoft: return psoft(t, in, out, ab);
    case Method::kRandlora: return randlora(t, in, out, ab);
    default: return {};
  }
}

}  // namespace memfit
