// Reference accountings: closed-form memory formulas from the literature and from framework
// sources, kept as named yardsticks to set beside memfit's own estimate. Each reproduces its
// source exactly (tests/unit/reference/reference_test.cpp); none of them is memfit's model.
//
//   korthikanti      Korthikanti et al. 2022, arXiv:2205.05198, Table 2 and Eq. 5-6: activations
//                    only; reads s b t p vpp sequence_parallel recompute
//   megatron         NVIDIA/Megatron-LM theoretical_memory_usage.py@2bfe9bea (2024): reads s b t
//                    p d vpp microbatches distributed_optimizer; assumes SP + selective
//                    recomputation and fp32 gradients, ignores c
//   fujii            Fujii et al. 2024, arXiv:2411.06465, as coded by the authors
//                    (okoge-kaz/Megatron-LM@55d369bf): reads s b t p c d vpp microbatches
//                    distributed_optimizer grad_fp32; assumes SP, FlashAttention, no recompute
//   deepspeed_zero2  DeepSpeed estimate_zero2_model_states_mem_needs: model states and host
//                    memory only; reads gpus_per_node nodes cpu_offload additional_buffer_factor
//   deepspeed_zero3  DeepSpeed estimate_zero3_model_states_mem_needs: as zero2, plus
//                    cpu_offload_params and zero_init
//
// Conventions. Bytes are std::int64_t; GiB = 2^30. Where a source computes in floating point,
// each reported figure is the source's double rounded to the nearest byte, so the terms of a
// breakdown may differ from their total by up to one byte per term; where a source truncates
// with Python's int(), so does this code, and then the terms add up exactly. Bad inputs throw
// memfit::Error (invalid_value; out_of_range past 2^53; unsupported for a setup the source
// does not cover) whose path() is the field's name in TransformerShape or ReferenceInputs
// ("t", "heads", ...): the api layer maps it onto its request.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/architecture.h"
#include "model/tensor_inventory.h"

namespace memfit::reference {

/// The few numbers the reference formulas read from a model.
struct TransformerShape {
  std::int64_t hidden = 0;     // h
  std::int64_t ffn = 0;        // f: MLP width (one branch of a gated MLP; an expert's for MoE)
  std::int64_t layers = 0;     // L (encoder + decoder layers for encoder-decoder models)
  std::int64_t heads = 0;      // a
  std::int64_t kv_heads = 0;   // k: query groups (== a for MHA)
  std::int64_t head_dim = 0;   // d_h (kv_channels)
  std::int64_t vocab = 0;      // v
  bool swiglu = false;         // gated MLP: Megatron's --swiglu (3/2 MLP parameters)
  bool tied_embeddings = false;
  NormKind norm = NormKind::kRmsNorm;  // informational: the 2024 sources hard-code their norm terms
  std::int64_t experts = 0;    // routed experts; 0: dense (Megatron's num_experts None)
  // DeepSpeed's estimators take counts measured on a live model (model_to_params).
  std::int64_t total_params = 0;          // unique parameters
  std::int64_t largest_layer_params = 0;  // most parameters held directly by one module
};

/// Fills the shape from an architecture, counting parameters with its tensor inventory.
TransformerShape shape_of(const ModelArchitecture& arch);
TransformerShape shape_of(const ModelArchitecture& arch, const TensorInventory& inventory);

enum class Recompute { kNone, kSelective, kFull };

/// The run being accounted. Each accounting reads only the fields its source has.
struct ReferenceInputs {
  std::int64_t s = 0;             // sequence length
  std::int64_t b = 1;             // micro-batch size
  std::int64_t t = 1;             // tensor parallel
  std::int64_t p = 1;             // pipeline parallel
  std::int64_t c = 1;             // context parallel
  std::int64_t d = 1;             // data parallel, excluding c (Megatron's data_parallel_size)
  std::int64_t vpp = 1;           // virtual pipeline stages; 1: not interleaved (Megatron's None)
  std::int64_t microbatches = 0;  // micro-batches per step; 0: unknown (Megatron's None)
  bool sequence_parallel = false;
  Recompute recompute = Recompute::kNone;
  bool distributed_optimizer = false;
  bool grad_fp32 = true;          // fp32 gradient accumulation (Fujii's 2 + g)
  std::int64_t gpus_per_node = 1;
  std::int64_t nodes = 1;
  bool cpu_offload = false;         // ZeRO offload_optimizer=cpu
  bool cpu_offload_params = false;  // ZeRO-3 offload_param=cpu
  bool zero_init = true;            // ZeRO-3 zero.Init
  double additional_buffer_factor = 1.5;  // DeepSpeed's default
};

struct Term {
  std::string label;
  std::int64_t bytes = 0;
};

struct ReferenceResult {
  std::string name;      // the accounting's id, e.g. "megatron"
  std::string citation;  // source and commit
  std::int64_t model_states_bytes = 0;  // weights + gradients + optimizer state, per GPU
  std::int64_t activations_bytes = 0;   // per GPU (first pipeline stage)
  std::int64_t total_bytes = 0;         // model states + activations
  std::int64_t cpu_bytes = 0;           // host memory (DeepSpeed only)
  std::vector<Term> terms;              // GPU breakdown, model states first
};

ReferenceResult korthikanti(const TransformerShape& shape, const ReferenceInputs& in);
ReferenceResult megatron(const TransformerShape& shape, const ReferenceInputs& in);
ReferenceResult fujii(const TransformerShape& shape, const ReferenceInputs& in);
ReferenceResult deepspeed_zero2(const TransformerShape& shape, const ReferenceInputs& in);
ReferenceResult deepspeed_zero3(const TransformerShape& shape, const ReferenceInputs& in);

enum class Accounting { kKorthikanti, kMegatron, kFujii, kDeepSpeedZero2, kDeepSpeedZero3 };
/// "korthikanti", "megatron", "fujii", "deepspeed_zero2", "deepspeed_zero3".
std::string_view accounting_name(Accounting accounting);
/// The inverse of accounting_name; invalid_value at "accounting" for any other name.
Accounting parse_accounting(std::string_view name);
ReferenceResult compute(Accounting accounting, const TransformerShape& shape, const ReferenceInputs& in);

// Intermediate quantities of the sources, for tests and explanations.
/// Korthikanti Table 2: activation bytes of one transformer layer for the inputs' t, SP, recompute.
double korthikanti_layer_bytes(const TransformerShape& shape, const ReferenceInputs& in);
/// Megatron: parameters on the most-loaded model shard.
double megatron_shard_params(const TransformerShape& shape, const ReferenceInputs& in);
/// Fujii: parameters held by one GPU of the first pipeline stage.
double fujii_params_per_gpu(const TransformerShape& shape, const ReferenceInputs& in);
/// Fujii's 80% rule: the estimate in GiB is at most 0.8 x the GPU's nominal size ("80" for an
/// 80 GB part; the authors compare GiB with the marketing number, and so does this).
bool fujii_trainable(std::int64_t total_bytes, double gpu_memory_nominal_gb);

}  // namespace memfit::reference
