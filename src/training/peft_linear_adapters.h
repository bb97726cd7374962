// PEFT's newer adapters on frozen linears: FourierFT, WaveFT, HiRA, SHiRA, PEANUT (a dense weight
// built per forward), C3A (a block-circulant convolution of the input), the low-rank variants DeLoRA,
// GraLoRA and DEFT, OSF's split singular vectors, RoAd and BEFT on the frozen output, and AdaLoRA,
// PSOFT and RandLoRA. What one adapted linear adds: trainable and frozen tensors, what its forward saves for
// backward, and its backward's transient. Formulas only; no JSON.
#pragma once
#include <cstdint>

#include "training/training_setup.h"

namespace memfit {

inline bool is_more_peft_adapter(Method m) {
  return m == Method::kFourierFt || m == Method::kWaveFt || m == Method::kHira || m == Method::kShira ||
         m == Method::kC3a || m == Method::kDelora || m == Method::kGralora || m == Method::kPeanut ||
         m == Method::kRoad || m == Method::kOsf || m == Method::kDeft || m == Method::kBeft || m == Method::kPvera ||
         m == Method::kUnilora || m == Method::kAdalora || m == Method::kPsoft || m == Method::kRandlora;
}
/// The methods whose size is lora.rank (PEFT's r; OSF's trainable rank, min(in, out) - effective_rank;
/// AdaLoRA's init_r, the rank its tensors keep while the allocator masks singular values).
inline bool is_ranked_more_peft_adapter(Method m) {
  return m == Method::kHira || m == Method::kShira || m == Method::kDelora || m == Method::kGralora || m == Method::kPeanut ||
         m == Method::kOsf || m == Method::kDeft || m == Method::kPvera || m == Method::kUnilora || m == Method::kAdalora ||
         m == Method::kPsoft || m == Method::kRandlora;
}
/// RandLoRA's bases per adapted linear: ceil(min(in, out) / r), enough for full rank (peft v0.21.2
/// tuners/randlora/layer.py update_layer num_bases).
inline std::int64_t randlora_bases(std::int64_t rank, std::int64_t in, std::int64_t out) {
  const std::int64_t m = in < out ? in : out;
  return rank > 0 ? (m + rank - 1) / rank : 0;
}
/// RandLoRA's frozen random bases, shared by every adapted linear and sized by the largest adapted in
/// and out (tuners/randlora/model.py _find_dim, _init_randlora_A_randlora_B): randlora_A (r x 1 x min)
/// and randlora_B (max x bases x r), fp32 buffers (cast_adapter_dtype upcasts BufferDicts).
inline std::int64_t randlora_shared_elems(std::int64_t rank, std::int64_t max_in, std::int64_t max_out) {
  const std::int64_t lo = max_in < max_out ? max_in : max_out, hi = max_in < max_out ? max_out : max_in;
  return rank * lo + hi * randlora_bases(rank, max_in, max_out) * rank;
}
/// UniLoRA's shared trained vector (peft v0.21.2 tuners/unilora/config.py theta_d_length 256), once per model.
inline constexpr std::int64_t kUniloraThetaLength = 256;
/// GraLoRA's blocks per side (peft v0.21.2 tuners/gralora/config.py gralora_k 2; hybrid_r 0).
inline constexpr std::int64_t kGraloraBlocks = 2;

/// PEFT's defaults (peft v0.21.2 tuners/fourierft/config.py n_frequency 1000, tuners/waveft/config.py
/// n_frequency 2592, tuners/c3a/config.py block_size 256).
inline std::int64_t spectral_frequencies(const TrainingSetup& t) {
  return t.spectral_frequencies > 0 ? t.spectral_frequencies : (t.method == Method::kWaveFt ? 2592 : 1000);
}
inline std::int64_t circulant_block(const TrainingSetup& t) {
  return t.circulant_block_size > 0 ? t.circulant_block_size : 256;
}
/// OSF's trainable rank of an in x out linear: lora.rank (PEFT's min(in, out) - effective_rank, at
/// least one singular direction left frozen), else PEFT's default effective_rank min(in, out) // 2
/// (peft v0.21.2 tuners/osf/layer.py Linear.__init__).
inline std::int64_t osf_trainable_rank(const TrainingSetup& t, std::int64_t in, std::int64_t out) {
  const std::int64_t m = in < out ? in : out;
  if (t.lora_rank > 0) return t.lora_rank < m ? t.lora_rank : m - 1;
  return m - m / 2;
}

/// One adapted linear (in -> out); bytes with `ab` the adapter dtype's
/// element size and `e` the activations'.
struct AdaptedLinearTerms {
  std::int64_t trainable_params = 0;     // in the adapter dtype
  std::int64_t buffer_bytes = 0;         // frozen device tensors beside the base weight
  std::int64_t saved_per_token = 0;      // saved for backward, per token
  /// Saved once per layer, not per token: a weight built in the forward that F.linear keeps for
  /// its input's gradient (absent where no gradient reaches the layer's input).
  std::int64_t saved_weight_for_input_grad = 0;
  std::int64_t saved_weight = 0;         // ... kept whether or not the input needs a gradient
  /// The backward's peak beyond the freed saved weight, once per layer.
  std::int64_t backward_transient = 0;
  /// Gradient storage beyond the parameters' own, kept with their .grad until it is freed.
  std::int64_t gradient_extra_bytes = 0;
};

AdaptedLinearTerms adapted_linear_terms(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab,
                                      std::int64_t e);


}  // namespace memfit
