// Per-layer saved-tensor bytes (see activations.h). Each term names the tensor that stays alive.
#include "memory/activations.h"

#include <algorithm>

namespace memfit {

LayerActivations layer_activations(const ModelArchitecture& a, const TrainingSetup& t, bool moe,
                                   bool cross_attention, bool base_trains) {
  const std::int64_t h = a.hidden_size;
  const std::int64_t heads = a.attention.num_heads;
  const std::int64_t kvh = a.attention.layout == QkvLayout::kLowRank ? heads : a.attention.num_kv_heads;
  const std::int64_t d = a.attention.layout == QkvLayout::kLowRank
                             ? a.attention.qk_nope_head_dim + a.attention.qk_rope_head_dim
                             : a.attention.head_dim;
  const std::int64_t dv = a.attention.layout == QkvLayout::kLowRank ? a.attention.v_head_dim : d;
  const std::int64_t e = activation_bytes(t.precision);   // element bytes of activations
  const bool amp = is_amp(t.precision);
  const bool lora = t.method == Method::kLora || t.method == Method::kQlora;
  // A linear saves its input only when its weight (or an adapter on it) needs a gradient.
  auto input_saved = [&](bool adapter) { return base_trains || (lora && adapter); };
  auto targeted = [&](const char* role) {
    for (const std::string& r : t.lora_targets) {
      if (r == "all-linear" || r == role) return true;
    }
    return false;
  };
  LayerActivations out;
  std::int64_t s = 0;

  // Norms: RMSNorm (HF) saves an fp32 copy of its input, the normalised pre-weight tensor and
  // rsqrt; LayerNorm saves its input and fp32 mean/rstd. Under AMP the residual stream is fp32.
  const std::int64_t norms = std::max<std::int64_t>(1, a.norms_per_layer);
  const std::int64_t norm_bytes = a.norm == NormKind::kRmsNorm ? (4 * h + (amp ? 4 : e) * h + 4)
                                                               : ((amp ? 4 : e) * h + 8);
  s += norms * norm_bytes;

  // Attention in-projection input (the norm output, one storage shared by q/k/v), and one
  // 16-bit autocast copy per separate projection under AMP.
  const bool any_qkv = targeted("q") || targeted("k") || targeted("v");
  if (input_saved(any_qkv)) {
    const std::int64_t casts = amp && a.attention.layout == QkvLayout::kSeparate ? 3 : 1;
    s += casts * 2 * h * (amp ? 1 : e / 2);
  }
  if (a.attention.layout == QkvLayout::kLowRank) {
    // MLA latents: q_a output (norm input + normalised), kv_a output, both saved by their norms.
    s += (a.attention.q_lora_rank + a.attention.kv_lora_rank) * (4 + 2 * e);
  }
  if (a.attention.qk_norm) s += (4 + e) * (heads * d + kvh * d) + 4 * (heads + kvh);
  // Attention core.
  if (t.attention == AttentionKernel::kEager) {
    s += e * (heads * d + 2 * heads * dv);           // q, and k/v expanded to every head
    out.saved_per_token_per_position = heads * (e + 4);  // scores (compute dtype) + fp32 softmax
  } else {
    s += e * (heads * d + kvh * d + kvh * dv) + 4 * heads;  // q, k, v + fp32 logsumexp
  }
  s += e * heads * dv;                                // attention output = o_proj input
  if (cross_attention) {                              // T5 decoder: q, encoder k/v, output, norm
    s += e * (3 * heads * d + heads * d) + norm_bytes + 2 * h;
  }

  // MLP.
  const std::int64_t f = a.mlp.intermediate_size;
  auto mlp_bytes = [&](std::int64_t width) {
    const bool gate_up = targeted("gate") || targeted("up");
    std::int64_t m = 0;
    if (input_saved(gate_up)) m += (amp && a.mlp.gated ? 2 : 1) * 2 * h * (amp ? 1 : e / 2);
    m += a.mlp.gated ? 3 * e * width : e * width;     // gate out, act out, up out | act input
    if (input_saved(targeted("down"))) m += e * width; // down_proj input (act·up product)
    else if (!a.mlp.gated) m += e * width;             // activation output still saved by its op
    return m;
  };
  if (moe) {
    const std::int64_t k = a.moe.top_k;
    s += 8 * a.moe.num_experts;                        // router logits and fp32 probabilities
    s += k * (mlp_bytes(a.moe.expert_intermediate_size) + e * h);  // per routed copy of the token
    if (a.moe.shared_intermediate_size > 0) s += mlp_bytes(a.moe.shared_intermediate_size);
  } else {
    s += mlp_bytes(f);
  }
  if (lora) {
    // Each adapted linear keeps its A output (r values) for B's gradient; dropout > 0 keeps a
    // dropped copy of the input and its mask.
    std::int64_t adapted_inputs = 0;
    for (const std::string& r : t.lora_targets) {
      if (r == "all-linear") adapted_inputs = 7;
    }
    if (adapted_inputs == 0) adapted_inputs = static_cast<std::int64_t>(t.lora_targets.size());
    s += adapted_inputs * 4 * t.lora_rank;
    if (t.lora_dropout > 0) s += adapted_inputs * (e * h + h);
  }
  out.saved_per_token = s;
  out.checkpoint_per_token = (amp ? 4 : e) * h;
  out.residual_grad_per_token = (amp ? 4 : e) * h;
  // Largest in-layer gradient set: in the MLP backward, grads of the down input, act out, up and
  // gate (4 x width) plus the partial grads of the MLP input.
  const std::int64_t width = moe ? a.moe.top_k * a.moe.expert_intermediate_size : f;
  out.backward_transient_per_token = e * (4 * width + 2 * h);
  return out;
}

}  // namespace memfit
