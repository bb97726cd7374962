// String-in/string-out facade over the core, and its only catch site.
#include "api/api.h"

#include <exception>
#include <new>

#include "export/model_json.h"
#include "hf_config/parse_hf_config.h"
#include "model/tensor_inventory.h"
#include "presets/registry.h"

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

template <typename F>
std::string guarded(F&& body) {
  try {
    return ok(body());
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

void reject_unknown_keys(const FieldReader& f, std::initializer_list<const char*> known) {
  for (auto it = f.json().begin(); it != f.json().end(); ++it) {
    bool found = false;
    for (const char* k : known) found = found || it.key() == k;
    if (!found) {
      std::string list;
      for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      throw Error(ErrorCode::kUnknownField, f.path(it.key()),
                  "unknown field " + it.key().substr(0, 64) + " (expected one of: " + list + ")");
    }
  }
}

struct ResolvedModel {
  ModelArchitecture arch;
  std::string id;      // preset id or the config's _name_or_path
  std::string source;  // "preset" or "config"
};

ResolvedModel resolve_model(const Json& model, const std::string& path) {
  const FieldReader f(model, path);
  reject_unknown_keys(f, {"preset", "config"});
  const bool has_preset = f.json().contains("preset");
  const bool has_config = f.json().contains("config");
  if (has_preset == has_config) {
    throw Error(ErrorCode::kInvalidValue, path, "model needs exactly one of preset or config");
  }
  ResolvedModel r;
  if (has_preset) {
    const std::string id = f.get_string({"preset"}).value_or("");
    const presets::ModelPreset* p = presets::find_model(id);
    if (!p) {
      throw Error(ErrorCode::kUnknownPreset, f.path("preset"),
                  "unknown model preset '" + id.substr(0, 128) + "' (list them with `memfit presets`)");
    }
    r.arch = parse_hf_config_text(p->config_text);
    r.id = p->id;
    r.source = "preset";
  } else {
    r.arch = parse_hf_config(model.at("config"), f.path("config"));
    r.id = r.arch.name;
    r.source = "config";
  }
  return r;
}

Json describe(const ResolvedModel& m, bool include_tensors) {
  const TensorInventory inv = build_tensor_inventory(m.arch);
  Json result = parameters_to_json(inv);
  result["model"] = {{"id", m.id}, {"source", m.source}, {"model_type", m.arch.model_type}};
  result["architecture"] = architecture_to_json(m.arch);
  result["warnings"] = m.arch.warnings;
  if (include_tensors) result["tensors"] = tensors_to_json(inv);
  return result;
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
                      {"sources", g.sources}});
    }
    return Json{{"models", models}, {"gpus", gpus}};
  });
}

std::string inspect_config(std::string_view config_text, bool include_tensors) {
  return guarded([&] {
    ResolvedModel m;
    m.arch = parse_hf_config_text(config_text);
    m.id = m.arch.name;
    m.source = "config";
    return describe(m, include_tensors);
  });
}

std::string inspect(std::string_view request_text) {
  return guarded([&] {
    const Json req = parse_json_text(request_text);
    const FieldReader f(req, "");
    reject_unknown_keys(f, {"schema_version", "model", "include_tensors"});
    if (auto v = f.get_int({"schema_version"}, 1, 1000); v && *v != kSchemaVersion) {
      throw Error(ErrorCode::kInvalidValue, "/schema_version",
                  "schema_version " + std::to_string(*v) + " is not supported (this build speaks " +
                      std::to_string(kSchemaVersion) + ")");
    }
    const Json* model = f.find({"model"});
    if (!model) throw Error(ErrorCode::kMissingField, "/model", "missing required field model");
    return describe(resolve_model(*model, "/model"), f.bool_or({"include_tensors"}, false));
  });
}

}  // namespace memfit::api
