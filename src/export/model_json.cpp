// JSON views of the architecture and the tensor inventory.
#include "export/model_json.h"

namespace memfit {

namespace {

const char* kind_name(ArchKind k) {
  switch (k) {
    case ArchKind::kDecoder: return "decoder";
    case ArchKind::kEncoderDecoder: return "encoder_decoder";
    case ArchKind::kEncoder: return "encoder";
  }
  return "decoder";
}

const char* position_name(PositionKind p) {
  switch (p) {
    case PositionKind::kLearned: return "learned";
    case PositionKind::kRotary: return "rotary";
    case PositionKind::kAlibi: return "alibi";
    case PositionKind::kRelativeBias: return "relative_bias";
  }
  return "rotary";
}

const char* stack_name(Stack s) {
  switch (s) {
    case Stack::kNone: return "decoder";
    case Stack::kEncoder: return "encoder";
    case Stack::kDecoder: return "decoder";
  }
  return "decoder";
}

std::string attention_kind(const AttentionSpec& at) {
  if (at.layout == QkvLayout::kLowRank) return "mla";
  if (at.num_kv_heads == at.num_heads) return "mha";
  if (at.num_kv_heads == 1) return "mqa";
  return "gqa";
}

}  // namespace

Json architecture_to_json(const ModelArchitecture& a) {
  Json j;
  j["model_type"] = a.model_type;
  j["name"] = a.name;
  j["kind"] = kind_name(a.kind);
  j["vocab_size"] = a.vocab_size;
  j["hidden_size"] = a.hidden_size;
  j["num_layers"] = a.num_layers;
  if (a.kind == ArchKind::kEncoderDecoder) j["num_encoder_layers"] = a.num_encoder_layers;
  j["num_attention_heads"] = a.attention.num_heads;
  j["num_key_value_heads"] = a.attention.num_kv_heads;
  j["head_dim"] = a.attention.head_dim;
  j["attention"] = attention_kind(a.attention);
  j["qkv_bias"] = a.attention.qkv_bias;
  j["qk_norm"] = a.attention.qk_norm;
  j["sliding_window"] = a.attention.sliding_window;
  j["intermediate_size"] = a.mlp.intermediate_size;
  j["mlp"] = a.mlp.gated ? "gated" : "plain";
  j["activation"] = a.mlp.activation;
  j["norm"] = a.norm == NormKind::kRmsNorm ? "rmsnorm" : "layernorm";
  j["position"] = position_name(a.position);
  j["rotary_dim"] = a.attention.rotary_dim;
  j["parallel_block"] = a.parallel_block;
  j["tie_word_embeddings"] = a.tie_word_embeddings;
  j["max_position_embeddings"] = a.max_position_embeddings;
  j["torch_dtype"] = a.torch_dtype;
  if (a.attention.layout == QkvLayout::kLowRank) {
    j["mla"] = {{"q_lora_rank", a.attention.q_lora_rank},
                {"kv_lora_rank", a.attention.kv_lora_rank},
                {"qk_nope_head_dim", a.attention.qk_nope_head_dim},
                {"qk_rope_head_dim", a.attention.qk_rope_head_dim},
                {"v_head_dim", a.attention.v_head_dim}};
  } else {
    j["mla"] = nullptr;
  }
  if (a.is_moe()) {
    std::int64_t moe_layers = 0;
    for (std::int64_t i = 0; i < a.num_layers; ++i) moe_layers += a.layer_is_moe(i) ? 1 : 0;
    j["moe"] = {{"num_experts", a.moe.num_experts},
                {"top_k", a.moe.top_k},
                {"expert_intermediate_size", a.moe.expert_intermediate_size},
                {"num_shared_experts", a.moe.num_shared_experts},
                {"shared_intermediate_size", a.moe.shared_intermediate_size},
                {"moe_layers", moe_layers},
                {"dense_layers", a.num_layers - moe_layers}};
  } else {
    j["moe"] = nullptr;
  }
  return j;
}

Json parameters_to_json(const TensorInventory& inv) {
  Json j;
  j["total_params"] = inv.total_params;
  j["trainable_params"] = inv.total_params;  // full fine-tuning; methods narrow this in estimates
  j["active_params_per_token"] = inv.active_params_per_token;
  Json by_kind = Json::object();
  for (int k = 0; k < kModuleKindCount; ++k) {
    by_kind[module_kind_name(static_cast<ModuleKind>(k))] = inv.params_by_kind[k];
  }
  j["params_by_kind"] = by_kind;
  j["tensor_count"] = inv.tensor_count;
  Json groups = Json::array();
  for (const LayerGroup& g : inv.groups) {
    groups.push_back({{"stack", stack_name(g.stack)},
                      {"first_layer", g.first_layer},
                      {"layer_count", g.layer_count},
                      {"moe", g.moe},
                      {"params_per_layer", g.params_per_layer()}});
  }
  j["layer_groups"] = groups;
  return j;
}

Json tensors_to_json(const TensorInventory& inv) {
  Json out = Json::array();
  auto add = [&](const TensorSpec& t, const LayerGroup* g) {
    Json e = {{"name", t.name},
              {"shape", t.shape},
              {"kind", module_kind_name(t.kind)},
              {"role", t.role},
              {"tp_split", tp_split_name(t.tp_split)},
              {"copies", t.copies},
              {"tied", t.tied},
              {"numel", t.numel()}};
    if (g) {
      e["stack"] = stack_name(g->stack);
      e["first_layer"] = g->first_layer;
      e["layer_count"] = g->layer_count;
    }
    out.push_back(std::move(e));
  };
  for (const TensorSpec& t : inv.globals) add(t, nullptr);
  for (const LayerGroup& g : inv.groups) {
    for (const TensorSpec& t : g.tensors) add(t, &g);
  }
  return out;
}

}  // namespace memfit
