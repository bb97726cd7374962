// The search for the fastest way to train that fits (LLMem Algorithm 1 generalised; Fujii et al.
// 2024's 4D search): enumerate every layout the space allows (dp, tp, pp, vpp, cp, ep, sequence
// parallel, sharding, offload, micro-batch, gradient accumulation, activation checkpointing),
// reject those that break a rule (counted by rule), rank the rest with the closed-form step-time
// model, then walk them from the fastest down, estimating memory per rank only until the top N
// that fit are known (exact pruning: every candidate left is slower than all N). Three bounds
// keep the walk short without dropping a candidate: a structural layout's candidates are timed
// only when the upper bound of their tokens/s comes up in the walk (tokens_per_s_upper_bound), a
// layout whose persistent state alone exceeds the GPU (device_total_floor_bytes) is out of memory
// without a replay, and a memory estimate stops at the first rank kind whose forward floor
// passes the GPU (estimate_peak_within's limit). Memory grows with the micro-batch, so a layout that
// runs out of memory at micro-batch b is out of memory for every larger one without another
// estimate.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "memory/fit.h"
#include "memory/timeline.h"
#include "model/tensor_inventory.h"
#include "parallel/layout.h"
#include "perf/perf_model.h"
#include "frameworks/capabilities.h"

namespace memfit {

enum class Objective { kFastest, kLeastMemory, kLargestBatch };
const char* objective_name(Objective o);

/// The values each dimension may take; an empty list means every value the rules allow.
struct SearchSpace {
  std::vector<std::int64_t> tp, pp, vpp, cp, ep, micro_batch;
  std::vector<Sharding> sharding;
  std::vector<bool> sequence_parallel;
  std::vector<Checkpointing> checkpointing;
  std::vector<Offload> offload;
  /// The kind of context parallelism every candidate with cp > 1 runs (one per search).
  ContextParallelKind cp_kind = ContextParallelKind::kRing;
  std::int64_t max_micro_batch = 8;   // micro-batches 1 … this when `micro_batch` is empty
  bool tp_within_node = true;         // tensor-parallel groups stay inside one node
};

/// Bounds that keep a search interactive (docs/api.md "search", docs/hardening.md). Beyond the
/// candidate bound the search is an error; at the estimate bound the walk stops and the result
/// says what it left unexplored; the suggestions (searches of their own) share one budget.
inline constexpr std::int64_t kMaxSearchCandidates = 4'000'000;
inline constexpr std::int64_t kMaxSearchEstimates = 50'000;
inline constexpr std::int64_t kMaxSuggestionCandidates = 2'000'000;
inline constexpr std::int64_t kMaxSearchTop = 1000;

/// The framework's setup and distributed behaviours as of one dated version (frameworks/profile.h).
struct DatedSetup {
  TrainingSetup training;
  DistributedBehaviour behaviour;
};

struct SearchInput {
  const ModelArchitecture* arch = nullptr;
  const TensorInventory* inv = nullptr;
  TrainingSetup training;            // everything but the searched dimensions
  DistributedBehaviour behaviour;    // the framework's
  /// What the framework runs: layouts outside it are rejected by capability rule (default: all).
  FrameworkCapabilities capabilities;
  ClusterSpec cluster;
  /// A cluster of several GPU kinds in rank order (cluster.gpus in all); empty: every GPU is
  /// cluster.gpu. Pipeline stages take blocks of consecutive ranks and are placed on them by
  /// memory; every rank must fit its own GPU, and the slowest kind sets the pace.
  std::vector<GpuGroup> gpu_mix;
  RuntimeProfile runtime;
  PerfConstants perf;
  /// The framework's dated versions when the request leaves its version unknown (issue 33): a
  /// candidate's memory is the highest over the current code and each, so its verdict, the
  /// methods' best and the recommendation are judged by the range's high end. Empty: current code.
  std::vector<DatedSetup> dated;
  /// Sequences per optimizer step; 0: not fixed (grad_accum stays training.grad_accum).
  std::int64_t global_batch = 0;
  Objective objective = Objective::kFastest;
  std::int64_t top = 10;
  SearchSpace space;
  bool suggest = true;               // when nothing fits, look for what would
  std::int64_t max_candidates = kMaxSearchCandidates;  // enumerated: beyond it an out_of_range error
  std::int64_t max_estimates = kMaxSearchEstimates;    // memory estimates: the walk stops there
};

struct Candidate {
  ParallelLayout layout;
  TrainingSetup setup;               // micro_batch, grad_accum, checkpointing, offload as searched
  StepTime perf;
  bool memory_known = false;
  std::int64_t device_total_bytes = 0;   // with dated versions: the highest over them
  std::int64_t device_total_low_bytes = 0;  // with dated versions: the lowest over them; else 0
  std::int64_t peak_allocated_bytes = 0;
  std::int64_t peak_reserved_bytes = 0;
  std::string rank_kind;             // the most-loaded rank kind
  Verdict verdict = Verdict::kOom;   // kOom also when the host is out of memory (host_oom)
  double usage_fraction = 0;         // mixed clusters: the largest over the placed stages
  std::int64_t host_bytes_per_node = 0;  // offloaded states of the node's ranks
  bool host_oom = false;             // past the cluster's host_memory_bytes_per_node
  std::string method;                // "ZeRO-3 + TP + PP"
  /// Mixed clusters: each rank kind on the GPUs its stages were placed on (place_stages).
  std::vector<StagePlacement> placement;
};

/// The best candidate of one method family, and the largest micro-batch its layout fits.
struct MethodBest {
  std::string method;
  std::int64_t valid = 0;            // candidates of the family that passed the rules
  // The fastest layout under the 80 % line, else the fastest tight one (fastest objective);
  // none: every one runs out of memory.
  std::optional<Candidate> best;
  // When none fits: the estimated layout that needs the least memory (its OOM peak), so that
  // every family reports a per-GPU figure. Absent when no estimate had a size (past 2^53).
  std::optional<Candidate> closest;
  std::int64_t max_micro_batch = 0;
  bool max_micro_batch_capped = false;
};

struct Suggestion {
  std::string change;                // "gpus", "offload", "method", "seq_len"
  std::string description;
  Candidate candidate;               // the best layout under the change
};

struct SearchResult {
  std::int64_t enumerated = 0;       // every combination of the dimensions' values
  std::int64_t valid = 0;            // passing every rule
  std::vector<std::pair<std::string, std::int64_t>> rejected;  // by rule, sorted by rule id
  std::int64_t bounded = 0;          // structures ranked by an upper bound of their tokens/s
  std::int64_t timed = 0;            // candidates whose step time was computed (the walk reached their structure)
  std::int64_t memory_estimated = 0; // full per-rank memory estimates run
  std::int64_t settled_by_floor = 0; // structures out of memory by their persistent state alone (no estimate)
  std::int64_t settled_by_host = 0;  // structures whose offloaded states exceed the node's host memory
  /// candidates out of memory by their model states plus the activations that another sharding
  /// or offload of the same layout and micro-batch was estimated to keep (no estimate)
  std::int64_t settled_by_activations = 0;
  std::int64_t fit = 0, oom = 0;     // verdicts known (estimated or implied by monotonicity)
  std::int64_t not_needed = 0;       // valid, but ranked after the result was settled
  std::int64_t unexplored = 0;       // valid, verdict unknown: the walk reached max_estimates
  bool complete = true;              // unexplored == 0
  bool suggestions_complete = true;  // every suggestion was searched within its budget
  std::vector<Candidate> top;
  // What to run: with the fastest objective, the fastest candidate under the 80 % line (verdict
  // fits: Fujii et al. 2024 saw no OOM below it), else the fastest tight one; otherwise top[0].
  std::optional<Candidate> recommended;
  std::vector<MethodBest> methods;
  std::vector<Suggestion> suggestions;
  std::vector<std::string> assumptions;
};

/// The method family a layout belongs to ("single GPU", "DDP", "ZeRO-3 + TP", ...).
std::string method_name(const ParallelLayout& l, Offload offload);

/// Runs the search; throws Error(invalid_value / out_of_range) for a space beyond the bounds.
SearchResult run_search(const SearchInput& in);

}  // namespace memfit
