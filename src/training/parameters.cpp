// Which parameters train and the bytes of their states (see parameters.h).
#include "training/parameters.h"

#include "training/peft_bench.h"

#include <algorithm>
#include <string>

#include "training/peft_linear_adapters.h"
#include "training/peft_shared_adapters.h"

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
    // AdamW's on the parameters left unprojected; model_states.cpp replaces the projected
    // matrices' with projected_state_elems.
    case Optimizer::kGaloreAdamW:
    case Optimizer::kApolloAdamW:
    case Optimizer::kApolloMini: return 2 * elem;
    // Adam-mini @ 402aadf adam_mini.py: m zeros_like(p); the per-row / per-head v (vmean) is
    // added per tensor in model_states.cpp.
    case Optimizer::kAdamMini: return elem;
  }
  return 2 * elem;
}

std::int64_t optimizer_state_tensors(Optimizer o) {
  switch (o) {
    case Optimizer::kAdamW:
    case Optimizer::kPagedAdamW32bit:
    case Optimizer::kAdamW8bit:
    case Optimizer::kPagedAdamW8bit:
    case Optimizer::kAdamW4bit:
    case Optimizer::kGaloreAdamW:
    case Optimizer::kApolloAdamW:
    case Optimizer::kApolloMini: return 2;
    case Optimizer::kAdamMini: return 1;  // vmean is one element per row or head
    case Optimizer::kSgd:
    case Optimizer::kAdafactor: return 0;  // Adafactor's factored rows and columns are small
    case Optimizer::kSgdMomentum:
    case Optimizer::kLion:
    case Optimizer::kMuon: return 1;
  }
  return 2;
}

// GaLore (Zhao et al. 2024, §4.2: "mr + 2nr" for an m x n weight, m <= n); galore_torch @ 2cc66f8
// galore_projector.py: rows >= cols keeps Vh[:rank] (rank x cols) and projects to rows x rank, else
// U[:, :rank]; svd(full_matrices=False) gives at most min(rows, cols) vectors. apollo_torch @
// 76b3472 random_projector.py keeps its random matrix in the same orientation.
std::int64_t projected_state_elems(std::int64_t rank, std::int64_t rows, std::int64_t cols) {
  const std::int64_t r = std::min(rank, std::min(rows, cols));
  return r * (2 * std::max(rows, cols) + std::min(rows, cols));
}

