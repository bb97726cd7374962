// Family rules for HF config.json: key aliases (transformers' attribute_map and legacy names),
// defaults of absent keys (each family's Config.__init__), and the module layout flags that the
// tensor inventory reads. Sources: transformers/models/<family>/configuration_<family>.py and
// modeling_<family>.py; remote code for qwen-1 (modeling_qwen.py) and DeepSeek (modeling_deepseek.py).
#include "hf_config/parse_hf_config.h"

#include <algorithm>

namespace memfit {

namespace {

using L = ConfigLimits;

const std::vector<std::string> kSupported = {
    "gpt2",   "opt",     "bloom",     "gpt_neox", "gptj",        "falcon",     "llama",
    "mistral", "mixtral", "qwen",     "qwen2",    "qwen2_moe",   "qwen3",      "qwen3_moe",
    "gemma",  "gemma2",  "gemma3_text", "phi",    "phi3",        "stablelm",   "starcoder2",
    "deepseek_v2", "deepseek_v3", "t5", "mt5",    "bert",        "gpt_neo",    "codegen",
    "gpt_bigcode", "biogpt",      "llama4_text", "mpt"};

std::string joined_supported() {
  std::string s;
  for (const auto& t : kSupported) s += (s.empty() ? "" : ", ") + t;
  return s;
}

Error invalid(const std::string& path, const std::string& msg) {
  return Error(ErrorCode::kInvalidValue, path, msg);
}

// Heads and head_dim. Without an explicit head_dim, hidden must split evenly over the heads
// (transformers computes hidden_size // num_attention_heads and would silently truncate).
void read_heads(const FieldReader& f, ModelArchitecture& a, std::initializer_list<const char*> head_keys,
                std::initializer_list<const char*> head_dim_keys) {
  const char* head_key = nullptr;
  f.find(head_keys, &head_key);
  a.attention.num_heads = f.require_int(head_keys, 1, L::kMaxHeads);
  auto head_dim = f.get_int(head_dim_keys, 1, L::kMaxHeadDim);
  if (head_dim) {
    a.attention.head_dim = *head_dim;
  } else {
    if (a.hidden_size % a.attention.num_heads != 0) {
      throw invalid(f.path(head_key ? head_key : *head_keys.begin()),
                    "hidden size (" + format_count(a.hidden_size) + ") is not divisible by " +
                        (head_key ? head_key : *head_keys.begin()) + " (" +
                        format_count(a.attention.num_heads) + ") and head_dim is not given");
    }
    a.attention.head_dim = a.hidden_size / a.attention.num_heads;
  }
}

void read_kv_heads(const FieldReader& f, ModelArchitecture& a, std::initializer_list<const char*> keys) {
  const char* key = nullptr;
  f.find(keys, &key);
  a.attention.num_kv_heads = f.int_or(keys, 1, L::kMaxHeads, a.attention.num_heads);
  if (a.attention.num_heads % a.attention.num_kv_heads != 0) {
    throw invalid(f.path(key), std::string(key) + " (" + format_count(a.attention.num_kv_heads) +
                                   ") does not divide the number of attention heads (" +
                                   format_count(a.attention.num_heads) + ")");
  }
}

std::int64_t rotary_dims(std::int64_t head_dim, double fraction) {
  return static_cast<std::int64_t>(static_cast<double>(head_dim) * fraction);
}

// The llama layout: embed_tokens, pre-norm RMSNorm blocks with q/k/v/o and gate/up/down.
// Shared by llama, mistral, mixtral, qwen2/3(+moe), gemma*, phi3, stablelm, starcoder2, deepseek
// and unknown llama-like types; each family then adjusts what differs.
void read_llama_like(const FieldReader& f, ModelArchitecture& a, bool need_intermediate = true) {
  a.vocab_size = f.require_int({"vocab_size"}, 1, L::kMaxVocab);
  a.hidden_size = f.require_int({"hidden_size"}, 1, L::kMaxHidden);
  a.num_layers = f.require_int({"num_hidden_layers"}, 1, L::kMaxLayers);
  read_heads(f, a, {"num_attention_heads"}, {"head_dim"});
  read_kv_heads(f, a, {"num_key_value_heads"});
  if (need_intermediate) a.mlp.intermediate_size = f.require_int({"intermediate_size"}, 1, L::kMaxIntermediate);
  a.max_position_embeddings = f.int_or({"max_position_embeddings"}, 0, L::kMaxPositions, 0);
  a.position = PositionKind::kRotary;
  a.norm = NormKind::kRmsNorm;
  a.mlp.gated = true;
  a.mlp.activation = f.get_string({"hidden_act", "hidden_activation"}).value_or("silu");
  a.attention.qkv_bias = f.bool_or({"attention_bias"}, false);
  a.attention.o_bias = a.attention.qkv_bias;
  a.mlp.bias = f.bool_or({"mlp_bias"}, false);
  a.tie_word_embeddings = f.bool_or({"tie_word_embeddings"}, false);
  a.attention.sliding_window = f.int_or({"sliding_window"}, 0, L::kMaxPositions, 0);
  const double partial = f.get_number({"partial_rotary_factor"}, 0.0, 1.0).value_or(1.0);
  a.attention.rotary_dim = rotary_dims(a.attention.head_dim, partial);
}

void read_moe_common(const FieldReader& f, ModelArchitecture& a, std::initializer_list<const char*> expert_keys,
                     std::initializer_list<const char*> size_keys) {
  a.moe.num_experts = f.int_or(expert_keys, 0, L::kMaxExperts, 0);
  if (a.moe.num_experts == 0) return;
  a.moe.top_k = f.require_int({"num_experts_per_tok"}, 1, a.moe.num_experts);
  a.moe.expert_intermediate_size = f.require_int(size_keys, 1, L::kMaxIntermediate);
}

void read_dense_layer_list(const FieldReader& f, ModelArchitecture& a, const char* key) {
  const Json* v = f.find({key});
  if (!v) return;
  if (!v->is_array()) throw Error(ErrorCode::kInvalidType, f.path(key), std::string(key) + " must be an array");
  for (std::size_t i = 0; i < v->size(); ++i) {
    const Json& e = (*v)[i];
    const std::string p = pointer_append(f.path(key), std::to_string(i));
    if (!e.is_number_integer() || e.get<std::int64_t>() < 0 || e.get<std::int64_t>() >= a.num_layers) {
      throw invalid(p, std::string(key) + " entries must be layer indices below num_hidden_layers");
    }
    a.moe.dense_layers.push_back(e.get<std::int64_t>());
  }
}

// Vocabulary, width, depth and heads (MHA unless the family reads kv heads itself), under the
// family's key names.
void read_dims(const FieldReader& f, ModelArchitecture& a, std::initializer_list<const char*> hidden_keys,
               std::initializer_list<const char*> layer_keys, std::initializer_list<const char*> head_keys,
               std::initializer_list<const char*> head_dim_keys = {}) {
  a.vocab_size = f.require_int({"vocab_size"}, 1, L::kMaxVocab);
  a.hidden_size = f.require_int(hidden_keys, 1, L::kMaxHidden);
  a.num_layers = f.require_int(layer_keys, 1, L::kMaxLayers);
  read_heads(f, a, head_keys, head_dim_keys);
  a.attention.num_kv_heads = a.attention.num_heads;
}

void parse_gpt2(const FieldReader& f, ModelArchitecture& a) {
  read_dims(f, a, {"n_embd", "hidden_size"}, {"n_layer", "num_hidden_layers"}, {"n_head", "num_attention_heads"});
  a.max_position_embeddings = f.int_or({"n_positions", "max_position_embeddings"}, 1, L::kMaxPositions, 1024);
  a.position = PositionKind::kLearned;
  a.learned_position_rows = a.max_position_embeddings;
  a.norm = NormKind::kLayerNorm;
  a.norm_bias = true;
  a.attention.layout = QkvLayout::kFused;
  a.attention.qkv_bias = a.attention.o_bias = true;
  a.mlp.intermediate_size = f.int_or({"n_inner"}, 1, L::kMaxIntermediate, 4 * a.hidden_size);
  a.mlp.bias = true;
  a.mlp.activation = f.get_string({"activation_function"}).value_or("gelu_new");
  a.tie_word_embeddings = f.bool_or({"tie_word_embeddings"}, true);
}

void parse_opt(const FieldReader& f, ModelArchitecture& a) {
  read_dims(f, a, {"hidden_size"}, {"num_hidden_layers"}, {"num_attention_heads"});
  a.mlp.intermediate_size = f.require_int({"ffn_dim"}, 1, L::kMaxIntermediate);
  a.max_position_embeddings = f.int_or({"max_position_embeddings"}, 1, L::kMaxPositions, 2048);
  a.position = PositionKind::kLearned;
  a.learned_position_rows = a.max_position_embeddings + 2;  // OPTLearnedPositionalEmbedding offset of 2
  a.norm = NormKind::kLayerNorm;
  a.norm_bias = f.bool_or({"layer_norm_elementwise_affine"}, true);
  const bool bias = f.bool_or({"enable_bias"}, true);
  a.attention.qkv_bias = a.attention.o_bias = a.mlp.bias = bias;
  a.mlp.activation = f.get_string({"activation_function"}).value_or("relu");
  const std::int64_t proj = f.int_or({"word_embed_proj_dim"}, 1, L::kMaxHidden, a.hidden_size);
  if (proj != a.hidden_size) a.embed_projection_dim = proj;
  // OPT-350m applies layer norm after each block and has no final layer norm.
  a.final_norm = f.bool_or({"do_layer_norm_before"}, true) && !f.bool_or({"_remove_final_layer_norm"}, false);
  a.tie_word_embeddings = f.bool_or({"tie_word_embeddings"}, true);
}

void parse_bloom(const FieldReader& f, ModelArchitecture& a) {
  read_dims(f, a, {"n_embed", "hidden_size"}, {"n_layer", "num_hidden_layers"}, {"n_head", "num_attention_heads"});
  a.position = PositionKind::kAlibi;
  a.norm = NormKind::kLayerNorm;
  a.norm_bias = true;
  a.embedding_norm = true;
  a.attention.layout = QkvLayout::kFused;
  a.attention.qkv_bias = a.attention.o_bias = true;
  a.mlp.intermediate_size = 4 * a.hidden_size;  // BloomMLP: dense_h_to_4h, fixed 4x
  a.mlp.bias = true;
  a.mlp.activation = "gelu";
  a.max_position_embeddings = f.int_or({"seq_length"}, 0, L::kMaxPositions, 0);
  a.tie_word_embeddings = f.bool_or({"tie_word_embeddings"}, true);
}

void parse_gpt_neox(const FieldReader& f, ModelArchitecture& a) {
  read_dims(f, a, {"hidden_size"}, {"num_hidden_layers"}, {"num_attention_heads"});
  a.mlp.intermediate_size = f.require_int({"intermediate_size"}, 1, L::kMaxIntermediate);
  a.max_position_embeddings = f.int_or({"max_position_embeddings"}, 0, L::kMaxPositions, 2048);
  a.norm = NormKind::kLayerNorm;
  a.norm_bias = true;
  a.parallel_block = f.bool_or({"use_parallel_residual"}, true);
  a.norms_per_layer = 2;  // GPTNeoXLayer keeps both norms even with the parallel residual
  a.attention.layout = QkvLayout::kFused;
  a.attention.qkv_bias = a.attention.o_bias = f.bool_or({"attention_bias"}, true);
  a.mlp.bias = true;
  a.mlp.activation = f.get_string({"hidden_act"}).value_or("gelu");
  const double pct = f.get_number({"rotary_pct", "partial_rotary_factor"}, 0.0, 1.0).value_or(0.25);
  a.attention.rotary_dim = rotary_dims(a.attention.head_dim, pct);
  a.tie_word_embeddings = f.bool_or({"tie_word_embeddings"}, false);
}

void parse_gptj(const FieldReader& f, ModelArchitecture& a) {
  read_dims(f, a, {"n_embd", "hidden_size"}, {"n_layer", "num_hidden_layers"}, {"n_head", "num_attention_heads"});
  a.max_position_embeddings = f.int_or({"n_positions", "max_position_embeddings"}, 0, L::kMaxPositions, 2048);
  a.norm = NormKind::kLayerNorm;
  a.norm_bias = true;
  a.parallel_block = true;
  a.norms_per_layer = 1;
  a.mlp.intermediate_size = f.int_or({"n_inner"}, 1, L::kMaxIntermediate, 4 * a.hidden_size);
  a.mlp.bias = true;
  a.mlp.activation = f.get_string({"activation_function"}).value_or("gelu_new");
  a.attention.rotary_dim = f.int_or({"rotary_dim"}, 0, a.attention.head_dim, a.attention.head_dim);
  a.lm_head_bias = true;  // GPTJForCausalLM: nn.Linear(n_embd, vocab_size) with bias
  a.tie_word_embeddings = f.bool_or({"tie_word_embeddings"}, false);
}

// EleutherAI GPT-Neo (modeling_gpt_neo.py): learned positions, q/k/v without bias and a biased
// out_proj, LayerNorm before each sub-block, c_fc/c_proj MLP with bias. Its eager attention
// casts q and k to fp32 before QK^T. Local layers mask a window but still form the full score
// matrix in eager attention, so the window changes no memory here.
void parse_gpt_neo(const FieldReader& f, ModelArchitecture& a) {
  read_dims(f, a, {"hidden_size", "n_embd"}, {"num_layers", "n_layer", "num_hidden_layers"},
            {"num_heads", "n_head", "num_attention_heads"});
  a.max_position_embeddings = f.int_or({"max_position_embeddings", "n_positions"}, 1, L::kMaxPositions, 2048);
  a.position = PositionKind::kLearned;
  a.learned_position_rows = a.max_position_embeddings;
  a.norm = NormKind::kLayerNorm;
  a.norm_bias = true;
  a.attention.qkv_bias = false;
  a.attention.o_bias = true;
  a.attention.upcast_qk = true;
  a.mlp.intermediate_size = f.int_or({"intermediate_size"}, 1, L::kMaxIntermediate, 4 * a.hidden_size);
  a.mlp.bias = true;
  a.mlp.activation = f.get_string({"activation_function"}).value_or("gelu_new");
  a.tie_word_embeddings = f.bool_or({"tie_word_embeddings"}, true);
}

// Salesforce CodeGen (modeling_codegen.py): a GPT-J block (attention and MLP in parallel after
// one LayerNorm, partial rotary) with one fused qkv_proj and out_proj, both without bias, and a
// biased untied lm_head. Eager attention casts q and k to fp32.
void parse_codegen(const FieldReader& f, ModelArchitecture& a) {
  parse_gptj(f, a);
  a.attention.layout = QkvLayout::kFused;
  a.attention.upcast_qk = true;
}

// BigCode GPTBigCode (modeling_gpt_bigcode.py, santacoder / starcoder): the GPT-2 layout with
// multi-query attention: c_attn projects to h + 2 x head_dim (one shared key/value head).
void parse_gpt_bigcode(const FieldReader& f, ModelArchitecture& a) {
  parse_gpt2(f, a);
  a.mlp.activation = f.get_string({"activation_function"}).value_or("gelu_pytorch_tanh");
  if (f.bool_or({"multi_query"}, true)) a.attention.num_kv_heads = 1;
}

// Microsoft BioGPT (modeling_biogpt.py): a pre-norm decoder with BART-style attention (q/k/v/out
// with bias), fc1/fc2 MLP with bias, learned positions offset by 2 rows, a final LayerNorm and an
// output_projection without bias, tied to the token embedding by default.
void parse_biogpt(const FieldReader& f, ModelArchitecture& a) {
  read_dims(f, a, {"hidden_size"}, {"num_hidden_layers"}, {"num_attention_heads"});
  a.mlp.intermediate_size = f.require_int({"intermediate_size"}, 1, L::kMaxIntermediate);
  a.max_position_embeddings = f.int_or({"max_position_embeddings"}, 1, L::kMaxPositions, 1024);
  a.position = PositionKind::kLearned;
  a.learned_position_rows = a.max_position_embeddings + 2;  // BioGptLearnedPositionalEmbedding offset
  a.norm = NormKind::kLayerNorm;
  a.norm_bias = true;
  a.attention.qkv_bias = a.attention.o_bias = a.mlp.bias = true;
  a.mlp.activation = f.get_string({"hidden_act"}).value_or("gelu");
  a.tie_word_embeddings = f.bool_or({"tie_word_embeddings"}, true);
}

// Meta Llama 4 text model (modeling_llama4.py): a llama decoder whose MoE layers (every
// interleave_moe_layer_step-th, or those listed in moe_layers) hold num_local_experts routed
// experts of width intermediate_size, top num_experts_per_tok, plus one shared expert of the same
// width; dense layers use intermediate_size_mlp. Its q/k norm is a weightless L2 norm.
void parse_llama4_text(const FieldReader& f, ModelArchitecture& a) {
  read_llama_like(f, a, /*need_intermediate=*/false);
  a.mlp.intermediate_size = f.require_int({"intermediate_size_mlp"}, 1, L::kMaxIntermediate);
  read_moe_common(f, a, {"num_local_experts"}, {"intermediate_size"});
  if (!a.is_moe()) return;
  a.moe.shared_intermediate_size = a.moe.expert_intermediate_size;
  a.moe.num_shared_experts = 1;
  if (const Json* listed = f.find({"moe_layers"})) {
    if (!listed->is_array()) throw Error(ErrorCode::kInvalidType, f.path("moe_layers"), "moe_layers must be an array");
    for (std::int64_t i = 0; i < a.num_layers; ++i) {
      bool moe = false;
      for (const Json& e : *listed) moe = moe || (e.is_number_integer() && e.get<std::int64_t>() == i);
      if (!moe) a.moe.dense_layers.push_back(i);
    }
  }
}

// MosaicML MPT (config.json as on the Hub, model_type "mpt"; transformers models/mpt/configuration_mpt.py
// for the defaults of absent keys; module layout of llm-foundry llmfoundry/models/mpt/modeling_mpt.py,
// layers/attention.py, layers/blocks.py, layers/ffn.py): transformer.wte, blocks of norm_1, attn.Wqkv
// (d_model + 2 kv_n_heads x head_dim wide) and attn.out_proj, norm_2, ffn.up_proj / ffn.down_proj
// (GELU, d_model x expansion_ratio wide), norm_f; no_bias drops every bias, norms' included. The
// output layer is wte (tie_word_embeddings, true by default). A learned position table
// (transformer.wpe, max_seq_len rows) exists only without ALiBi: the Hub's MPT code builds it when
// `not alibi` (mosaicml/mpt-7b, 6,649,286,656 parameters, has none).
void parse_mpt(const FieldReader& f, ModelArchitecture& a) {
  a.vocab_size = f.require_int({"vocab_size"}, 1, L::kMaxVocab);
  a.hidden_size = f.require_int({"d_model"}, 1, L::kMaxHidden);
  a.num_layers = f.require_int({"n_layers"}, 1, L::kMaxLayers);
  read_heads(f, a, {"n_heads"}, {});
  a.max_position_embeddings = f.int_or({"max_seq_len"}, 1, L::kMaxPositions, 2048);

  static const Json kEmpty = Json::object();
  const Json* attn = f.find({"attn_config"});
  if (attn && !attn->is_object()) throw Error(ErrorCode::kInvalidType, f.path("attn_config"), "attn_config must be an object");
  const FieldReader at(attn ? *attn : kEmpty, f.path("attn_config"));
  const std::string attn_type = at.get_string({"attn_type"}).value_or("multihead_attention");
  if (attn_type == "multihead_attention") {
    a.attention.num_kv_heads = a.attention.num_heads;
  } else if (attn_type == "multiquery_attention") {
    a.attention.num_kv_heads = 1;
  } else if (attn_type == "grouped_query_attention") {
    if (!at.has({"kv_n_heads"})) {
      throw Error(ErrorCode::kMissingField, at.path("kv_n_heads"), "grouped_query_attention needs kv_n_heads");
    }
    read_kv_heads(at, a, {"kv_n_heads"});
  } else {
    throw invalid(at.path("attn_type"), "attn_type '" + attn_type.substr(0, 64) +
                                            "' is not one of multihead_attention, multiquery_attention, grouped_query_attention");
  }
  if (at.bool_or({"qk_ln"}, false)) {
    throw Error(ErrorCode::kUnsupported, at.path("qk_ln"),
                "qk_ln (LayerNorms over the whole query and key widths) is not modelled for mpt");
  }
  a.attention.layout = QkvLayout::kFused;
  const bool alibi = at.bool_or({"alibi"}, true);  // MptAttentionConfig: alibi=True
  if (alibi) {
    a.position = PositionKind::kAlibi;
  } else if (at.bool_or({"rope"}, false)) {
    a.position = PositionKind::kRotary;
    a.attention.rotary_dim = a.attention.head_dim;
  } else if (f.bool_or({"learned_pos_emb"}, true)) {
    a.position = PositionKind::kLearned;
    a.learned_position_rows = a.max_position_embeddings;
  } else {
    a.position = PositionKind::kRotary;  // no position signal at all: nothing rotated, no table
    a.attention.rotary_dim = 0;
  }
  a.attention_dropout = at.get_number({"attn_pdrop"}, 0.0, 1.0).value_or(0.0);

  const std::string norm = f.get_string({"norm_type"}).value_or("low_precision_layernorm");
  if (norm == "low_precision_layernorm" || norm == "layernorm") {
    a.norm = NormKind::kLayerNorm;
  } else if (norm == "rmsnorm" || norm == "low_precision_rmsnorm") {
    a.norm = NormKind::kRmsNorm;
  } else {
    throw invalid(f.path("norm_type"), "norm_type '" + norm.substr(0, 64) +
                                           "' is not one of low_precision_layernorm, layernorm, rmsnorm, low_precision_rmsnorm");
  }
  const bool bias = !f.bool_or({"no_bias"}, true);  // MptConfig: no_bias=True
  a.norm_bias = bias && a.norm == NormKind::kLayerNorm;
  a.attention.qkv_bias = a.attention.o_bias = a.mlp.bias = bias;

  const Json* ffn = f.find({"ffn_config"});
  if (ffn && !ffn->is_object()) throw Error(ErrorCode::kInvalidType, f.path("ffn_config"), "ffn_config must be an object");
  const FieldReader fc(ffn ? *ffn : kEmpty, f.path("ffn_config"));
  const std::string ffn_type = fc.get_string({"ffn_type"}).value_or("mptmlp");
  if (ffn_type != "mptmlp" && ffn_type != "mptglu") {
    throw Error(ErrorCode::kUnsupported, fc.path("ffn_type"),
                "ffn_type '" + ffn_type.substr(0, 64) + "' is not modelled for mpt (mptmlp and mptglu are)");
  }
  a.mlp.gated = ffn_type == "mptglu";
  a.mlp.activation = "gelu";  // layers/ffn.py: nn.GELU(approximate='none')
  const double ratio = f.get_number({"expansion_ratio"}, 1e-3, 1e3).value_or(4.0);
  // layers/ffn.py resolve_ffn_hidden_size: ffn_hidden_size if given, else int(d_model * expansion_ratio).
  const auto width = fc.get_int({"ffn_hidden_size"}, 1, L::kMaxIntermediate);
  const double derived = static_cast<double>(a.hidden_size) * ratio;
  if (!width && (derived < 1 || derived > static_cast<double>(L::kMaxIntermediate))) {
    throw Error(ErrorCode::kOutOfRange, f.path("expansion_ratio"), "d_model x expansion_ratio is out of range");
  }
  a.mlp.intermediate_size = width ? *width : static_cast<std::int64_t>(derived);
  a.tie_word_embeddings = f.bool_or({"tie_word_embeddings"}, true);
}

void parse_falcon(const FieldReader& f, ModelArchitecture& a, const std::string& original_type) {
  a.vocab_size = f.require_int({"vocab_size"}, 1, L::kMaxVocab);
  a.hidden_size = f.require_int({"n_embed", "hidden_size"}, 1, L::kMaxHidden);
  a.num_layers = f.require_int({"n_layer", "num_hidden_layers"}, 1, L::kMaxLayers);
  read_heads(f, a, {"n_head", "num_attention_heads"}, {"head_dim"});
  // Legacy remote-code configs: RefinedWeb (falcon-40b) is the new decoder architecture with
  // n_head_kv groups; RefinedWebModel (falcon-7b) is multi-query.
  const bool new_arch = f.bool_or({"new_decoder_architecture"}, original_type == "RefinedWeb");
  const bool multi_query = f.bool_or({"multi_query"}, original_type != "RefinedWeb");
  a.attention.layout = QkvLayout::kFused;
  if (new_arch) {
    read_kv_heads(f, a, {"num_kv_heads", "n_head_kv"});
  } else {
    a.attention.num_kv_heads = multi_query ? 1 : a.attention.num_heads;
    // FalconAttention passes the one K/V head to SDPA as it is (modeling_falcon.py, v4.44.2 and v5).
    a.attention.sdpa_unexpanded_kv = multi_query;
  }
  const bool alibi = f.bool_or({"alibi"}, false);
  a.position = alibi ? PositionKind::kAlibi : PositionKind::kRotary;
  if (!alibi) a.attention.rotary_dim = a.attention.head_dim;
  a.parallel_block = new_arch || f.bool_or({"parallel_attn"}, true);
  a.norm = NormKind::kLayerNorm;
  a.norm_bias = true;
  if (new_arch) {
    a.norms_per_layer = f.int_or({"num_ln_in_parallel_attn"}, 1, 2, 2);
  } else {
    a.norms_per_layer = a.parallel_block ? 1 : 2;
  }
  const bool bias = f.bool_or({"bias"}, false);
  a.attention.qkv_bias = a.attention.o_bias = a.mlp.bias = bias;
  a.mlp.intermediate_size = f.int_or({"ffn_hidden_size"}, 1, L::kMaxIntermediate, 4 * a.hidden_size);
  a.mlp.activation = f.get_string({"activation"}).value_or("gelu");
  a.max_position_embeddings = f.int_or({"max_position_embeddings"}, 0, L::kMaxPositions, 2048);
  a.tie_word_embeddings = f.bool_or({"tie_word_embeddings"}, true);
}

void parse_qwen1(const FieldReader& f, ModelArchitecture& a) {
  read_dims(f, a, {"hidden_size"}, {"num_hidden_layers"}, {"num_attention_heads"}, {"kv_channels"});
  // QWenMLP: w1 and w2 are each intermediate_size / 2 wide (the config states the sum).
  const std::int64_t inter = f.require_int({"intermediate_size"}, 2, L::kMaxIntermediate);
  if (inter % 2 != 0) throw invalid(f.path("intermediate_size"), "intermediate_size of a qwen model must be even");
  a.mlp.intermediate_size = inter / 2;
  a.mlp.gated = true;
  a.mlp.activation = "silu";
  const bool no_bias = f.bool_or({"no_bias"}, true);
  a.attention.layout = QkvLayout::kFused;
  a.attention.qkv_bias = true;  // c_attn always has a bias in modeling_qwen.py
  a.attention.o_bias = a.mlp.bias = !no_bias;
  a.norm = NormKind::kRmsNorm;
  const double pct = f.get_number({"rotary_pct"}, 0.0, 1.0).value_or(1.0);
  a.attention.rotary_dim = rotary_dims(a.attention.head_dim, pct);
  a.max_position_embeddings = f.int_or({"max_position_embeddings", "seq_length"}, 0, L::kMaxPositions, 0);
  a.tie_word_embeddings = f.bool_or({"tie_word_embeddings"}, false);
}

void parse_phi(const FieldReader& f, ModelArchitecture& a) {
  read_llama_like(f, a);
  a.norm = NormKind::kLayerNorm;
  a.norm_bias = true;
  a.parallel_block = true;
  a.norms_per_layer = 1;
  a.mlp.gated = false;
  a.mlp.activation = f.get_string({"hidden_act"}).value_or("gelu_new");
  a.attention.qkv_bias = a.attention.o_bias = a.mlp.bias = true;
  a.attention.qk_norm = f.bool_or({"qk_layernorm"}, false);
  a.attention.qk_norm_kind = NormKind::kLayerNorm;
  a.attention.qk_norm_bias = true;
  a.lm_head_bias = true;
  const double partial = f.get_number({"partial_rotary_factor"}, 0.0, 1.0).value_or(0.5);
  a.attention.rotary_dim = rotary_dims(a.attention.head_dim, partial);
}

void parse_stablelm(const FieldReader& f, ModelArchitecture& a) {
  read_llama_like(f, a);
  a.norm = NormKind::kLayerNorm;
  a.norm_bias = true;
  a.attention.qkv_bias = f.bool_or({"use_qkv_bias"}, false);
  a.attention.o_bias = false;
  a.attention.qk_norm = f.bool_or({"qk_layernorm"}, false);
  a.attention.qk_norm_per_head = true;
  a.attention.qk_norm_kind = NormKind::kLayerNorm;
  a.parallel_block = f.bool_or({"use_parallel_residual"}, false);
  a.norms_per_layer = a.parallel_block ? 1 : 2;
  const double partial = f.get_number({"partial_rotary_factor"}, 0.0, 1.0).value_or(0.25);
  a.attention.rotary_dim = rotary_dims(a.attention.head_dim, partial);
}

void parse_starcoder2(const FieldReader& f, ModelArchitecture& a) {
  read_llama_like(f, a);
  a.norm = NormKind::kLayerNorm;
  a.norm_bias = true;
  a.mlp.gated = false;
  a.mlp.activation = f.get_string({"hidden_act"}).value_or("gelu_pytorch_tanh");
  const bool bias = f.bool_or({"use_bias"}, true);
  a.attention.qkv_bias = a.attention.o_bias = a.mlp.bias = bias;
  a.tie_word_embeddings = f.bool_or({"tie_word_embeddings"}, true);
}

void parse_deepseek(const FieldReader& f, ModelArchitecture& a, bool v3) {
  read_llama_like(f, a);
  AttentionSpec& at = a.attention;
  at.layout = QkvLayout::kLowRank;
  at.num_kv_heads = at.num_heads;  // MLA: every head reads the shared latent
  // q_lora_rank: absent -> the Config default (1536); present as null -> plain q_proj (V2-Lite).
  auto it = f.json().find("q_lora_rank");
  if (it == f.json().end()) at.q_lora_rank = 1536;
  else if (it->is_null()) at.q_lora_rank = 0;
  else at.q_lora_rank = f.require_int({"q_lora_rank"}, 1, L::kMaxHidden);
  at.kv_lora_rank = f.int_or({"kv_lora_rank"}, 1, L::kMaxHidden, 512);
  at.qk_nope_head_dim = f.int_or({"qk_nope_head_dim"}, 0, L::kMaxHeadDim, 128);
  at.qk_rope_head_dim = f.int_or({"qk_rope_head_dim"}, 0, L::kMaxHeadDim, 64);
  at.v_head_dim = f.int_or({"v_head_dim"}, 1, L::kMaxHeadDim, 128);
  at.head_dim = at.qk_nope_head_dim + at.qk_rope_head_dim;
  at.rotary_dim = at.qk_rope_head_dim;
  at.o_bias = false;
  read_moe_common(f, a, {"n_routed_experts"}, {"moe_intermediate_size"});
  if (a.is_moe()) {
    const std::int64_t shared = f.int_or({"n_shared_experts"}, 0, L::kMaxExperts, 0);
    a.moe.num_shared_experts = shared;
    a.moe.shared_intermediate_size = shared * a.moe.expert_intermediate_size;
    a.moe.first_dense_layers = f.int_or({"first_k_dense_replace"}, 0, a.num_layers, 0);
    a.moe.moe_layer_frequency = f.int_or({"moe_layer_freq"}, 1, L::kMaxLayers, 1);
    // V3's noaux_tc routing adds a learned per-expert score correction bias to the gate.
    const std::string method = f.get_string({"topk_method"}).value_or(v3 ? "noaux_tc" : "greedy");
    a.moe.router_bias = method == "noaux_tc";
  }
}

void parse_t5(const FieldReader& f, ModelArchitecture& a, bool mt5) {
  a.kind = ArchKind::kEncoderDecoder;
  a.vocab_size = f.require_int({"vocab_size"}, 1, L::kMaxVocab);
  a.hidden_size = f.require_int({"d_model", "hidden_size"}, 1, L::kMaxHidden);
  a.num_encoder_layers = f.require_int({"num_layers", "num_hidden_layers"}, 1, L::kMaxLayers);
  a.num_layers = f.int_or({"num_decoder_layers"}, 1, L::kMaxLayers, a.num_encoder_layers);
  a.attention.num_heads = f.require_int({"num_heads", "num_attention_heads"}, 1, L::kMaxHeads);
  a.attention.num_kv_heads = a.attention.num_heads;
  a.attention.head_dim = f.require_int({"d_kv"}, 1, L::kMaxHeadDim);
  a.mlp.intermediate_size = f.require_int({"d_ff"}, 1, L::kMaxIntermediate);
  const std::string proj = f.get_string({"feed_forward_proj"}).value_or("relu");
  a.mlp.gated = proj.rfind("gated-", 0) == 0;
  a.mlp.activation = a.mlp.gated ? proj.substr(6) : proj;
  a.position = PositionKind::kRelativeBias;
  a.relative_attention_buckets = f.int_or({"relative_attention_num_buckets"}, 1, L::kMaxPositions, 32);
  a.norm = NormKind::kRmsNorm;
  a.tie_word_embeddings = f.bool_or({"tie_word_embeddings"}, !mt5);
}

void parse_bert(const FieldReader& f, ModelArchitecture& a) {
  a.kind = ArchKind::kEncoder;
  read_dims(f, a, {"hidden_size"}, {"num_hidden_layers"}, {"num_attention_heads"});
  a.mlp.intermediate_size = f.require_int({"intermediate_size"}, 1, L::kMaxIntermediate);
  a.mlp.activation = f.get_string({"hidden_act"}).value_or("gelu");
  a.mlp.bias = a.attention.qkv_bias = a.attention.o_bias = true;
  a.max_position_embeddings = f.int_or({"max_position_embeddings"}, 1, L::kMaxPositions, 512);
  a.position = PositionKind::kLearned;
  a.learned_position_rows = a.max_position_embeddings;
  a.type_vocab_size = f.int_or({"type_vocab_size"}, 0, L::kMaxVocab, 2);
  a.norm = NormKind::kLayerNorm;
  a.norm_bias = true;
  a.post_norm = true;
  a.embedding_norm = true;
  a.final_norm = false;
  a.has_lm_head = false;  // BertModel; heads for MLM/classification are task-specific
  a.pooler = true;
}

// transformers builds a wrapper's text_config as its text config class (Gemma3Config: Gemma3TextConfig(**text_config)),
// so a key the nested dict omits takes that class's default. Published wrappers rely on it
// (google/gemma-3-4b-it's text_config names no vocab_size, heads or head_dim). The defaults that
// shape the model, per inner model_type, each from its class's __init__ in transformers:
struct TextConfigDefaults {
  const char* model_type;
  const char* wrapper;  // the wrapper whose text_config class this is (model_type when the dict omits it)
  const char* source;
  const char* keys;     // JSON object of defaults
};
const TextConfigDefaults kTextConfigDefaults[] = {
    {"gemma3_text", "gemma3", "Gemma3TextConfig, transformers models/gemma3/configuration_gemma3.py@008f5c8c",
     R"({"vocab_size":262208,"hidden_size":2304,"intermediate_size":9216,"num_hidden_layers":26,"num_attention_heads":8,
         "num_key_value_heads":4,"head_dim":256,"max_position_embeddings":131072,"sliding_window":4096,"tie_word_embeddings":true})"},
    {"llama4_text", "llama4", "Llama4TextConfig, transformers models/llama4/configuration_llama4.py@008e5743",
     R"({"vocab_size":202048,"hidden_size":5120,"intermediate_size":8192,"intermediate_size_mlp":16384,"num_hidden_layers":48,
         "num_attention_heads":40,"num_key_value_heads":8,"head_dim":128,"max_position_embeddings":131072,
         "num_experts_per_tok":1,"num_local_experts":16,"interleave_moe_layer_step":1,"tie_word_embeddings":false})"},
    {"mistral", "mistral3", "MistralConfig, transformers models/mistral/configuration_mistral.py@001f85b3",
     R"({"vocab_size":32000,"hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,"num_attention_heads":32,
         "num_key_value_heads":8,"max_position_embeddings":131072,"sliding_window":4096})"},
};

