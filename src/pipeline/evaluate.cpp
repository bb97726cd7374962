#include "pipeline/evaluate.h"

#include <algorithm>

#include "memory/model_states.h"
#include "frameworks/capabilities.h"

namespace memfit {

std::vector<ClusterSpec> clusters_by_gpu_kind(const ClusterSpec& cluster, const std::vector<GpuGroup>& gpu_mix) {
  if (gpu_mix.empty()) return {cluster};
  std::vector<ClusterSpec> kinds(gpu_mix.size(), cluster);
  for (std::size_t i = 0; i < gpu_mix.size(); ++i) kinds[i].gpu = gpu_mix[i].gpu;
  return kinds;
}

std::optional<PeakVerdict> judge_peaks(const ModelArchitecture& arch, const TensorInventory& inv, const TrainingSetup& t,
                                       const ParallelLayout& l, const RuntimeProfile& rt, const ClusterSpec& cluster,
                                       const std::vector<GpuGroup>& gpu_mix, const ReplayHints& hints) {
  PeakVerdict v;
  if (gpu_mix.empty()) {
    std::optional<PeakSummary> peak = unless_beyond_exact([&] {
      return estimate_peak_within(arch, inv, t, l, rt, hints.states, hints.oom_above_bytes, hints.first_activation_bytes,
                                  hints.layers);
    }).value_or(std::nullopt);
    if (!peak) return std::nullopt;
    const std::int64_t memory = cluster.gpu.memory_total_bytes;
    v.verdict = verdict_for(peak->device_total_bytes, memory);
    v.usage_fraction = static_cast<double>(peak->device_total_bytes) / static_cast<double>(memory);
    v.peak = std::move(*peak);
    return v;
  }
  const std::optional<std::vector<RankPeak>> kinds = unless_beyond_exact([&] {
    return estimate_rank_peaks_within(arch, inv, t, l, rt, hints.states, hints.oom_above_bytes, hints.first_activation_bytes,
                                  hints.layers);
  }).value_or(std::nullopt);
  if (!kinds) return std::nullopt;
  // The headline is the most-loaded kind, as on one kind of GPU.
  std::size_t top = 0;
  for (std::size_t k = 1; k < kinds->size(); ++k) {
    if ((*kinds)[k].device_total_bytes > (*kinds)[top].device_total_bytes) top = k;
  }
  const RankPeak& most = (*kinds)[top];
  v.peak = PeakSummary{most.peak_allocated_bytes, most.peak_reserved_bytes, most.device_total_bytes, top, most.rank_kind};
  // Every stage on its own block of GPUs, placed by memory.
  MixedFit fit = place_stages(*kinds, l, cluster.gpus, gpu_mix);
  v.verdict = fit.verdict;
  v.usage_fraction = fit.usage_fraction;
  v.placement = std::move(fit.kinds);
  return v;
}

HostFit node_host_fit(std::int64_t most_host_bytes_per_rank, const ClusterSpec& cluster) {
  return host_fit(most_host_bytes_per_rank, cluster.gpus, cluster.gpus_per_node, cluster.host_memory_bytes_per_node);
}

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

// The largest micro-batch whose peaks fit the cluster (one GPU kind or the mixed placement).
void probe_max_micro_batch(const Problem& p, const DistributedEstimate& d, const RuntimeProfile& rt, FitReport& fit) {
  TrainingSetup probe = p.training;
  fit.max_micro_batch = largest_fitting_micro_batch(
      [&](std::int64_t mb) {
        probe.micro_batch = mb;
        const std::optional<PeakVerdict> v = judge_peaks(*p.arch, *p.inv, probe, d.layout, rt, p.cluster, p.gpu_mix);
        return v && v->verdict != Verdict::kOom;
      },
      fit.max_micro_batch_capped);
}

// Every rank waits for the slowest kind of GPU: the longest step time of the cluster's kinds.
void add_step_time(const Problem& p, Evaluation& ev) {
  const PerfBasis basis = build_perf_basis(*p.arch, *p.inv, ev.distributed.setup);
  const std::vector<ClusterSpec> kinds = clusters_by_gpu_kind(p.cluster, p.gpu_mix);
  auto [step, slowest] = slowest_step_time(kinds.size(), [&](std::size_t i) {
    return estimate_step_time(basis, ev.distributed.setup, ev.distributed.layout, kinds[i], ev.perf_constants, nullptr,
                              &ev.distributed.plan);
  });
  ev.step = std::move(step);
  ev.step_cluster = kinds[slowest];
  // Every rank kind's timeline in the step's seconds, as the slowest GPU kind runs it.
  const MicroBatchTimes mb = micro_batch_times(basis, ev.distributed.setup, ev.distributed.layout, ev.step_cluster,
                                               ev.perf_constants, &ev.distributed.plan);
  for (std::size_t i = 0; i < ev.distributed.ranks.size(); ++i) {
    RankEstimate& r = ev.distributed.ranks[i];
    std::vector<StepSpan> spans = place_in_step(r.estimate.timeline, r.context.kind, mb, ev.step);
    if (i == ev.distributed.peak_rank) ev.step_spans = std::move(spans);
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
  // The memory verdict alone needs the peaks, not the timeline that labels them (same bytes).
  ev.distributed = estimate_distributed(*p.arch, *p.inv, p.training, p.parallel, ev.runtime, detail == Detail::kFull);
  ev.beyond_exact = take_beyond_exact();
  if (ev.beyond_exact) return ev;
  const DistributedEstimate& d = ev.distributed;
  const bool max_micro_batch = p.search_max_micro_batch && detail == Detail::kFull;
  if (!p.gpu_mix.empty()) {
    ev.placement = place(p, d);
    ev.fit.verdict = ev.placement->verdict;
    ev.fit.usage_fraction = ev.placement->usage_fraction;
    ev.compared_bytes = most_used_stage(*ev.placement).device_total_bytes;
    ev.gpu_memory_bytes = most_used_stage(*ev.placement).gpu_memory_bytes;
  } else {
    ev.fit = assess_fit(*p.arch, *p.inv, p.training, p.parallel, p.cluster.gpu, ev.peak().device_total_bytes, ev.runtime,
                        false);
    ev.compared_bytes = ev.peak().device_total_bytes;
    ev.gpu_memory_bytes = p.cluster.gpu.memory_total_bytes;
  }
  if (max_micro_batch) probe_max_micro_batch(p, d, ev.runtime, ev.fit);
  ev.layer_model_states_bytes = block_model_states_bytes(*p.arch, *p.inv, d.setup, d.ranks[d.peak_rank].context.shard);
  // Offload: host memory of one node (its GPUs' shards, the most any rank kind offloads as the bound).
  std::int64_t host_per_rank = 0;
  for (const RankEstimate& k : d.ranks) host_per_rank = std::max(host_per_rank, k.estimate.states.host_bytes);
  ev.host = node_host_fit(host_per_rank, p.cluster);
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
  r.active = {e.peak_active_bytes, e.peak_active_bytes};
  r.reserved = {e.peak_reserved_bytes, e.peak_reserved_bytes};
  r.device_total = {e.device_total_bytes, e.device_total_bytes};
  const auto widen = [](ByteRange& range, std::int64_t bytes) {
    range.low = std::min(range.low, bytes);
    range.high = std::max(range.high, bytes);
  };
  for (const Evaluation& v : variants) {
    widen(r.allocated, v.peak().peak_allocated_bytes);
    widen(r.active, v.peak().peak_active_bytes);
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
