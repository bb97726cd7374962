// HF config.json -> ModelArchitecture. Lenient about unrelated keys (normal in real configs),
// strict about the fields that decide shapes: each error names the field's JSON Pointer.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "hf_config/json_input.h"
#include "model/architecture.h"

namespace memfit {

/// Bounds on config fields (README "Limits"). Beyond them: out_of_range with the field's path.
struct ConfigLimits {
  static constexpr std::int64_t kMaxVocab = std::int64_t{1} << 24;         // 16,777,216
  static constexpr std::int64_t kMaxHidden = std::int64_t{1} << 20;        // 1,048,576
  static constexpr std::int64_t kMaxIntermediate = std::int64_t{1} << 22;  // 4,194,304
  static constexpr std::int64_t kMaxLayers = 10'000;
  static constexpr std::int64_t kMaxHeads = 65'536;
  static constexpr std::int64_t kMaxHeadDim = 65'536;
  static constexpr std::int64_t kMaxExperts = 65'536;
  static constexpr std::int64_t kMaxPositions = std::int64_t{1} << 28;   // 268,435,456 tokens
};

/// model_type values memfit parses (aliases such as RefinedWeb are accepted too).
const std::vector<std::string>& supported_model_types();

/// Parses a config object that sits at JSON Pointer `base` of the user's input.
ModelArchitecture parse_hf_config(const Json& config, const std::string& base = "");

/// Parses config.json text (a whole document: paths are relative to it).
ModelArchitecture parse_hf_config_text(std::string_view text);

}  // namespace memfit
