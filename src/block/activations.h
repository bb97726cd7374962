// Bytes that one transformer layer keeps alive from its forward to its backward, per token,
// derived from the architecture, the trainable set and the kernels. Source: what autograd saves
// per op (derivatives.yaml) in the HF block implementations; the llama inventory for pure bf16
// with sdpa/flash is 16h + 4ad + 4kd + 8f + 4a + 8 bytes per token (docs/memory_model.md).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "block/block_program.h"
#include "common/units.h"
#include "model/architecture.h"
#include "training/training_setup.h"

namespace memfit {

struct LayerActivations {
  std::int64_t saved_per_token = 0;        // linear in tokens
  std::int64_t saved_per_token_per_position = 0;  // eager attention: s x s scores, per token per key
  std::int64_t checkpoint_per_token = 0;   // what full checkpointing keeps per layer (its input)
  std::int64_t backward_transient_per_token = 0;  // in-layer gradients at the layer's backward peak
  std::int64_t residual_grad_per_token = 0;       // gradient of the layer output flowing down
  /// Op-level selective checkpointing that saves the attention kernel's outputs and every other
  /// matmul output (torchtitan's op policy): what stays per token, the block input included.
  std::int64_t mm_policy_kept_per_token = 0;
  /// Saved bytes that do not scale with tokens: weights materialised per layer and kept for
  /// backward (PEFT's W + s·B·A of fused expert stacks), and their gradient in backward.
  std::int64_t saved_per_layer = 0;
  std::int64_t backward_transient_per_layer = 0;
  /// The part of saved_per_layer that a matmul saves only because its input needs a gradient (a
  /// materialised adapter weight: PEFT LoHa / LoKr): absent where no gradient reaches the layer.
  std::int64_t saved_per_layer_for_input_grad = 0;
  /// LLaMA-Adapter: what the gated prefix attention of an adapted layer saves per token (in
  /// saved_per_token), and what an adapted layer whose input needs no gradient leaves unsaved (its
  /// attention side: the first norm, the q/k/v path, the kernel's inputs, output and logsumexp).
  std::int64_t adapter_prompt_per_token = 0;
  std::int64_t entry_layer_unsaved_per_token = 0;
  bool operator==(const LayerActivations&) const = default;
};

/// How tensor parallelism splits a layer's activations on one rank: heads and MLP width by tp,
/// the full-width tensors (norms, block inputs) only with sequence parallelism.
struct ActivationSplit {
  std::int64_t tp = 1;
  bool sequence_parallel = false;
  /// Sequence parallel that saves the all-gathered input of the column-parallel linears (DTensor
  /// tensor parallelism: the matmul saves its redistributed input) instead of the local shard
  /// (Megatron saves the shard and gathers again in backward).
  bool gathered_linear_inputs = false;
  /// Expert layers' tensor parallelism (MoE parallel folding's etp); 0: tp.
  std::int64_t expert_tp = 0;
  bool operator==(const ActivationSplit&) const = default;
};

/// Whether the checkpointing policy starts from the layer's activations without checkpointing
/// (layer- and op-level selective checkpointing) rather than from those `t` computes (plain
/// selective recomputes the attention core, so its kernel's own saved tensors drop).
inline bool policy_reads_unchecked_layer(const TrainingSetup& t) {
  return t.checkpointing == Checkpointing::kSelective && (t.selective_layer_period > 0 || t.selective_every_other_mm);
}

/// What the checkpointing policy keeps of layers [lo, hi) of one group from forward to backward:
/// `checkpointed` of them keep only their input (`checkpoint_per_token`), the others keep
/// `per_token` (+ `per_token_per_position` x positions). The one rule the memory replay and the
/// step time's activation offload both read.
struct LayerKeep {
  std::int64_t layers = 0, checkpointed = 0;
  std::int64_t per_token = 0, per_token_per_position = 0, checkpoint_per_token = 0;
  std::int64_t per_layer = 0;  // LayerActivations::saved_per_layer of a layer that keeps its set
  bool recomputes = false;  // some of the layers rerun their forward in backward
  /// Mean bytes kept per layer of the range for `tokens` tokens attending over `positions` keys.
  std::int64_t bytes_per_layer(std::int64_t tokens, std::int64_t positions) const {
    const char* what = "activation bytes";
    if (checkpointed == layers) return checked_mul(checkpoint_per_token, tokens, what);
    const std::int64_t saved = checked_add(checked_add(checked_mul(per_token, tokens, what),
                                           checked_mul(checked_mul(per_token_per_position, tokens, what), positions, what), what),
                                           per_layer, what);
    if (checkpointed == 0) return saved;
    const std::int64_t checkpoint = checked_mul(checkpoint_per_token, tokens, what);
    return (checked_mul(checkpointed, checkpoint, what) + checked_mul(layers - checkpointed, saved, what)) / layers;
  }
  /// The same in floating point, for the step time (which never throws on a large layout).
  double bytes_per_layer(double tokens, double positions) const {
    const double checkpoint = static_cast<double>(checkpoint_per_token) * tokens;
    const double saved = (static_cast<double>(per_token) + static_cast<double>(per_token_per_position) * positions) * tokens +
                         static_cast<double>(per_layer);
    const double share = layers > 0 ? static_cast<double>(checkpointed) / static_cast<double>(layers) : 1.0;
    return share * checkpoint + (1 - share) * saved;
  }
};

/// The keep rule of `t.checkpointing` for layers [lo, hi), from `acts`: the layer's activations
/// as policy_reads_unchecked_layer says (torchtitan counts blocks from 1 and checkpoints those
/// whose count the layer period divides; its op policy keeps every other matmul output).
inline LayerKeep layer_keep(const LayerActivations& acts, const TrainingSetup& t, std::int64_t lo, std::int64_t hi) {
  LayerKeep k;
  k.layers = hi - lo;
  k.per_token = acts.saved_per_token;
  k.per_token_per_position = acts.saved_per_token_per_position;
  k.checkpoint_per_token = acts.checkpoint_per_token;
  k.per_layer = acts.saved_per_layer;
  if (t.checkpointing == Checkpointing::kFull) {
    k.checkpointed = k.layers;
  } else if (t.checkpointing == Checkpointing::kSelective && t.selective_layer_period > 0) {
    const std::int64_t p = t.selective_layer_period;
    k.checkpointed = hi / p - lo / p;
  } else if (t.checkpointing == Checkpointing::kSelective && t.selective_every_other_mm) {
    // The saved matmul outputs stay; the rest of the layer is recomputed in its backward.
    k.per_token = acts.mm_policy_kept_per_token;
    k.per_token_per_position = 0;
    k.recomputes = true;
  }
  k.recomputes = k.recomputes || k.checkpointed > 0;
  return k;
}

/// The distinct hidden-size inputs of a block's children when each is a checkpoint region: the
/// layer input, each norm's output and what the residual adds between them (norms, attention, MLP:
/// 4 in a pre-norm block, 6 with sandwich norms; 2 in a parallel block whose attention and MLP
/// read one norm's output). Measured on an H200 for Qwen3 (TD-08).
inline std::int64_t block_child_inputs(const ModelArchitecture& a) {
  return a.norms_per_layer == 1 ? 2 : a.norms_per_layer + 2;
}

/// One decoder (or encoder) layer on one rank, per token of that rank; `moe` selects the sparse
/// MLP; `cross_attention` for T5 decoders. `programs`: the setup-aware block programs already
/// derived (block_program.h BlockProgramMemo; none: derived here).
LayerActivations layer_activations(const ModelArchitecture& a, const TrainingSetup& t, bool moe,
                                   bool cross_attention, bool base_trains, const ActivationSplit& split = {},
                                   BlockProgramMemo* programs = nullptr);

/// Everything layer_activations reads of its arguments besides the architecture: equal keys give
/// equal layer activations of one architecture (LayerActivationsMemo). Each field is one the fold
/// reads; a read of another joins the key here (layer_activations_key), compared by the defaulted
/// operator== so that no field is left out of the comparison.
struct LayerActivationsKey {
  ProgramSetup program;                 // the setup-aware block program's key (precision, method, kernels, roles)
  ActivationSplit split;
  bool cross_attention = false;
  std::int64_t lora_rank = 0;
  double lora_dropout = 0;
  bool shared_gate_adapted = false;     // a LoRA-like target on the shared expert's sigmoid gate
  std::int64_t micro_batch = 0;         // LLaMA-Adapter's prefix K/V, prefix tuning's virtual tokens
  std::int64_t adapter_prompt_length = 0, virtual_tokens = 0;
  std::int64_t checkpoint_saved_inputs_per_block = 0;
  bool operator==(const LayerActivationsKey&) const = default;
};
/// The key of layer_activations(a, t, moe, cross_attention, base_trains, split); nullopt where the
/// fold reads more of `t` than the key holds (PEFT's adapters other than LoRA-like ones, whose
/// terms read their own fields: add_peft_adapter_terms).
std::optional<LayerActivationsKey> layer_activations_key(const TrainingSetup& t, bool moe, bool cross_attention,
                                                         bool base_trains, const ActivationSplit& split);

/// The layer activations of one architecture derived so far, by LayerActivationsKey, and the
/// block programs they fold over: the search's candidates share them (its replays read them).
/// A result whose sizes left the 2^53 bound is not kept, so each call flags it (units.h).
class LayerActivationsMemo {
 public:
  LayerActivations get(const ModelArchitecture& a, const TrainingSetup& t, bool moe, bool cross_attention,
                       bool base_trains, const ActivationSplit& split);
  /// Distinct results kept (tests).
  std::size_t size() const { return entries_.size(); }

 private:
  const ModelArchitecture* arch_ = nullptr;  // the architecture the entries are of
  struct Entry {
    LayerActivationsKey key;
    LayerActivations acts;
    std::size_t hash;   // of the key (activations.cpp key_hash)
    std::int32_t next;  // the bucket's previous entry, -1: none
  };
  std::vector<Entry> entries_;
  std::vector<std::int32_t> buckets_;  // by a hash of the key: its last entry, -1: none
  void relink(std::size_t entry);  // puts `entry` at the head of its bucket
  BlockProgramMemo programs_;  // the programs the misses fold over
};

}  // namespace memfit