// A nested text_config with the omitted keys filled from its class's defaults, and a warning
// naming them; unchanged when memfit knows no defaults for it.
Json with_text_config_defaults(const Json& text, const std::string& wrapper_type, std::vector<std::string>& warnings) {
  Json filled = text;
  const std::string inner = text.contains("model_type") && text["model_type"].is_string() ? text["model_type"].get<std::string>() : "";
  for (const TextConfigDefaults& d : kTextConfigDefaults) {
    if (inner != d.model_type && !(inner.empty() && wrapper_type == d.wrapper)) continue;
    if (inner.empty()) filled["model_type"] = d.model_type;
    std::string used;
    const Json defaults = parse_json_text(d.keys);
    for (const auto& [key, value] : defaults.items()) {
      if (filled.contains(key)) continue;
      filled[key] = value;
      used += (used.empty() ? "" : ", ") + key + " " + value.dump();
    }
    if (!used.empty()) warnings.push_back("text_config leaves out " + used + ": transformers' defaults (" + d.source + ")");
    break;
  }
  return filled;
}

bool looks_llama_like(const Json& j) {
  for (const char* k : {"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size"}) {
    if (!j.contains(k)) return false;
  }
  return true;
}

}  // namespace

const std::vector<std::string>& supported_model_types() { return kSupported; }

