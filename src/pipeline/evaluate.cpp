#include "pipeline/evaluate.h"

#include <algorithm>

#include "memory/model_states.h"
#include "training/capabilities.h"

namespace memfit {

namespace {

// Every stage of the layout on its own GPUs, placed by memory.
MixedFit place(const Problem& p, const DistributedEstimate& d) {
  std::vector<RankPeak> kinds;
  for (const RankEstimate& k : d.ranks) {
    const Estimate& e = k.estimate;
    kinds.push_back({e.peak_allocated_bytes, e.peak_reserved_bytes, e.device_total_bytes, k.context.kind.ranks, k.context.kind.name});
  }
  return place_stages(kinds, d.layout, p.cluster.gpus, p.gpu_mix);
}

// The verdict and largest micro-batch of a mixed cluster, as assess_fit gives them for one kind of GPU.
FitReport mixed_fit(const Problem& p, const DistributedEstimate& d, const MixedFit& placed, const RuntimeProfile& rt) {
  FitReport fit;
  fit.verdict = placed.verdict;
  fit.usage_fraction = placed.usage_fraction;
  if (!p.search_max_micro_batch) return fit;
  TrainingSetup probe = p.training;
  fit.max_micro_batch = largest_fitting_micro_batch(
      [&](std::int64_t mb) {
        probe.micro_batch = mb;
        const auto kinds = try_estimate_rank_peaks(*p.arch, *p.inv, probe, d.layout, rt, nullptr);
        if (!kinds) return false;  // sizes past the 2^53 bound
        return place_stages(*kinds, d.layout, p.cluster.gpus, p.gpu_mix).verdict != Verdict::kOom;
      },
      fit.max_micro_batch_capped);
  return fit;
}

// Every rank waits for the slowest kind of GPU: the longest step time of the cluster's kinds.
void add_step_time(const Problem& p, Evaluation& ev) {
  const PerfBasis basis = build_perf_basis(*p.arch, *p.inv, ev.distributed.setup);
  ev.step_cluster = p.cluster;
  ev.step = estimate_step_time(basis, ev.distributed.setup, ev.distributed.layout, ev.step_cluster, ev.perf_constants);
  for (std::size_t i = 1; i < p.gpu_mix.size(); ++i) {
    ClusterSpec other = p.cluster;
    other.gpu = p.gpu_mix[i].gpu;
    const StepTime st = estimate_step_time(basis, ev.distributed.setup, ev.distributed.layout, other, ev.perf_constants);
    if (st.tokens_per_s < ev.step.tokens_per_s) {
      ev.step = st;
      ev.step_cluster = other;
    }
  }
}

// The most-used stage of a mixed placement (the one compared with its GPUs' memory).
const StagePlacement& most_used_stage(const MixedFit& placed) {
  const StagePlacement* worst = &placed.kinds.front();
  for (const StagePlacement& s : placed.kinds) {
    if (s.usage_fraction > worst->usage_fraction) worst = &s;
  }
  return *worst;
}

}  // namespace

Evaluation evaluate(const Problem& p, Detail detail) {
  Evaluation ev;
  ev.runtime = runtime_for(p.cluster.gpu);
  ev.step_cluster = p.cluster;
  ev.distributed = estimate_distributed(*p.arch, *p.inv, p.training, p.parallel, ev.runtime);
  const DistributedEstimate& d = ev.distributed;
  const bool max_micro_batch = p.search_max_micro_batch && detail == Detail::kFull;
  if (!p.gpu_mix.empty()) {
    ev.placement = place(p, d);
    Problem probe = p;
    probe.search_max_micro_batch = max_micro_batch;
    ev.fit = mixed_fit(probe, d, *ev.placement, ev.runtime);
    ev.compared_bytes = most_used_stage(*ev.placement).device_total_bytes;
    ev.gpu_memory_bytes = most_used_stage(*ev.placement).gpu_memory_bytes;
  } else {
    ev.fit = assess_fit(*p.arch, *p.inv, p.training, p.parallel, p.cluster.gpu, ev.peak().device_total_bytes, ev.runtime,
                        max_micro_batch);
    ev.compared_bytes = ev.peak().device_total_bytes;
    ev.gpu_memory_bytes = p.cluster.gpu.memory_total_bytes;
  }
  ev.layer_model_states_bytes = block_model_states_bytes(*p.arch, *p.inv, d.setup, d.ranks[d.peak_rank].context.shard);
  // Offload: host memory of one node (its GPUs' shards, the most any rank kind offloads as the bound).
  std::int64_t host_per_rank = 0;
  for (const RankEstimate& k : d.ranks) host_per_rank = std::max(host_per_rank, k.estimate.states.host_bytes);
  ev.host = host_fit(host_per_rank, p.cluster.gpus, p.cluster.gpus_per_node, p.cluster.host_memory_bytes_per_node);
  if (detail == Detail::kMemory) return ev;
  add_step_time(p, ev);
  ev.capability_rule = capability_rule(framework_capabilities(p.framework, p.framework_yyyymm), d.layout, d.setup,
                                       p.cluster.gpus_per_node, p.arch->is_moe());
  return ev;
}

RangeJudgement judge_range(const Evaluation& base, const std::vector<Evaluation>& variants) {
  const Estimate& e = base.peak();
  RangeJudgement r;
  r.allocated = {e.peak_allocated_bytes, e.peak_allocated_bytes};
  r.reserved = {e.peak_reserved_bytes, e.peak_reserved_bytes};
  r.device_total = {e.device_total_bytes, e.device_total_bytes};
  const auto widen = [](ByteRange& range, std::int64_t bytes) {
    range.low = std::min(range.low, bytes);
    range.high = std::max(range.high, bytes);
  };
  for (const Evaluation& v : variants) {
    widen(r.allocated, v.peak().peak_allocated_bytes);
    widen(r.reserved, v.peak().peak_reserved_bytes);
    widen(r.device_total, v.peak().device_total_bytes);
  }
  r.compared_bytes = base.compared_bytes;
  r.usage_fraction = base.fit.usage_fraction;
  r.gpu_verdict = base.fit.verdict;
  if (r.device_total.high > r.compared_bytes) {
    const std::int64_t memory = base.gpu_memory_bytes;
    r.judged_on_high = true;
    r.compared_bytes = r.device_total.high;
    r.gpu_verdict = verdict_for(r.device_total.high, memory);
    r.usage_fraction = static_cast<double>(r.device_total.high) / static_cast<double>(memory);
  }
  return r;
}

}  // namespace memfit