// galore_torch adamw.py / apollo_torch apollo.py step: the projected gradient, denom and
// norm_grad (rank x longer side); GaLore's project_back matmul and its `* scale` copy, APOLLO's
// p.grad * scaling factor and its norm-growth-limited copy (m x n each). At a refresh GaLore runs
// torch.linalg.svd on an fp32 copy: U (rows x k), S, Vh (k x cols), k the shorter side.
std::int64_t projected_step_temp_bytes(std::int64_t rank, std::int64_t rows, std::int64_t cols, std::int64_t elem, bool svd) {
  const std::int64_t k = std::min(rows, cols);
  const std::int64_t r = std::min(rank, k);
  const std::int64_t update = (2 * rows * cols + 3 * r * std::max(rows, cols)) * elem;
  const std::int64_t refresh = svd ? (elem == 4 ? 0 : 4 * rows * cols) + 4 * k * (rows + cols + 1) : 0;
  return std::max(update, refresh);
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

std::int64_t p_tuning_encoder_params(const TrainingSetup& t, std::int64_t h) {
  const std::int64_t embedding = t.virtual_tokens * h;
  if (t.prompt_encoder == PromptEncoder::kMlp) return embedding + 3 * h * (h + 1);
  auto lstm_layer = [h](std::int64_t input) { return 2 * (4 * h * input + 4 * h * h + 8 * h); };
  const std::int64_t head = 2 * h * 2 * h + 2 * h + 2 * h * h + h;
  return embedding + lstm_layer(h) + lstm_layer(2 * h) + head;
}

std::int64_t nearest_divisor(std::int64_t wanted, std::int64_t in) {
  if (wanted >= in) return in;
  if (in % wanted == 0) return wanted;
  std::int64_t higher = wanted, lower = wanted;
  while (higher <= in && in % higher != 0) ++higher;
  while (lower > 1 && in % lower != 0) --lower;
  return wanted - lower <= higher - wanted ? lower : higher;
}

std::int64_t orthogonal_block_for(const TrainingSetup& t, std::int64_t in) {
  if (t.method == Method::kOft && t.oft_blocks > 0) return in / nearest_divisor(t.oft_blocks, in);
  return t.method == Method::kOft ? nearest_divisor(orthogonal_block(t), in) : orthogonal_block(t);
}

std::int64_t adapter_params(const TrainingSetup& t, const std::string& role, std::int64_t in, std::int64_t out) {
  const std::int64_t r = t.lora_rank;
  if (is_more_peft_adapter(t.method)) return adapted_linear_terms(t, in, out, 4, 2).trainable_params;  // dtype-free count
  // Per linear only: the shared tensors are the model's (shared_adapter_model_params).
  if (is_shared_peft_adapter(t.method)) return shared_adapter_terms(t, in, out, 4, 2).trainable_params;
  switch (t.method) {
    // OFT (peft v0.21.2 tuners/oft/layer.py OFTRotationModule): in / b blocks, each the b(b-1)/2
    // upper-triangle entries of a skew-symmetric matrix.
    case Method::kOft: {
      const std::int64_t b = orthogonal_block_for(t, in);
      return in / b * (b * (b - 1) / 2);
    }
    // BOFT (tuners/boft/layer.py update_layer, butterfly factor 1): boft_R [1, in / b, b, b] and the
    // output scale boft_s [out, 1].
    case Method::kBoft: return in / orthogonal_block(t) * orthogonal_block(t) * orthogonal_block(t) + out;  // in·b + out
    case Method::kIa3: return ia3_scales_input(role) ? in : out;
    case Method::kLoha: return 2 * r * (in + out);
    case Method::kLokr: {
      const auto [out_l, out_k] = lokr_factorization(out);
      const auto [in_m, in_n] = lokr_factorization(in);
      const bool w2_factored = 2 * r < std::max(out_k, in_n);
      return out_l * in_m + (w2_factored ? r * (out_k + in_n) : out_k * in_n);
    }
    case Method::kVera: return r + out;
    case Method::kMiss: return miss_params(t, out);
    case Method::kGlora: return glora_params(t, in, out);
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
  if (s.kind == ModuleKind::kExpert && t.lora_routed_experts_unadapted && is_lora_like(t.method)) return false;
  return is_linear_in_block(s) && adapter_targets_role(t, s.role);
}

bool adapter_targets_role(const TrainingSetup& t, std::string_view role) {
  for (const std::string& target : t.lora_targets) {
    if (target == "all-linear") return true;
    if (target == role) return true;
    // Fused projections carry the adapter when any of their parts is targeted.
    if (role == "qkv" && (target == "q" || target == "k" || target == "v")) return true;
    if (role == "gate_up" && (target == "gate" || target == "up")) return true;
    if ((role == "q_a" || role == "q_b") && target == "q") return true;
    if ((role == "kv_a" || role == "kv_b") && (target == "k" || target == "v")) return true;
  }
  return false;
}

bool peft_saves_module(const TrainingSetup& t, const TensorSpec& s) {
  if (s.kind == ModuleKind::kLmHead) return t.lora_saves_head;
  return t.lora_saves_embedding && s.kind == ModuleKind::kEmbedding && s.role == "embedding";
}

bool globals_train(const TrainingSetup& t, std::int64_t num_layers) noexcept { return layer_trains(t, -1, num_layers); }

bool head_weight_trains(const TrainingSetup& t, std::int64_t num_layers) noexcept {
  return globals_train(t, num_layers) || t.lora_saves_head;
}

bool trains_block_range(const TrainingSetup& t) noexcept {
  return t.method == Method::kFreeze || (t.method == Method::kFull && t.badam_active_layer >= 0);
}

std::int64_t first_trained_layer(const TrainingSetup& t, std::int64_t num_layers) noexcept {
  if (t.method == Method::kFreeze) return num_layers - t.freeze_trainable_layers;
  return trains_block_range(t) ? t.badam_active_layer : 0;
}

bool layer_trains(const TrainingSetup& t, std::int64_t layer, std::int64_t num_layers) noexcept {
  switch (t.method) {
    case Method::kFull: return t.badam_active_layer < 0 || layer == t.badam_active_layer;
    case Method::kFreeze: return layer >= 0 && layer >= num_layers - t.freeze_trainable_layers;
    default: return !base_frozen(t.method);
  }
  return true;
}

}  // namespace memfit
