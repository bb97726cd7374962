// Search result JSON (see search_json.h).
#include "export/search_json.h"

#include <utility>

#include "export/estimate_json.h"

#include "common/units.h"
#include "training/setup_names.h"

namespace memfit {

namespace {
// The fields of a JSON object, set one by one: a braced list of pairs builds (and then converts)
// a two-element array per key, several times the allocations of an insertion (these objects are
// written for every row of a search's 120 methods).
Json::object_t& fields(Json& j) {
  if (!j.is_object()) j = Json::object();
  return j.get_ref<Json::object_t&>();
}
}  // namespace

Json step_time_to_json(const StepTime& s) {
  Json j;
  Json::object_t& o = fields(j);
  o.emplace("step_time_s", s.step_s);
  o.emplace("tokens_per_s", s.tokens_per_s);
  o.emplace("tokens_per_s_per_gpu", s.tokens_per_s_per_gpu);
  o.emplace("model_tflops_per_gpu", s.model_tflops_per_gpu);
  o.emplace("mfu", s.mfu);
  o.emplace("global_batch", s.global_batch);
  o.emplace("tokens_per_step", s.tokens_per_step);
  o.emplace("compute_s", s.compute_s);
  o.emplace("recompute_s", s.recompute_s);
  o.emplace("bubble_s", s.bubble_s);
  o.emplace("optimizer_s", s.optimizer_s);
  o.emplace("offload_s", s.offload_s);
  o.emplace("communication_s", s.communication_total_s);
  Json::object_t& exposed = fields(o["exposed_communication_s"]);
  exposed.emplace("dp", s.comm.dp_s);
  exposed.emplace("tp", s.comm.tp_s);
  exposed.emplace("pp", s.comm.pp_s);
  exposed.emplace("cp", s.comm.cp_s);
  exposed.emplace("ep", s.comm.ep_s);
  return j;
}

Json candidate_to_json(const Candidate& c) {
  const ParallelLayout& l = c.layout;
  Json j;
  Json::object_t& o = fields(j);
  o.emplace("method", c.method);
  Json::object_t& parallel = fields(o["parallel"]);
  parallel.emplace("dp", l.dp);
  parallel.emplace("tp", l.tp);
  parallel.emplace("pp", l.pp);
  parallel.emplace("vpp", l.vpp);
  parallel.emplace("cp", l.cp);
  parallel.emplace("ep", l.ep);
  parallel.emplace("etp", l.expert_tp());
  parallel.emplace("sequence_parallel", l.sequence_parallel);
  parallel.emplace("sharding", name_of(l.sharding, kShardingNames));
  parallel.emplace("schedule", name_of(l.schedule, kScheduleNames));
  Json::object_t& training = fields(o["training"]);
  training.emplace("micro_batch", c.setup.micro_batch);
  training.emplace("grad_accum", c.setup.grad_accum);
  training.emplace("activation_checkpointing", name_of(c.setup.checkpointing, kCheckpointingNames));
  training.emplace("offload", name_of(c.setup.offload, kOffloadNames));
  o.emplace("perf", step_time_to_json(c.perf));
  if (c.memory_known) {
    Json::object_t& memory = fields(o["memory"]);
    memory.emplace("device_total_bytes", c.device_total_bytes);
    memory.emplace("device_total_gib", to_gib(c.device_total_bytes));
    memory.emplace("peak_allocated_bytes", c.peak_allocated_bytes);
    memory.emplace("peak_reserved_bytes", c.peak_reserved_bytes);
    memory.emplace("usage_fraction", c.usage_fraction);
    memory.emplace("verdict", verdict_name(c.verdict, c.host_oom));
    memory.emplace("host_bytes_per_node", c.host_bytes_per_node);
    memory.emplace("rank_kind", c.rank_kind);
    if (!c.placement.empty()) memory.emplace("placement", placement_to_json(c.placement));
    // Judged over the framework's dated versions: the device total above is the high end.
    if (c.device_total_low_bytes > 0 && c.device_total_low_bytes != c.device_total_bytes) {
      memory.emplace("device_total_range", Json{{"low", c.device_total_low_bytes}, {"high", c.device_total_bytes}});
      memory.emplace("judged_on", "range_high");
    }
  } else {
    o.emplace("memory", nullptr);
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
    Json method;
    Json::object_t& o = fields(method);
    o.emplace("method", m.method);
    o.emplace("valid", m.valid);
    o.emplace("fits", m.best.has_value());
    o.emplace("best", m.best ? candidate_to_json(*m.best) : Json(nullptr));
    o.emplace("closest", m.closest ? candidate_to_json(*m.closest) : Json(nullptr));
    o.emplace("max_micro_batch", m.max_micro_batch);
    o.emplace("max_micro_batch_capped", m.max_micro_batch_capped);
    methods.push_back(std::move(method));
  }
  Json suggestions = Json::array();
  for (const Suggestion& s : r.suggestions) {
    suggestions.push_back({{"change", s.change}, {"description", s.description}, {"candidate", candidate_to_json(s.candidate)}});
  }
  // The arrays move into the result (an lvalue in a braced list would be copied whole).
  return Json{{"objective", objective_name(objective)},
              {"counts",
               {{"enumerated", r.enumerated}, {"valid", r.valid}, {"rejected", std::move(rejected)}, {"bounded", r.bounded},
                {"timed", r.timed}, {"memory_estimated", r.memory_estimated}, {"settled_by_floor", r.settled_by_floor}, {"settled_by_host", r.settled_by_host}, {"settled_by_activations", r.settled_by_activations}, {"fit", r.fit}, {"oom", r.oom}, {"not_needed", r.not_needed},
                {"unexplored", r.unexplored}}},
              {"complete", r.complete},
              {"suggestions_complete", r.suggestions_complete},
              {"best", r.top.empty() ? Json(nullptr) : candidate_to_json(r.top.front())},
              {"recommended", r.recommended ? candidate_to_json(*r.recommended) : Json(nullptr)},
              {"top", std::move(top)},
              {"methods", std::move(methods)},
              {"suggestions", std::move(suggestions)},
              {"assumptions", r.assumptions}};
}

Json launch_to_json(const std::vector<LaunchFormat>& formats) {
  Json out = Json::array();
  for (const LaunchFormat& f : formats) {
    out.push_back({{"format", f.format}, {"file_name", f.file_name}, {"supported", f.supported},
                   {"for_framework", f.for_framework}, {"text", f.text}, {"notes", f.notes}});
  }
  return out;
}

}  // namespace memfit
