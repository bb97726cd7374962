// Search results and step times -> JSON: the documented result of `search` (docs/api.md).
#pragma once
#include "frameworks/launch.h"
#include "hf_config/json_input.h"
#include "perf/perf_model.h"
#include "search/search.h"

namespace memfit {

Json step_time_to_json(const StepTime& s);
Json candidate_to_json(const Candidate& c);
Json search_to_json(const SearchResult& r, Objective objective);
Json launch_to_json(const std::vector<LaunchFormat>& formats);

}  // namespace memfit
