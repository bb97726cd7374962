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

/// Throws the out_of_range Error of checked_mul / checked_add (out of line: the checks stay a few
/// instructions where they are inlined, with no string built on the common path).
[[noreturn]] void throw_beyond_exact(const char* what);

/// a * b, or an out_of_range Error naming `what` when the product leaves [-2^53, 2^53].
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, const char* what) {
  const std::uint64_t ua = a < 0 ? 0 - static_cast<std::uint64_t>(a) : static_cast<std::uint64_t>(a);
  const std::uint64_t ub = b < 0 ? 0 - static_cast<std::uint64_t>(b) : static_cast<std::uint64_t>(b);
  // Factors below 2^31 cannot overflow 64 bits; larger ones are compared by a division (no
  // 128-bit product, which 32-bit WebAssembly makes a library call).
  constexpr auto kLimit = static_cast<std::uint64_t>(kMaxExactInteger);
  if (((ua | ub) >> 31) != 0 && ua != 0 && ub > kLimit / ua) throw_beyond_exact(what);
  const std::uint64_t product = ua * ub;
  if (product > kLimit) throw_beyond_exact(what);
  const auto r = static_cast<std::int64_t>(product);
  return (a < 0) != (b < 0) ? -r : r;
}

/// a + b, with the same bound as checked_mul.
inline std::int64_t checked_add(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r) || r > kMaxExactInteger || r < -kMaxExactInteger) throw_beyond_exact(what);
  return r;
}

inline constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace memfit
