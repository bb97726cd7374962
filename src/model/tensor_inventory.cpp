// Builds the tensor inventory from a ModelArchitecture, following each family's module layout in
// transformers (modeling_<family>.py; remote code for qwen-1 and DeepSeek). Counts are exact
// against the published parameter totals (tests/unit/model/parameter_count_test.cpp).
#include "model/tensor_inventory.h"

#include <algorithm>

#include "common/units.h"

namespace memfit {

const char* module_kind_name(ModuleKind kind) {
  switch (kind) {
    case ModuleKind::kEmbedding: return "embedding";
    case ModuleKind::kPositionEmbedding: return "position_embedding";
    case ModuleKind::kAttention: return "attention";
    case ModuleKind::kMlp: return "mlp";
    case ModuleKind::kExpert: return "expert";
    case ModuleKind::kSharedExpert: return "shared_expert";
    case ModuleKind::kRouter: return "router";
    case ModuleKind::kNorm: return "norm";
    case ModuleKind::kLmHead: return "lm_head";
    case ModuleKind::kOther: return "other";
  }
  return "other";
}

const char* tp_split_name(TpSplit split) {
  switch (split) {
    case TpSplit::kColumn: return "column";
    case TpSplit::kRow: return "row";
    case TpSplit::kVocab: return "vocab";
    case TpSplit::kReplicated: return "replicated";
    case TpSplit::kExpert: return "expert";
  }
  return "replicated";
}

std::int64_t TensorSpec::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n = checked_mul(n, d, "tensor size");
  return n;
}

std::int64_t TensorSpec::total_numel() const { return checked_mul(numel(), copies, "tensor size"); }

std::int64_t LayerGroup::params_per_layer() const {
  std::int64_t n = 0;
  for (const TensorSpec& t : tensors) {
    if (!t.tied) n = checked_add(n, t.total_numel(), "parameter count");
  }
  return n;
}

