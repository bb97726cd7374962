// Will it fit: the verdict for one GPU and the largest micro-batch that fits. The device total
// (what nvidia-smi shows: reserved + CUDA context + memory outside the allocator) is compared
// with the memory the driver reports for the GPU.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hardware/gpu_spec.h"
#include "memory/timeline.h"

namespace memfit {

/// Above this fraction of the GPU's memory a run is "tight": Fujii et al. 2024 (§5) found no
/// out-of-memory failure in 454 runs whose estimate stayed below 80 % of device memory.
inline constexpr double kTightFraction = 0.80;
/// The search for the largest micro-batch stops here (a bound, reported as such).
inline constexpr std::int64_t kMaxMicroBatchSearched = 1 << 16;

enum class Verdict { kFits, kTight, kOom };
const char* verdict_name(Verdict v);

struct FitReport {
  Verdict verdict = Verdict::kFits;
  double usage_fraction = 0;         // device total / GPU memory
  std::int64_t max_micro_batch = 0;  // 0: not even one sequence fits
  bool max_micro_batch_capped = false;  // the search bound was reached
};

Verdict verdict_for(std::int64_t device_total_bytes, std::int64_t gpu_memory_bytes);

/// Host (CPU) memory of one node: what offload keeps there against what the node has. A layout
/// past it is out of memory on the host whatever its GPUs hold.
struct HostFit {
  std::int64_t bytes_per_node = 0;         // a rank's host bytes x the node's ranks
  std::int64_t memory_bytes_per_node = 0;  // the node's CPU memory (0: unknown, not checked)
  bool oom = false;
};
/// `host_bytes_per_rank`: the most-loaded rank's offloaded states (ModelStates::host_bytes).
HostFit host_fit(std::int64_t host_bytes_per_rank, std::int64_t gpus, std::int64_t gpus_per_node,
                 std::int64_t memory_bytes_per_node);
/// The verdict as results print it: "host_oom" when the host is out of memory, else the GPU's.
const char* verdict_name(Verdict v, bool host_oom);

/// A cluster that mixes GPU kinds (GpuGroup, in rank order). Ranks follow Megatron's order (tp
/// innermost, then cp, dp, pp outermost), so pipeline stage blocks are gpus / pp consecutive
/// ranks, each with the memory of the smallest kind it spans (pp = 1: one block spans them all).
/// Every stage of every rank kind is placed by memory: the largest device totals on the blocks
/// with the most memory. That sorted matching minimises the largest usage fraction (exchange
/// argument: for d1 >= d2 and c1 >= c2, max(d1/c1, d2/c2) <= max(d1/c2, d2/c1)).
struct StagePlacement {
  std::string rank_kind;
  std::string gpu;                       // the GPU kind of its most-used stage's block
  std::int64_t stages = 0;
  std::int64_t device_total_bytes = 0;
  std::int64_t gpu_memory_bytes = 0;     // of its most-used stage's block
  double usage_fraction = 0;             // of its most-used stage
};
struct MixedFit {
  Verdict verdict = Verdict::kFits;      // the worst stage's
  double usage_fraction = 0;             // the most-used stage's
  std::vector<StagePlacement> kinds;     // in the order of the rank kinds
};
/// `kinds`: each rank kind of `l` with its GPUs and one rank's device total (estimate_rank_peaks);
/// a kind spans ranks / (tp x dp x cp) stages.
MixedFit place_stages(const std::vector<RankPeak>& kinds, const ParallelLayout& l, std::int64_t gpus,
                      const std::vector<GpuGroup>& mix);
/// The most memory a stage block of the mix has (a floor above it fits no placement).
std::int64_t largest_stage_block_bytes(std::int64_t pp, std::int64_t gpus, const std::vector<GpuGroup>& mix);

/// The largest micro-batch in 1 … kMaxMicroBatchSearched for which `fits` holds (doubling, then
/// bisection: memory never falls as the micro-batch grows); 0 when 1 does not fit. Sets
/// `capped` when the bound was reached.
std::int64_t largest_fitting_micro_batch(const std::function<bool(std::int64_t)>& fits, bool& capped);

/// Verdict of the most-loaded rank's device total and, with `search`, the largest micro-batch
/// whose most-loaded rank fits (binary search: the estimate never falls as the micro-batch grows).
FitReport assess_fit(const ModelArchitecture& arch, const TensorInventory& inv, const TrainingSetup& t,
                     const ParallelLayout& layout, const GpuSpec& gpu, std::int64_t device_total_bytes,
                     const RuntimeProfile& rt = {}, bool search = true);

}  // namespace memfit
