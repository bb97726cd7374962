// Names of error codes, as documented in README.md "Error codes".
#include "common/error.h"

#include <string>

#include "common/units.h"

namespace memfit {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidJson: return "invalid_json";
    case ErrorCode::kInputTooLarge: return "input_too_large";
    case ErrorCode::kTooDeep: return "too_deep";
    case ErrorCode::kInvalidType: return "invalid_type";
    case ErrorCode::kMissingField: return "missing_field";
    case ErrorCode::kInvalidValue: return "invalid_value";
    case ErrorCode::kOutOfRange: return "out_of_range";
    case ErrorCode::kUnsupportedModelType: return "unsupported_model_type";
    case ErrorCode::kUnknownPreset: return "unknown_preset";
    case ErrorCode::kUnknownField: return "unknown_field";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kInternal: return "internal";
  }
  return "internal";
}

void throw_beyond_exact(const char* what) {
  throw Error(ErrorCode::kOutOfRange, "", std::string(what) + " exceeds 2^53");
}

}  // namespace memfit
