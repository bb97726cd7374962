// Request reading for the api facade: JSON in, plain core types out (the formula code never
// sees JSON). Strict: unknown keys, wrong types and out-of-range values are errors with the
// JSON Pointer of the field. The request format is documented in docs/api.md.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hardware/gpu_spec.h"
#include "hf_config/json_input.h"
#include "model/architecture.h"
#include "model/tensor_inventory.h"
#include "parallel/layout.h"
#include "perf/perf_model.h"
#include "pipeline/evaluate.h"
#include "search/search.h"
#include "reference/reference.h"
#include "frameworks/profile.h"

namespace memfit::api {

/// Runs `body`; an Error without a pointer (a derived quantity past 2^53, flagged by the engines:
/// units.h) is raised at `pointer`, the part of the request that quantity comes from.
template <typename F>
auto at_pointer(const std::string& pointer, F&& body) -> decltype(body()) {
  try {
    decltype(body()) result = body();
    throw_if_beyond_exact();
    return result;
  } catch (const Error& e) {
    if (!e.path().empty()) throw;
    throw Error(e.code(), pointer, e.what());
  }
}

void reject_unknown_keys(const FieldReader& f, std::initializer_list<const char*> known);
/// Throws invalid_value unless schema_version is absent or the one this build speaks.
void check_schema_version(const FieldReader& f);

struct ResolvedModel {
  ModelArchitecture arch;
  std::shared_ptr<const TensorInventory> inventory;  // shared by every request for a preset
  std::string id;      // preset id or the config's _name_or_path
  std::string source;  // "preset" or "config"
};

/// A user's parsed config with its inventory (id: the config's _name_or_path).
ResolvedModel model_from_config(ModelArchitecture arch);
/// {"preset": id} | {"config": {...}} at `path`.
ResolvedModel resolve_model(const Json& model, const std::string& path);


struct EstimateRequest {
  ResolvedModel model;
  const FrameworkProfile* framework = nullptr;
  TrainingSetup training;
  GpuSpec gpu;                  // with gpu_mix: the first group's
  /// cluster.gpu_mix: several GPU kinds in rank order (the search places stages by memory);
  /// empty: every GPU is `gpu`.
  std::vector<GpuGroup> gpu_mix;
  std::int64_t gpus = 1;
  std::int64_t gpus_per_node = 8;
  double inter_node_bandwidth_gb_per_s = kDefaultInterNodeBandwidthGbPerS;
  double host_memory_bandwidth_gb_per_s = kDefaultHostMemoryBandwidthGbPerS;
  /// CPU memory of one node: cluster.host_memory_gib_per_node, else the GPU preset's reference
  /// node (the least of a mix's); 0: unknown, not checked.
  std::int64_t host_memory_bytes_per_node = 0;
  std::int64_t framework_yyyymm = 0;  // training.framework_version (0: the current code)
  ParallelLayout parallel;   // degrees from the request, behaviours from the framework profile
  bool include_timeline = true;
  bool search_max_micro_batch = true;
  /// A closed-form accounting from the literature to report next to the timeline ("" = none).
  std::optional<reference::Accounting> accounting;
  std::vector<std::string> warnings;
};

/// Reads and validates a whole estimate request (docs/api.md "estimate").
EstimateRequest read_estimate_request(const Json& request);

/// The cluster of a request as the performance model sees it.
ClusterSpec cluster_of(const EstimateRequest& r);
/// The request as the pipeline evaluates it (pointers into `r`, which must outlive it).
Problem problem_of(const EstimateRequest& r);

struct SearchRequest {
  EstimateRequest base;       // model, framework, training, cluster (no layout)
  SearchInput input;          // pointers into `base` are set by read_search_request's caller
  bool with_launch = true;    // launch configurations for the best candidate
};

/// Reads a search request (docs/api.md "search"): the estimate request without `parallel`,
/// plus {"search": {objective, top, global_batch, space}}. Training fields micro_batch,
/// activation_checkpointing and offload, when given, fix that dimension.
SearchRequest read_search_request(const Json& request);

}  // namespace memfit::api
