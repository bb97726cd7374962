// Persistent state on one GPU: weights (per dtype, NF4 for QLoRA bases), gradients of trainable
// tensors, optimizer states and the optimizer step's temporaries, all derived from the tensor
// inventory and the training setup. Source of bytes per parameter: PyTorch torch/optim/adam.py
// (foreach sqrt copy), bitsandbytes 8-bit/4-bit layouts, PEFT adapter dtypes (docs/memory_model.md).
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "common/units.h"
#include "model/tensor_inventory.h"
#include "parallel/layout.h"
#include "training/parameters.h"
#include "training/training_setup.h"

namespace memfit {

struct ModelStates {
  std::int64_t total_params = 0;
  std::int64_t trainable_params = 0;      // base tensors that train + adapters
  std::int64_t adapter_params = 0;        // LoRA A/B
  std::int64_t weights_bytes = 0;         // everything stored as weights, adapters included
  std::int64_t loaded_weights_bytes = 0;  // ZeRO-3: the rank's weights before sharding (as loaded)
  std::int64_t gradients_bytes = 0;       // one gradient per trainable parameter
  std::int64_t optimizer_states_bytes = 0;     // in the caching allocator
  /// Paged optimizers (bitsandbytes paged_*) keep their states in CUDA unified memory
  /// (cudaMallocManaged, bitsandbytes functional.get_paged): on the device, but outside the
  /// PyTorch allocator, so they show in nvidia-smi and not in max_memory_allocated/reserved.
  std::int64_t unmanaged_optimizer_states_bytes = 0;
  std::int64_t host_bytes = 0;                 // offloaded to CPU memory (optimizer offload)
  std::int64_t master_weights_bytes = 0;       // part of weights_bytes: fp32 masters under AMP
  std::int64_t optimizer_step_temp_bytes = 0;  // transient at optimizer.step()
  /// Part of optimizer_states_bytes in tensors above the allocator's small size (1 MiB per state
  /// tensor), when the first step creates them lazily (torch.optim), in the large pool
  /// (memory/caching_allocator.h); 0 when the optimizer builds them at construction.
  std::int64_t large_pool_state_bytes = 0;
  std::int64_t largest_trainable_tensor_bytes = 0;  // e.g. the embedding's dense gradient
  std::int64_t embedding_grad_bytes = 0;  // dense (v, h) gradient of a trainable embedding
  /// PEFT's trainable tokens: the (v, h) table copy each forward builds with the trained rows in
  /// it; its dense gradient arrives at the embedding backward (and, tied, at the output layer's).
  std::int64_t token_table_copy_bytes = 0;
  std::int64_t weight_tensor_count = 0;
  std::int64_t amp_weight_cast_bytes = 0; // autocast keeps a 16-bit copy of each matmul weight
  /// The decoder layers' share of amp_weight_cast_bytes, and one layer's (the largest).
  std::int64_t amp_layer_weight_cast_bytes = 0;
  /// The layers' casts of frozen weights: not cached (made per call), held only where a matmul saves them.
  std::int64_t amp_uncached_layer_weight_cast_bytes = 0;
  std::int64_t amp_largest_layer_weight_cast_bytes = 0;
  std::int64_t dequant_workspace_bytes = 0;  // QLoRA: one layer weight dequantised at a time
  /// QLoRA: the largest base weight's quantisation transient while the model was built on the GPU
  /// (TrainingSetup::nf4_quantize_at_init_bytes_per_param); cached, so a floor under reserved.
  std::int64_t init_quantize_workspace_bytes = 0;
  std::int64_t dora_norm_workspace_bytes = 0;  // DoRA: W + BA materialised for the column norm
  std::int64_t largest_layer_gradient_bytes = 0;  // optimizer in backward: one layer's grads live
  /// Per layer of the stack (uniform layers): gradient bytes produced by one layer's backward.
  std::int64_t layer_gradient_bytes = 0;
  std::int64_t head_gradient_bytes = 0;   // lm_head + final norm gradients (first in backward)