std::string expand_name(const std::string& pattern, std::int64_t layer, std::int64_t expert) {
  std::string out;
  out.reserve(pattern.size() + 8);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern.compare(i, 3, "{i}") == 0) {
      out += std::to_string(layer);
      i += 2;
    } else if (pattern.compare(i, 3, "{e}") == 0) {
      out += std::to_string(expert);
      i += 2;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

namespace {

/// Module paths of one family, as transformers names them.
struct Naming {
  std::string embed, position, final_norm, lm_head = "lm_head";
  std::string layer;                       // prefix of layer i, with "{i}"
  std::vector<std::string> norms;          // per-layer norms, in order
  std::string attn;                        // attention module, relative to the layer
  std::string q, k, v, o, qkv;             // projections, relative to attn
  std::string mlp;                         // MLP module, relative to the layer
  std::string gate, up, down, gate_up;     // for non-gated MLPs: up = fc_in, down = fc_out
  std::string router = "gate", experts = "experts", shared = "shared_expert";
  std::string q_norm = "q_norm", k_norm = "k_norm";
};

Naming naming_for(const std::string& model_type) {
  Naming n;
  // The llama layout is the default: llama, mistral, mixtral, qwen2(_moe), qwen3(_moe), gemma*,
  // deepseek, and unknown llama-like types.
  n.embed = "model.embed_tokens";
  n.final_norm = "model.norm";
  n.layer = "model.layers.{i}.";
  n.norms = {"input_layernorm", "post_attention_layernorm"};
  n.attn = "self_attn.";
  n.q = "q_proj"; n.k = "k_proj"; n.v = "v_proj"; n.o = "o_proj";
  n.mlp = "mlp.";
  n.gate = "gate_proj"; n.up = "up_proj"; n.down = "down_proj";
  if (model_type == "gpt2") {
    n.embed = "transformer.wte"; n.position = "transformer.wpe"; n.final_norm = "transformer.ln_f";
    n.layer = "transformer.h.{i}."; n.norms = {"ln_1", "ln_2"};
    n.attn = "attn."; n.qkv = "c_attn"; n.o = "c_proj"; n.up = "c_fc"; n.down = "c_proj";
  } else if (model_type == "opt") {
    n.embed = "model.decoder.embed_tokens"; n.position = "model.decoder.embed_positions";
    n.final_norm = "model.decoder.final_layer_norm"; n.layer = "model.decoder.layers.{i}.";
    n.norms = {"self_attn_layer_norm", "final_layer_norm"}; n.o = "out_proj";
    n.mlp = ""; n.up = "fc1"; n.down = "fc2";
  } else if (model_type == "bloom") {
    n.embed = "transformer.word_embeddings"; n.final_norm = "transformer.ln_f";
    n.layer = "transformer.h.{i}."; n.attn = "self_attention."; n.qkv = "query_key_value";
    n.o = "dense"; n.up = "dense_h_to_4h"; n.down = "dense_4h_to_h";
  } else if (model_type == "gpt_neox") {
    n.embed = "gpt_neox.embed_in"; n.final_norm = "gpt_neox.final_layer_norm";
    n.lm_head = "embed_out"; n.layer = "gpt_neox.layers.{i}."; n.attn = "attention.";
    n.qkv = "query_key_value"; n.o = "dense"; n.up = "dense_h_to_4h"; n.down = "dense_4h_to_h";
  } else if (model_type == "gptj") {
    n.embed = "transformer.wte"; n.final_norm = "transformer.ln_f"; n.layer = "transformer.h.{i}.";
    n.norms = {"ln_1"}; n.attn = "attn."; n.o = "out_proj"; n.up = "fc_in"; n.down = "fc_out";
  } else if (model_type == "gpt_neo") {
    n.embed = "transformer.wte"; n.position = "transformer.wpe"; n.final_norm = "transformer.ln_f";
    n.layer = "transformer.h.{i}."; n.norms = {"ln_1", "ln_2"}; n.attn = "attn.attention.";
    n.o = "out_proj"; n.up = "c_fc"; n.down = "c_proj";
  } else if (model_type == "codegen") {
    n.embed = "transformer.wte"; n.final_norm = "transformer.ln_f"; n.layer = "transformer.h.{i}.";
    n.norms = {"ln_1"}; n.attn = "attn."; n.qkv = "qkv_proj"; n.o = "out_proj"; n.up = "fc_in"; n.down = "fc_out";
  } else if (model_type == "gpt_bigcode") {
    n.embed = "transformer.wte"; n.position = "transformer.wpe"; n.final_norm = "transformer.ln_f";
    n.layer = "transformer.h.{i}."; n.norms = {"ln_1", "ln_2"};
    n.attn = "attn."; n.qkv = "c_attn"; n.o = "c_proj"; n.up = "c_fc"; n.down = "c_proj";
  } else if (model_type == "biogpt") {
    n.embed = "biogpt.embed_tokens"; n.position = "biogpt.embed_positions"; n.final_norm = "biogpt.layer_norm";
    n.lm_head = "output_projection"; n.layer = "biogpt.layers.{i}.";
    n.norms = {"self_attn_layer_norm", "final_layer_norm"}; n.o = "out_proj"; n.mlp = ""; n.up = "fc1"; n.down = "fc2";
  } else if (model_type == "falcon") {
    n.embed = "transformer.word_embeddings"; n.final_norm = "transformer.ln_f";
    n.layer = "transformer.h.{i}."; n.attn = "self_attention."; n.qkv = "query_key_value";
    n.o = "dense"; n.up = "dense_h_to_4h"; n.down = "dense_4h_to_h";
  } else if (model_type == "qwen") {
    n.embed = "transformer.wte"; n.final_norm = "transformer.ln_f"; n.layer = "transformer.h.{i}.";
    n.norms = {"ln_1", "ln_2"}; n.attn = "attn."; n.qkv = "c_attn"; n.o = "c_proj";
    n.gate = "w2"; n.up = "w1"; n.down = "c_proj";   // modeling_qwen.py: c_proj(w1(x) * silu(w2(x)))
  } else if (model_type == "mpt") {  // llm-foundry modeling_mpt.py / blocks.py / attention.py / ffn.py
    n.embed = "transformer.wte"; n.position = "transformer.wpe"; n.final_norm = "transformer.norm_f";
    n.layer = "transformer.blocks.{i}."; n.norms = {"norm_1", "norm_2"}; n.attn = "attn.";
    n.qkv = "Wqkv"; n.o = "out_proj"; n.mlp = "ffn."; n.up = "up_proj"; n.down = "down_proj"; n.gate = "gate_proj";
  } else if (model_type == "phi") {
    n.final_norm = "model.final_layernorm"; n.norms = {"input_layernorm"}; n.o = "dense";
    n.up = "fc1"; n.down = "fc2";
  } else if (model_type == "phi3") {
    n.qkv = "qkv_proj"; n.gate_up = "gate_up_proj";
  } else if (model_type == "starcoder2") {
    n.up = "c_fc"; n.down = "c_proj";
  } else if (model_type == "llama4_text") {
    n.mlp = "feed_forward."; n.router = "router";
  } else if (model_type == "mixtral") {
    n.mlp = "block_sparse_moe."; n.gate = "w1"; n.down = "w2"; n.up = "w3";
  }
  return n;
}

class Builder {
 public:
  explicit Builder(const ModelArchitecture& a) : a_(a), n_(naming_for(a.model_type)) {}

  TensorInventory build() {
    TensorInventory inv;
    add_globals(inv.globals);
    if (a_.kind == ArchKind::kEncoderDecoder) {
      add_stack(inv, Stack::kEncoder, a_.num_encoder_layers);
      add_stack(inv, Stack::kDecoder, a_.num_layers);
    } else {
      add_stack(inv, a_.kind == ArchKind::kEncoder ? Stack::kEncoder : Stack::kNone, a_.num_layers);
    }
    tally(inv);
    return inv;
  }

 private:
  static TensorSpec make(std::string name, std::vector<std::int64_t> shape, ModuleKind kind,
                         std::string role, TpSplit split, bool linear = false) {
    TensorSpec t;
    t.name = std::move(name);
    t.shape = std::move(shape);
    t.kind = kind;
    t.role = std::move(role);
    t.tp_split = split;
    t.linear_weight = linear;
    return t;
  }

  // An nn.Linear(in, out): weight [out, in] and optionally bias [out]. A column-split linear
  // splits its bias too; a row-split linear's bias is replicated (added after the all-reduce).
  void linear(std::vector<TensorSpec>& out, const std::string& name, std::int64_t in,
              std::int64_t outf, bool bias, ModuleKind kind, const std::string& role, TpSplit split,
              std::int64_t copies = 1) {
    TensorSpec w = make(name + ".weight", {outf, in}, kind, role, split, true);
    w.copies = copies;
    out.push_back(w);
    if (bias) {
      TpSplit bsplit = split == TpSplit::kRow ? TpSplit::kReplicated : split;
      TensorSpec b = make(name + ".bias", {outf}, kind, role, bsplit);
      b.copies = copies;
      out.push_back(b);
    }
  }

  void norm(std::vector<TensorSpec>& out, const std::string& name, std::int64_t dim, NormKind kind,
            bool bias, const std::string& role = "norm") {
    out.push_back(make(name + ".weight", {dim}, ModuleKind::kNorm, role, TpSplit::kReplicated));
    if (bias && kind == NormKind::kLayerNorm) {
      out.push_back(make(name + ".bias", {dim}, ModuleKind::kNorm, role, TpSplit::kReplicated));
    }
  }

  void add_globals(std::vector<TensorSpec>& g) {
    const std::int64_t h = a_.hidden_size;
    const std::int64_t v = a_.vocab_size;
    if (a_.model_type == "t5" || a_.model_type == "mt5") {
      g.push_back(make("shared.weight", {v, h}, ModuleKind::kEmbedding, "embedding", TpSplit::kVocab));
      norm(g, "encoder.final_layer_norm", h, NormKind::kRmsNorm, false);
      norm(g, "decoder.final_layer_norm", h, NormKind::kRmsNorm, false);
      add_lm_head(g);
      return;
    }
    if (a_.model_type == "bert") {
      g.push_back(make("embeddings.word_embeddings.weight", {v, h}, ModuleKind::kEmbedding,
                       "embedding", TpSplit::kVocab));
      g.push_back(make("embeddings.position_embeddings.weight", {a_.learned_position_rows, h},
                       ModuleKind::kPositionEmbedding, "position", TpSplit::kReplicated));
      g.push_back(make("embeddings.token_type_embeddings.weight", {a_.type_vocab_size, h},
                       ModuleKind::kEmbedding, "token_type", TpSplit::kReplicated));
      norm(g, "embeddings.LayerNorm", h, NormKind::kLayerNorm, true);
      if (a_.pooler) linear(g, "pooler.dense", h, h, true, ModuleKind::kOther, "pooler", TpSplit::kReplicated);
      return;
    }
    const std::int64_t embed_dim = a_.embed_projection_dim > 0 ? a_.embed_projection_dim : h;
    g.push_back(make(n_.embed + ".weight", {v, embed_dim}, ModuleKind::kEmbedding, "embedding",
                     TpSplit::kVocab));
    if (a_.position == PositionKind::kLearned && a_.learned_position_rows > 0) {
      g.push_back(make(n_.position + ".weight", {a_.learned_position_rows, h},
                       ModuleKind::kPositionEmbedding, "position", TpSplit::kReplicated));
    }
    if (a_.embed_projection_dim > 0) {  // OPT-350m: project_in / project_out, no bias
      linear(g, "model.decoder.project_in", embed_dim, h, false, ModuleKind::kOther, "project_in",
             TpSplit::kReplicated);
      linear(g, "model.decoder.project_out", h, embed_dim, false, ModuleKind::kOther, "project_out",
             TpSplit::kReplicated);
    }
    if (a_.embedding_norm) {
      norm(g, "transformer.word_embeddings_layernorm", h, a_.norm, a_.norm_bias);
    }
    if (a_.final_norm) norm(g, n_.final_norm, h, a_.norm, a_.norm_bias);
    add_lm_head(g);
  }

  void add_lm_head(std::vector<TensorSpec>& g) {
    if (!a_.has_lm_head) return;
    const std::int64_t embed_dim = a_.embed_projection_dim > 0 ? a_.embed_projection_dim : a_.hidden_size;
    TensorSpec w = make(n_.lm_head + ".weight", {a_.vocab_size, embed_dim}, ModuleKind::kLmHead,
                        "lm_head", TpSplit::kVocab, true);
    w.tied = a_.tie_word_embeddings;
    g.push_back(w);
    if (a_.lm_head_bias) {
      g.push_back(make(n_.lm_head + ".bias", {a_.vocab_size}, ModuleKind::kLmHead, "lm_head",
                       TpSplit::kVocab));
    }
  }

  void add_stack(TensorInventory& inv, Stack stack, std::int64_t layers) {
    for (std::int64_t i = 0; i < layers; ++i) {
      std::vector<TensorSpec> t;
      const bool moe = stack != Stack::kEncoder && a_.layer_is_moe(i);
      layer_tensors(t, stack, i, moe);
      if (!inv.groups.empty()) {
        LayerGroup& last = inv.groups.back();
        if (last.stack == stack && last.moe == moe && same_layout(last.tensors, t)) {
          ++last.layer_count;
          continue;
        }
      }
      // Layers are identical except at known points (T5's first block, DeepSeek's dense layers),
      // so the comparison above runs against a handful of groups: O(layers x tensors) overall.
      LayerGroup g;
      g.stack = stack;
      g.first_layer = i;
      g.layer_count = 1;
      g.moe = moe;
      g.tensors = std::move(t);
      inv.groups.push_back(std::move(g));
    }
  }

  static bool same_layout(const std::vector<TensorSpec>& a, const std::vector<TensorSpec>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i].name != b[i].name || a[i].shape != b[i].shape || a[i].copies != b[i].copies) return false;
    }
    return true;
  }

  void layer_tensors(std::vector<TensorSpec>& t, Stack stack, std::int64_t i, bool moe) {
    if (a_.model_type == "t5" || a_.model_type == "mt5") return t5_layer(t, stack, i);
    if (a_.model_type == "bert") return bert_layer(t);
    const std::string& p = n_.layer;
    const std::int64_t h = a_.hidden_size;
    for (std::int64_t k = 0; k < a_.norms_per_layer; ++k) {
      norm(t, p + norm_name(k), h, a_.norm, a_.norm_bias);
    }
    attention(t, p + n_.attn);
    if (moe) {
      moe_block(t, p + n_.mlp);
    } else {
      mlp(t, p + n_.mlp, a_.mlp.intermediate_size, a_.mlp.bias, ModuleKind::kMlp, 1);
    }
  }

  std::string norm_name(std::int64_t k) const {
    if (a_.norms_per_layer == 4) {  // gemma2 / gemma3: a norm before and after each sub-block
      static const char* kGemma[] = {"input_layernorm", "post_attention_layernorm",
                                     "pre_feedforward_layernorm", "post_feedforward_layernorm"};
      return kGemma[k];
    }
    if (a_.model_type == "falcon" && a_.norms_per_layer == 2 && a_.parallel_block) {
      return k == 0 ? "ln_attn" : "ln_mlp";  // new_decoder_architecture with two parallel norms
    }
    if (static_cast<std::size_t>(k) < n_.norms.size()) return n_.norms[k];
    return "norm_" + std::to_string(k);
  }

  void attention(std::vector<TensorSpec>& t, const std::string& p) {
    const AttentionSpec& at = a_.attention;
    const std::int64_t h = a_.hidden_size;
    const ModuleKind K = ModuleKind::kAttention;
    const std::int64_t q_out = at.num_heads * at.head_dim;
    const std::int64_t kv_out = at.num_kv_heads * at.head_dim;
    switch (at.layout) {
      case QkvLayout::kSeparate:
        linear(t, p + n_.q, h, q_out, at.qkv_bias, K, "q", TpSplit::kColumn);
        linear(t, p + n_.k, h, kv_out, at.qkv_bias, K, "k", TpSplit::kColumn);
        linear(t, p + n_.v, h, kv_out, at.qkv_bias, K, "v", TpSplit::kColumn);
        break;
      case QkvLayout::kFused:
        linear(t, p + n_.qkv, h, q_out + 2 * kv_out, at.qkv_bias, K, "qkv", TpSplit::kColumn);
        break;
      case QkvLayout::kLowRank: {
        const std::int64_t qk_head = attention_dims(a_).qk_head_dim;
        if (at.q_lora_rank > 0) {
          linear(t, p + "q_a_proj", h, at.q_lora_rank, at.qkv_bias, K, "q_a", TpSplit::kReplicated);
          norm(t, p + "q_a_layernorm", at.q_lora_rank, NormKind::kRmsNorm, false);
          linear(t, p + "q_b_proj", at.q_lora_rank, at.num_heads * qk_head, false, K, "q_b", TpSplit::kColumn);
        } else {
          linear(t, p + "q_proj", h, at.num_heads * qk_head, false, K, "q", TpSplit::kColumn);
        }
        linear(t, p + "kv_a_proj_with_mqa", h, at.kv_lora_rank + at.qk_rope_head_dim, at.qkv_bias, K,
               "kv_a", TpSplit::kReplicated);
        norm(t, p + "kv_a_layernorm", at.kv_lora_rank, NormKind::kRmsNorm, false);
        linear(t, p + "kv_b_proj", at.kv_lora_rank,
               at.num_heads * (at.qk_nope_head_dim + at.v_head_dim), false, K, "kv_b", TpSplit::kColumn);
        linear(t, p + n_.o, at.num_heads * at.v_head_dim, h, at.o_bias, K, "o", TpSplit::kRow);
        return;
      }
    }
    if (at.qk_norm) {
      if (at.qk_norm_per_head) {  // stablelm: one LayerNorm per head, no bias
        for (const char* which : {"q", "k"}) {
          const std::int64_t heads = which[0] == 'q' ? at.num_heads : at.num_kv_heads;
          TensorSpec w = make(p + which + "_layernorm.norms.{e}.weight", {at.head_dim},
                              ModuleKind::kNorm, "qk_norm", TpSplit::kReplicated);
          w.copies = heads;
          t.push_back(w);
        }
      } else {
        norm(t, p + n_.q_norm, at.head_dim, at.qk_norm_kind, at.qk_norm_bias, "qk_norm");
        norm(t, p + n_.k_norm, at.head_dim, at.qk_norm_kind, at.qk_norm_bias, "qk_norm");
      }
    }
    linear(t, p + n_.o, q_out, h, at.o_bias, K, "o", TpSplit::kRow);
  }

  void mlp(std::vector<TensorSpec>& t, const std::string& p, std::int64_t ff, bool bias,
           ModuleKind kind, std::int64_t copies) {
    const std::int64_t h = a_.hidden_size;
    const bool expert = kind == ModuleKind::kExpert;
    const TpSplit col = expert ? TpSplit::kExpert : TpSplit::kColumn;
    const TpSplit row = expert ? TpSplit::kExpert : TpSplit::kRow;
    if (a_.mlp.gated) {
      if (a_.mlp.fused_gate_up) {
        linear(t, p + n_.gate_up, h, 2 * ff, bias, kind, "gate_up", col, copies);
      } else {
        linear(t, p + n_.gate, h, ff, bias, kind, "gate", col, copies);
        linear(t, p + n_.up, h, ff, bias, kind, "up", col, copies);
      }
    } else {
      linear(t, p + n_.up, h, ff, bias, kind, "up", col, copies);
    }
    linear(t, p + n_.down, ff, h, bias, kind, "down", row, copies);
  }

  void moe_block(std::vector<TensorSpec>& t, const std::string& p) {
    const MoeSpec& m = a_.moe;
    const std::int64_t h = a_.hidden_size;
    linear(t, p + n_.router, h, m.num_experts, false, ModuleKind::kRouter, "router", TpSplit::kReplicated);
    if (m.router_bias) {
      t.push_back(make(p + n_.router + ".e_score_correction_bias", {m.num_experts}, ModuleKind::kRouter,
                       "router", TpSplit::kReplicated));
    }
    mlp(t, p + n_.experts + ".{e}.", m.expert_intermediate_size, m.expert_bias, ModuleKind::kExpert,
        m.num_experts);
    if (m.shared_intermediate_size > 0) {
      const std::string shared = a_.model_type.rfind("deepseek", 0) == 0 ? "shared_experts" : n_.shared;
      mlp(t, p + shared + ".", m.shared_intermediate_size, false, ModuleKind::kSharedExpert, 1);
      if (m.shared_expert_gate) {
        linear(t, p + "shared_expert_gate", h, 1, false, ModuleKind::kSharedExpert, "shared_gate",
               TpSplit::kReplicated);
      }
    }
  }

  // T5 / mT5 (modeling_t5.py): T5LayerSelfAttention, [T5LayerCrossAttention], T5LayerFF, each
  // with its own T5LayerNorm (weight only); relative-attention bias in the first block only.
  void t5_layer(std::vector<TensorSpec>& t, Stack stack, std::int64_t i) {
    const std::string p = std::string(stack == Stack::kEncoder ? "encoder" : "decoder") + ".block.{i}.";
    const std::int64_t h = a_.hidden_size;
    const std::int64_t inner = a_.attention.num_heads * a_.attention.head_dim;
    const ModuleKind K = ModuleKind::kAttention;
    auto attn = [&](const std::string& ap) {
      linear(t, ap + "q", h, inner, false, K, "q", TpSplit::kColumn);
      linear(t, ap + "k", h, inner, false, K, "k", TpSplit::kColumn);
      linear(t, ap + "v", h, inner, false, K, "v", TpSplit::kColumn);
      linear(t, ap + "o", inner, h, false, K, "o", TpSplit::kRow);
    };
    attn(p + "layer.0.SelfAttention.");
    if (i == 0) {
      t.push_back(make(p + "layer.0.SelfAttention.relative_attention_bias.weight",
                       {a_.relative_attention_buckets, a_.attention.num_heads},
                       ModuleKind::kPositionEmbedding, "relative_bias", TpSplit::kReplicated));
    }
    norm(t, p + "layer.0.layer_norm", h, NormKind::kRmsNorm, false);
    int ff_index = 1;
    if (stack == Stack::kDecoder) {
      attn(p + "layer.1.EncDecAttention.");
      norm(t, p + "layer.1.layer_norm", h, NormKind::kRmsNorm, false);
      ff_index = 2;
    }
    const std::string fp = p + "layer." + std::to_string(ff_index) + ".DenseReluDense.";
    const std::int64_t ff = a_.mlp.intermediate_size;
    if (a_.mlp.gated) {
      linear(t, fp + "wi_0", h, ff, false, ModuleKind::kMlp, "gate", TpSplit::kColumn);
      linear(t, fp + "wi_1", h, ff, false, ModuleKind::kMlp, "up", TpSplit::kColumn);
    } else {
      linear(t, fp + "wi", h, ff, false, ModuleKind::kMlp, "up", TpSplit::kColumn);
    }
    linear(t, fp + "wo", ff, h, false, ModuleKind::kMlp, "down", TpSplit::kRow);
    norm(t, p + "layer." + std::to_string(ff_index) + ".layer_norm", h, NormKind::kRmsNorm, false);
  }

  // BERT (modeling_bert.py, BertModel): post-norm encoder layers with biases everywhere.
  void bert_layer(std::vector<TensorSpec>& t) {
    const std::string p = "encoder.layer.{i}.";
    const std::int64_t h = a_.hidden_size;
    const std::int64_t inner = a_.attention.num_heads * a_.attention.head_dim;
    const ModuleKind K = ModuleKind::kAttention;
    linear(t, p + "attention.self.query", h, inner, true, K, "q", TpSplit::kColumn);
    linear(t, p + "attention.self.key", h, inner, true, K, "k", TpSplit::kColumn);
    linear(t, p + "attention.self.value", h, inner, true, K, "v", TpSplit::kColumn);
    linear(t, p + "attention.output.dense", inner, h, true, K, "o", TpSplit::kRow);
    norm(t, p + "attention.output.LayerNorm", h, NormKind::kLayerNorm, true);
    linear(t, p + "intermediate.dense", h, a_.mlp.intermediate_size, true, ModuleKind::kMlp, "up",
           TpSplit::kColumn);
    linear(t, p + "output.dense", a_.mlp.intermediate_size, h, true, ModuleKind::kMlp, "down", TpSplit::kRow);
    norm(t, p + "output.LayerNorm", h, NormKind::kLayerNorm, true);
  }

  void tally(TensorInventory& inv) const {
    auto add = [&](const TensorSpec& t, std::int64_t layers) {
      inv.tensor_count = checked_add(inv.tensor_count, checked_mul(t.copies, layers, "tensor count"),
                                     "tensor count");
      if (t.tied) return;
      const std::int64_t n = checked_mul(t.total_numel(), layers, "parameter count");
      inv.total_params = checked_add(inv.total_params, n, "parameter count");
      std::int64_t& slot = inv.params_by_kind[static_cast<int>(t.kind)];
      slot = checked_add(slot, n, "parameter count");
    };
    for (const TensorSpec& t : inv.globals) add(t, 1);
    std::int64_t inactive = 0;
    for (const LayerGroup& g : inv.groups) {
      for (const TensorSpec& t : g.tensors) {
        add(t, g.layer_count);
        if (t.kind == ModuleKind::kExpert && a_.moe.num_experts > 0) {
          // A token passes through top_k of the routed experts.
          const std::int64_t unused = a_.moe.num_experts - std::min(a_.moe.top_k, a_.moe.num_experts);
          inactive = checked_add(inactive, checked_mul(checked_mul(t.numel(), unused, "parameter count"),
                                                       g.layer_count, "parameter count"),
                                 "parameter count");
        }
      }
    }
    inv.active_params_per_token = inv.total_params - inactive;
  }

  const ModelArchitecture& a_;
  Naming n_;
};

}  // namespace

TensorInventory build_tensor_inventory(const ModelArchitecture& arch) { return Builder(arch).build(); }

}  // namespace memfit
