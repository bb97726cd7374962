// Verdict and largest micro-batch (see fit.h).
#include "memory/fit.h"

#include "common/error.h"

namespace memfit {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kFits: return "fits";
    case Verdict::kTight: return "tight";
    case Verdict::kOom: return "oom";
  }
  return "oom";
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
                     const RuntimeProfile& rt, bool search, const std::vector<ModelStates>* states) {
  FitReport r;
  r.verdict = verdict_for(device_total_bytes, gpu.memory_total_bytes);
  r.usage_fraction = static_cast<double>(device_total_bytes) / static_cast<double>(gpu.memory_total_bytes);
  if (!search) return r;
  auto fits = [&](std::int64_t mb) {
    TrainingSetup probe = t;
    probe.micro_batch = mb;
    try {
      return estimate_peak(arch, inv, probe, layout, rt, states).device_total_bytes <= gpu.memory_total_bytes;
    } catch (const Error& err) {
      if (err.code() == ErrorCode::kOutOfRange) return false;  // sizes past the 2^53 bound
      throw;
    }
  };
  r.max_micro_batch = largest_fitting_micro_batch(fits, r.max_micro_batch_capped);
  return r;
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
