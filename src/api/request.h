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
#include "reference/reference.h"
#include "training/framework_profile.h"

namespace memfit::api {

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
  GpuSpec gpu;
  std::int64_t gpus = 1;
  std::int64_t gpus_per_node = 8;
  ParallelLayout parallel;   // degrees from the request, behaviours from the framework profile
  bool include_timeline = true;
  bool search_max_micro_batch = true;
  /// A closed-form accounting from the literature to report next to the timeline ("" = none).
  std::optional<reference::Accounting> accounting;
  std::vector<std::string> warnings;
};

/// Reads and validates a whole estimate request (docs/api.md "estimate").
EstimateRequest read_estimate_request(const Json& request);

}  // namespace memfit::api
