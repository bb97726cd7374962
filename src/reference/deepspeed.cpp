// DeepSpeed's model-state estimators (deepspeedai/DeepSpeed@edaa7221267243c7be7fb49c5d5f5c4fb97b4641):
//  * estimate_zero2_model_states_mem_needs, deepspeed/runtime/zero/stage_1_and_2.py (formula last
//    changed in f4cb866c, Jun 2024: 2 bytes of 16-bit params + 18/N of the rest);
//  * estimate_zero3_model_states_mem_needs, deepspeed/runtime/zero/stage3.py (unchanged since
//    0c1802cc, 2021, up to formatting).
// Model states only: activations are 0. Python's arithmetic is reproduced operation by operation:
// int * int is exact, a / b is the correctly rounded double (IEEE division of two integers that
// doubles hold exactly, which the 2^53 checks guarantee), int() truncates.
#include <algorithm>

#include "common/units.h"
#include "reference/detail.h"

namespace memfit::reference {

using detail::real;

namespace {

constexpr const char* kZero2Citation =
    "deepspeedai/DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py@edaa7221 "
    "estimate_zero2_model_states_mem_needs";
constexpr const char* kZero3Citation =
    "deepspeedai/DeepSpeed deepspeed/runtime/zero/stage3.py@edaa7221 "
    "estimate_zero3_model_states_mem_needs";

// Python's int * int, exact, then converted to float by the multiplication that follows it.
double int_product(std::int64_t a, std::int64_t b) { return real(checked_mul(a, b, "cpu bytes")); }

std::int64_t total_gpus(const ReferenceInputs& in) {
  detail::require_at_least(in.gpus_per_node, 1, "gpus_per_node");
  detail::require_at_least(in.nodes, 1, "nodes");
  return checked_mul(in.gpus_per_node, in.nodes, "gpus");
}

void check_params(const TransformerShape& shape, const ReferenceInputs& in) {
  detail::require_at_least(shape.total_params, 1, "total_params");
  if (!(in.additional_buffer_factor > 0 && in.additional_buffer_factor < 1e6)) {
    throw Error(ErrorCode::kInvalidValue, "additional_buffer_factor",
                "additional_buffer_factor must be in (0, 1e6), got " +
                    std::to_string(in.additional_buffer_factor));
  }
}

// int(k * total_params / total_gpus): a share partitioned over all GPUs.
std::int64_t partitioned(std::int64_t k, std::int64_t params, std::int64_t gpus) {
  const double share = real(checked_mul(k, params, "partitioned bytes")) / real(gpus);
  return detail::truncate_bytes(share, "partitioned bytes");
}

// Python's `params * max(int_factor, float_factor)`: max keeps the int unless the float is
// greater; int * int stays exact, int * float converts the int first.
double times_python_max(std::int64_t params, std::int64_t int_factor, double float_factor) {
  if (float_factor > real(int_factor)) return real(params) * float_factor;
  return int_product(params, int_factor);
}

// gpu_mem is the sum of the terms; cpu_mem is truncated by int().
ReferenceResult finish(ReferenceResult r, double cpu_mem) {
  throw_if_beyond_exact();  // a product above past 2^53 (units.h)
  r.cpu_bytes = detail::truncate_bytes(cpu_mem, "cpu bytes");
  for (const Term& term : r.terms) r.model_states_bytes += term.bytes;
  r.total_bytes = r.model_states_bytes;
  return r;
}

}  // namespace

ReferenceResult deepspeed_zero2(const TransformerShape& shape, const ReferenceInputs& in) {
  check_params(shape, in);
  const std::int64_t gpus = total_gpus(in), params = shape.total_params;
  const double buffer = in.additional_buffer_factor;
  ReferenceResult r{"deepspeed_zero2", kZero2Citation, 0, 0, 0, 0, {}};
  r.terms.push_back({"params_16bit", checked_mul(2, params, "params bytes")});
  if (in.cpu_offload) {
    // gpu_mem = 2 * total_params;
    // cpu_mem = total_params * max(4 * total_gpus, 16) * additional_buffer_factor.
    const std::int64_t per_param = std::max<std::int64_t>(checked_mul(4, gpus, "gpus"), 16);
    return finish(std::move(r), int_product(params, per_param) * buffer);
  }
  // gpu_mem = 2 * total_params + int(18 * total_params / total_gpus): 16-bit and fp32 grads, fp32
  // params and Adam m, v partitioned; cpu_mem = total_params * 4 * num_gpus_per_node * factor.
  r.terms.push_back({"partitioned_grads_and_optimizer", partitioned(18, params, gpus)});
  return finish(std::move(r), int_product(params, checked_mul(4, in.gpus_per_node, "gpus")) * buffer);
}

ReferenceResult deepspeed_zero3(const TransformerShape& shape, const ReferenceInputs& in) {
  check_params(shape, in);
  detail::require_at_least(shape.largest_layer_params, 0, "largest_layer_params");
  if (in.cpu_offload_params && !in.cpu_offload) {
    // The source's table (estimate_zero3_model_states_mem_needs_all_cold) skips this
    // combination; its formula would ignore the flag.
    throw Error(ErrorCode::kUnsupported, "cpu_offload_params",
                "the zero3 estimator covers cpu_offload_params only together with cpu_offload");
  }
  const std::int64_t gpus = total_gpus(in), params = shape.total_params;
  const std::int64_t largest = shape.largest_layer_params;
  const std::int64_t four_per_node = checked_mul(4, in.gpus_per_node, "gpus");
  const double buffer = in.additional_buffer_factor, gpus_factor = 1.0 / real(in.nodes);
  ReferenceResult r{"deepspeed_zero3", kZero3Citation, 0, 0, 0, 0, {}};
  // largest_layer_memory = 4 * largest_layer_params, on the GPU in every case.
  r.terms.push_back({"largest_layer", checked_mul(4, largest, "largest layer bytes")});
  if (!in.cpu_offload) {
    // gpu_mem += int(18 * total_params / total_gpus); cpu_mem = (largest_layer_params if
    // zero_init else total_params) * 4 * num_gpus_per_node * factor.
    r.terms.push_back({"partitioned_states", partitioned(18, params, gpus)});
    return finish(std::move(r), int_product(in.zero_init ? largest : params, four_per_node) * buffer);
  }
  // Optimizer offloaded: gpu_mem += int(2 * total_params / total_gpus) unless the params are
  // offloaded too; cpu_mem = total_params * k * gpus_factor * factor with zero.Init, else
  // total_params * max(4 * num_gpus_per_node, k * gpus_factor) * factor; k = 18 with the params
  // offloaded, else 16; gpus_factor = 1 / num_nodes.
  const std::int64_t k = in.cpu_offload_params ? 18 : 16;
  if (!in.cpu_offload_params) r.terms.push_back({"partitioned_params_16bit", partitioned(2, params, gpus)});
  const double per_host = in.zero_init ? int_product(params, k) * gpus_factor
                                       : times_python_max(params, four_per_node, real(k) * gpus_factor);
  return finish(std::move(r), per_host * buffer);
}

}  // namespace memfit::reference
