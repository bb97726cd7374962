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

namespace {
// The calling thread's overflow flag (units.h): the first quantity past 2^53 since it was taken.
thread_local const char* beyond_exact_what = nullptr;
}  // namespace

void note_beyond_exact(const char* what) noexcept {
  if (beyond_exact_what == nullptr) beyond_exact_what = what;
}

const char* take_beyond_exact() noexcept {
  const char* what = beyond_exact_what;
  beyond_exact_what = nullptr;
  return what;
}

void throw_beyond_exact(const char* what) {
  throw Error(ErrorCode::kOutOfRange, "", std::string(what) + " exceeds 2^53");
}

void throw_if_beyond_exact() {
  if (const char* what = take_beyond_exact()) throw_beyond_exact(what);
}

}  // namespace memfit
