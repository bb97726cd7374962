// One training step on one GPU, replayed as a timeline of live bytes: persistent state,
// forward layer by layer, logits and loss, backward (saved tensors released, gradients
// allocated, recompute under checkpointing), optimizer step. The peak is taken over the events;
// identical layers are composed in closed form (live bytes are linear in the layer index within a
// group, so a group's extreme points are its first and last layers).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "memory/model_states.h"
#include "model/tensor_inventory.h"
#include "training/training_setup.h"

namespace memfit {

/// Runtime constants outside the tensors. Defaults are provisional until calibrated against the
/// measurement campaign (tools/measure); each is a named property, shown in the result.
struct RuntimeProfile {
  /// CUDA context + loaded kernels + local-memory reservation after one training step, outside the
  /// caching allocator (research: ~250–450 MiB at init plus modules loaded during the first step).
  std::int64_t cuda_context_bytes = 600LL << 20;
  /// Expected rounding slack per live large tensor: the caching allocator rounds segments of
  /// requests >= 10 MiB up to 2 MiB (kRoundLarge, c10/cuda/CUDACachingAllocator.cpp); half a page
  /// on average.
  std::int64_t large_block_slack_bytes = 1LL << 20;
  /// cuBLAS workspace per stream inside the allocator on Hopper (CUBLAS_WORKSPACE_CONFIG default
  /// :4096:8 = 32 MiB since PyTorch 2.3 for sm90).
  std::int64_t cublas_workspace_bytes = 32LL << 20;
  /// Fused linear-cross-entropy kernels materialise logits for this many tokens at a time.
  std::int64_t fused_loss_chunk_tokens = 1024;
};

struct Breakdown {
  std::int64_t weights_bytes = 0;
  std::int64_t gradients_bytes = 0;
  std::int64_t optimizer_states_bytes = 0;
  std::int64_t activations_bytes = 0;
  std::int64_t logits_loss_bytes = 0;
  std::int64_t temporaries_bytes = 0;
  std::int64_t total() const {
    return weights_bytes + gradients_bytes + optimizer_states_bytes + activations_bytes +
           logits_loss_bytes + temporaries_bytes;
  }
};

struct TimelineEvent {
  std::string phase;   // forward, loss, backward, optimizer
  std::string label;
  std::int64_t layer = -1;
  Breakdown live;
};

struct Estimate {
  ModelStates states;
  std::int64_t tokens_per_micro_batch = 0;
  Breakdown at_peak;
  std::string peak_phase, peak_label;
  std::int64_t peak_layer = -1;
  std::int64_t peak_allocated_bytes = 0;       // steady state (optimizer states live)
  std::int64_t first_step_peak_allocated_bytes = 0;
  /// Allocated plus blocks freed but awaiting a stream event; on one GPU without communication
  /// streams nothing waits, so it equals allocated (docs/memory_model.md).
  std::int64_t peak_active_bytes = 0;
  std::int64_t peak_reserved_bytes = 0;
  std::int64_t device_total_bytes = 0;         // what nvidia-smi shows
  std::int64_t runtime_bytes = 0;              // context + workspace outside the tensors
  std::vector<TimelineEvent> timeline;          // steady-state step
};

Estimate estimate_single_gpu(const ModelArchitecture& arch, const TensorInventory& inv,
                             const TrainingSetup& t, const RuntimeProfile& rt = {});

}  // namespace memfit
