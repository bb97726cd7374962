// The tensor inventory: every parameter tensor of a model, with its name (as the HF module
// path), shape, module kind, role and how tensor parallelism splits it. Sharding, LoRA targets,
// TP splits and per-layer activations are all derived from it.
//
// Identical consecutive layers are stored once as a LayerGroup with a count (names carry "{i}"
// for the layer index), so an 80-layer model costs what a 1-layer model costs; expert tensors
// carry "{e}" and a copy count.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/architecture.h"

namespace memfit {

enum class ModuleKind {
  kEmbedding,          // token embeddings (and BERT's token-type table)
  kPositionEmbedding,  // learned positions, T5 relative-attention bias
  kAttention,
  kMlp,
  kExpert,             // routed experts
  kSharedExpert,       // always-active experts of DeepSeek / Qwen-MoE
  kRouter,
  kNorm,
  kLmHead,
  kOther,              // BERT pooler, OPT embedding projections
};
inline constexpr int kModuleKindCount = 10;
const char* module_kind_name(ModuleKind kind);

/// How Megatron-style tensor parallelism splits a tensor (Shoeybi et al. 2019, Fig. 3).
enum class TpSplit { kColumn, kRow, kVocab, kReplicated, kExpert };
const char* tp_split_name(TpSplit split);

enum class Stack { kNone, kEncoder, kDecoder };

struct TensorSpec {
  std::string name;                 // "model.layers.{i}.self_attn.q_proj.weight"
  std::vector<std::int64_t> shape;  // PyTorch order: Linear weights are [out, in]
  ModuleKind kind = ModuleKind::kOther;
  std::string role;                 // q k v o qkv q_a q_b kv_a kv_b gate up down gate_up router norm ...
  bool linear_weight = false;       // the weight of an nn.Linear: a LoRA/quantisation target
  TpSplit tp_split = TpSplit::kReplicated;
  std::int64_t copies = 1;          // routed experts: one tensor per expert, named with "{e}"
  bool tied = false;                // shares storage with the token embedding: not a unique parameter
  std::int64_t numel() const;       // elements of one copy
  std::int64_t total_numel() const; // numel() * copies
};

struct LayerGroup {
  Stack stack = Stack::kDecoder;
  std::int64_t first_layer = 0;
  std::int64_t layer_count = 0;
  bool moe = false;
  std::vector<TensorSpec> tensors;  // of one layer
  std::int64_t params_per_layer() const;
};

struct TensorInventory {
  std::vector<TensorSpec> globals;    // embeddings, final norms, lm_head, pooler
  std::vector<LayerGroup> groups;     // in layer order, encoder stack first
  std::int64_t total_params = 0;      // unique parameters (tied weights once)
  std::int64_t params_by_kind[kModuleKindCount] = {};
  std::int64_t tensor_count = 0;      // tensors after expanding layers and experts
  std::int64_t active_params_per_token = 0;  // MoE: parameters one token passes through
};

TensorInventory build_tensor_inventory(const ModelArchitecture& arch);

/// The name of one tensor with "{i}" and "{e}" substituted.
std::string expand_name(const std::string& pattern, std::int64_t layer, std::int64_t expert);

}  // namespace memfit
