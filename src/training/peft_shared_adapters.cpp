// PEFT's shared-bank and shared-projection adapters (see peft_shared_adapters.h).
#include "training/peft_shared_adapters.h"

#include <algorithm>
#include <cmath>

#include "common/units.h"

namespace memfit {

namespace {

// LiLy (peft v0.21.2 tuners/lily/layer.py Linear.forward): the input cast to A's dtype goes through
// A (Linear(in, r), which saves that copy), the router (Linear(r, num_B), which saves the r-wide
// hidden; per linear, not shared) and a softmax (saves its num_B outputs); the mean probabilities
// mix the shared B (num_B x r x out) into combined_B, which matmul(hidden, combined_B) saves for
// hidden's gradient. Backward: combined_B's gradient and the num_B-fold one einsum sends to B.
AdaptedLinearTerms lily(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab) {
  const std::int64_t r = t.lora_rank;
  const std::int64_t num_b = t.shared_adapter.lily_num_b;
  const std::int64_t combined = checked_mul(ab * r, out, "adapter bytes");
  AdaptedLinearTerms l;
  l.trainable_params = r * num_b;
  l.saved_per_token = ab * (in + r + num_b);
  l.saved_weight = combined;
  l.backward_transient = checked_mul(combined, 1 + num_b, "adapter bytes");
  return l;
}

// TinyLoRA (tuners/tinylora/layer.py Linear.forward, _init_svd, _init_projection): frozen SVD factors
// A (r x in) and B (out x r), buffers cast to the adapter dtype with the parameters
// (tuners_utils.py cast_adapter_dtype casts BufferDicts too), and fixed fp32 projections P (u x r x r);
// R = einsum(v, P). F.linear(x, A) saves nothing new (A is frozen), F.linear(h, R) the r-wide h
// for R's gradient, F.linear(h R, B) nothing (B is frozen) but B itself.
AdaptedLinearTerms tinylora(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab) {
  const std::int64_t r = t.lora_rank;
  AdaptedLinearTerms l;
  l.buffer_bytes = ab * r * (in + out) + 4 * t.shared_adapter.tinylora_u * r * r;
  l.saved_per_token = ab * r;
  l.saved_weight = ab * r * r;  // R
  return l;
}

// VB-LoRA (tuners/vblora/layer.py _get_low_rank_matrix, Linear.forward): logits (r, in/L, N) and
// (out/L, r, N); each forward takes every sub-vector's top-k logits (topk saves int64 indices), their
// softmax (saves its output), gathers the k bank vectors (N x L bank; the product with the weights
// saves the gathered k·L values) and sums them into A (r x in) and B (out x r). F.linear(x, A) on the
// input cast to the bank's dtype saves that copy and, for its gradient, A; F.linear(h, B) the r-wide h
// and B. The top-k sizes are fixed (k per sub-vector); only which vectors are picked depends on data.
AdaptedLinearTerms vblora(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab) {
  const SharedAdapterShape& s = t.shared_adapter;
  const std::int64_t r = t.lora_rank;
  const std::int64_t subvectors = r * (in + out) / s.vblora_vector_length;  // rows of both logits
  const std::int64_t picked = subvectors * s.vblora_topk;
  AdaptedLinearTerms l;
  l.trainable_params = checked_mul(subvectors, s.vblora_num_vectors, "parameter count");
  l.saved_per_token = ab * (in + r);
  l.saved_weight = ab * out * r + checked_mul(picked, ab * s.vblora_vector_length + ab + 8, "adapter bytes");
  l.saved_weight_for_input_grad = ab * r * in;
  l.backward_transient = checked_mul(picked, ab * s.vblora_vector_length, "adapter bytes") +
                         ab * s.vblora_num_vectors * s.vblora_vector_length;
  return l;
}

// FRoD (tuners/frod/layer.py Linear.forward, _get_frod_tensors, _sparse_activation_mm): trained
// lambda_l (in) and the sparse core's nnz values; U (out x in), the category's V (in x in) and the
// core's int64 indices stay on the CPU (update_layer: U.cpu(); model.py builds V on the CPU) and are
// copied to the device in the model dtype each forward. z = x V (saves V's copy for x's gradient),
// z · lambda_l saves z and lambda_l's 16-bit cast, z Sᵀ on the densified core (16-bit input: to_dense,
// saved for z's gradient) and F.linear(·, U) saves U's copy (its input always needs a gradient); the
// sparse construction keeps the device indices, the coalesced ones and two 16-bit copies of the values
// (executed on CPU tensors: 2 in per token; (32 + 2e)·nnz + e·in, e·in² and e·in² per linear).
// Backward: the dense core's gradient.
AdaptedLinearTerms frod(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t e) {
  const std::int64_t nnz = frod_nonzeros(t, in);
  const std::int64_t square = checked_mul(e * in, in, "adapter bytes");
  AdaptedLinearTerms l;
  l.trainable_params = nnz + in;
  l.saved_per_token = e * in;
  l.saved_weight = checked_add(checked_mul(e * out, in, "adapter bytes"), checked_mul(32 + 2 * e, nnz, "adapter bytes") + e * in,
                               "adapter bytes");
  l.saved_weight_for_input_grad = 2 * square;
  l.backward_transient = square;
  return l;
}

// AdaMSS (tuners/adamss/layer.py Linear.forward): the frozen PCA projection newB (r x in, a BufferDict
// cast with the parameters) is cast to the model dtype each forward, F.linear(x, newB) keeping that
// copy for x's gradient; per subspace F.linear(projected, A_i) saves the r-wide projection (one tensor
// for all subspaces) and, for its gradient, A_i's 16-bit copy; F.linear(·, B_i) the r_i-wide output
// and B_i's copy; the scatter back to out columns its int64 index.
AdaptedLinearTerms adamss(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab, std::int64_t e) {
  const SharedAdapterShape& s = t.shared_adapter;
  const std::int64_t r = t.lora_rank;
  const std::int64_t ranks = s.adamss_subspaces * s.adamss_subspace_rank;  // sum r_i, at most
  AdaptedLinearTerms l;
  l.trainable_params = adamss_params_bound(t, out);
  l.buffer_bytes = checked_mul(ab * r, in, "adapter bytes");
  l.saved_per_token = e * (r + ranks);
  l.saved_weight = e * s.adamss_subspace_rank * out + 8 * out;
  l.saved_weight_for_input_grad = checked_mul(e * r, in + ranks, "adapter bytes");
  return l;
}

}  // namespace

std::int64_t frod_nonzeros(const TrainingSetup& t, std::int64_t in) {
  const std::int64_t off_diagonal = in * (in - 1);
  const double rate = t.shared_adapter.frod_sparse_rate;
  std::int64_t nnz = std::min(static_cast<std::int64_t>(static_cast<double>(in) * static_cast<double>(in) * rate), off_diagonal);
  if (rate > 0 && off_diagonal > 0) nnz = std::max<std::int64_t>(1, nnz);
  return nnz;
}

std::int64_t adamss_params_bound(const TrainingSetup& t, std::int64_t out) {
  const SharedAdapterShape& s = t.shared_adapter;
  return checked_mul(s.adamss_subspace_rank, checked_add(s.adamss_subspaces * t.lora_rank, out, "parameter count"),
                     "parameter count");
}

std::int64_t tinylora_groups(const TrainingSetup& t, std::int64_t adapted_linears) {
  // Python's round: half to even.
  const double groups = std::nearbyint(static_cast<double>(adapted_linears) * (1.0 - t.shared_adapter.tinylora_weight_tying));
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(groups));
}

