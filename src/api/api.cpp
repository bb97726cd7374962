// String-in/string-out facade over the core, and its only catch site.
#include "api/api.h"

#include <algorithm>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "api/request.h"
#include "common/units.h"
#include "export/estimate_json.h"
#include "export/model_json.h"
#include "export/search_json.h"
#include "hardware/network.h"
#include "hf_config/parse_hf_config.h"
#include "model/tensor_inventory.h"
#include "pipeline/evaluate.h"
#include "presets/registry.h"
#include "training/setup_names.h"

namespace memfit::api {

namespace {

std::string ok(Json result) {
  Json env;
  env["ok"] = true;
  env["schema_version"] = kSchemaVersion;
  env["result"] = std::move(result);
  return env.dump();
}

std::string fail(std::string_view code, const std::string& message, const std::string& path) {
  Json env;
  env["ok"] = false;
  env["schema_version"] = kSchemaVersion;
  env["error"] = {{"code", code}, {"message", message}, {"path", path}};
  // Messages may quote user input: replace invalid UTF-8 instead of throwing while dumping.
  return env.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// A size past 2^53 that the engines flagged (units.h) and no narrower call site turned into its
// error ends the request here, as the first one found.
template <typename F>
std::string guarded(F&& body) {
  take_beyond_exact();
  try {
    Json result = body();
    throw_if_beyond_exact();
    return ok(std::move(result));
  } catch (const Error& e) {
    return fail(error_code_name(e.code()), e.what(), e.path());
  } catch (const std::bad_alloc&) {
    return fail("out_of_range", "the request needs more memory than is available", "");
  } catch (const std::exception& e) {
    return fail("internal", std::string("internal error: ") + e.what(), "");
  } catch (...) {
    return fail("internal", "internal error", "");
  }
}

Json describe(const ResolvedModel& m, bool include_tensors) {
  const TensorInventory& inv = *m.inventory;
  Json result = parameters_to_json(inv);
  result["model"] = {{"id", m.id}, {"source", m.source}, {"model_type", m.arch.model_type}};
  result["architecture"] = architecture_to_json(m.arch);
  result["warnings"] = m.arch.warnings;
  if (include_tensors) result["tensors"] = tensors_to_json(inv);
  return result;
}

// The request's run described in the terms of the closed-form accountings.
reference::ReferenceInputs reference_inputs(const EstimateRequest& r) {
  const TrainingSetup& t = r.training;
  const ParallelLayout& l = r.parallel;
  reference::ReferenceInputs in;
  in.s = t.seq_len;
  in.b = t.micro_batch;
  in.t = l.tp;
  in.p = l.pp;
  in.c = l.cp;
  in.d = l.dp;
  in.vpp = l.vpp;
  in.microbatches = l.pp > 1 ? t.grad_accum : 0;
  in.sequence_parallel = l.sequence_parallel;
  in.recompute = t.checkpointing == Checkpointing::kFull        ? reference::Recompute::kFull
                 : t.checkpointing == Checkpointing::kSelective ? reference::Recompute::kSelective
                                                                : reference::Recompute::kNone;
  in.distributed_optimizer = l.sharding != Sharding::kNone;
  in.grad_fp32 = stored_weight_bytes(t) == 4 || t.main_grad_bytes == 4;
  in.gpus_per_node = std::min(r.gpus, r.gpus_per_node);
  in.nodes = ceil_div(r.gpus, in.gpus_per_node);
  in.cpu_offload = t.offload == Offload::kOptimizer || t.offload == Offload::kParamsOptimizer;
  in.cpu_offload_params = t.offload == Offload::kParamsOptimizer;
  return in;
}

Json reference_to_json(const EstimateRequest& r, reference::Accounting accounting) {
  reference::ReferenceResult x;
  try {
    x = reference::compute(accounting, reference::shape_of(r.model.arch, *r.model.inventory), reference_inputs(r));
    throw_if_beyond_exact();
  } catch (const Error& e) {
    // The formulas name their own variables; point at the request field each comes from.
    static const std::pair<const char*, const char*> kFields[] = {
        {"s", "/training/seq_len"}, {"b", "/training/micro_batch"}, {"t", "/parallel/tp"}, {"p", "/parallel/pp"},
        {"c", "/parallel/cp"},      {"d", "/parallel/dp"},          {"vpp", "/parallel/vpp"},
        {"microbatches", "/training/grad_accum"}};
    std::string pointer = "/model";
    for (const auto& [name, field] : kFields) {
      if (e.path() == name) pointer = field;
    }
    throw Error(e.code(), pointer, std::string(reference::accounting_name(accounting)) + " accounting: " + e.what());
  }
  Json terms = Json::array();
  for (const reference::Term& term : x.terms) terms.push_back({{"label", term.label}, {"bytes", term.bytes}});
  return Json{{"accounting", std::string(reference::accounting_name(accounting))},
              {"name", x.name},
              {"citation", x.citation},
              {"model_states_bytes", x.model_states_bytes},
              {"activations_bytes", x.activations_bytes},
              {"total_bytes", x.total_bytes},
              {"total_gib", to_gib(x.total_bytes)},
              {"cpu_bytes", x.cpu_bytes},
              {"terms", terms}};
}

}  // namespace

std::string version() {
  return guarded([] {
    return Json{{"version", MEMFIT_VERSION},
                {"schema_version", kSchemaVersion},
                {"json_library", "nlohmann_json " + std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." +
                                     std::to_string(NLOHMANN_JSON_VERSION_MINOR) + "." +
                                     std::to_string(NLOHMANN_JSON_VERSION_PATCH)}};
  });
}

std::string presets() {
  return guarded([] {
    Json models = Json::array();
    for (const presets::ModelPreset& p : presets::model_presets()) {
      models.push_back({{"id", p.id}, {"name", p.name}, {"model_type", p.model_type},
                        {"source", p.source}, {"synthetic", p.synthetic}});
    }
    Json gpus = Json::array();
    for (const GpuSpec& g : presets::gpu_presets()) {
      gpus.push_back({{"id", g.id},
                      {"name", g.name},
                      {"vendor", g.vendor},
                      {"memory_nominal_gb", g.memory_nominal_gb},
                      {"memory_total_bytes", g.memory_total_bytes},
                      {"dense_tflops_bf16", g.dense_tflops_bf16},
                      {"memory_bandwidth_gb_per_s", g.memory_bandwidth_gb_per_s},
                      {"intra_node_bandwidth_gb_per_s", g.intra_node_bandwidth_gb_per_s},
                      {"host_memory_bytes_per_node", g.host_memory_bytes_per_node > 0 ? Json(g.host_memory_bytes_per_node) : Json(nullptr)},
                      {"reference_network", g.reference_network.empty() ? Json(nullptr) : Json(g.reference_network)},
                      {"sources", g.sources}});
    }
    Json networks = Json::array();
    for (const NetworkPreset& n : network_presets()) {
      networks.push_back({{"id", std::string(n.id)},
                          {"name", std::string(n.name)},
                          {"node_gbit_per_s", n.node_gbit_per_s},
                          {"gpus_per_node", n.gpus_per_node},
                          {"inter_node_bandwidth_gb_per_s", n.gb_per_s_per_gpu()},
                          {"source", std::string(n.source)}});
    }
    return Json{{"models", models}, {"gpus", gpus}, {"networks", networks}};
  });
}

std::string inspect_config(std::string_view config_text, bool include_tensors) {
  return guarded([&] {
    return describe(model_from_config(parse_hf_config_text(config_text)), include_tensors);
  });
}

std::string inspect(std::string_view request_text) {
  return guarded([&] {
    const Json req = parse_json_text(request_text);
    if (!req.is_object()) throw Error(ErrorCode::kInvalidType, "", "the request must be a JSON object");
    const FieldReader f(req, "");
    reject_unknown_keys(f, {"schema_version", "model", "include_tensors"});
    check_schema_version(f);
    const Json* model = f.find({"model"});
    if (!model) throw Error(ErrorCode::kMissingField, "/model", "missing required field model");
    return describe(resolve_model(*model, "/model"), f.bool_or({"include_tensors"}, false));
  });
}

namespace {

// The estimate of a read request (api::estimate), from its evaluation.
// The request field (JSON Pointer) whose value a capability rule turns down: the training choice
// for the rules on the method, optimizer, offload and checkpointing, the layout otherwise.
const char* capability_field(std::string_view code) {
  static constexpr std::pair<std::string_view, const char*> kFields[] = {
      {"framework_method", "/training/method"},
      {"framework_optimizer", "/training/optimizer"},
      {"framework_offload_optimizer_not_on_cpu", "/training/optimizer"},
      {"framework_no_param_offload", "/training/offload"},
      {"framework_no_optimizer_offload", "/training/offload"},
      {"framework_optimizer_offload_single_gpu", "/training/offload"},
      {"framework_optimizer_offload_sharding", "/training/offload"},
      {"framework_no_selective_checkpointing", "/training/activation_checkpointing"},
      {"framework_no_tp", "/parallel/tp"},
      {"framework_no_pp", "/parallel/pp"},
      {"framework_no_vpp", "/parallel/vpp"},
      {"framework_no_cp", "/parallel/cp"},
      {"framework_no_ulysses", "/parallel/cp_kind"},
      {"framework_no_ep", "/parallel/ep"},
      {"framework_no_sequence_parallel", "/parallel/sequence_parallel"},
      {"framework_moe_tp_needs_sequence_parallel", "/parallel/sequence_parallel"}};
  for (const auto& [c, field] : kFields) {
    if (c == code) return field;
  }
  return code.rfind("framework_no_zero", 0) == 0 || code == "framework_no_ddp" ? "/parallel/sharding" : "/parallel";
}

Json estimate_result(const EstimateRequest& r, const Evaluation& ev) {
  const TensorInventory& inv = *r.model.inventory;
  const DistributedEstimate& d = ev.distributed;
  const Estimate& e = ev.peak();
  // The headline is the most-loaded rank kind; every kind is listed under "ranks".
  Json result = estimate_to_json(e, ev.runtime, r.include_timeline);
  result["rank_kind"] = d.ranks[d.peak_rank].context.kind.name;
  result["layer_model_states_bytes"] = ev.layer_model_states_bytes;
  result["ranks"] = ranks_to_json(d, ev.runtime, r.include_timeline && d.ranks.size() > 1);
  result["parallel"] = layout_to_json(d.layout);
  result["host_bytes_per_node"] = ev.host.bytes_per_node;
  result["model"] = {{"id", r.model.id},
                     {"source", r.model.source},
                     {"model_type", r.model.arch.model_type},
                     {"total_params", inv.total_params}};
  result["framework"] = framework_to_json(*r.framework, r.training);
  result["training"] = training_to_json(d.setup);
  result["gpu"] = {{"id", r.gpu.id}, {"name", r.gpu.name}, {"memory_total_bytes", r.gpu.memory_total_bytes}};
  result["cluster"] = {{"gpus", r.gpus}, {"gpus_per_node", r.gpus_per_node}};
  result["fit"] = fit_to_json(ev.fit, r.gpu, e, r.search_max_micro_batch);
  result["fit"]["verdict"] = verdict_name(ev.fit.verdict, ev.host.oom);
  result["fit"]["gpu_verdict"] = verdict_name(ev.fit.verdict);
  result["fit"]["host_bytes_per_node"] = ev.host.bytes_per_node;
  result["fit"]["host_memory_bytes_per_node"] = ev.host.memory_bytes_per_node > 0 ? Json(ev.host.memory_bytes_per_node) : Json(nullptr);
  if (ev.placement) {
    result["fit"]["compared_bytes"] = ev.compared_bytes;
    result["fit"]["gpu_memory_bytes"] = ev.gpu_memory_bytes;
    result["fit"]["headroom_bytes"] = ev.gpu_memory_bytes - ev.compared_bytes;
    result["fit"]["placement"] = placement_to_json(ev.placement->kinds);
    result["cluster"]["gpu_mix"] = gpu_mix_to_json(r.gpu_mix);
  }
  result["perf"] = step_time_to_json(ev.step);
  if (r.include_timeline) result["step_schedule"] = step_schedule_to_json(ev.step_spans);
  result["perf"]["assumptions"] = perf_assumptions(ev.perf_constants, ev.step_cluster);
  if (r.accounting) result["reference"] = reference_to_json(r, *r.accounting);
  result["warnings"] = r.warnings;
  if (ev.capability_rule) {
    result["warnings"].push_back(r.framework->name + ": " + capability_message(ev.capability_rule) + " (" +
                                 ev.capability_rule + " at " + capability_field(ev.capability_rule) +
                                 "); the search does not offer this layout");
  }
  return result;
}

// Months before each dated change of the framework's code (its behaviour then), oldest first.
std::vector<std::int64_t> dated_variants(const FrameworkProfile& p) {
  std::vector<std::int64_t> months;
  for (const DatedBehaviour& b : p.history) {
    const std::int64_t before = b.until_yyyymm % 100 == 1 ? b.until_yyyymm - 89 : b.until_yyyymm - 1;
    months.push_back(std::max(before, b.since_yyyymm));
  }
  std::sort(months.begin(), months.end());
  months.erase(std::unique(months.begin(), months.end()), months.end());
  return months;
}

std::string month_text(std::int64_t yyyymm) {
  const std::string m = std::to_string(yyyymm % 100);
  return std::to_string(yyyymm / 100) + "-" + (m.size() == 1 ? "0" + m : m);
}

// The framework's dated versions a search judges each candidate on when the request names the
// framework without its version (issue 33: the ★ fits at the range's high end); versions that
// resolve to the current code's setup, or to one already listed, give the same memory: left out.
std::vector<DatedSetup> dated_setups(const Json& request, const FrameworkProfile& framework, const SearchInput& current) {
  std::vector<DatedSetup> dated;
  const Json* training = request.contains("training") ? &request["training"] : nullptr;
  if (!training || !training->contains("framework") || training->contains("framework_version")) return dated;
  // A version that differs only in the step-time behaviour grad_add_per_micro_batch gives the same memory.
  const auto same = [](const SearchInput& in, const DatedSetup& d) {
    DistributedBehaviour behaviour = in.behaviour;
    behaviour.grad_add_per_micro_batch = d.behaviour.grad_add_per_micro_batch;
    return in.training == d.training && behaviour == d.behaviour;
  };
  for (const std::int64_t month : dated_variants(framework)) {
    Json variant = request;
    variant["training"]["framework_version"] = month_text(month);
    const SearchRequest v = read_search_request(variant);
    if (same(v.input, {current.training, current.behaviour}) ||
        std::any_of(dated.begin(), dated.end(), [&](const DatedSetup& d) { return same(v.input, d); })) {
      continue;
    }
    dated.push_back({v.input.training, v.input.behaviour});
  }
  return dated;
}

// activation_checkpointing "unknown": whether the run checkpointed is not known, and every
// framework offers both without and with every block checkpointed, so the range spans the two.
constexpr const char* kUnknownCheckpointingValues[] = {"none", "full"};

// Takes `training.activation_checkpointing: "unknown"` out of the request (the point estimate then
// uses the framework's default) and says whether it was there.
bool take_unknown_checkpointing(Json& request) {
  if (!request.is_object() || !request.contains("training") || !request["training"].is_object()) return false;
  Json& training = request["training"];
  const auto it = training.find("activation_checkpointing");
  if (it == training.end() || !it->is_string() || it->get<std::string>() != "unknown") return false;
  training.erase(it);
  return true;
}

// Settings the request leaves unknown that move memory (issue 32): a framework named without
// framework_version runs the current code, but its dated behaviours are as plausible; an unknown
// activation checkpointing may be either setting. The range spans the estimate under every
// combination; the verdict is judged by the high end.
void add_unknown_ranges(const Json& request, const EstimateRequest& r, const Evaluation& ev, Json& result,
                        bool checkpointing_unknown) {
  const Json* training = request.contains("training") ? &request["training"] : nullptr;
  const bool version_unknown = training && training->contains("framework") && !training->contains("framework_version");
  const std::vector<std::int64_t> months = version_unknown ? dated_variants(*r.framework) : std::vector<std::int64_t>{};
  if (months.empty() && !checkpointing_unknown) return;
  Json unknown = Json::array();
  if (!months.empty()) unknown.push_back("/training/framework_version");
  if (checkpointing_unknown) unknown.push_back("/training/activation_checkpointing");
  Json point = {{"device_total_bytes", ev.peak().device_total_bytes}};
  if (!months.empty()) point["framework_version"] = "current";
  if (checkpointing_unknown) point["activation_checkpointing"] = name_of(r.training.checkpointing, kCheckpointingNames);
  Json listed = Json::array({point});
  std::vector<std::int64_t> month_choices = {0};  // 0: the current code
  month_choices.insert(month_choices.end(), months.begin(), months.end());
  std::vector<const char*> checkpointing_choices = {nullptr};  // nullptr: as the request says
  if (checkpointing_unknown) checkpointing_choices.assign(std::begin(kUnknownCheckpointingValues), std::end(kUnknownCheckpointingValues));
  std::vector<Evaluation> variants;
  for (const std::int64_t month : month_choices) {
    for (const char* checkpointing : checkpointing_choices) {
      if (month == 0 && checkpointing == nullptr) continue;  // the point estimate itself
      Json variant = request;
      Json entry = Json::object();
      if (month != 0) {
        variant["training"]["framework_version"] = month_text(month);
        entry["framework_version"] = month_text(month);
      } else if (!months.empty()) {
        entry["framework_version"] = "current";
      }
      if (checkpointing) {
        variant["training"]["activation_checkpointing"] = checkpointing;
        entry["activation_checkpointing"] = checkpointing;
      }
      const EstimateRequest variant_request = read_estimate_request(variant);
      variants.push_back(evaluate(problem_of(variant_request), Detail::kMemory));
      if (variants.back().beyond_exact) throw_beyond_exact(variants.back().beyond_exact);
      entry["device_total_bytes"] = variants.back().peak().device_total_bytes;
      listed.push_back(entry);
    }
  }
  const RangeJudgement range = judge_range(ev, variants);
  const auto to_json = [](const ByteRange& b) { return Json{{"low", b.low}, {"high", b.high}}; };
  result["ranges"] = {{"unknown", unknown},
                      {"variants", listed},
                      {"peak_allocated_bytes", to_json(range.allocated)},
                      {"peak_active_bytes", to_json(range.active)},
                      {"peak_reserved_bytes", to_json(range.reserved)},
                      {"device_total_bytes", to_json(range.device_total)}};
  if (!range.judged_on_high) return;
  Json& fit = result["fit"];
  fit["gpu_verdict"] = verdict_name(range.gpu_verdict);
  // A node without the host memory the offload needs stays host_oom whatever the GPU range says.
  fit["verdict"] = verdict_name(range.gpu_verdict, ev.host.oom);
  fit["compared_bytes"] = range.compared_bytes;
  fit["headroom_bytes"] = ev.gpu_memory_bytes - range.compared_bytes;
  fit["usage_fraction"] = range.usage_fraction;
  fit["judged_on"] = "range_high";
}

}  // namespace

std::string estimate(std::string_view request_text) {
  return guarded([&] {
    Json request = parse_json_text(request_text);
    const bool checkpointing_unknown = take_unknown_checkpointing(request);
    const EstimateRequest r = read_estimate_request(request);
    if (checkpointing_unknown && !r.gpu_mix.empty()) {
      throw Error(ErrorCode::kInvalidValue, "/training/activation_checkpointing",
                  "activation_checkpointing \"unknown\" needs a single-kind cluster (no gpu_mix)");
    }
    return at_pointer("/training", [&] {
      const Evaluation ev = evaluate(problem_of(r));
      if (ev.beyond_exact) throw_beyond_exact(ev.beyond_exact);
      Json result = estimate_result(r, ev);
      if (r.gpu_mix.empty()) add_unknown_ranges(request, r, ev, result, checkpointing_unknown);
      return result;
    });
  });
}

namespace {

LaunchInput launch_input(const EstimateRequest& r, const ParallelLayout& l, const TrainingSetup& t) {
  LaunchInput in;
  in.arch = &r.model.arch;
  in.model_id = r.model.id;
  in.layout = l;
  in.setup = t;
  in.gpus_per_node = r.gpus_per_node;
  in.framework = r.framework->id;
  return in;
}

}  // namespace

std::string search(std::string_view request_text) {
  return guarded([&] {
    const Json request = parse_json_text(request_text);
    SearchRequest s = read_search_request(request);
    s.input.arch = &s.base.model.arch;
    s.input.inv = s.base.model.inventory.get();
    if (s.input.gpu_mix.empty()) s.input.dated = dated_setups(request, *s.base.framework, s.input);
    const SearchResult r = at_pointer("/training", [&] { return run_search(s.input); });
    Json result = search_to_json(r, s.input.objective);
    if (s.with_launch && r.recommended) {
      result["launch"] = launch_to_json(launch_configs(launch_input(s.base, r.recommended->layout, r.recommended->setup)));
    }
    result["model"] = {{"id", s.base.model.id},
                       {"model_type", s.base.model.arch.model_type},
                       {"total_params", s.base.model.inventory->total_params}};
    result["framework"] = s.base.framework->key;
    result["gpu"] = {{"id", s.base.gpu.id}, {"name", s.base.gpu.name}, {"memory_total_bytes", s.base.gpu.memory_total_bytes}};
    result["cluster"] = {{"gpus", s.input.cluster.gpus},
                         {"gpus_per_node", s.input.cluster.gpus_per_node},
                         {"host_memory_bytes_per_node", s.input.cluster.host_memory_bytes_per_node > 0
                                                            ? Json(s.input.cluster.host_memory_bytes_per_node)
                                                            : Json(nullptr)},
                         {"inter_node_bandwidth_gb_per_s", s.input.cluster.inter_node_bandwidth_gb_per_s}};
    if (!s.input.gpu_mix.empty()) result["cluster"]["gpu_mix"] = gpu_mix_to_json(s.input.gpu_mix);
    result["global_batch"] = s.input.global_batch > 0 ? Json(s.input.global_batch) : Json(nullptr);
    result["tokens_per_step"] = s.input.global_batch > 0 ? Json(s.input.global_batch * s.input.training.seq_len) : Json(nullptr);
    result["warnings"] = s.base.warnings;
    if (!s.input.dated.empty()) result["judged_on"] = {{"unknown", Json::array({"/training/framework_version"})}, {"versions", s.input.dated.size() + 1}};
    return result;
  });
}

std::string launch(std::string_view request_text) {
  return guarded([&] {
    const EstimateRequest r = read_estimate_request(parse_json_text(request_text));
    return at_pointer("/training", [&] {
      const TrainingSetup t = resolve_distributed_setup(r.parallel, r.training);
      return Json{{"formats", launch_to_json(launch_configs(launch_input(r, r.parallel, t)))}};
    });
  });
}

}  // namespace memfit::api
