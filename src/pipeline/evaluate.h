// One estimate from a problem to its answer, between the api facade and the engines: the memory
// replay of every rank kind, the verdict (one GPU kind, a mixed cluster by stage placement, the
// host), the step time on the slowest GPU kind and the framework's capability check. The api
// maps JSON to a Problem and an Evaluation back to JSON; nothing here sees JSON.
#pragma once
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "hardware/gpu_spec.h"
#include "memory/fit.h"
#include "memory/timeline.h"
#include "model/architecture.h"
#include "model/tensor_inventory.h"
#include "parallel/layout.h"
#include "perf/perf_model.h"
#include "pipeline/step_times.h"
#include "frameworks/profile.h"

namespace memfit {

struct Problem {
  const ModelArchitecture* arch = nullptr;
  const TensorInventory* inv = nullptr;
  Framework framework = Framework::kHfTrainer;
  std::int64_t framework_yyyymm = 0;  // 0: the framework's current code
  TrainingSetup training;
  ParallelLayout parallel;
  ClusterSpec cluster;              // with gpu_mix: the first group's GPU
  std::vector<GpuGroup> gpu_mix;    // several GPU kinds in rank order; empty: every GPU is cluster.gpu
  bool search_max_micro_batch = true;
};

/// How much of the answer to compute: the memory verdict alone (a range's variants: peaks, no
/// timeline) or all of it.
enum class Detail { kMemory, kFull };

struct Evaluation {
  /// A size past 2^53 (units.h): the quantity named, and nothing below is meaningful.
  const char* beyond_exact = nullptr;
  RuntimeProfile runtime;
  DistributedEstimate distributed;
  FitReport fit;                        // the GPU verdict (the mixed placement's with gpu_mix)
  std::optional<MixedFit> placement;    // with gpu_mix: every stage placed by memory
  HostFit host;                         // offloaded bytes of one node against its CPU memory
  std::int64_t layer_model_states_bytes = 0;  // one block's states on the peak rank
  // kFull only:
  StepTime step;                        // on the slowest GPU kind of the cluster
  ClusterSpec step_cluster;             // that GPU kind's cluster
  PerfConstants perf_constants;
  std::vector<StepSpan> step_spans;     // the most-loaded rank kind's step in time (place_in_step)
  const char* capability_rule = nullptr;  // the framework cannot run this layout (capabilities.h)

  /// The device total the verdict compares and the GPU memory it is compared with (a mixed
  /// cluster's most-used stage and its GPUs').
  std::int64_t compared_bytes = 0;
  std::int64_t gpu_memory_bytes = 0;

  const Estimate& peak() const { return distributed.peak(); }
};

Evaluation evaluate(const Problem& p, Detail detail = Detail::kFull);

// The steps of an evaluation the search runs per candidate with its own shortcuts (shared model
// states, stage costs, a cut at the GPU's memory): one path for both.

/// The cluster as each of its GPU kinds: `cluster` alone, or one copy per group of `gpu_mix`.
std::vector<ClusterSpec> clusters_by_gpu_kind(const ClusterSpec& cluster, const std::vector<GpuGroup>& gpu_mix);

/// Every rank waits for the slowest kind of GPU: the step time of kind 0 ... kinds - 1 (`time(i)`)
/// with the fewest tokens/s (the first such), and its kind.
template <typename TimeOfKind>
std::pair<StepTime, std::size_t> slowest_step_time(std::size_t kinds, TimeOfKind&& time) {
  std::pair<StepTime, std::size_t> slowest{time(std::size_t{0}), 0};
  for (std::size_t i = 1; i < kinds; ++i) {
    StepTime st = time(i);
    if (st.tokens_per_s < slowest.first.tokens_per_s) slowest = {std::move(st), i};
  }
  return slowest;
}

/// Shortcuts a caller may hand the memory replay (the search's): the layout's model states
/// (rank_model_states), a device total past which a rank kind's forward floor ends the estimate
/// (estimate_peak_within), and where the first rank kind's forward activations go.
struct ReplayHints {
  const std::vector<ModelStates>* states = nullptr;
  std::int64_t oom_above_bytes = kNoMemoryLimit;
  std::int64_t* first_activation_bytes = nullptr;
  LayerActivationsMemo* layers = nullptr;  // layer activations (and their block programs) shared across candidates
};

/// What a layout's peaks say on the cluster: the most-loaded rank kind's peaks and their verdict
/// on its GPU, or with a GPU mix every stage placed by memory (the verdict the worst stage's).
struct PeakVerdict {
  PeakSummary peak;
  Verdict verdict = Verdict::kOom;
  double usage_fraction = 0;
  std::vector<StagePlacement> placement;  // with a GPU mix
  /// Judged over dated versions (SearchInput::dated): the lowest device total, the others
  /// being the highest's. 0: one version.
  std::int64_t low_device_total_bytes = 0;
};
/// The peaks of `t` on `l` and their verdict on `cluster` / `gpu_mix`: the estimate's
/// largest-micro-batch probe and each search candidate. nullopt: cut by the hints' limit, or a
/// size past 2^53 (out of memory either way).
std::optional<PeakVerdict> judge_peaks(const ModelArchitecture& arch, const TensorInventory& inv, const TrainingSetup& t,
                                       const ParallelLayout& l, const RuntimeProfile& rt, const ClusterSpec& cluster,
                                       const std::vector<GpuGroup>& gpu_mix, const ReplayHints& hints = {});

/// The host memory of one node against the most any rank kind offloads (ModelStates::host_bytes).
HostFit node_host_fit(std::int64_t most_host_bytes_per_rank, const ClusterSpec& cluster);

/// One counter over the dated behaviours of a setting the request leaves unknown.
struct ByteRange {
  std::int64_t low = 0;
  std::int64_t high = 0;
};
struct RangeJudgement {
  ByteRange allocated, active, reserved, device_total;
  /// The high end of the device total decides the verdict (it is above the estimate's own).
  bool judged_on_high = false;
  Verdict gpu_verdict = Verdict::kFits;  // of the high end when judged_on_high
  std::int64_t compared_bytes = 0;
  double usage_fraction = 0;
};
/// The range of `base` and its `variants` (same request under each dated behaviour), judged by
/// its high end: the dangerous direction decides (issue 32).
RangeJudgement judge_range(const Evaluation& base, const std::vector<Evaluation>& variants);

}  // namespace memfit
