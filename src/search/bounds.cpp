// The search's bounds (see bounds.h).
#include "search/bounds.h"

#include <algorithm>
#include <limits>

#include "common/units.h"

namespace memfit {

std::int64_t device_total_floor_bytes(const ModelArchitecture& arch, const TensorInventory& inv,
                                      const TrainingSetup& t, const ParallelLayout& l, const RuntimeProfile& rt) {
  return device_total_floor_bytes(rank_model_states(arch, inv, t, l), t, l, rt);
}

std::int64_t device_total_floor_bytes(const std::vector<ModelStates>& states, const TrainingSetup& t,
                                      const ParallelLayout& l, const RuntimeProfile& rt) {
  const std::int64_t nccl = nccl_device_bytes(nccl_use(l), rt);  // the same on every rank kind
  std::int64_t floor = 0;
  for (const ModelStates& s : states) {
    // The replay's optimizer-step event (or, with the optimizer in backward, every event).
    std::int64_t allocated = checked_add(s.weights_bytes, s.optimizer_states_bytes, "state bytes");
    if (!t.optimizer_in_backward) {
      allocated = checked_add(allocated, checked_add(s.gradients_bytes, s.optimizer_step_temp_bytes, "state bytes"), "state bytes");
    }
    const std::int64_t device = checked_add(
        checked_add(allocated, rt.cublas_workspace_bytes + rt.cuda_context_bytes, "device bytes"),
        checked_add(s.unmanaged_optimizer_states_bytes, nccl, "device bytes"),
        "device bytes");
    floor = std::max(floor, device);
  }
  return floor;
}

std::int64_t forward_floor_lower_bound(const ModelStates& first_kind, std::int64_t first_activation_bytes,
                                       const ParallelLayout& l, const RuntimeProfile& rt) noexcept {
  // Saturating sums: no exception leaves (the search calls it), and a sum past 2^63 reads as
  // "more than any GPU".
  const auto add = [](std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<std::int64_t>::max() : r;
  };
  const NcclUse use = nccl_use(l);
  std::int64_t nccl = 0, p2p = 0, nvls = 0;
  if (__builtin_mul_overflow(use.communicators, rt.nccl_communicator_bytes, &nccl) ||
      __builtin_mul_overflow(use.p2p_peers, rt.nccl_p2p_peer_bytes, &p2p) ||
      __builtin_mul_overflow(use.nvls_local_ranks, rt.nccl_nvls_bytes_per_local_rank, &nvls)) {
    return std::numeric_limits<std::int64_t>::max();
  }
  nccl = add(add(nccl, p2p), nvls);
  std::int64_t total = add(first_kind.weights_bytes, first_kind.optimizer_states_bytes);
  total = add(total, first_activation_bytes);
  total = add(total, first_kind.unmanaged_optimizer_states_bytes);
  total = add(total, add(rt.cublas_workspace_bytes, rt.cuda_context_bytes));
  return add(total, nccl);
}

double tokens_per_s_upper_bound(const PerfBasis& basis, const TrainingSetup& t, const ParallelLayout& l,
                                const ClusterSpec& c, const PerfConstants& k, const StageCosts* known, const RankPlan* plan) {
  StageCosts computed;
  const StageCosts& costs = known ? *known : (computed = stage_costs(basis, t, l, c, k, plan));
  const StepTime st = estimate_step_time(basis, t, l, c, k, &costs, plan);
  const double tokens_per_mb = static_cast<double>(l.dp) * static_cast<double>(t.micro_batch) * static_cast<double>(t.seq_len);
  // Sequence-parallel all-gathers that are views at micro-batch 1 only: micro-batch 1 skips
  // their copies, so the bound leaves them out at every micro-batch (at most what any stage
  // spends on them); GEMM time above FLOPs at the mainloop rate (tiles, waves, roofline) and a
  // context-parallel ring's flash time above whole waves are not monotone in the tokens and are
  // left out too; the host's launch time is a floor per micro-batch.
  double spare = std::max(costs.first.wave_excess_s, costs.last.wave_excess_s);
  if (t.micro_batch > 1 && l.behaviour.sp_gather_view_at_batch_1) {
    spare += std::max(costs.first.sp_gather_copy_s, costs.last.sp_gather_copy_s);
  }
  const auto gpu_mb = [](const StageCost& s) { return s.compute_s + s.tp_s + s.cp_s + s.ep_s + s.launch_gap_s; };
  const double per_mb = std::max(std::max(gpu_mb(costs.first), gpu_mb(costs.last)) - spare,
                                 std::max(costs.first.launch_s, costs.last.launch_s));
  // A relative margin far above the rounding of the step-time sums keeps the bound a bound.
  constexpr double kRoundingMargin = 1e-9;
  return tokens_per_mb / std::max(per_mb + st.dp_per_micro_batch_floor_s, 1e-12) * (1 + kRoundingMargin);
}

}  // namespace memfit
