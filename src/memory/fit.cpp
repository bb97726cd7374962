// Verdict and largest micro-batch (see fit.h).
#include "memory/fit.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "common/units.h"

namespace memfit {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kFits: return "fits";
    case Verdict::kTight: return "tight";
    case Verdict::kOom: return "oom";
  }
  return "oom";
}

const char* verdict_name(Verdict v, bool host_oom) { return host_oom ? "host_oom" : verdict_name(v); }

HostFit host_fit(std::int64_t host_bytes_per_rank, std::int64_t gpus, std::int64_t gpus_per_node,
                 std::int64_t memory_bytes_per_node) {
  HostFit h;
  // Saturated at 2^53 rather than thrown: the search calls this where no exception may cross.
  const std::int64_t ranks = std::max<std::int64_t>(1, std::min(gpus, gpus_per_node));
  h.bytes_per_node = host_bytes_per_rank > kMaxExactInteger / ranks ? kMaxExactInteger : host_bytes_per_rank * ranks;
  h.memory_bytes_per_node = memory_bytes_per_node;
  h.oom = memory_bytes_per_node > 0 && h.bytes_per_node > memory_bytes_per_node;
  return h;
}

Verdict verdict_for(std::int64_t device_total_bytes, std::int64_t gpu_memory_bytes) {
  if (device_total_bytes > gpu_memory_bytes) return Verdict::kOom;
  if (static_cast<double>(device_total_bytes) > kTightFraction * static_cast<double>(gpu_memory_bytes)) {
    return Verdict::kTight;
  }
  return Verdict::kFits;
}

FitReport assess_fit(const ModelArchitecture& arch, const TensorInventory& inv, const TrainingSetup& t,
                     const ParallelLayout& layout, const GpuSpec& gpu, std::int64_t device_total_bytes,
                     const RuntimeProfile& rt, bool search) {
  FitReport r;
  r.verdict = verdict_for(device_total_bytes, gpu.memory_total_bytes);
  r.usage_fraction = static_cast<double>(device_total_bytes) / static_cast<double>(gpu.memory_total_bytes);
  if (!search) return r;
  auto fits = [&](std::int64_t mb) {
    TrainingSetup probe = t;
    probe.micro_batch = mb;
    // Sizes past 2^53 do not fit.
    const auto peak = unless_beyond_exact([&] { return estimate_peak(arch, inv, probe, layout, rt); });
    return peak && peak->device_total_bytes <= gpu.memory_total_bytes;
  };
  r.max_micro_batch = largest_fitting_micro_batch(fits, r.max_micro_batch_capped);
  return r;
}

namespace {
// The stage blocks of a mixed cluster in rank order: each block's memory (its smallest kind's)
// and that kind's group.
struct Block {
  std::int64_t memory_bytes;
  std::size_t group;
};
std::vector<Block> stage_blocks(std::int64_t pp, std::int64_t gpus, const std::vector<GpuGroup>& mix) {
  std::vector<Block> blocks;
  const std::int64_t size = gpus / std::max<std::int64_t>(1, pp);
  for (std::int64_t b = 0; b < pp; ++b) {
    Block block{std::numeric_limits<std::int64_t>::max(), 0};
    std::int64_t first = 0;
    for (std::size_t g = 0; g < mix.size(); ++g) {
      const std::int64_t end = first + mix[g].count;
      if (first < (b + 1) * size && b * size < end && mix[g].gpu.memory_total_bytes < block.memory_bytes) {
        block = {mix[g].gpu.memory_total_bytes, g};
      }
      first = end;
    }
    blocks.push_back(block);
  }
  return blocks;
}
}  // namespace

std::int64_t largest_stage_block_bytes(std::int64_t pp, std::int64_t gpus, const std::vector<GpuGroup>& mix) {
  std::int64_t largest = 0;
  for (const Block& b : stage_blocks(pp, gpus, mix)) largest = std::max(largest, b.memory_bytes);
  return largest;
}

MixedFit place_stages(const std::vector<RankPeak>& kinds, const ParallelLayout& l, std::int64_t gpus,
                      const std::vector<GpuGroup>& mix) {
  // The blocks, most memory first (stable: rank order among equals).
  std::vector<Block> blocks = stage_blocks(l.pp, gpus, mix);
  std::stable_sort(blocks.begin(), blocks.end(), [](const Block& x, const Block& y) { return x.memory_bytes > y.memory_bytes; });
  // Every stage, largest demand first (ties: kind order).
  const std::int64_t stage_ranks = std::max<std::int64_t>(1, l.tp * l.dp * l.cp);
  std::vector<std::pair<std::int64_t, std::size_t>> stages;
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    for (std::int64_t i = 0; i < kinds[k].ranks / stage_ranks; ++i) stages.emplace_back(kinds[k].device_total_bytes, k);
  }
  std::sort(stages.begin(), stages.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first > y.first : x.second < y.second;
  });
  MixedFit fit;
  fit.kinds.resize(kinds.size());
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    fit.kinds[k].rank_kind = kinds[k].rank_kind;
    fit.kinds[k].stages = kinds[k].ranks / stage_ranks;
    fit.kinds[k].device_total_bytes = kinds[k].device_total_bytes;
    fit.kinds[k].usage_fraction = -1;
  }
  for (std::size_t i = 0; i < stages.size() && i < blocks.size(); ++i) {
    const auto [bytes, k] = stages[i];
    const std::int64_t memory = blocks[i].memory_bytes;
    fit.verdict = std::max(fit.verdict, verdict_for(bytes, memory));
    const double usage = static_cast<double>(bytes) / static_cast<double>(memory);
    fit.usage_fraction = std::max(fit.usage_fraction, usage);
    StagePlacement& p = fit.kinds[k];
    if (usage > p.usage_fraction) {
      p.gpu = mix[blocks[i].group].gpu.id;
      p.gpu_memory_bytes = memory;
      p.usage_fraction = usage;
    }
  }
  return fit;
}

std::int64_t largest_fitting_micro_batch(const std::function<bool(std::int64_t)>& fits, bool& capped) {
  capped = false;
  if (!fits(1)) return 0;
  // Double until it fails (or the bound), then bisect between the last fit and the first failure.
  std::int64_t lo = 1, hi = 2;
  while (hi <= kMaxMicroBatchSearched && fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  if (hi > kMaxMicroBatchSearched) {
    capped = true;
    return lo;
  }
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace memfit