AdaptedLinearTerms shared_adapter_terms(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab,
                                        std::int64_t e) {
  switch (t.method) {
    case Method::kLily: return lily(t, in, out, ab);
    case Method::kTinyLora: return tinylora(t, in, out, ab);
    case Method::kVblora: return vblora(t, in, out, ab);
    case Method::kFrod: return frod(t, in, out, e);
    case Method::kAdamss: return adamss(t, in, out, ab, e);
    default: return {};
  }
}

std::int64_t shared_adapter_model_params(const TrainingSetup& t, const std::vector<AdaptedRole>& roles) {
  const SharedAdapterShape& s = t.shared_adapter;
  switch (t.method) {
    // tuners/lily/model.py _post_injection_hook: per (target, shape) group the first layer's B for
    // all, and one A per stride_A consecutive layers (the replaced ones are freed).
    case Method::kLily: {
      std::int64_t n = 0;
      for (const AdaptedRole& a : roles) {
        const std::int64_t a_count = ceil_div(a.layers, s.lily_stride_a);
        n = checked_add(n, checked_mul(t.lora_rank, a_count * a.in + s.lily_num_b * a.out, "parameter count"), "parameter count");
      }
      return n;
    }
    case Method::kTinyLora: {
      std::int64_t linears = 0;
      for (const AdaptedRole& a : roles) linears += a.layers;
      return linears > 0 ? tinylora_groups(t, linears) * s.tinylora_u : 0;
    }
    // tuners/vblora/model.py _init_vblora_vector_bank: one trainable bank for every linear.
    case Method::kVblora: return roles.empty() ? 0 : s.vblora_num_vectors * s.vblora_vector_length;
    default: return 0;
  }
}

}  // namespace memfit
