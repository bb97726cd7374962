// Search result JSON (see search_json.h).
#include "export/search_json.h"

#include "export/estimate_json.h"

#include "common/units.h"
#include "training/setup_names.h"

namespace memfit {

Json step_time_to_json(const StepTime& s) {
  return Json{{"step_time_s", s.step_s},
              {"tokens_per_s", s.tokens_per_s},
              {"tokens_per_s_per_gpu", s.tokens_per_s_per_gpu},
              {"model_tflops_per_gpu", s.model_tflops_per_gpu},
              {"mfu", s.mfu},
              {"global_batch", s.global_batch},
              {"tokens_per_step", s.tokens_per_step},
              {"compute_s", s.compute_s},
              {"recompute_s", s.recompute_s},
              {"bubble_s", s.bubble_s},
              {"optimizer_s", s.optimizer_s},
              {"offload_s", s.offload_s},
              {"communication_s", s.communication_total_s},
              {"exposed_communication_s",
               {{"dp", s.comm.dp_s}, {"tp", s.comm.tp_s}, {"pp", s.comm.pp_s}, {"cp", s.comm.cp_s}, {"ep", s.comm.ep_s}}}};
}

Json candidate_to_json(const Candidate& c) {
  const ParallelLayout& l = c.layout;
  Json j{{"method", c.method},
         {"parallel",
          {{"dp", l.dp}, {"tp", l.tp}, {"pp", l.pp}, {"vpp", l.vpp}, {"cp", l.cp}, {"ep", l.ep},
           {"sequence_parallel", l.sequence_parallel}, {"sharding", name_of(l.sharding, kShardingNames)},
           {"schedule", name_of(l.schedule, kScheduleNames)}}},
         {"training",
          {{"micro_batch", c.setup.micro_batch}, {"grad_accum", c.setup.grad_accum},
           {"activation_checkpointing", name_of(c.setup.checkpointing, kCheckpointingNames)},
           {"offload", name_of(c.setup.offload, kOffloadNames)}}},
         {"perf", step_time_to_json(c.perf)}};
  if (c.memory_known) {
    j["memory"] = {{"device_total_bytes", c.device_total_bytes},
                   {"device_total_gib", to_gib(c.device_total_bytes)},
                   {"peak_allocated_bytes", c.peak_allocated_bytes},
                   {"peak_reserved_bytes", c.peak_reserved_bytes},
                   {"usage_fraction", c.usage_fraction},
                   {"verdict", verdict_name(c.verdict)},
                   {"rank_kind", c.rank_kind}};
    if (!c.placement.empty()) j["memory"]["placement"] = placement_to_json(c.placement);
  } else {
    j["memory"] = nullptr;
  }
  return j;
}

Json search_to_json(const SearchResult& r, Objective objective) {
  Json rejected = Json::object();
  for (const auto& [code, n] : r.rejected) rejected[code] = n;
  Json top = Json::array();
  for (const Candidate& c : r.top) top.push_back(candidate_to_json(c));
  Json methods = Json::array();
  for (const MethodBest& m : r.methods) {
    methods.push_back({{"method", m.method},
                       {"valid", m.valid},
                       {"fits", m.best.has_value()},
                       {"best", m.best ? candidate_to_json(*m.best) : Json(nullptr)},
                       {"closest", m.closest ? candidate_to_json(*m.closest) : Json(nullptr)},
                       {"max_micro_batch", m.max_micro_batch},
                       {"max_micro_batch_capped", m.max_micro_batch_capped}});
  }
  Json suggestions = Json::array();
  for (const Suggestion& s : r.suggestions) {
    suggestions.push_back({{"change", s.change}, {"description", s.description}, {"candidate", candidate_to_json(s.candidate)}});
  }
  return Json{{"objective", objective_name(objective)},
              {"counts",
               {{"enumerated", r.enumerated}, {"valid", r.valid}, {"rejected", rejected}, {"bounded", r.bounded},
                {"timed", r.timed}, {"memory_estimated", r.memory_estimated}, {"settled_by_floor", r.settled_by_floor}, {"settled_by_activations", r.settled_by_activations}, {"fit", r.fit}, {"oom", r.oom}, {"not_needed", r.not_needed},
                {"unexplored", r.unexplored}}},
              {"complete", r.complete},
              {"suggestions_complete", r.suggestions_complete},
              {"best", r.top.empty() ? Json(nullptr) : candidate_to_json(r.top.front())},
              {"recommended", r.recommended ? candidate_to_json(*r.recommended) : Json(nullptr)},
              {"top", top},
              {"methods", methods},
              {"suggestions", suggestions},
              {"assumptions", r.assumptions}};
}

Json launch_to_json(const std::vector<LaunchFormat>& formats) {
  Json out = Json::array();
  for (const LaunchFormat& f : formats) {
    out.push_back({{"format", f.format}, {"file_name", f.file_name}, {"supported", f.supported},
                   {"text", f.text}, {"notes", f.notes}});
  }
  return out;
}

}  // namespace memfit