namespace {
ModelArchitecture parse_config(const Json& config, const std::string& base, bool top_level) {
  const FieldReader f(config, base);
  ModelArchitecture a;
  std::string type = f.get_string({"model_type"}).value_or("");
  const std::string original_type = type;
  if (type == "RefinedWeb" || type == "RefinedWebModel") type = "falcon";
  a.model_type = type;
  a.name = f.get_string({"_name_or_path"}).value_or("");
  a.torch_dtype = f.get_string({"torch_dtype", "dtype"}).value_or("");

  // A multimodal wrapper (gemma3, mistral3, llava, ...) nests its language model under
  // text_config: estimate that, and say what is left out. One level only.
  const bool known = type == "falcon" || std::find(kSupported.begin(), kSupported.end(), type) != kSupported.end();
  const Json* text = f.find({"text_config"});
  if (top_level && !known && text != nullptr && text->is_object() && !looks_llama_like(config)) {
    std::vector<std::string> defaulted;
    const Json filled = with_text_config_defaults(*text, original_type, defaulted);
    ModelArchitecture inner = parse_config(filled, f.path("text_config"), /*top_level=*/false);
    inner.warnings.insert(inner.warnings.begin(), defaulted.begin(), defaulted.end());
    inner.warnings.insert(inner.warnings.begin(),
                          "model_type '" + original_type.substr(0, 64) + "' wraps a language model: memfit estimates text_config (model_type '" +
                              inner.model_type + "'); the vision encoder and projector are not counted");
    if (inner.name.empty()) inner.name = a.name;
    if (inner.torch_dtype.empty()) inner.torch_dtype = a.torch_dtype;
    return inner;
  }

  if (type == "gpt2") parse_gpt2(f, a);
  else if (type == "opt") parse_opt(f, a);
  else if (type == "bloom") parse_bloom(f, a);
  else if (type == "gpt_neox") parse_gpt_neox(f, a);
  else if (type == "gptj") parse_gptj(f, a);
  else if (type == "gpt_neo") parse_gpt_neo(f, a);
  else if (type == "codegen") parse_codegen(f, a);
  else if (type == "gpt_bigcode") parse_gpt_bigcode(f, a);
  else if (type == "biogpt") parse_biogpt(f, a);
  else if (type == "llama4_text") parse_llama4_text(f, a);
  else if (type == "mpt") parse_mpt(f, a);
  else if (type == "falcon") parse_falcon(f, a, original_type);
  else if (type == "qwen") parse_qwen1(f, a);
  else if (type == "phi") parse_phi(f, a);
  else if (type == "stablelm") parse_stablelm(f, a);
  else if (type == "starcoder2") parse_starcoder2(f, a);
  else if (type == "deepseek_v2" || type == "deepseek_v3") parse_deepseek(f, a, type == "deepseek_v3");
  else if (type == "t5" || type == "mt5") parse_t5(f, a, type == "mt5");
  else if (type == "bert") parse_bert(f, a);
  else if (type == "llama" || type == "mistral") read_llama_like(f, a);
  else if (type == "mixtral") {
    read_llama_like(f, a);
    read_moe_common(f, a, {"num_local_experts"}, {"intermediate_size"});
  } else if (type == "qwen2" || type == "qwen2_moe") {
    read_llama_like(f, a);
    a.attention.qkv_bias = f.bool_or({"qkv_bias"}, true);  // Qwen2Attention: q/k/v biased, o not
    a.attention.o_bias = false;
    if (type == "qwen2_moe") {
      read_moe_common(f, a, {"num_experts"}, {"moe_intermediate_size"});
      a.moe.shared_intermediate_size = f.int_or({"shared_expert_intermediate_size"}, 0, L::kMaxIntermediate, 0);
      a.moe.num_shared_experts = a.moe.shared_intermediate_size > 0 ? 1 : 0;
      a.moe.shared_expert_gate = a.moe.shared_intermediate_size > 0;
    }
  } else if (type == "qwen3" || type == "qwen3_moe") {
    read_llama_like(f, a);
    a.attention.qk_norm = true;
    if (type == "qwen3_moe") read_moe_common(f, a, {"num_experts"}, {"moe_intermediate_size"});
  } else if (type == "gemma" || type == "gemma2" || type == "gemma3_text") {
    read_llama_like(f, a);
    a.mlp.activation = f.get_string({"hidden_activation", "hidden_act"}).value_or("gelu_pytorch_tanh");
    a.tie_word_embeddings = f.bool_or({"tie_word_embeddings"}, true);
    if (type != "gemma") a.norms_per_layer = 4;
    // Gemma2ForCausalLM.forward: logits / cap, tanh, * cap before the loss (gemma3: null in its configs).
    if (type != "gemma") a.final_logit_softcapping = f.get_number({"final_logit_softcapping"}, 0, 1e6).value_or(0);
    if (type == "gemma3_text") a.attention.qk_norm = true;
  } else if (type == "phi3") {
    read_llama_like(f, a);
    a.attention.layout = QkvLayout::kFused;
    a.mlp.fused_gate_up = true;
  } else if (looks_llama_like(config)) {
    read_llama_like(f, a);
    // Routed experts under the usual keys (mixtral, qwen-moe, deepseek, gpt-oss spellings):
    // counting a MoE as its dense skeleton would be off by the experts.
    read_moe_common(f, a, {"num_local_experts", "num_experts", "n_routed_experts"}, {"moe_intermediate_size", "intermediate_size"});
    a.warnings.push_back("model_type '" + original_type.substr(0, 64) + "' is not one memfit knows; parsed as a " +
                         "llama-style decoder (q/k/v/o and gated MLP, RMSNorm" +
                         (a.is_moe() ? ", " + std::to_string(a.moe.num_experts) + " routed experts, top " +
                                           std::to_string(a.moe.top_k)
                                     : std::string()) +
                         "): check the parameter count");
    a.model_type = "generic";
  } else if (original_type.empty()) {
    throw Error(ErrorCode::kMissingField, pointer_append(base, "model_type"),
                "missing required field model_type (supported: " + joined_supported() + ")");
  } else {
    throw Error(ErrorCode::kUnsupportedModelType, pointer_append(base, "model_type"),
                "model_type '" + original_type.substr(0, 64) + "' is not supported (supported: " +
                    joined_supported() + ")");
  }

  // Dropout as each family names it (gpt2 *_pdrop, bert *_dropout_prob, t5 dropout_rate, opt
  // dropout, llama/bloom attention_dropout / hidden_dropout).
  if (type != "mpt") {  // mpt reads attn_config.attn_pdrop
    a.attention_dropout = f.get_number({"attn_pdrop", "attention_probs_dropout_prob", "attention_dropout", "dropout_rate"}, 0.0, 1.0)
                              .value_or(0.0);
  }
  a.hidden_dropout = f.get_number({"resid_pdrop", "resid_dropout", "hidden_dropout_prob", "hidden_dropout", "dropout", "dropout_rate"}, 0.0, 1.0)
                         .value_or(0.0);
  a.embedding_dropout = f.get_number({"embd_pdrop", "emb_pdrop", "hidden_dropout_prob", "embed_dropout"}, 0.0, 1.0).value_or(0.0);
  if (a.is_moe() && a.model_type != "deepseek_v2" && a.model_type != "deepseek_v3") {
    a.moe.moe_layer_frequency = f.int_or({"decoder_sparse_step", "interleave_moe_layer_step"}, 1, L::kMaxLayers, 1);
    read_dense_layer_list(f, a, "mlp_only_layers");
  }
  if (a.attention.num_heads * a.attention.head_dim > L::kMaxHidden * 4) {
    throw Error(ErrorCode::kOutOfRange, base,
                "num_attention_heads x head_dim (" + format_count(a.attention.num_heads * a.attention.head_dim) +
                    ") exceeds " + format_count(L::kMaxHidden * 4));
  }
  return a;
}

}  // namespace

ModelArchitecture parse_hf_config(const Json& config, const std::string& base) {
  return parse_config(config, base, /*top_level=*/true);
}

ModelArchitecture parse_hf_config_text(std::string_view text) {
  return parse_hf_config(parse_json_text(text), "");
}

}  // namespace memfit
