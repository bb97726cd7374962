// Units and overflow-checked integer arithmetic. Bytes and counts are std::int64_t; GiB = 2^30.
// Every quantity that reaches JSON must stay below 2^53 so that JavaScript reads it exactly.
#pragma once
#include <cstdint>
#include <string>

#include "common/error.h"

namespace memfit {

using Bytes = std::int64_t;
inline constexpr Bytes kKiB = Bytes{1} << 10;
inline constexpr Bytes kMiB = Bytes{1} << 20;
inline constexpr Bytes kGiB = Bytes{1} << 30;
/// Largest integer a JSON number (IEEE double) carries exactly.
inline constexpr std::int64_t kMaxExactInteger = std::int64_t{1} << 53;

inline double to_gib(Bytes b) { return static_cast<double>(b) / static_cast<double>(kGiB); }

/// a * b, or an out_of_range Error naming `what` when the product leaves [0, 2^53].
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r) || r > kMaxExactInteger || r < -kMaxExactInteger) {
    throw Error(ErrorCode::kOutOfRange, "", std::string(what) + " exceeds 2^53");
  }
  return r;
}

/// a + b, with the same bound as checked_mul.
inline std::int64_t checked_add(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r) || r > kMaxExactInteger || r < -kMaxExactInteger) {
    throw Error(ErrorCode::kOutOfRange, "", std::string(what) + " exceeds 2^53");
  }
  return r;
}

inline constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace memfit
