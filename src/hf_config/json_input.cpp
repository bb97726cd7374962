// Bounded JSON parsing and typed field access with JSON Pointer paths in every error.
#include "hf_config/json_input.h"

#include <cmath>
#include <limits>

namespace memfit {

namespace {

// Depth scan outside strings: nlohmann's parser is iterative, but bounding depth up front keeps
// every later recursive walk (and error messages) cheap and predictable.
void check_depth(std::string_view text, const std::string& base) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth) {
        throw Error(ErrorCode::kTooDeep, base,
                    "json nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
}

const char* type_name(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

}  // namespace

std::string format_count(std::int64_t value) {
  // The magnitude as unsigned: -INT64_MIN does not fit an int64.
  const std::uint64_t magnitude = value < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
  std::string digits = std::to_string(magnitude);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

Json parse_json_text(std::string_view text, const std::string& base) {
  if (text.size() > kMaxInputBytes) {
    throw Error(ErrorCode::kInputTooLarge, base,
                "input is " + format_count(static_cast<std::int64_t>(text.size())) +
                    " bytes; the limit is " + format_count(static_cast<std::int64_t>(kMaxInputBytes)));
  }
  check_depth(text, base);
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Re-parse with exceptions only to recover nlohmann's position-bearing message.
    try {
      const Json unused = Json::parse(text.begin(), text.end());
      (void)unused;
    } catch (const Json::parse_error& e) {
      std::string what = e.what();
      const std::string tag = "parse error ";
      auto pos = what.find(tag);
      std::string detail = pos == std::string::npos ? what : what.substr(pos + tag.size());
      throw Error(ErrorCode::kInvalidJson, base, "invalid json: " + detail);
    } catch (const Json::out_of_range& e) {
      // A number beyond a double (1e400): nlohmann reports it as out_of_range.406.
      std::string what = e.what();
      const auto quote = what.find('\'');
      const std::string number = quote == std::string::npos ? "" : what.substr(quote + 1, what.size() - quote - 2);
      throw Error(ErrorCode::kOutOfRange, base,
                  "a json number is too large for a double: " + (number.size() > 40 ? number.substr(0, 40) + "…" : number));
    } catch (const Json::exception& e) {
      throw Error(ErrorCode::kInvalidJson, base, std::string("invalid json: ") + e.what());
    }
    throw Error(ErrorCode::kInvalidJson, base, "invalid json");
  }
  return j;
}

std::string pointer_append(const std::string& base, std::string_view key) {
  std::string out = base + "/";
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

FieldReader::FieldReader(const Json& object, std::string base) : obj_(object), base_(std::move(base)) {
  if (!obj_.is_object()) {
    throw Error(ErrorCode::kInvalidType, base_,
                std::string("expected a json object, got ") + type_name(obj_));
  }
}

const Json* FieldReader::find(std::initializer_list<const char*> keys, const char** found) const {
  for (const char* k : keys) {
    auto it = obj_.find(k);
    if (it != obj_.end() && !it->is_null()) {
      if (found) *found = k;
      return &*it;
    }
  }
  return nullptr;
}

std::optional<std::int64_t> FieldReader::get_int(std::initializer_list<const char*> keys,
                                                 std::int64_t min, std::int64_t max) const {
  const char* key = nullptr;
  const Json* v = find(keys, &key);
  if (!v) return std::nullopt;
  const std::string p = path(key);
  if (!v->is_number() || v->is_boolean()) {
    throw Error(ErrorCode::kInvalidType, p, std::string(key) + " must be an integer, got " + type_name(*v));
  }
  std::int64_t n = 0;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() &&
        v->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      throw Error(ErrorCode::kOutOfRange, p,
                  std::string(key) + " must be at most " + format_count(max) + ", got " + v->dump());
    }
    n = v->get<std::int64_t>();
  } else {
    const double d = v->get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) {
      throw Error(ErrorCode::kInvalidValue, p, std::string(key) + " must be an integer, got " + v->dump());
    }
    if (d > static_cast<double>(max)) {
      throw Error(ErrorCode::kOutOfRange, p, std::string(key) + " must be at most " + format_count(max) + ", got " + v->dump());
    }
    if (d < static_cast<double>(min)) {
      throw Error(ErrorCode::kOutOfRange, p, std::string(key) + " must be at least " + format_count(min) + ", got " + v->dump());
    }
    n = static_cast<std::int64_t>(d);
  }
  if (n < min) {
    throw Error(ErrorCode::kOutOfRange, p,
                std::string(key) + " must be at least " + format_count(min) + ", got " + format_count(n));
  }
  if (n > max) {
    throw Error(ErrorCode::kOutOfRange, p,
                std::string(key) + " must be at most " + format_count(max) + ", got " + format_count(n));
  }
  return n;
}

std::int64_t FieldReader::require_int(std::initializer_list<const char*> keys, std::int64_t min,
                                      std::int64_t max) const {
  auto v = get_int(keys, min, max);
  if (!v) {
    const char* first = *keys.begin();
    throw Error(ErrorCode::kMissingField, path(first), std::string("missing required field ") + first);
  }
  return *v;
}

std::optional<double> FieldReader::get_number(std::initializer_list<const char*> keys, double min,
                                              double max) const {
  const char* key = nullptr;
  const Json* v = find(keys, &key);
  if (!v) return std::nullopt;
  if (!v->is_number() || v->is_boolean()) {
    throw Error(ErrorCode::kInvalidType, path(key), std::string(key) + " must be a number, got " + type_name(*v));
  }
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < min || d > max) {
    throw Error(ErrorCode::kOutOfRange, path(key), std::string(key) + " must be between " + Json(min).dump() +
                                                       " and " + Json(max).dump());
  }
  return d;
}

bool FieldReader::bool_or(std::initializer_list<const char*> keys, bool fallback) const {
  const char* key = nullptr;
  const Json* v = find(keys, &key);
  if (!v) return fallback;
  if (!v->is_boolean()) {
    throw Error(ErrorCode::kInvalidType, path(key), std::string(key) + " must be a boolean, got " + type_name(*v));
  }
  return v->get<bool>();
}

std::optional<std::string> FieldReader::get_string(std::initializer_list<const char*> keys) const {
  const char* key = nullptr;
  const Json* v = find(keys, &key);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    throw Error(ErrorCode::kInvalidType, path(key), std::string(key) + " must be a string, got " + type_name(*v));
  }
  return v->get<std::string>();
}

}  // namespace memfit
