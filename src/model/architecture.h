// ModelArchitecture: the typed description of a transformer that every later stage reads
// (tensor inventory, activations, TP splits). Built from a HF config.json by hf_config/, or by hand
// in tests. Plain data: no JSON here.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace memfit {

enum class ArchKind { kDecoder, kEncoderDecoder, kEncoder };
enum class NormKind { kLayerNorm, kRmsNorm };
enum class PositionKind { kLearned, kRotary, kAlibi, kRelativeBias };

/// How one projection of the attention block is laid out in the checkpoint.
enum class QkvLayout {
  kSeparate,     // q_proj, k_proj, v_proj (llama, opt, bert, t5, gptj, phi, starcoder2)
  kFused,        // one qkv matrix (gpt2 c_attn, bloom, gpt_neox, falcon, phi3, qwen-1)
  kLowRank,      // DeepSeek MLA: q_a/q_b (or q_proj), kv_a_proj_with_mqa, kv_b_proj
};

struct AttentionSpec {
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;   // == num_heads: MHA; 1: MQA; else GQA
  std::int64_t head_dim = 0;
  QkvLayout layout = QkvLayout::kSeparate;
  bool qkv_bias = false;
  bool o_bias = false;
  NormKind qk_norm_kind = NormKind::kRmsNorm;
  bool qk_norm = false;            // per-head norm of q and k (qwen3, gemma3, olmo-style)
  bool qk_norm_per_head = false;   // a separate norm per head (stablelm's LayerNormPerHead)
  bool qk_norm_bias = false;
  std::int64_t rotary_dim = 0;     // dimensions of each head that are rotated (0: no rotary)
  std::int64_t sliding_window = 0; // 0: full attention
  bool upcast_qk = false;          // eager QK^T in fp32: the score matmul saves fp32 q and k (gpt_neo, codegen)
  /// The model hands SDPA fewer K/V heads than query heads without enable_gqa (transformers'
  /// FalconAttention with multi-query), so only the math kernel takes them.
  bool sdpa_unexpanded_kv = false;
  // Multi-head latent attention (DeepSeek-V2/V3), used when layout == kLowRank.
  std::int64_t q_lora_rank = 0;    // 0: q is a plain projection
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
};

struct MlpSpec {
  std::int64_t intermediate_size = 0;  // width of one branch (gate and up each have this width)
  bool gated = false;                  // SwiGLU/GeGLU: gate and up projections, then down
  bool fused_gate_up = false;          // phi3's gate_up_proj
  bool bias = false;
  std::string activation;              // as the config names it: silu, gelu, gelu_new, relu, ...
};

struct MoeSpec {
  std::int64_t num_experts = 0;        // routed experts; 0: dense model
  std::int64_t top_k = 0;
  std::int64_t expert_intermediate_size = 0;
  std::int64_t num_shared_experts = 0;         // DeepSeek: shared experts merged into one MLP
  std::int64_t shared_intermediate_size = 0;   // width of the (merged) shared expert MLP
  bool shared_expert_gate = false;             // qwen2_moe: sigmoid gate Linear(h, 1)
  bool router_bias = false;                    // DeepSeek-V3 e_score_correction_bias
  std::int64_t first_dense_layers = 0;         // DeepSeek first_k_dense_replace
  std::int64_t moe_layer_frequency = 1;        // a MoE layer every k layers (decoder_sparse_step)
  std::vector<std::int64_t> dense_layers;      // explicit dense layers (qwen mlp_only_layers)
  bool expert_bias = false;
};

/// Attention's heads and head dims for the whole model. MLA (DeepSeek-V2 §2.1): every query head
/// has its own K/V head, q and k are nope + rope wide, v is v_head_dim wide.
struct AttentionDims {
  std::int64_t heads = 0, kv_heads = 0;
  std::int64_t qk_head_dim = 0, v_head_dim = 0;
};

struct ModelArchitecture {
  std::string model_type;       // as the config names it (or "generic" for an unknown type)
  std::string name;             // _name_or_path or preset id; display only
  ArchKind kind = ArchKind::kDecoder;
  std::int64_t vocab_size = 0;
  std::int64_t hidden_size = 0;
  std::int64_t num_layers = 0;          // decoder layers (encoder layers for encoder-only)
  std::int64_t num_encoder_layers = 0;  // encoder-decoder only
  std::int64_t max_position_embeddings = 0;

  PositionKind position = PositionKind::kRotary;
  std::int64_t learned_position_rows = 0;   // rows of a learned position table (OPT adds 2)
  std::int64_t type_vocab_size = 0;         // BERT token-type embeddings
  std::int64_t relative_attention_buckets = 0;  // T5: per-stack bias table in the first block

  NormKind norm = NormKind::kRmsNorm;
  bool norm_bias = false;
  bool parallel_block = false;       // attention and MLP read the same input (gptj, neox, falcon, phi)
  std::int64_t norms_per_layer = 2;  // 1 for parallel blocks with one shared norm, 4 for gemma2/3
  bool embedding_norm = false;       // bloom's word_embeddings_layernorm, bert's embedding LayerNorm
  bool final_norm = true;
  bool post_norm = false;            // bert: norm after the residual add

  AttentionSpec attention;
  MlpSpec mlp;
  MoeSpec moe;

  bool tie_word_embeddings = false;
  bool lm_head_bias = false;
  double final_logit_softcapping = 0;  // logits = cap · tanh(logits / cap) (gemma2): 0 for none
  bool has_lm_head = true;           // bert (BertModel) has none; it has a pooler instead
  bool pooler = false;
  std::int64_t embed_projection_dim = 0;  // OPT-350m word_embed_proj_dim != hidden: project_in/out

  // Dropout probabilities in training mode: each active dropout saves a 1-byte mask for backward.
  double attention_dropout = 0;           // on the attention probabilities (eager kernels)
  double hidden_dropout = 0;              // after the attention output and after the MLP
  double embedding_dropout = 0;           // on the embedding output

  std::string torch_dtype;                // dtype the checkpoint is stored in ("" if unstated)
  std::vector<std::string> warnings;      // e.g. unknown model_type parsed as a generic decoder

  bool is_moe() const { return moe.num_experts > 0; }
  /// True when decoder layer `layer` carries routed experts.
  bool layer_is_moe(std::int64_t layer) const;
};

AttentionDims attention_dims(const ModelArchitecture& a);

}  // namespace memfit
