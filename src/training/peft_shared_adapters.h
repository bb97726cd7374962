// PEFT's adapters whose trained or frozen tensors are shared across linears or built from a shared
// projection: LiLy (A shared by stride_A consecutive layers, B by all layers of a target), TinyLoRA
// (a u-vector tied across groups of linears through fixed random projections), VB-LoRA (one vector
// bank mixed top-k per sub-vector), FRoD (a per-category projection and sparse core, the base weight
// offloaded to the CPU) and AdaMSS (a frozen PCA projection and clustered subspaces). What one adapted
// linear adds (AdaptedLinearTerms, as the linear-adapter family's) and what the model adds once.
// Formulas only; no JSON.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "training/peft_linear_adapters.h"
#include "training/training_setup.h"

namespace memfit {

inline bool is_shared_peft_adapter(Method m) {
  return m == Method::kLily || m == Method::kTinyLora || m == Method::kVblora || m == Method::kFrod ||
         m == Method::kAdamss;
}
/// The methods whose size is lora.rank (PEFT's r): all but FRoD.
inline bool is_ranked_shared_peft_adapter(Method m) { return is_shared_peft_adapter(m) && m != Method::kFrod; }
/// PEFT's r defaults (peft v0.21.2 tuners/lily/config.py r 32, tinylora/config.py r 2, vblora/config.py
/// r 4, adamss/config.py r 100).
inline std::int64_t shared_adapter_default_rank(Method m) {
  switch (m) {
    case Method::kLily: return 32;
    case Method::kTinyLora: return 2;
    case Method::kVblora: return 4;
    case Method::kAdamss: return 100;
    default: return 0;
  }
}

/// FRoD's nonzeros of the sparse in x in core per linear: int(in² · sparse_rate), at most the
/// off-diagonal entries, at least 1 for a positive rate (peft v0.21.2 tuners/frod/model.py
/// _init_frod_projections).
std::int64_t frod_nonzeros(const TrainingSetup& t, std::int64_t in);

/// AdaMSS's trained entries on one linear, an upper bound: KMeans splits the out rows into at most
/// num_subspaces clusters of data-dependent sizes s_i, each trained as A_i (r_i x r) and B_i (s_i x
/// r_i) with r_i = min(s_i, subspace_rank) (peft v0.21.2 tuners/adamss/layer.py update_layer), so
/// sum r_i (r + s_i) <= subspace_rank · (num_subspaces · r + out); equal when every cluster holds at
/// least subspace_rank rows.
std::int64_t adamss_params_bound(const TrainingSetup& t, std::int64_t out);

/// TinyLoRA's trained u-vectors: max(1, round(n · (1 - weight_tying))) groups over the n adapted
/// linears (peft v0.21.2 tuners/tinylora/model.py _create_and_replace).
std::int64_t tinylora_groups(const TrainingSetup& t, std::int64_t adapted_linears);

/// What one adapted (out x in) linear adds, `ab` the adapter dtype's bytes (fp32 under PEFT's
/// autocast_adapter_dtype) and `e` the activations'. trainable_params counts the per-linear tensors
/// only (shared ones: shared_adapter_model_params).
AdaptedLinearTerms shared_adapter_terms(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab,
                                        std::int64_t e);

/// FRoD with runtime_offload_base_weight moves each adapted linear's frozen weight to the CPU at its
/// first forward (tuners/frod/layer.py Linear.forward, _offload_base_weight_to_cpu).
inline bool offloads_adapted_base_weight(const TrainingSetup& t) {
  return t.method == Method::kFrod && t.shared_adapter.frod_offload_base;
}

/// One adapted role of the model: its linear's shape and how many layers carry it on this rank.
struct AdaptedRole {
  std::string role;
  std::int64_t in = 0, out = 0, layers = 0;
};
/// The trained tensors a method keeps once for the model, not per linear: LiLy's A (one per stride_A
/// consecutive layers of a target) and B (num_B · r x out per target), TinyLoRA's u-vectors, VB-LoRA's
/// num_vectors x vector_length bank.
std::int64_t shared_adapter_model_params(const TrainingSetup& t, const std::vector<AdaptedRole>& roles);

}  // namespace memfit
