// The one user-facing error type: a stable code, the JSON Pointer of the offending input field
// and a one-line message (lowercase, no final period, states the value and the rule).
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

namespace memfit {

enum class ErrorCode {
  kInvalidJson,             // the text is not JSON
  kInputTooLarge,           // the text exceeds the size bound
  kTooDeep,                 // nesting deeper than the bound
  kInvalidType,             // a field has the wrong JSON type
  kMissingField,            // a required field is absent
  kInvalidValue,            // a value breaks a rule (zero, negative, not divisible, unknown enum)
  kOutOfRange,              // a value or a derived quantity exceeds a documented bound
  kUnsupportedModelType,    // a model_type memfit cannot parse
  kUnknownPreset,           // a preset id that does not exist
  kUnknownField,            // a request key memfit does not know (requests are strict)
  kUnsupported,             // a valid setup memfit does not model yet (named in the message)
  kInternal,                // a bug: never raised on purpose
};

/// Stable lowercase name of a code, as it appears in the JSON envelope.
std::string_view error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, std::string path, const std::string& message)
      : std::runtime_error(message), code_(code), path_(std::move(path)) {}
  ErrorCode code() const { return code_; }
  /// JSON Pointer into the input document ("" = the whole document).
  const std::string& path() const { return path_; }

 private:
  ErrorCode code_;
  std::string path_;
};

}  // namespace memfit
