// One training step on one GPU, replayed as a timeline of live bytes: persistent state,
// forward layer by layer, logits and loss, backward (saved tensors released, gradients
// allocated, recompute under checkpointing), optimizer step. The peak is taken over the events;
// identical layers are composed in closed form (live bytes are linear in the layer index within a
// group, so a group's extreme points are its first and last layers).
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "block/activations.h"
#include "hardware/gpu_spec.h"
#include "memory/model_states.h"
#include "model/tensor_inventory.h"
#include "parallel/layout.h"
#include "parallel/rank_plan.h"
#include "training/training_setup.h"

namespace memfit {

/// Runtime constants outside the tensors. Defaults are provisional until calibrated against the
/// measurement campaign (tools/measure); each is a named property (the result's `runtime` shows
/// the context, workspace and large-block slack).
struct RuntimeProfile {
  /// CUDA context + loaded kernels + library handles after training, outside the caching
  /// allocator: 804,061,184 B measured on all 16 GPU cross-check cases but eager attention
  /// (787,283,968 B), 527 MiB of it at init; H200, torch 2.11.0+cu130, driver 580.159.04
  /// (tests/validation/measured_h200/*.json, `memory.after_training.outside_allocator`).
  std::int64_t cuda_context_bytes = 767LL << 20;
  /// What NVML's v1 memory query (nvmlDeviceGetMemoryInfo, which pynvml, trackio and wandb call)
  /// counts as used before CUDA starts: the driver's reservation, 615 MiB on the idle H200
  /// (docs/gpu_check.md item 5, while nvidia-smi and cudaMemGetInfo leave it out). Only the
  /// H200's is measured; other GPUs take it as the high end of an unmeasured range.
  std::int64_t nvml_v1_reserved_bytes = 615LL << 20;
  /// Expected rounding slack per live large tensor: the caching allocator rounds segments of
  /// requests >= 10 MiB up to 2 MiB (kRoundLarge, c10/cuda/CUDACachingAllocator.cpp); half a page
  /// on average.
  std::int64_t large_block_slack_bytes = 1LL << 20;
  /// Expected rounding slack per weight tensor, a quarter of the large-block slack (provisional,
  /// not measured): weights are allocated once, requests of 1-10 MiB are carved from shared
  /// 20 MiB segments and smaller ones from 2 MiB ones (kLargeBuffer, kSmallBuffer in
  /// CUDACachingAllocator.cpp), so most weights leave less than a large tensor does.
  std::int64_t weight_tensor_slack_bytes = 256LL << 10;
  /// Activation tensors alive per layer at the peak, each a separate allocation with its own
  /// slack (provisional): about what a block saves without recomputation (norm inputs and
  /// outputs, q, k, v, the attention output and its statistics, the MLP's inputs and
  /// intermediates: block/activations.cpp). Full checkpointing keeps each layer's input alone.
  std::int64_t live_tensors_per_layer = 12;
  std::int64_t live_tensors_per_checkpointed_layer = 1;
  /// cuBLAS workspaces inside the caching allocator, counted in allocated: one per handle, and
  /// forward and the autograd thread's backward use two (CUBLAS_WORKSPACE_CONFIG default :4096:8
  /// = 32 MiB each on sm90, PyTorch >= 2.3). Measured: GPU max_allocated - the oracle's tensor bytes
  /// = 64.0-71.0 MiB on the 7 cases both ran (tests/oracle/gpu_check_allocated.json).
  std::int64_t cublas_workspace_bytes = 64LL << 20;
  /// Fused linear-cross-entropy kernels materialise logits for this many tokens at a time.
  std::int64_t fused_loss_chunk_tokens = 1024;
  /// Device memory NCCL allocates per communicator outside the caching allocator: 544 MB
  /// measured per 2-GPU communicator on A100 NVLink (NVIDIA/nccl issue #964; channel buffers are
  /// NCCL_BUFFSIZE 4 MiB per channel and peer). Counted in the device total only, once per
  /// parallel group of more than one rank.
  std::int64_t nccl_communicator_bytes = 544LL << 20;
  /// Point-to-point connections an all-to-all opens to each peer of its group, outside the
  /// allocator: 3.28 GB more NVML-used memory per GPU after the first all_to_all_single over
  /// 8 H100s, 32 channels per pair (NVIDIA/nccl issue #1685), i.e. 3.28 GB / 7 peers.
  std::int64_t nccl_p2p_peer_bytes = 468'600'000;
  /// NVLink SHARP buffers per rank of a communicator that the node's NVSwitch serves, outside the
  /// allocator: NVLS_NCHANNELS_SM90 (16) channels x 2 x NCCL_STEPS (8) x NCCL_NVLS_CHUNKSIZE
  /// (128 KiB) per head, one head per local rank (NVIDIA/nccl v2.27.5 src/transport/nvls.cc,
  /// ncclNvlsBufferSetup: nvlsTotalSize = nChannels * 2 * buffSize * nHeads). 0 where NCCL
  /// finds no NVLS: runtime_for() sets it for the GPU.
  std::int64_t nccl_nvls_bytes_per_local_rank = 0;
  /// The GPU's memory (0: unknown). Cached free segments of another stream's pool count in the
  /// reserved memory only up to it: before failing, the allocator releases them and retries
  /// (c10/cuda/CUDACachingAllocator.cpp malloc -> release_cached_blocks).
  std::int64_t gpu_memory_bytes = 0;
};

/// NVLS needs NVSwitch multicast on Hopper or later (nvls.cc ncclNvlsInit: sm90+ and
/// CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED); NCCL_NVLS_ENABLE defaults to using it when found.
bool nvls_capable(const GpuSpec& gpu);
/// The runtime constants for a GPU: the defaults, with NVLS buffers where the GPU has NVLS.
RuntimeProfile runtime_for(const GpuSpec& gpu);

struct Breakdown {
  std::int64_t weights_bytes = 0;
  std::int64_t gradients_bytes = 0;
  std::int64_t optimizer_states_bytes = 0;
  std::int64_t activations_bytes = 0;
  std::int64_t logits_loss_bytes = 0;
  std::int64_t temporaries_bytes = 0;
  /// Collective staging: DDP buckets, gathered K/V, sequence-parallel all-gathers, p2p buffers.
  std::int64_t communication_bytes = 0;
  /// Part of the total allocated on collective streams (ZeRO-3 all-gather outputs, reduce-scatter
  /// inputs). The caching allocator keeps a free list per stream, so these blocks are not reused
  /// by the compute stream (c10/cuda/CUDACachingAllocator.cpp, BlockPool per stream).
  std::int64_t side_stream_bytes = 0;
  /// Freed blocks the allocator keeps cached but cannot hand to this moment's larger requests
  /// (not part of the total; counted in reserved).
  std::int64_t cached_unusable_bytes = 0;
  std::int64_t total() const {
    return weights_bytes + gradients_bytes + optimizer_states_bytes + activations_bytes +
           logits_loss_bytes + temporaries_bytes + communication_bytes;
  }
};

/// Which part of a micro-batch's work an event stands at, to place it in the step's time: the
/// step's start (before the first layer), a layer's forward or backward (TimelineEvent::layer),
/// the output layer, the loss, the end of the forward or of the backward, the optimizer step.
enum class StepPart {
  kStart, kLayerForward, kHeadForward, kForwardEnd, kLoss, kLossBackward, kHeadBackward, kLayerBackward,
  kBackwardEnd, kOptimizer
};

struct TimelineEvent {
  std::string phase;   // forward, loss, backward, optimizer
  std::string label;
  std::int64_t layer = -1;
  Breakdown live;
  StepPart part = StepPart::kStart;
  /// When the event's bytes are live within the step, from its start (seconds; the step-time
  /// model's estimate, placed by place_in_step; 0 until then).
  double start_s = 0, end_s = 0;
};

struct Estimate {
  ModelStates states;
  std::int64_t tokens_per_micro_batch = 0;
  Breakdown at_peak;
  std::string peak_phase, peak_label;
  std::int64_t peak_layer = -1;
  std::int64_t peak_allocated_bytes = 0;       // steady state (optimizer states live), workspaces included
  std::int64_t peak_tensor_bytes = 0;          // the same peak, tensors only (at_peak.total())
  std::int64_t first_step_peak_allocated_bytes = 0;  // 0 when replayed without a timeline (peaks only)
  /// Allocated plus blocks freed but awaiting a stream event; on one GPU without communication
  /// streams nothing waits, so it equals allocated (docs/memory_model.md).
  std::int64_t peak_active_bytes = 0;
  std::int64_t peak_reserved_bytes = 0;
  /// Segments the second step maps for its loss because the first step's optimizer states sit in
  /// the loss's cached segments (memory/caching_allocator.h); reserved holds at least the first
  /// step's peak plus these.
  std::int64_t loss_segments_remapped_bytes = 0;
  std::int64_t device_total_bytes = 0;         // what nvidia-smi shows
  std::int64_t runtime_bytes = 0;              // context + workspace outside the tensors
  std::int64_t nccl_bytes = 0;                 // communicator buffers outside the allocator
  /// Largest stored-activation footprint of the forward (saved tensors of every micro-batch in
  /// flight), the quantity papers report as "activation memory".
  std::int64_t activations_peak_bytes = 0;
  /// What the checkpointing policy keeps of one micro-batch over the rank's layers, before
  /// activation offload moves it to the host (the bytes the step time's offload moves).
  std::int64_t kept_activation_bytes_per_micro_batch = 0;
  std::vector<TimelineEvent> timeline;          // steady-state step
};

/// What NCCL sets up on a rank: communicators (one per parallel group of more than one rank,
/// and the world's), all-to-all peers, and the ranks its communicators have inside a node.
struct NcclUse {
  std::int64_t communicators = 0;
  std::int64_t p2p_peers = 0;         // peers reached by all-to-all (point-to-point connections)
  std::int64_t nvls_local_ranks = 0;  // summed over communicators with 2+ ranks in the node
};

/// What one rank kind of a distributed run holds (built by plan_ranks from a layout); what every
/// rank does with a micro-batch is the layout's RankPlan (parallel/rank_plan.h), which the step
/// time reads too.
struct RankContext {
  RankKind kind;                 // layers, embedding/head, micro-batches in flight
  RankShard shard;               // tensors held and their data-parallel sharding
  NcclUse nccl;                    // NCCL communicators and connections of the rank
  const DistributedBehaviour& behaviour() const { return shard.behaviour; }
};

/// What NCCL sets up on a rank of `l` (ranks placed tp innermost, then cp, dp, pp): one
/// communicator per parallel group of more than one rank, plus the world's when no group spans
/// every rank (launchers call torch.distributed.barrier() on the default group, which gets its
/// own communicator: NVIDIA/nccl issue #986, "more communicators = more memory used"); the
/// other cp ranks as all-to-all peers under Ulysses (four all-to-alls per attention,
/// ulysses_sp.py _DimZeroAllToAll).
NcclUse nccl_use(const ParallelLayout& l);
/// NCCL's device memory outside the caching allocator (in the device total only).
std::int64_t nccl_device_bytes(const NcclUse& n, const RuntimeProfile& rt);
/// The context of every rank kind of `l` (a single GPU gives one plain context).
std::vector<RankContext> plan_ranks(const ParallelLayout& l, const ModelArchitecture& arch, const TrainingSetup& t);

Estimate estimate_single_gpu(const ModelArchitecture& arch, const TensorInventory& inv,
                             const TrainingSetup& t, const RuntimeProfile& rt = {});
/// One rank kind of a distributed run.
Estimate estimate_rank(const ModelArchitecture& arch, const TensorInventory& inv, const TrainingSetup& t,
                       const RankPlan& plan, const RankContext& rank, const RuntimeProfile& rt = {});

struct RankEstimate {
  RankContext context;
  Estimate estimate;
};

struct DistributedEstimate {
  ParallelLayout layout;
  TrainingSetup setup;                  // as resolved for the layout
  RankPlan plan;                        // what every rank does with a micro-batch
  std::vector<RankEstimate> ranks;      // one per rank kind
  std::size_t peak_rank = 0;            // the most-loaded kind (largest device total)
  const Estimate& peak() const { return ranks[peak_rank].estimate; }
};

/// Every rank kind of a layout; the headline is the most-loaded one. Without a timeline the
/// replay gives the peaks only (the same bytes and peak rank; no peak label, no first-step
/// figure).
DistributedEstimate estimate_distributed(const ModelArchitecture& arch, const TensorInventory& inv,
                                         const TrainingSetup& t, const ParallelLayout& l,
                                         const RuntimeProfile& rt = {}, bool timeline = true);

/// The most-loaded rank's peaks, as estimate_distributed(..., false).peak() gives them, without
/// the per-rank results (the search's and the largest-micro-batch probe's question).
struct PeakSummary {
  std::int64_t peak_allocated_bytes = 0;
  std::int64_t peak_reserved_bytes = 0;
  std::int64_t device_total_bytes = 0;
  std::size_t peak_rank = 0;   // in plan_ranks order
  std::string rank_kind;       // its name
};
/// `states`: the layout's rank_model_states, when the caller already has them.
PeakSummary estimate_peak(const ModelArchitecture& arch, const TensorInventory& inv, const TrainingSetup& t,
                          const ParallelLayout& l, const RuntimeProfile& rt = {},
                          const std::vector<ModelStates>* states = nullptr);

/// Every rank kind's peaks, in plan_ranks order (estimate_peak keeps the most-loaded one): a
/// cluster that mixes GPU kinds checks each kind against the GPUs it is placed on.
struct RankPeak {
  std::int64_t peak_allocated_bytes = 0;
  std::int64_t peak_reserved_bytes = 0;
  std::int64_t device_total_bytes = 0;
  std::int64_t ranks = 0;      // GPUs of this kind
  std::string rank_kind;
};
std::vector<RankPeak> estimate_rank_peaks(const ModelArchitecture& arch, const TensorInventory& inv, const TrainingSetup& t,
                                          const ParallelLayout& l, const RuntimeProfile& rt = {},
                                          const std::vector<ModelStates>* states = nullptr);

/// The model states of each rank kind of `l`, in plan_ranks order. They depend on neither the
/// micro-batch, the accumulation, sequence parallelism nor checkpointing, so layouts that differ
/// only in those share them (the search computes them once per such group).
/// `memo`: shares compute_model_states across layouts (ModelStatesMemo's contract).
std::vector<ModelStates> rank_model_states(const ModelArchitecture& arch, const TensorInventory& inv,
                                           const TrainingSetup& t, const ParallelLayout& l,
                                           ModelStatesMemo* memo = nullptr);

/// The search's and the fit probe's replays: nullopt as soon as one rank kind's forward floor (its
/// replay's end of forward less that moment's transients: model states, the step's gradients and
/// buffers, every activation saved for the backward) passes `oom_above_bytes`: the layout is
/// out of memory on any GPU of that size, and its remaining replays are skipped (the search's
/// fastest-first walk; the nullopt carries no size). Sizes past 2^53 are flagged as everywhere
/// (units.h): callers that read them as out of memory wrap the call in unless_beyond_exact.
inline constexpr std::int64_t kNoMemoryLimit = std::numeric_limits<std::int64_t>::max();
/// `first_activation_bytes`, when given, receives what the first rank kind's forward floor holds
/// beyond its model states and buffers (set once that kind's replay is built, even when the
/// estimate is then cut): the activations its forward saves, this micro-batch's and those in
/// flight, and the pipeline send/receive buffers. They depend on neither sharding nor offload.
/// `layers`: layer activations shared across calls (the search's candidates).
std::optional<PeakSummary> estimate_peak_within(const ModelArchitecture& arch, const TensorInventory& inv,
                                                const TrainingSetup& t, const ParallelLayout& l, const RuntimeProfile& rt,
                                                const std::vector<ModelStates>* states, std::int64_t oom_above_bytes = kNoMemoryLimit,
                                                std::int64_t* first_activation_bytes = nullptr, LayerActivationsMemo* layers = nullptr);
std::optional<std::vector<RankPeak>> estimate_rank_peaks_within(const ModelArchitecture& arch, const TensorInventory& inv,
                                                                const TrainingSetup& t, const ParallelLayout& l,
                                                                const RuntimeProfile& rt, const std::vector<ModelStates>* states,
                                                                std::int64_t oom_above_bytes = kNoMemoryLimit,
                                                                std::int64_t* first_activation_bytes = nullptr,
                                                                LayerActivationsMemo* layers = nullptr);
/// The largest forward floor of `l`'s rank kinds (device total), never above estimate_peak's.
std::int64_t forward_floor_device_total_bytes(const ModelArchitecture& arch, const TensorInventory& inv,
                                              const TrainingSetup& t, const ParallelLayout& l, const RuntimeProfile& rt = {});

}  // namespace memfit
