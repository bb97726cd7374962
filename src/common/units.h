// Units and overflow-checked (saturating, flagged) integer arithmetic. Bytes and counts are std::int64_t; GiB = 2^30.
// Every quantity that reaches JSON must stay below 2^53 so that JavaScript reads it exactly.
#pragma once
#include <cstdint>
#include <optional>
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

// Overflow is data, not an exception: a checked product or sum past [-2^53, 2^53] saturates at
// the bound and flags the calling thread, so the engines throw nothing; the api (or whoever asks
// a question the bound can make unanswerable) reads the flag after the call.

/// Flags that the quantity named `what` left [-2^53, 2^53]; the first since the flag was last
/// taken is kept. Out of line: the checks stay a few instructions where they are inlined.
void note_beyond_exact(const char* what) noexcept;
/// The quantity that first left the bound since the last call (null: none), and clears the flag.
const char* take_beyond_exact() noexcept;
/// The out_of_range Error of a quantity past 2^53 ("<what> exceeds 2^53"), for the api.
[[noreturn]] void throw_beyond_exact(const char* what);
/// Throws that Error for the flagged quantity, if any: the api's check after an engine call.
void throw_if_beyond_exact();

/// a * b; past [-2^53, 2^53] the bound with the product's sign, flagged under `what`.
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, const char* what) noexcept {
  const std::uint64_t ua = a < 0 ? 0 - static_cast<std::uint64_t>(a) : static_cast<std::uint64_t>(a);
  const std::uint64_t ub = b < 0 ? 0 - static_cast<std::uint64_t>(b) : static_cast<std::uint64_t>(b);
  // Factors below 2^31 cannot overflow 64 bits; larger ones are compared by a division (no
  // 128-bit product, which 32-bit WebAssembly makes a library call).
  constexpr auto kLimit = static_cast<std::uint64_t>(kMaxExactInteger);
  const bool negative = (a < 0) != (b < 0);
  if ((((ua | ub) >> 31) != 0 && ua != 0 && ub > kLimit / ua) || ua * ub > kLimit) {
    note_beyond_exact(what);
    return negative ? -kMaxExactInteger : kMaxExactInteger;
  }
  const auto r = static_cast<std::int64_t>(ua * ub);
  return negative ? -r : r;
}

/// a + b, saturating and flagged as checked_mul.
inline std::int64_t checked_add(std::int64_t a, std::int64_t b, const char* what) noexcept {
  std::int64_t r = 0;
  const bool wrapped = __builtin_add_overflow(a, b, &r);
  if (wrapped || r > kMaxExactInteger || r < -kMaxExactInteger) {
    note_beyond_exact(what);
    return (wrapped ? a < 0 : r < 0) ? -kMaxExactInteger : kMaxExactInteger;
  }
  return r;
}

/// f() unless a quantity in it left the 2^53 bound (nullopt: a question such as "does it fit"
/// then has its answer, out of memory). A flag raised before the call stays for the caller.
template <typename F>
auto unless_beyond_exact(F&& f) -> std::optional<decltype(f())> {
  const char* earlier = take_beyond_exact();
  std::optional<decltype(f())> r(f());
  const bool beyond = take_beyond_exact() != nullptr;
  if (earlier) note_beyond_exact(earlier);
  if (beyond) r.reset();
  return r;
}

inline constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace memfit
