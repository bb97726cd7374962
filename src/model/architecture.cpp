// Which decoder layers of a MoE model are sparse (DeepSeek's first_k_dense_replace and
// moe_layer_freq, Qwen-MoE's decoder_sparse_step and mlp_only_layers); attention's head dims.
#include "model/architecture.h"

#include <algorithm>

namespace memfit {

bool ModelArchitecture::layer_is_moe(std::int64_t layer) const {
  if (!is_moe()) return false;
  if (layer < moe.first_dense_layers) return false;
  if (std::find(moe.dense_layers.begin(), moe.dense_layers.end(), layer) != moe.dense_layers.end()) {
    return false;
  }
  const std::int64_t freq = moe.moe_layer_frequency > 0 ? moe.moe_layer_frequency : 1;
  // transformers (qwen2_moe, qwen3_moe): sparse when (layer + 1) % decoder_sparse_step == 0.
  // DeepSeek: sparse when layer >= first_k_dense_replace and layer % moe_layer_freq == 0; with
  // the published configs (freq 1) both rules agree. first_dense_layers > 0 selects DeepSeek's.
  if (moe.first_dense_layers > 0) return layer % freq == 0;
  return (layer + 1) % freq == 0;
}

AttentionDims attention_dims(const ModelArchitecture& a) {
  const AttentionSpec& at = a.attention;
  AttentionDims d;
  d.heads = at.num_heads;
  if (at.layout == QkvLayout::kLowRank) {
    d.kv_heads = at.num_heads;
    d.qk_head_dim = at.qk_nope_head_dim + at.qk_rope_head_dim;
    d.v_head_dim = at.v_head_dim;
  } else {
    d.kv_heads = at.num_kv_heads;
    d.qk_head_dim = d.v_head_dim = at.head_dim;
  }
  return d;
}

}  // namespace memfit
