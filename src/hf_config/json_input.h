// Safe reading of JSON input: size and depth bounds before parsing, and typed field access that
// throws memfit::Error with the JSON Pointer of the field. Used by hf_config/, presets/ and api/.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace memfit {

using Json = nlohmann::json;

/// Documented input bounds (README "Limits").
inline constexpr std::size_t kMaxInputBytes = std::size_t{2} << 20;  // 2 MiB: real configs are < 100 KiB
inline constexpr int kMaxJsonDepth = 64;                             // real configs nest < 6 deep

/// Parses `text`, rejecting oversized or too deeply nested input before nlohmann sees it.
/// `base` is the JSON Pointer the document sits at in the user's input ("" for a whole file).
Json parse_json_text(std::string_view text, const std::string& base = "");

/// "/a/b" + key, escaping '~' and '/' as RFC 6901 requires.
std::string pointer_append(const std::string& base, std::string_view key);

/// Typed, bounded access to the fields of one JSON object.
class FieldReader {
 public:
  FieldReader(const Json& object, std::string base);

  const Json& json() const { return obj_; }
  const std::string& base() const { return base_; }
  std::string path(std::string_view key) const { return pointer_append(base_, key); }

  /// The first of `keys` that is present and not null, or nullptr.
  const Json* find(std::initializer_list<const char*> keys, const char** found = nullptr) const;
  bool has(std::initializer_list<const char*> keys) const { return find(keys) != nullptr; }

  /// Integer in [min, max]; absent or null -> nullopt. Wrong type or bound -> Error.
  std::optional<std::int64_t> get_int(std::initializer_list<const char*> keys, std::int64_t min,
                                      std::int64_t max) const;
  std::int64_t require_int(std::initializer_list<const char*> keys, std::int64_t min, std::int64_t max) const;
  std::int64_t int_or(std::initializer_list<const char*> keys, std::int64_t min, std::int64_t max,
                      std::int64_t fallback) const {
    return get_int(keys, min, max).value_or(fallback);
  }
  std::optional<double> get_number(std::initializer_list<const char*> keys, double min, double max) const;
  bool bool_or(std::initializer_list<const char*> keys, bool fallback) const;
  std::optional<std::string> get_string(std::initializer_list<const char*> keys) const;

 private:
  const Json& obj_;
  std::string base_;
};

/// Number with thousands separators for messages: 1000000000000 -> "1,000,000,000,000".
std::string format_count(std::int64_t value);

}  // namespace memfit
