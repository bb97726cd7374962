// The toy MoE block the block tests count by hand.
#pragma once
#include "hf_config/parse_hf_config.h"

namespace memfit_test {

/// Qwen2-MoE-like toy: h 8, 2 heads and 1 K/V head of 4, 4 experts of width 5 (top 2), a shared
/// expert of width 12 behind its gate.
inline memfit::ModelArchitecture moe_toy() {
  return memfit::parse_hf_config_text(R"({"model_type":"qwen2_moe","vocab_size":32,"hidden_size":8,
    "num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":1,"intermediate_size":16,
    "num_experts":4,"num_experts_per_tok":2,"moe_intermediate_size":5,"shared_expert_intermediate_size":12})");
}

}  // namespace memfit_test
