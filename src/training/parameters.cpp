// Which parameters train and the bytes of their states (see parameters.h).
#include "training/parameters.h"

#include <algorithm>
#include <string>

namespace memfit {

std::int64_t state_bytes_per_param(Optimizer o, std::int64_t elem) {
  switch (o) {
    case Optimizer::kAdamW: return 2 * elem;            // exp_avg + exp_avg_sq in the param dtype
    case Optimizer::kPagedAdamW32bit: return 8;         // fp32 moments (paged: unified memory)
    case Optimizer::kAdamW8bit:
    case Optimizer::kPagedAdamW8bit: return 2;          // two uint8 moments (+ per-2048 absmax)
    case Optimizer::kAdamW4bit: return 1;               // two 4-bit moments
    case Optimizer::kSgd: return 0;
    case Optimizer::kSgdMomentum:
    case Optimizer::kLion: return elem;                 // one momentum buffer
    case Optimizer::kMuon: return 2 * elem;             // AdamW's, less a moment on Muon's matrices (model_states.cpp)
    case Optimizer::kAdafactor: return 0;               // factored: rows + cols, added per tensor
  }
  return 2 * elem;
}

std::int64_t optimizer_state_tensors(Optimizer o) {
  switch (o) {
    case Optimizer::kAdamW:
    case Optimizer::kPagedAdamW32bit:
    case Optimizer::kAdamW8bit:
    case Optimizer::kPagedAdamW8bit:
    case Optimizer::kAdamW4bit: return 2;
    case Optimizer::kSgd:
    case Optimizer::kAdafactor: return 0;  // Adafactor's factored rows and columns are small
    case Optimizer::kSgdMomentum:
    case Optimizer::kLion:
    case Optimizer::kMuon: return 1;
  }
  return 2;
}

std::pair<std::int64_t, std::int64_t> lokr_factorization(std::int64_t dim) {
  std::int64_t m = 1, n = dim;
  while (m < n) {
    // PEFT's break conditions (m + n above 1 + dim, m above dim) never hold for factor -1.
    std::int64_t next = m + 1;
    while (dim % next != 0) ++next;
    m = next;
    n = dim / next;
  }
  return m > n ? std::make_pair(n, m) : std::make_pair(m, n);
}

std::int64_t adapter_params(const TrainingSetup& t, const std::string& role, std::int64_t in, std::int64_t out) {
  const std::int64_t r = t.lora_rank;
  switch (t.method) {
    case Method::kIa3: return ia3_scales_input(role) ? in : out;
    case Method::kLoha: return 2 * r * (in + out);
    case Method::kLokr: {
      const auto [out_l, out_k] = lokr_factorization(out);
      const auto [in_m, in_n] = lokr_factorization(in);
      const bool w2_factored = 2 * r < std::max(out_k, in_n);
      return out_l * in_m + (w2_factored ? r * (out_k + in_n) : out_k * in_n);
    }
    case Method::kVera: return r + out;
    case Method::kDora: return r * (in + out) + out;
    default: return r * (in + out);
  }
}

bool is_linear_in_block(const TensorSpec& s) {
  return s.linear_weight && s.kind != ModuleKind::kLmHead && s.kind != ModuleKind::kRouter;
}

bool lora_targets_role(const TrainingSetup& t, const TensorSpec& s) {
  if (s.kind == ModuleKind::kLmHead && s.linear_weight && !s.tied) {
    for (const std::string& target : t.lora_targets) {
      if (target == "head") return true;  // the output projection (torchtune apply_lora_to_output)
    }
    return false;
  }
  if (!is_linear_in_block(s)) return false;
  for (const std::string& target : t.lora_targets) {
    if (target == "all-linear") return true;
    if (target == s.role) return true;
    // Fused projections carry the adapter when any of their parts is targeted.
    if (s.role == "qkv" && (target == "q" || target == "k" || target == "v")) return true;
    if (s.role == "gate_up" && (target == "gate" || target == "up")) return true;
    if ((s.role == "q_a" || s.role == "q_b") && target == "q") return true;
    if ((s.role == "kv_a" || s.role == "kv_b") && (target == "k" || target == "v")) return true;
  }
  return false;
}

bool layer_trains(const TrainingSetup& t, std::int64_t layer, std::int64_t num_layers) noexcept {
  switch (t.method) {
    case Method::kFull: return true;
    case Method::kFreeze: return layer >= 0 && layer >= num_layers - t.freeze_trainable_layers;
    default: return !base_frozen(t.method);
  }
  return true;
}

}  // namespace memfit
