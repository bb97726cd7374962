// Shared helpers of the reference accountings (not part of the public API): input checks, the
// pipeline-schedule factors and conversion of a source's double to bytes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "reference/reference.h"

namespace memfit::reference::detail {

inline double real(std::int64_t v) { return static_cast<double>(v); }

/// invalid_value at `field`: "<field> <rule>, got <value>".
[[noreturn]] void invalid(const char* field, const std::string& rule, std::int64_t value);
void require_at_least(std::int64_t value, std::int64_t least, const char* field);
void require_divides(std::int64_t divisor, const char* divisor_field, std::int64_t n, const char* n_field);

/// Checks shared by the Megatron-style accountings: sizes, t | heads, p | layers, vpp.
void check_parallel_shape(const TransformerShape& shape, const ReferenceInputs& in);
/// Adds the GQA/MLP fields that the parameter counts of megatron and fujii read.
void check_full_shape(const TransformerShape& shape, const ReferenceInputs& in);

/// Interleaved 1F1B holds 1 + (p-1)/(p*vpp) times the activations of 1F1B
/// (Korthikanti et al. 2022 §4.2.3; theoretical_memory_usage.py@2bfe9bea lines 118-131).
double interleave_factor(const ReferenceInputs& in);
/// Megatron's schedule factor: the interleave factor when vpp > 1; else min(1, m/p) when p > 1
/// and the number of micro-batches m is known; else 1 (theoretical_memory_usage.py@2bfe9bea).
double megatron_schedule_factor(const ReferenceInputs& in);

/// A source's floating-point figure rounded to the nearest byte (out_of_range past 2^53).
std::int64_t round_bytes(double bytes, const char* what);
/// Python's int() of a non-negative float: truncation (out_of_range past 2^53).
std::int64_t truncate_bytes(double bytes, const char* what);

struct RealTerm {
  const char* label;
  double bytes;
};
/// Appends the terms, each rounded to the nearest byte, and returns their exact sum rounded.
std::int64_t append_terms(ReferenceResult& r, const std::vector<RealTerm>& terms);

}  // namespace memfit::reference::detail
