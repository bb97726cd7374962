// Which parameters train and the bytes of their states (see parameters.h).
#include "training/parameters.h"

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
    case Optimizer::kLion:
    case Optimizer::kMuon: return elem;                 // one momentum buffer
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
    case Method::kLora:
    case Method::kQlora:
    case Method::kDora: return false;
  }
  return true;
}

}  // namespace memfit
