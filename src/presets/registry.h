// Preset look-up: model presets (verbatim HF configs, listed in presets/index.json) and GPU
// presets (datasheet figures). Presets go through the same parser as users' pasted configs.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/gpu_spec.h"
#include "hf_config/json_input.h"

namespace memfit::presets {

struct ModelPreset {
  std::string id;          // HF repo id
  std::string name;        // display name
  std::string model_type;
  std::string source;      // where the config came from
  bool synthetic = false;  // written from a paper's dimensions; no HF repo exists
  std::string_view config_text;
};

const std::vector<ModelPreset>& model_presets();
/// nullptr when unknown.
const ModelPreset* find_model(std::string_view id);

const std::vector<GpuSpec>& gpu_presets();
const GpuSpec* find_gpu(std::string_view id);

/// Parses one GPU preset document (strict: unknown keys are errors).
GpuSpec parse_gpu_spec(const Json& j, const std::string& base);

}  // namespace memfit::presets
