// Preset registry over the embedded files. The lists are built once on first use, a GPU looked
// up by id is read from its own file; presets are checked by
// tests/unit/presets/presets_test.cpp, so a malformed preset fails the build's tests, not a user.
#include "presets/registry.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "common/units.h"
#include "hardware/network.h"
#include "presets/embedded.h"

namespace memfit::presets {

namespace {

std::string_view file_content(std::string_view path) {
  for (const EmbeddedFile& f : embedded_files()) {
    if (f.path == path) return f.content;
  }
  return {};
}

std::vector<ModelPreset> load_models() {
  std::vector<ModelPreset> out;
  const Json index = parse_json_text(file_content("index.json"), "/presets/index.json");
  const Json& models = index.at("models");
  for (std::size_t i = 0; i < models.size(); ++i) {
    const FieldReader f(models[i], "/presets/index.json/models/" + std::to_string(i));
    ModelPreset p;
    p.id = f.get_string({"id"}).value_or("");
    p.name = f.get_string({"name"}).value_or(p.id);
    p.model_type = f.get_string({"model_type"}).value_or("");
    p.source = f.get_string({"source"}).value_or("");
    p.synthetic = f.bool_or({"synthetic"}, false);
    p.config_text = file_content(f.get_string({"file"}).value_or(""));
    out.push_back(std::move(p));
  }
  return out;
}

double number_or_zero(const Json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? 0.0 : it->get<double>();
}

std::vector<GpuSpec> load_gpus() {
  std::vector<GpuSpec> out;
  for (const EmbeddedFile& f : embedded_files()) {
    if (f.path.rfind("gpus/", 0) != 0) continue;
    const std::string base = "/presets/" + std::string(f.path);
    out.push_back(parse_gpu_spec(parse_json_text(f.content, base), base));
  }
  std::sort(out.begin(), out.end(), [](const GpuSpec& a, const GpuSpec& b) { return a.id < b.id; });
  return out;
}

}  // namespace

GpuSpec parse_gpu_spec(const Json& j, const std::string& base) {
  static const std::set<std::string> kKeys = {
      "id", "name", "vendor", "architecture", "memory_nominal_gb", "memory_total_bytes",
      "memory_total_source", "memory_type", "memory_bandwidth_gb_per_s", "dense_tflops",
      "intra_node_bandwidth_gb_per_s", "intra_node_link", "intra_node_topology", "pcie_bandwidth_gb_per_s", "tdp_w",
      "sm_count", "host_memory_gib_per_node", "host_memory_source", "reference_network", "sources", "notes"};
  const FieldReader f(j, base);
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!kKeys.count(it.key())) {
      throw Error(ErrorCode::kUnknownField, f.path(it.key()), "unknown field " + it.key());
    }
  }
  GpuSpec g;
  g.id = f.get_string({"id"}).value_or("");
  if (g.id.empty()) throw Error(ErrorCode::kMissingField, f.path("id"), "missing required field id");
  g.name = f.get_string({"name"}).value_or(g.id);
  g.vendor = f.get_string({"vendor"}).value_or("");
  g.architecture = f.get_string({"architecture"}).value_or("");
  g.memory_nominal_gb = f.get_number({"memory_nominal_gb"}, 0, 1e6).value_or(0);
  g.memory_total_bytes = f.require_int({"memory_total_bytes"}, 1, std::int64_t{1} << 50);
  g.memory_type = f.get_string({"memory_type"}).value_or("");
  g.memory_bandwidth_gb_per_s = f.get_number({"memory_bandwidth_gb_per_s"}, 0, 1e6).value_or(0);
  if (const Json* t = f.find({"dense_tflops"})) {
    const FieldReader tf(*t, f.path("dense_tflops"));
    g.dense_tflops_fp32 = number_or_zero(*t, "fp32");
    g.dense_tflops_tf32 = number_or_zero(*t, "tf32");
    g.dense_tflops_bf16 = number_or_zero(*t, "bf16");
    g.dense_tflops_fp16 = number_or_zero(*t, "fp16");
    g.dense_tflops_fp8 = number_or_zero(*t, "fp8");
  }
  g.intra_node_bandwidth_gb_per_s = f.get_number({"intra_node_bandwidth_gb_per_s"}, 0, 1e6).value_or(0);
  g.intra_node_link = f.get_string({"intra_node_link"}).value_or("");
  if (const auto topo = f.get_string({"intra_node_topology"})) {
    if (*topo == "dgx1-hybrid-cube-mesh") g.intra_node_topology = IntraNodeTopology::kDgx1HybridCubeMesh;
    else if (*topo != "uniform") {
      throw Error(ErrorCode::kInvalidValue, f.path("intra_node_topology"),
                  "intra_node_topology " + *topo + " is not one of uniform, dgx1-hybrid-cube-mesh");
    }
  }
  g.pcie_bandwidth_gb_per_s = f.get_number({"pcie_bandwidth_gb_per_s"}, 0, 1e6).value_or(0);
  g.tdp_w = f.get_number({"tdp_w"}, 0, 1e5).value_or(0);
  g.sm_count = f.int_or({"sm_count"}, 0, 100000, 0);
  if (const auto gib = f.get_number({"host_memory_gib_per_node"}, 1, 1 << 20)) {
    g.host_memory_bytes_per_node = static_cast<std::int64_t>(std::llround(*gib * static_cast<double>(kGiB)));
  }
  g.reference_network = f.get_string({"reference_network"}).value_or("");
  if (!g.reference_network.empty() && !find_network(g.reference_network)) {
    throw Error(ErrorCode::kInvalidValue, f.path("reference_network"), "reference_network " + g.reference_network + " is not a network preset");
  }
  if (const Json* s = f.find({"sources"}); s && s->is_array()) {
    for (const Json& e : *s) {
      if (e.is_string()) g.sources.push_back(e.get<std::string>());
    }
  }
  return g;
}

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> models = load_models();
  return models;
}

const ModelPreset* find_model(std::string_view id) {
  for (const ModelPreset& p : model_presets()) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

const std::vector<GpuSpec>& gpu_presets() {
  static const std::vector<GpuSpec> gpus = load_gpus();
  return gpus;
}

// One preset read from its own file (gpus/<id>.json), not all of them: a request names one or
// two GPUs, and the page's first estimate waits for every file parsed (issue 33).
const GpuSpec* find_gpu(std::string_view id) {
  static std::map<std::string, GpuSpec, std::less<>> read;  // node-based: pointers stay valid
  if (const auto it = read.find(id); it != read.end()) return &it->second;
  const std::string path = "gpus/" + std::string(id) + ".json";
  const std::string_view text = file_content(path);
  if (text.empty()) return nullptr;
  const std::string base = "/presets/" + path;
  GpuSpec g = parse_gpu_spec(parse_json_text(text, base), base);
  if (g.id != id) return nullptr;
  return &read.emplace(g.id, std::move(g)).first->second;
}

}  // namespace memfit::presets
