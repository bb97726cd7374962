// Estimate -> JSON: the documented result of `estimate` (docs/api.md). The api contract lives
// here, apart from the formulas.
#pragma once
#include "hardware/gpu_spec.h"
#include "hf_config/json_input.h"
#include "memory/fit.h"
#include "memory/timeline.h"
#include "pipeline/step_times.h"
#include "frameworks/profile.h"

namespace memfit {

/// The resolved training setup, every field (what the estimate used after framework defaults).
Json training_to_json(const TrainingSetup& t);
Json framework_to_json(const FrameworkProfile& p, const TrainingSetup& t);
Json estimate_to_json(const Estimate& e, const RuntimeProfile& rt, bool include_timeline);
/// The layout as estimated (degrees and the distributed behaviours used).
Json layout_to_json(const ParallelLayout& l);
/// One entry per rank kind: what it holds, its peaks and breakdown (and timeline).
/// The step's spans in time (place_in_step): [{phase, label, first_layer, layers, start_s, end_s}].
Json step_schedule_to_json(const std::vector<StepSpan>& spans);
Json ranks_to_json(const DistributedEstimate& d, const RuntimeProfile& rt, bool include_timeline);
Json fit_to_json(const FitReport& fit, const GpuSpec& gpu, const Estimate& e, bool searched);
/// Mixed clusters: where each rank kind's stages run (place_stages).
Json placement_to_json(const std::vector<StagePlacement>& placement);
Json gpu_mix_to_json(const std::vector<GpuGroup>& mix);

}  // namespace memfit