  // Distributed: what the rank gathers and reduces around the persistent shards.
  /// ZeRO-3: one block's parameters as gathered for compute (largest block of this rank).
  std::int64_t gather_layer_bytes = 0;
  /// ZeRO-3: embeddings, final norm and head as gathered (the root unit).
  std::int64_t gather_root_bytes = 0;
  std::int64_t gather_head_bytes = 0;     // ... of which the final norm and output layer
  /// One block's and the root unit's parameters as stored unsharded (what FSDP1's wrap moves to
  /// the device and flattens, DistributedBehaviour::fsdp1_wrap_from_host), whatever the sharding.
  std::int64_t unit_layer_bytes = 0;
  std::int64_t unit_root_bytes = 0;
  std::int64_t unit_head_bytes = 0;  // ... of which the final norm and output layer
  /// DeepSpeed ZeRO-3: top blocks that stay gathered from their forward to their backward
  /// (DistributedBehaviour::zero3_max_live_elements).
  std::int64_t live_kept_layers = 0;
  /// DeepSpeed ZeRO-3 without zero.Init (DistributedBehaviour::zero3_autograd_holds_gathered) on
  /// more than one rank and without full checkpointing: every block's gathered parameters stay
  /// from its forward to its backward (what live_kept_layers keeps is among them).
  bool gathered_held_to_backward = false;
  /// ZeRO-2/3: one block's unsharded gradients waiting for the reduce-scatter (with the fp32
  /// copy when gradients are reduced in fp32).
  std::int64_t reduce_layer_bytes = 0;
  /// ZeRO-2/3: one block's reduce-scatter input (its gradients in the reduce dtype).
  std::int64_t reduce_layer_input_bytes = 0;
  /// ZeRO-3: the root unit's (embeddings, final norm, head) trainable parameters' unsharded
  /// gradients in the computed dtype, the head side's part of them, the group's reduce-scatter
  /// input in the reduce dtype, and the root's share of gradients_bytes (its sharded gradients).
  std::int64_t root_unsharded_gradient_bytes = 0;
  std::int64_t root_head_unsharded_gradient_bytes = 0;
  std::int64_t root_reduce_input_bytes = 0;
  std::int64_t root_sharded_gradient_bytes = 0;
  /// ZeRO-3 under pipeline parallelism with deferred gradient sync: the rank's unsharded
  /// gradients in the reduce dtype, accumulated over the micro-batches of a step.
  std::int64_t unsharded_accumulated_gradient_bytes = 0;
  /// DDP: flat bucket copy of all gradients (gradient_as_bucket_view=False).
  std::int64_t ddp_bucket_bytes = 0;
  /// Gradients made before the model's backward starts: AdaLoRA's orthogonal regulariser joins the
  /// loss last, so its backward (A's and B's gradients) runs before the logits' (autograd's order).
  std::int64_t regularizer_gradient_bytes = 0;
  /// Gradients are allocated with the model (Megatron's contiguous main_grad buffer, DeepSpeed
  /// ZeRO-3's flat gradient partition).
  bool gradients_at_init = false;
  /// A reduce bucket allocated with the engine and kept (DeepSpeed ZeRO-3's ipg buffer).
  std::int64_t persistent_reduce_bucket_bytes = 0;
  /// DeepSpeed ZeRO-2 with gradients reduced to the host (DistributedBehaviour::zero_offload_grads_on_host):
  /// the checks made of one gradient as it is offloaded (zero_offload_grad_check_bytes_per_element), for the
  /// largest block tensor, the output layer and the embedding table; and the output layer's 16-bit gradient,
  /// live from its backward until it is reduced and offloaded (no device partition keeps it).
  std::int64_t offload_grad_check_layer_bytes = 0;
  std::int64_t offload_grad_check_head_bytes = 0;
  std::int64_t offload_grad_check_embedding_bytes = 0;
  std::int64_t offload_head_gradient_bytes = 0;
  bool operator==(const ModelStates&) const = default;
  /// Weights, gradients and optimizer states, paged ones included (the result's model_states_bytes).
  std::int64_t total_bytes() const {
    return checked_add(checked_add(weights_bytes, gradients_bytes, "state bytes"),
                       checked_add(optimizer_states_bytes, unmanaged_optimizer_states_bytes, "state bytes"), "state bytes");
  }
};

/// The part of the model one rank holds, and how data-parallel ranks shard it.
struct RankShard {
  std::vector<LayerRange> layers;   // held layers; empty: all
  bool embedding = true;            // token/position embeddings (first stage)
  bool head = true;                 // final norm + output layer (last stage); tied: a copy of the embedding
  std::int64_t tp = 1, ep = 1;
  std::int64_t etp = 0;             // experts' tensor parallelism (0: tp)
  Sharding sharding = Sharding::kNone;
  std::int64_t dense_shard = 1;     // ranks sharing one copy of dense parameters' states
  std::int64_t expert_shard = 1;    // ... of expert parameters' states
  std::int64_t data_parallel = 1;   // dp x cp (DDP buckets exist when > 1)
  std::int64_t padded_vocab = 0;    // 0: the model's vocabulary
  DistributedBehaviour behaviour;
  /// How many of layers [first, first + count) this rank holds.
  std::int64_t held(std::int64_t first, std::int64_t count) const noexcept;
};

/// States of one rank; the default shard is the whole model on one GPU.
ModelStates compute_model_states(const ModelArchitecture& arch, const TensorInventory& inv,
                                 const TrainingSetup& t, const RankShard& shard = {});

/// Parameters, gradients and optimizer states of the transformer blocks `shard` holds, without
/// its embeddings, final norm and head: what analytic per-layer accountings print as one GPU's
/// model states (Korthikanti et al. 2022, Fig. 1: 18 bytes x 12h^2 x layers / tp).
std::int64_t block_model_states_bytes(const ModelArchitecture& arch, const TensorInventory& inv,
                                      const TrainingSetup& t, const RankShard& shard = {});

/// compute_model_states remembered by what it reads of the shard: its flags, degrees and
/// behaviours, and its layers as the count held of each inventory group (the layers themselves
/// under freeze, which trains the last k). Shards that hold the same — e.g. the stages of
/// layouts that differ only in their interleaving — share one computation. The key holds the
/// setup's offload, AMP weight handling, gradient buffer dtype and method; one memo serves one model and otherwise one
/// setup (the search's: its layouts vary only those fields of the setup).
class ModelStatesMemo {
 public:
  const ModelStates& get(const ModelArchitecture& arch, const TensorInventory& inv, const TrainingSetup& t,
                         const RankShard& shard);
  std::size_t size() const { return memo_.size(); }

 private:
  std::map<std::vector<std::int64_t>, ModelStates> memo_;
  std::vector<std::int64_t> key_;  // reused
};

}  // namespace memfit
