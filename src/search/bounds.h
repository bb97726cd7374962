// The search's bounds: what settles a layout, or orders the walk, without a replay or a step
// time of its own. Each is a bound the engines' own answers never cross (tests/unit/search/
// bounds_test.cpp and property_test.cpp check it over layouts): the device total's floor from
// the model states alone, the forward floor's lower bound from another layout's activations, and
// the tokens/s ceiling over every micro-batch from the stage costs.
#pragma once
#include <cstdint>
#include <vector>

#include "memory/model_states.h"
#include "memory/timeline.h"
#include "model/architecture.h"
#include "model/tensor_inventory.h"
#include "parallel/layout.h"
#include "perf/perf_model.h"
#include "training/training_setup.h"

namespace memfit {

/// A lower bound on the device total of the most-loaded rank of `l`, whatever the micro-batch
/// and the activations: the steady step's optimizer moment holds every rank's weights,
/// optimizer states and gradients (with the optimizer in backward, weights and states are live
/// from the start), and the device total adds the workspace, CUDA context, paged states and
/// NCCL buffers on top. Costs the model states of each rank kind, no replay: the search uses it
/// to settle layouts whose persistent state alone does not fit.
std::int64_t device_total_floor_bytes(const ModelArchitecture& arch, const TensorInventory& inv,
                                      const TrainingSetup& t, const ParallelLayout& l, const RuntimeProfile& rt = {});
/// The same floor from the layout's rank_model_states.
std::int64_t device_total_floor_bytes(const std::vector<ModelStates>& states, const TrainingSetup& t,
                                      const ParallelLayout& l, const RuntimeProfile& rt = {});

/// A lower bound on the first rank kind's forward floor (device total) with no replay: its
/// weights and optimizer states (live at the floor), those activations, its paged states, the
/// cuBLAS workspace, the CUDA context and the NCCL buffers (the floor adds the step's gradients,
/// DDP buckets, gathered root units and allocator slack). The search settles a layout by it
/// from the activations of another sharding or offload of the same layout and micro-batch.
/// Saturates instead of throwing.
std::int64_t forward_floor_lower_bound(const ModelStates& first_kind, std::int64_t first_activation_bytes,
                                       const ParallelLayout& l, const RuntimeProfile& rt) noexcept;

/// An upper bound on the tokens/s of layout `l` at every micro-batch from 1 to t.micro_batch,
/// with any gradient accumulation: a step takes at least grad_accum x (per_micro_batch_s +
/// dp_per_micro_batch_floor_s) (the bubble, the rest of the data-parallel time, the pipeline and
/// offload transfers and the optimizer step only add),
/// and per_micro_batch_s / micro_batch never rises with the micro-batch (every term is a
/// maximum or sum of a linear and a constant part: FLOPs, bytes, collective latency), so the
/// largest micro-batch bounds them all; the copies after sequence-parallel all-gathers, which
/// micro-batch 1 may skip (sp_gather_view_at_batch_1), and the GEMM time above FLOPs at the
/// mainloop rate (tiles, waves, split-K, roofline: not monotone in the tokens), are left out of it;
/// the host's kernel-launch time is a floor per micro-batch. The search times a
/// structure's micro-batches only when this bound reaches the walk (tests/unit/api/property_test.cpp
/// and search_test.cpp check it over layouts).
/// `known`: stage_costs(basis, t, l, c, k) when the caller has them; `plan`: plan_rank(l, t) (the same result).
double tokens_per_s_upper_bound(const PerfBasis& basis, const TrainingSetup& t, const ParallelLayout& l,
                                const ClusterSpec& c, const PerfConstants& k = {}, const StageCosts* known = nullptr,
                                const RankPlan* plan = nullptr);

}  // namespace memfit
