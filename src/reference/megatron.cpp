// Two accountings that share Megatron-LM's theoretical_memory_usage.py:
//  * megatron: the upstream file as of NVIDIA/Megatron-LM@2bfe9beaae42f8116c6b95825f7843830e396057
//    (3 Apr 2024; the file is byte-identical at tags core_r0.8.0 and core_r0.9.0);
//  * fujii: the authors' fork of that file behind Fujii et al. 2024 (arXiv:2411.06465),
//    okoge-kaz/Megatron-LM@55d369bf9a0b1bbbe7d105598c039b6c59bc095e, whose unit test
//    tools/memory_estimate/tests_memory_consumption_estimator.py it reproduces exactly.
// Both assume bf16 weights and activations and Adam. The sources compute in Python floats; the
// figures here are those doubles rounded to the nearest byte.
#include "common/units.h"
#include "reference/detail.h"

namespace memfit::reference {

using detail::real;
using detail::RealTerm;

namespace {

constexpr const char* kMegatronCitation =
    "NVIDIA/Megatron-LM megatron/training/theoretical_memory_usage.py@2bfe9bea "
    "(= core_r0.8.0, core_r0.9.0)";
constexpr const char* kFujiiCitation =
    "Fujii et al. 2024, arXiv:2411.06465; okoge-kaz/Megatron-LM "
    "megatron/training/theoretical_memory_usage.py@55d369bf";

// The bracket of num_parameters_in_transformer_layers without its norm terms:
// attention (1 + k/a) * (a*d_h/h) plus MLP (f/h) * experts * (3/2 if SwiGLU else 1).
double projection_bracket(const TransformerShape& shape) {
  const double h = real(shape.hidden), a = real(shape.heads);
  const double query_to_hidden = real(shape.head_dim) * a / h;
  const double experts = shape.experts > 0 ? real(shape.experts) : 1.0;
  const double gated = shape.swiglu ? 1.5 : 1.0;
  return (1.0 + real(shape.kv_heads) / a) * query_to_hidden + real(shape.ffn) / h * experts * gated;
}

double two_l_h_squared(const TransformerShape& shape) {
  return 2.0 * real(shape.layers) * real(shape.hidden) * real(shape.hidden);
}

// Weights, gradients and optimizer state of `params` parameters: 2 bytes bf16 weight, 4 or 2
// bytes gradient, 12 bytes fp32 master + Adam m + v, sharded over `optimizer_shards` ranks.
std::int64_t add_model_states(ReferenceResult& r, double params, bool grad_fp32, double optimizer_shards) {
  const RealTerm grads = grad_fp32 ? RealTerm{"grads_fp32", 4.0 * params} : RealTerm{"grads_bf16", 2.0 * params};
  return detail::append_terms(r, {{"weights_bf16", 2.0 * params},
                                  grads,
                                  {"optimizer_fp32", 12.0 / optimizer_shards * params}});
}

ReferenceResult finish(ReferenceResult r, std::int64_t states, std::int64_t activations) {
  r.model_states_bytes = states;
  r.activations_bytes = activations;
  r.total_bytes = checked_add(states, activations, "total bytes");
  throw_if_beyond_exact();  // units.h
  return r;
}

}  // namespace

// ---- megatron (upstream, 2024) ----

double megatron_shard_params(const TransformerShape& shape, const ReferenceInputs& in) {
  detail::check_full_shape(shape, in);
  const double h = real(shape.hidden), l = real(shape.layers);
  // num_parameters_in_transformer_layers: 2/h counts two LayerNorms of weight + bias (4h per
  // layer), 1/(L h) the final LayerNorm (2h), whatever the norm kind.
  const double transformer = two_l_h_squared(shape) * (projection_bracket(shape) + 2.0 / h + 1.0 / (l * h));
  const double embedding = h * real(shape.vocab);
  // Most-loaded shard: (L/p layers + embedding) / t, plus the untied output layer when p == 1.
  double shard = (transformer / real(in.p) + embedding) / real(in.t);
  if (!shape.tied_embeddings && in.p == 1) shard += embedding / real(in.t);
  return shard;
}

ReferenceResult megatron(const TransformerShape& shape, const ReferenceInputs& in) {
  const double shard = megatron_shard_params(shape, in);
  ReferenceResult r{"megatron", kMegatronCitation, 0, 0, 0, 0, {}};
  // num_bytes_per_parameter: 18, or 6 + 12/d with the distributed optimizer (d excludes CP).
  // Gradients are fp32 whatever grad_fp32 says: the 2024 file hard-codes it.
  const std::int64_t states = add_model_states(r, shard, true, in.distributed_optimizer ? real(in.d) : 1.0);

  // compute_activation_memory: Korthikanti's 34 with the MLP's 16 generalised to 4f/h, for the
  // first stage (L layers' worth under 1F1B); the source prints it only with --sequence-parallel
  // and --recompute-granularity selective, which it assumes; CP is not modelled.
  const double h = real(shape.hidden), sbh = real(in.s) * real(in.b) * h;
  const double t = real(in.t), p = real(in.p), factor = detail::megatron_schedule_factor(in);
  const double per_layer = sbh * (18.0 + 4.0 * (real(shape.ffn) / h));
  std::vector<RealTerm> terms = {
      {"transformer_layers", per_layer * real(shape.layers) * factor / t},
      {"input_ids_int64", 8.0 * real(in.s) * real(in.b) * p * factor / t},  // p micro-batches in flight
      {"embedding_dropout", sbh * p * factor / t},                          // 1-byte mask
  };
  if (in.p == 1) {  // inputs to the output layer and fp32 cross-entropy, 4sbh (1 + v/h)
    terms.push_back({"final_norm_and_fp32_logits", sbh * 4.0 * (1.0 + real(shape.vocab) / h) / t});
  }
  const std::int64_t activations = detail::append_terms(r, terms);
  return finish(std::move(r), states, activations);
}

// ---- fujii (the authors' fork, Dec 2024) ----

double fujii_params_per_gpu(const TransformerShape& shape, const ReferenceInputs& in) {
  detail::check_full_shape(shape, in);
  const double h = real(shape.hidden);
  // The authors' change (Megatron-LM PR #1345): RMSNorm weights only, 1/h (2h per layer), and the
  // final norm h outside the bracket.
  const double transformer = two_l_h_squared(shape) * (projection_bracket(shape) + 1.0 / h) + h;
  const double embedding = h * real(shape.vocab);
  // First stage: (L/p layers without the final norm + input embedding) / t; when p == 1 and the
  // embeddings are untied, also the output layer / t and the final norm (as coded, both under
  // that one condition).
  double params = ((transformer - h) / real(in.p) + embedding) / real(in.t);
  if (!shape.tied_embeddings && in.p == 1) params += embedding / real(in.t) + h;
  return params;
}

ReferenceResult fujii(const TransformerShape& shape, const ReferenceInputs& in) {
  detail::require_at_least(in.c, 1, "c");
  detail::require_divides(in.c, "c", in.s, "s");
  const double params = fujii_params_per_gpu(shape, in);
  ReferenceResult r{"fujii", kFujiiCitation, 0, 0, 0, 0, {}};
  // B = 2 + g + 12/(d c) with the distributed optimizer (sharded over DP x CP), else 2 + g + 12.
  const double optimizer_shards = in.distributed_optimizer ? real(in.d) * real(in.c) : 1.0;
  const std::int64_t states = add_model_states(r, params, in.grad_fp32, optimizer_shards);

  // compute_activation_memory of the fork: FlashAttention, no dropout, no recomputation, SP on;
  // s -> s/c. Per layer (s/c) b h (12 + 4k/a + 8f/h): norm inputs 2+2, QKV input 2, Q 2, K and V
  // 2k/a each, attention output 2, MLP input 2, four SwiGLU tensors of width f (2 bytes each).
  const double h = real(shape.hidden), sbh = real(in.s) / real(in.c) * real(in.b) * h;
  const double t = real(in.t), p = real(in.p);
  const double kv_over_heads = real(shape.kv_heads) / real(shape.heads);
  const double per_layer = sbh * (12.0 + 4.0 * kv_over_heads + 8.0 * real(shape.ffn) / h);
  const double factor = detail::megatron_schedule_factor(in);  // the authors' search passes None for both
  std::vector<RealTerm> terms = {
      {"transformer_layers", per_layer * real(shape.layers) / t * factor},
      // "input to embedding (pp_size microbatches in flight)", commented "8 bytes (int64)" but
      // multiplied by h: kept as coded.
      {"input_to_embedding", 8.0 * sbh * p / t * factor},
  };
  if (in.p == 1) {  // final-norm output and fp32 logits, as in megatron
    terms.push_back({"final_norm_and_fp32_logits", 4.0 * sbh * (1.0 + real(shape.vocab) / h) / t});
  }
  const std::int64_t activations = detail::append_terms(r, terms);
  return finish(std::move(r), states, activations);
}

bool fujii_trainable(std::int64_t total_bytes, double gpu_memory_nominal_gb) {
  // optimal_setting_search.py@14cea400 is_trainable: total <= 0.8 * G, total in GiB.
  return to_gib(total_bytes) <= 0.8 * gpu_memory_nominal_gb;
}

}  // namespace memfit::reference
