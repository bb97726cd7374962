// A llama-shaped toy for the PEFT state tests: h 8, 2 heads of 4, 1 K/V head, f 16, vocab 32, untied.
#pragma once
#include "hf_config/parse_hf_config.h"

inline memfit::ModelArchitecture toy() {
  return memfit::parse_hf_config_text(R"({"model_type":"llama","vocab_size":32,"hidden_size":8,
    "num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":1,"intermediate_size":16})");
}
