// What every api entry point must answer, whatever the input: a well-formed envelope, never an
// `internal` error (a bug by definition, api.h), and no number JavaScript cannot read exactly.
// Shared by the fuzz targets (fuzz_target.cpp aborts on a problem so that libFuzzer keeps the
// input) and the replay of the kept inputs (tests/unit/api/fuzz_regression_test.cpp).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/api.h"
#include "common/units.h"

namespace memfit::fuzz {

/// The fuzzed entry points, by target name (a directory under tests/fuzz/regressions/).
inline constexpr const char* kTargets[] = {"inspect_config", "inspect", "estimate", "search", "launch"};

/// Runs the entry point `target` on `text`. inspect_config lists the tensors when the text ends
/// in a newline, so that both of its paths get exercised.
inline std::string answer(std::string_view target, std::string_view text) {
  if (target == "inspect_config") return api::inspect_config(text, !text.empty() && text.back() == '\n');
  if (target == "inspect") return api::inspect(text);
  if (target == "estimate") return api::estimate(text);
  if (target == "search") return api::search(text);
  if (target == "launch") return api::launch(text);
  std::abort();
}

/// "" when every number under `j` is finite and every integer within ±2^53; else what is wrong.
inline std::string number_problem(const nlohmann::json& j) {
  if (j.is_number_unsigned()) {
    return j.get<std::uint64_t>() <= static_cast<std::uint64_t>(kMaxExactInteger) ? "" : "integer beyond 2^53 in a result";
  }
  if (j.is_number_integer()) {
    return std::llabs(j.get<std::int64_t>()) <= kMaxExactInteger ? "" : "integer beyond 2^53 in a result";
  }
  if (j.is_number_float()) return std::isfinite(j.get<double>()) ? "" : "non-finite number in a result";
  if (j.is_structured()) {
    for (const auto& v : j) {
      if (std::string p = number_problem(v); !p.empty()) return p;
    }
  }
  return "";
}

/// "" when `envelope` is what the api promises (api.h); else what is wrong with it.
inline std::string envelope_problem(const std::string& envelope) {
  const nlohmann::json env = nlohmann::json::parse(envelope, nullptr, /*allow_exceptions=*/false);
  if (env.is_discarded() || !env.is_object()) return "envelope is not a JSON object";
  const auto ok = env.find("ok");
  if (ok == env.end() || !ok->is_boolean()) return "envelope without a boolean ok";
  if (ok->get<bool>()) {
    const auto result = env.find("result");
    return result == env.end() ? "ok envelope without result" : number_problem(*result);
  }
  const auto error = env.find("error");
  if (error == env.end() || !error->is_object()) return "error envelope without an error object";
  const auto code = error->find("code");
  if (code == error->end() || !code->is_string() || code->get<std::string>().empty()) return "error without a code";
  if (!error->contains("path") || !(*error)["path"].is_string()) return "error without a path";
  if (!error->contains("message") || !(*error)["message"].is_string()) return "error without a message";
  if (code->get<std::string>() == "internal") return "internal error";
  return "";
}

}  // namespace memfit::fuzz
