// Family rules of the HF config parser: key aliases, defaults of absent keys, layout flags.
// Configs written inline here are minimal versions of real ones (named in each case); counts
// below are worked out from the family's transformers module layout, term by term.
#include <catch2/catch.hpp>

#include <algorithm>

#include "common/error.h"
#include "hf_config/parse_hf_config.h"
#include "model/tensor_inventory.h"
#include "presets/registry.h"

using namespace memfit;

namespace {

ModelArchitecture preset(const char* id) {
  const presets::ModelPreset* p = presets::find_model(id);
  REQUIRE(p != nullptr);
  return parse_hf_config_text(p->config_text);
}

std::int64_t params(const std::string& text) {
  return build_tensor_inventory(parse_hf_config_text(text)).total_params;
}

}  // namespace

TEST_CASE("qwen2_moe counts routed experts, the shared expert and its gate", "[hf_config][moe]") {
  // Qwen/Qwen1.5-MoE-A2.7B dimensions. Per layer: norms 2*2048; q,k,v with bias 3*(2048^2+2048);
  // o 2048^2; router 60*2048; experts 60*3*2048*1408; shared 3*2048*5632; shared gate 2048.
  const std::string cfg = R"({"model_type":"qwen2_moe","vocab_size":151936,"hidden_size":2048,
    "num_hidden_layers":24,"num_attention_heads":16,"num_key_value_heads":16,"intermediate_size":5632,
    "moe_intermediate_size":1408,"shared_expert_intermediate_size":5632,"num_experts":60,
    "num_experts_per_tok":4,"decoder_sparse_step":1,"tie_word_embeddings":false})";
  const std::int64_t layer = 2 * 2048 + 3 * (2048LL * 2048 + 2048) + 2048LL * 2048 + 60 * 2048 +
                             60LL * 3 * 2048 * 1408 + 3LL * 2048 * 5632 + 2048;
  CHECK(params(cfg) == 2LL * 151936 * 2048 + 24 * layer + 2048);
  CHECK(params(cfg) == 14315784192LL);  // the published 14.3B total of Qwen1.5-MoE-A2.7B
}

TEST_CASE("deepseek_v2 with q_lora_rank null uses a plain q_proj and dense first layers", "[hf_config][mla]") {
  // deepseek-ai/DeepSeek-V2-Lite dimensions.
  const std::string cfg = R"({"model_type":"deepseek_v2","vocab_size":102400,"hidden_size":2048,
    "num_hidden_layers":27,"num_attention_heads":16,"num_key_value_heads":16,"intermediate_size":10944,
    "moe_intermediate_size":1408,"n_routed_experts":64,"n_shared_experts":2,"num_experts_per_tok":6,
    "first_k_dense_replace":1,"moe_layer_freq":1,"q_lora_rank":null,"kv_lora_rank":512,
    "qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,"topk_method":"greedy",
    "tie_word_embeddings":false})";
  const ModelArchitecture a = parse_hf_config_text(cfg);
  CHECK(a.attention.q_lora_rank == 0);
  CHECK_FALSE(a.layer_is_moe(0));
  CHECK(a.layer_is_moe(1));
  const std::int64_t attn = 2048LL * 16 * 192 + 2048LL * 576 + 512 + 512LL * 16 * 256 + 16LL * 128 * 2048;
  const std::int64_t dense = attn + 2 * 2048 + 3LL * 2048 * 10944;
  const std::int64_t moe = attn + 2 * 2048 + 64 * 2048 + 64LL * 3 * 2048 * 1408 + 3LL * 2048 * 2816;
  CHECK(params(cfg) == 2LL * 102400 * 2048 + dense + 26 * moe + 2048);
  CHECK(params(cfg) == 15706484224LL);  // the published 15.7B total of DeepSeek-V2-Lite
}

TEST_CASE("deepseek q_lora_rank defaults to 1536 when the key is absent", "[hf_config][mla]") {
  const std::string cfg = R"({"model_type":"deepseek_v3","vocab_size":1000,"hidden_size":256,
    "num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":512})";
  const ModelArchitecture a = parse_hf_config_text(cfg);
  CHECK(a.attention.q_lora_rank == 1536);
  CHECK(a.attention.kv_lora_rank == 512);
  CHECK_FALSE(a.is_moe());
}

TEST_CASE("phi3 fuses qkv and gate_up", "[hf_config]") {
  // microsoft/Phi-3-mini-4k-instruct dimensions: 3,821,079,552 parameters.
  const std::string cfg = R"({"model_type":"phi3","vocab_size":32064,"hidden_size":3072,
    "num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":32,"intermediate_size":8192,
    "tie_word_embeddings":false})";
  const std::int64_t layer = 2 * 3072 + 3072LL * 9216 + 3072LL * 3072 + 3072LL * 16384 + 8192LL * 3072;
  CHECK(params(cfg) == 2LL * 32064 * 3072 + 32 * layer + 3072);
  CHECK(params(cfg) == 3821079552LL);
}

TEST_CASE("gptj has one norm per parallel block and a biased untied lm_head", "[hf_config]") {
  const std::string cfg = R"({"model_type":"gptj","vocab_size":100,"n_embd":16,"n_layer":2,"n_head":4,
    "rotary_dim":2,"n_inner":null})";
  const ModelArchitecture a = parse_hf_config_text(cfg);
  CHECK(a.parallel_block);
  CHECK(a.mlp.intermediate_size == 64);
  CHECK(a.attention.rotary_dim == 2);
  // wte + lm_head(w,b) + per layer: ln_1(w,b), q,k,v,out (no bias), fc_in, fc_out (bias) + ln_f
  const std::int64_t layer = 2 * 16 + 4 * 16 * 16 + (16 * 64 + 64) + (64 * 16 + 16);
  CHECK(params(cfg) == 100 * 16 + (100 * 16 + 100) + 2 * layer + 2 * 16);
}

TEST_CASE("falcon legacy RefinedWeb keys select the new decoder architecture", "[hf_config][falcon]") {
  // tiiuae/falcon-40b as first published: model_type RefinedWeb, n_head_kv groups, ln_attn/ln_mlp.
  const std::string cfg = R"({"model_type":"RefinedWeb","vocab_size":65024,"hidden_size":8192,
    "n_layer":60,"n_head":128,"n_head_kv":8,"parallel_attn":true,"bias":false})";
  const ModelArchitecture a = parse_hf_config_text(cfg);
  CHECK(a.model_type == "falcon");
  CHECK(a.attention.num_kv_heads == 8);
  CHECK(a.norms_per_layer == 2);
  const std::int64_t layer = 2 * 2 * 8192 + 8192LL * (128 + 16) * 64 + 8192LL * 8192 + 2 * 8192LL * 32768;
  CHECK(params(cfg) == 65024LL * 8192 + 60 * layer + 2 * 8192);

  SECTION("RefinedWebModel is multi-query with one norm") {
    const ModelArchitecture b = parse_hf_config_text(R"({"model_type":"RefinedWebModel",
      "vocab_size":65024,"hidden_size":4544,"n_layer":32,"n_head":71,"parallel_attn":true})");
    CHECK(b.attention.num_kv_heads == 1);
    CHECK(b.norms_per_layer == 1);
  }
}

TEST_CASE("stablelm reads qkv bias, parallel residual and per-head qk norms", "[hf_config]") {
  const std::string cfg = R"({"model_type":"stablelm","vocab_size":100,"hidden_size":16,
    "num_hidden_layers":1,"num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":32,
    "use_qkv_bias":true,"qk_layernorm":true,"use_parallel_residual":true})";
  const ModelArchitecture a = parse_hf_config_text(cfg);
  CHECK(a.norms_per_layer == 1);
  // embed + lm_head + ln(w,b) + q(16x16+16) + k,v(8x16+8 each) + qk norms (4+2 heads x 4) + o + mlp + final ln
  const std::int64_t layer = 2 * 16 + (256 + 16) + 2 * (128 + 8) + (4 + 2) * 4 + 256 + 3 * 16 * 32;
  CHECK(params(cfg) == 2 * 100 * 16 + layer + 2 * 16);
}

TEST_CASE("tie_word_embeddings defaults follow each family", "[hf_config]") {
  CHECK(preset("openai-community/gpt2").tie_word_embeddings);
  CHECK(preset("facebook/opt-125m").tie_word_embeddings);
  CHECK(preset("google/gemma-2b").tie_word_embeddings);
  CHECK(preset("bigcode/starcoder2-7b").tie_word_embeddings);
  CHECK(preset("google-t5/t5-base").tie_word_embeddings);
  CHECK_FALSE(preset("meta-llama/Llama-2-7b-hf").tie_word_embeddings);
  CHECK_FALSE(preset("EleutherAI/pythia-160m").tie_word_embeddings);
  CHECK_FALSE(preset("bigscience/mt0-xxl").tie_word_embeddings);
}

TEST_CASE("attention variants are recognised", "[hf_config]") {
  CHECK(preset("meta-llama/Llama-3.1-8B").attention.num_kv_heads == 8);          // GQA
  CHECK(preset("tiiuae/falcon-7b").attention.num_kv_heads == 1);                 // MQA
  CHECK(preset("google/gemma-3-1b-it").attention.head_dim == 256);               // explicit head_dim
  CHECK(preset("Qwen/Qwen3-8B").attention.qk_norm);
  CHECK(preset("Qwen/Qwen2-7B").attention.qkv_bias);
  CHECK(preset("deepseek-ai/DeepSeek-V3").attention.layout == QkvLayout::kLowRank);
  CHECK(preset("microsoft/phi-2").parallel_block);
  CHECK(preset("EleutherAI/pythia-6.9b").parallel_block);
  CHECK(preset("google/gemma-2-9b").norms_per_layer == 4);
  CHECK(preset("Qwen/Qwen-7B").mlp.intermediate_size == 11008);                  // qwen-1 halves it
  CHECK(preset("bigscience/bloomz-560m").hidden_size == 1024);                   // n_embed alias
}

TEST_CASE("moe layouts: experts, shared experts, dense-first layers", "[hf_config][moe]") {
  const ModelArchitecture v3 = preset("deepseek-ai/DeepSeek-V3");
  CHECK(v3.moe.num_experts == 256);
  CHECK(v3.moe.shared_intermediate_size == 2048);
  CHECK_FALSE(v3.layer_is_moe(2));
  CHECK(v3.layer_is_moe(3));
  const ModelArchitecture q = preset("Qwen/Qwen3-30B-A3B");
  const TensorInventory inv = build_tensor_inventory(q);
  CHECK(inv.active_params_per_token == 3353032704LL);  // published activated parameters
  const ModelArchitecture mx = preset("mistralai/Mixtral-8x7B-Instruct-v0.1");
  CHECK(mx.moe.num_experts == 8);
  CHECK(mx.moe.top_k == 2);
}

TEST_CASE("qwen moe mlp_only_layers and decoder_sparse_step pick the dense layers", "[hf_config][moe]") {
  const ModelArchitecture a = parse_hf_config_text(R"({"model_type":"qwen3_moe","vocab_size":10,
    "hidden_size":8,"num_hidden_layers":6,"num_attention_heads":2,"intermediate_size":16,
    "moe_intermediate_size":4,"num_experts":4,"num_experts_per_tok":2,"decoder_sparse_step":2,
    "mlp_only_layers":[5]})");
  CHECK_FALSE(a.layer_is_moe(0));
  CHECK(a.layer_is_moe(1));
  CHECK(a.layer_is_moe(3));
  CHECK_FALSE(a.layer_is_moe(5));
}

TEST_CASE("an unknown llama-like model_type parses as a generic decoder with a warning", "[hf_config]") {
  const ModelArchitecture a = parse_hf_config_text(R"({"model_type":"olmo_future","vocab_size":100,
    "hidden_size":16,"num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":32})");
  CHECK(a.model_type == "generic");
  REQUIRE(a.warnings.size() == 1);
  CHECK_THAT(a.warnings[0], Catch::Contains("olmo_future"));

  SECTION("routed experts under the usual keys are counted, not dropped") {
    // openai/gpt-oss-20b dimensions: 32 experts of width 2880, top 4, q/k/v/o with bias.
    const std::string cfg = R"({"model_type":"gpt_oss","vocab_size":201088,"hidden_size":2880,
      "num_hidden_layers":24,"num_attention_heads":64,"num_key_value_heads":8,"head_dim":64,
      "intermediate_size":2880,"num_local_experts":32,"num_experts_per_tok":4,"attention_bias":true})";
    const ModelArchitecture m = parse_hf_config_text(cfg);
    CHECK(m.moe.num_experts == 32);
    CHECK(m.moe.top_k == 4);
    CHECK_THAT(m.warnings[0], Catch::Contains("32 routed experts"));
    const std::int64_t h = 2880;
    const std::int64_t attn = (h * 4096 + 4096) + 2 * (h * 512 + 512) + (4096 * h + h);
    const std::int64_t layer = 2 * h + attn + 32 * h + 32 * 3 * h * 2880;
    // Expert biases and attention sinks (about 0.1 %) are not in the llama layout.
    CHECK(params(cfg) == 2 * 201088 * h + 24 * layer + h);
  }
}

TEST_CASE("encoder-decoder and encoder models build both stacks", "[hf_config][t5]") {
  const ModelArchitecture t5 = preset("google-t5/t5-base");
  CHECK(t5.kind == ArchKind::kEncoderDecoder);
  CHECK(t5.num_encoder_layers == 12);
  CHECK(t5.num_layers == 12);
  const TensorInventory inv = build_tensor_inventory(t5);
  // first encoder block, 11 more encoder blocks, first decoder block, 11 more decoder blocks
  REQUIRE(inv.groups.size() == 4);
  CHECK(inv.groups[1].layer_count == 11);
  CHECK(preset("bigscience/mt0-xxl").mlp.gated);
  CHECK(preset("google-bert/bert-base-uncased").kind == ArchKind::kEncoder);
}

TEST_CASE("opt-350m projects a narrower embedding and has no final norm", "[hf_config]") {
  // facebook/opt-350m: word_embed_proj_dim 512 with project_in/out, post-norm blocks
  // (do_layer_norm_before false), positions offset by 2. Published total: 331,196,416.
  const std::string cfg = R"({"model_type":"opt","vocab_size":50272,"hidden_size":1024,
    "num_hidden_layers":24,"num_attention_heads":16,"ffn_dim":4096,"max_position_embeddings":2048,
    "word_embed_proj_dim":512,"do_layer_norm_before":false})";
  const std::int64_t layer = 4 * (1024LL * 1024 + 1024) + 2 * 2048 + (1024LL * 4096 + 4096) + (4096LL * 1024 + 1024);
  CHECK(params(cfg) == 50272LL * 512 + 2050LL * 1024 + 2 * 512LL * 1024 + 24 * layer);
  CHECK(params(cfg) == 331196416LL);
}

TEST_CASE("gpt_neo: learned positions, q/k/v without bias, biased out_proj, fp32 QK^T", "[hf_config]") {
  // EleutherAI/gpt-neo-1.3B dimensions (intermediate_size null = 4h).
  const std::string cfg = R"({"model_type":"gpt_neo","vocab_size":50257,"hidden_size":2048,"num_layers":24,
    "num_heads":16,"intermediate_size":null,"max_position_embeddings":2048,"window_size":256,
    "attention_types":[[["global","local"],12]],"activation_function":"gelu_new","resid_dropout":0.1})";
  const ModelArchitecture a = parse_hf_config_text(cfg);
  CHECK(a.attention.upcast_qk);
  CHECK(a.hidden_dropout == 0.1);
  // Per layer: ln_1, ln_2 (w,b); q,k,v (no bias); out_proj (bias); c_fc, c_proj (bias).
  const std::int64_t h = 2048, f = 8192;
  const std::int64_t layer = 4 * h + 3 * h * h + (h * h + h) + (h * f + f) + (f * h + h);
  CHECK(params(cfg) == 50257 * h + 2048 * h + 24 * layer + 2 * h);  // wte (tied lm_head), wpe, ln_f
  CHECK(params(cfg) == 1315575808LL);  // gpt-neo-1.3B: published as "1.3B"
}

TEST_CASE("codegen: a GPT-J block with a fused bias-free qkv_proj and a biased lm_head", "[hf_config]") {
  const std::string cfg = R"({"model_type":"codegen","vocab_size":100,"n_embd":16,"n_layer":2,"n_head":4,
    "rotary_dim":2,"n_inner":null,"n_positions":64})";
  const ModelArchitecture a = parse_hf_config_text(cfg);
  CHECK(a.parallel_block);
  CHECK(a.norms_per_layer == 1);
  CHECK(a.attention.layout == QkvLayout::kFused);
  CHECK(a.attention.upcast_qk);
  CHECK(a.attention.rotary_dim == 2);
  // wte + lm_head(w,b) + per layer: ln_1(w,b), qkv_proj 3h x h, out_proj h x h, fc_in, fc_out (bias) + ln_f
  const std::int64_t layer = 2 * 16 + 3 * 16 * 16 + 16 * 16 + (16 * 64 + 64) + (64 * 16 + 16);
  CHECK(params(cfg) == 100 * 16 + (100 * 16 + 100) + 2 * layer + 2 * 16);
}

TEST_CASE("gpt_bigcode: multi-query c_attn projects to h + 2 head_dim", "[hf_config]") {
  // bigcode/gpt_bigcode-santacoder dimensions.
  const std::string cfg = R"({"model_type":"gpt_bigcode","vocab_size":49280,"n_embd":2048,"n_layer":24,
    "n_head":16,"n_inner":8192,"n_positions":2048,"multi_query":true})";
  const ModelArchitecture a = parse_hf_config_text(cfg);
  CHECK(a.attention.num_kv_heads == 1);
  CHECK(a.mlp.activation == "gelu_pytorch_tanh");
  const std::int64_t h = 2048, f = 8192, qkv = h + 2 * 128;
  const std::int64_t layer = 4 * h + (h * qkv + qkv) + (h * h + h) + (h * f + f) + (f * h + h);
  CHECK(params(cfg) == 49280 * h + 2048 * h + 24 * layer + 2 * h);
  CHECK_FALSE(parse_hf_config_text(R"({"model_type":"gpt_bigcode","vocab_size":10,"n_embd":16,"n_layer":1,
    "n_head":4,"multi_query":false})").attention.num_kv_heads == 1);
}

TEST_CASE("biogpt: biased BART-style attention, positions offset by two, tied output projection", "[hf_config]") {
  // microsoft/biogpt dimensions: h 1024, 24 layers, 16 heads, ffn 4096, vocab 42384, 1024 positions.
  const std::string cfg = R"({"model_type":"biogpt","vocab_size":42384,"hidden_size":1024,"num_hidden_layers":24,
    "num_attention_heads":16,"intermediate_size":4096,"max_position_embeddings":1024,"scale_embedding":true})";
  const ModelArchitecture a = parse_hf_config_text(cfg);
  CHECK(a.learned_position_rows == 1026);
  CHECK(a.tie_word_embeddings);
  const std::int64_t h = 1024, f = 4096;
  const std::int64_t layer = 4 * h + 4 * (h * h + h) + (h * f + f) + (f * h + h);
  CHECK(params(cfg) == 42384 * h + 1026 * h + 24 * layer + 2 * h);
}

TEST_CASE("a multimodal wrapper is estimated by its text_config, with a warning", "[hf_config]") {
  // google/gemma-3-4b-it layout: model_type gemma3, the language model under text_config.
  const std::string text = R"({"model_type":"gemma3_text","vocab_size":1000,"hidden_size":64,"num_hidden_layers":2,
    "num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"intermediate_size":128})";
  const ModelArchitecture inner = parse_hf_config_text(text);
  const ModelArchitecture a = parse_hf_config_text(R"({"model_type":"gemma3","torch_dtype":"bfloat16","text_config":)" + text +
                                                   R"(,"vision_config":{"model_type":"siglip_vision_model","hidden_size":1152}})");
  CHECK(a.model_type == "gemma3_text");
  CHECK(a.torch_dtype == "bfloat16");
  CHECK(build_tensor_inventory(a).total_params == build_tensor_inventory(inner).total_params);
  REQUIRE_FALSE(a.warnings.empty());
  CHECK(a.warnings.front().find("vision encoder") != std::string::npos);
  // Errors inside the nested config point into it; a wrapper inside a wrapper is not followed.
  try {
    parse_hf_config_text(R"({"model_type":"llava","text_config":{"model_type":"llava","text_config":{}}})");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.path() == "/text_config/model_type");
  }
}

TEST_CASE("a wrapper's text_config takes transformers' defaults for the keys it leaves out", "[hf_config]") {
  // google/gemma-3-4b-it's published config.json: the text_config names no vocab_size, heads or
  // head_dim; Gemma3TextConfig's defaults (262208, 8, 4, 256) fill them.
  const std::string published = R"({"architectures":["Gemma3ForConditionalGeneration"],"model_type":"gemma3","torch_dtype":"bfloat16",
    "text_config":{"hidden_size":2560,"intermediate_size":10240,"model_type":"gemma3_text","num_hidden_layers":34,
      "rope_scaling":{"factor":8.0,"rope_type":"linear"},"sliding_window":1024},
    "vision_config":{"hidden_size":1152,"model_type":"siglip_vision_model","num_hidden_layers":27}})";
  const ModelArchitecture a = parse_hf_config_text(published);
  CHECK(a.vocab_size == 262208);
  CHECK(a.attention.num_heads == 8);
  CHECK(a.attention.num_kv_heads == 4);
  CHECK(a.attention.head_dim == 256);
  CHECK(a.attention.sliding_window == 1024);  // stated keys win
  CHECK(a.tie_word_embeddings);
  const std::string explicit_text = R"({"model_type":"gemma3_text","vocab_size":262208,"hidden_size":2560,"intermediate_size":10240,
    "num_hidden_layers":34,"num_attention_heads":8,"num_key_value_heads":4,"head_dim":256})";
  CHECK(params(published) == params(explicit_text));
  // Embeddings (tied) + 34 blocks (q 2048, k/v 1024, o; gated MLP; 4 norms and q/k norms) + final norm.
  const std::int64_t h = 2560, layer = h * (2048 + 1024 + 1024) + 2048 * h + 3 * h * 10240 + 4 * h + 2 * 256;
  CHECK(params(published) == 262208 * h + 34 * layer + h);
  const auto named = std::find_if(a.warnings.begin(), a.warnings.end(),
                                  [](const std::string& w) { return w.find("transformers' defaults") != std::string::npos; });
  REQUIRE(named != a.warnings.end());
  CHECK(named->find("vocab_size 262208") != std::string::npos);
  CHECK(named->find("configuration_gemma3.py") != std::string::npos);
  CHECK(named->find("sliding_window") == std::string::npos);
  // A text_config without model_type is its wrapper's text class (Llama4Config: Llama4TextConfig).
  const ModelArchitecture l4 = parse_hf_config_text(R"({"model_type":"llama4","text_config":{"num_hidden_layers":2}})");
  CHECK(l4.model_type == "llama4_text");
  CHECK(l4.vocab_size == 202048);
  CHECK(l4.moe.num_experts == 16);
  // A top-level config still has to name its dimensions.
  CHECK_THROWS_AS(parse_hf_config_text(R"({"model_type":"gemma3_text","hidden_size":2560,"num_hidden_layers":34})"), Error);
}

TEST_CASE("llama4_text: interleaved MoE layers with a shared expert, dense layers of their own width", "[hf_config][moe]") {
  // meta-llama/Llama-4-Scout-17B-16E text dimensions (and Maverick's 128 experts on every other layer).
  std::string cfg = R"({"model_type":"llama4_text","vocab_size":202048,"hidden_size":5120,"num_hidden_layers":48,
    "num_attention_heads":40,"num_key_value_heads":8,"head_dim":128,"intermediate_size":8192,
    "intermediate_size_mlp":16384,"num_local_experts":16,"num_experts_per_tok":1,"interleave_moe_layer_step":1,
    "tie_word_embeddings":false})";
  const std::int64_t h = 5120, attn = 2 * h * h + 2 * h * 1024, norms = 2 * h, expert = 3 * h * 8192;
  const std::int64_t globals = 2 * 202048 * h + h;
  const std::int64_t scout_layer = norms + attn + 16 * h + 16 * expert + expert;  // router, experts, shared
  CHECK(params(cfg) == globals + 48 * scout_layer);
  const TensorInventory scout = build_tensor_inventory(parse_hf_config_text(cfg));
  // "17B active": attention, one routed and the shared expert per layer, embeddings and head.
  CHECK(scout.active_params_per_token == globals + 48 * (norms + attn + 16 * h + 2 * expert));
  CHECK(static_cast<double>(scout.active_params_per_token) == Approx(17.2e9).epsilon(0.01));

  cfg.replace(cfg.find("\"num_local_experts\":16"), 22, "\"num_local_experts\":128");
  cfg.replace(cfg.find("\"interleave_moe_layer_step\":1"), 29, "\"interleave_moe_layer_step\":2");
  const ModelArchitecture maverick = parse_hf_config_text(cfg);
  CHECK_FALSE(maverick.layer_is_moe(0));
  CHECK(maverick.layer_is_moe(1));
  const std::int64_t dense_layer = norms + attn + 3 * h * 16384;
  const std::int64_t moe_layer = norms + attn + 128 * h + 128 * expert + expert;
  CHECK(params(cfg) == globals + 24 * (dense_layer + moe_layer));  // 400.7B: the published "400B total"
  // An explicit moe_layers list selects the same layers.
  const std::string listed = cfg.substr(0, cfg.size() - 1) + R"(,"moe_layers":[1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,33,35,37,39,41,43,45,47]})";
  CHECK(params(listed) == params(cfg));
}

TEST_CASE("gemma2 caps its final logits; gemma3's config sets no cap", "[hf_config]") {
  CHECK(preset("google/gemma-2-2b").final_logit_softcapping == 30.0);
  CHECK(preset("google/gemma-3-1b-it").final_logit_softcapping == 0.0);
  CHECK(preset("meta-llama/Llama-3.2-1B-Instruct").final_logit_softcapping == 0.0);
}

TEST_CASE("multi-query falcon hands SDPA its one K/V head; the new decoder architecture does not", "[hf_config]") {
  const ModelArchitecture mq = parse_hf_config_text(
      R"({"model_type":"falcon","vocab_size":32,"hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"multi_query":true})");
  CHECK(mq.attention.sdpa_unexpanded_kv);
  const ModelArchitecture gqa = parse_hf_config_text(
      R"({"model_type":"falcon","vocab_size":32,"hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,
          "new_decoder_architecture":true,"num_kv_heads":1})");
  CHECK_FALSE(gqa.attention.sdpa_unexpanded_kv);
}

namespace {

// mosaicml/mpt-7b config.json as on the Hub (the keys that shape the model).
const char* kMpt7b = R"({"model_type":"mpt","architectures":["MPTForCausalLM"],"d_model":4096,"n_heads":32,
  "n_layers":32,"expansion_ratio":4,"max_seq_len":2048,"vocab_size":50432,"no_bias":true,"learned_pos_emb":true,
  "norm_type":"low_precision_layernorm","emb_pdrop":0,"resid_pdrop":0,
  "attn_config":{"alibi":true,"alibi_bias_max":8,"attn_impl":"torch","attn_pdrop":0,"attn_type":"multihead_attention",
  "attn_uses_sequence_id":false,"clip_qkv":null,"prefix_lm":false,"qk_ln":false,"softmax_scale":null}})";

ErrorCode code_of(const std::string& text, std::string* path = nullptr) {
  try {
    parse_hf_config_text(text);
  } catch (const Error& e) {
    if (path) *path = e.path();
    return e.code();
  }
  return ErrorCode::kInternal;
}

}  // namespace

TEST_CASE("mpt: fused Wqkv, GELU MLP, no biases, ALiBi without a position table, wte as the output", "[hf_config][mpt]") {
  const ModelArchitecture a = parse_hf_config_text(kMpt7b);
  CHECK(a.position == PositionKind::kAlibi);
  CHECK(a.attention.layout == QkvLayout::kFused);
  CHECK(a.attention.num_kv_heads == 32);
  CHECK(a.mlp.intermediate_size == 16384);
  CHECK_FALSE(a.mlp.gated);
  CHECK(a.tie_word_embeddings);
  const TensorInventory inv = build_tensor_inventory(a);
  // Per block: Wqkv 3 h^2, out_proj h^2, up/down 2 x 4 h^2, norm_1/norm_2 weights 2 h; then wte, norm_f.
  const std::int64_t h = 4096;
  CHECK(inv.total_params == 32 * (12 * h * h + 2 * h) + 50432 * h + h);
  CHECK(inv.total_params == 6649286656LL);  // the Hub card of mosaicml/mpt-7b: 6,649,286,656
  std::vector<std::string> names;
  for (const TensorSpec& t : inv.globals) names.push_back(t.name);
  for (const TensorSpec& t : inv.groups.front().tensors) names.push_back(expand_name(t.name, 0, 0));
  for (const char* n : {"transformer.wte.weight", "transformer.norm_f.weight", "transformer.blocks.0.norm_1.weight",
                        "transformer.blocks.0.attn.Wqkv.weight", "transformer.blocks.0.attn.out_proj.weight",
                        "transformer.blocks.0.norm_2.weight", "transformer.blocks.0.ffn.up_proj.weight",
                        "transformer.blocks.0.ffn.down_proj.weight"}) {
    INFO(n);
    CHECK(std::find(names.begin(), names.end(), n) != names.end());
  }
  CHECK(std::find(names.begin(), names.end(), "transformer.wpe.weight") == names.end());
}

TEST_CASE("mpt without ALiBi learns a max_seq_len position table; biases and GQA as configured", "[hf_config][mpt]") {
  // llm-foundry's benchmark MPT-7B (scripts/train/yamls/pretrain/mpt-7b.yaml @b2a43a14 on MPTConfig's
  // defaults: learned positions, biases, vocabulary 50368): 6,658,859,008 parameters as its table prints.
  const std::string bench = R"({"model_type":"mpt","d_model":4096,"n_heads":32,"n_layers":32,"expansion_ratio":4,
    "max_seq_len":2048,"vocab_size":50368,"no_bias":false,"learned_pos_emb":true,"attn_config":{"alibi":false}})";
  const ModelArchitecture b = parse_hf_config_text(bench);
  CHECK(b.position == PositionKind::kLearned);
  CHECK(b.learned_position_rows == 2048);
  CHECK(params(bench) == 6658859008LL);
  // grouped-query attention: Wqkv is d_model + 2 kv_n_heads x head_dim wide.
  const std::string gqa = R"({"model_type":"mpt","d_model":1024,"n_heads":16,"n_layers":2,"vocab_size":100,
    "attn_config":{"attn_type":"grouped_query_attention","kv_n_heads":4},"ffn_config":{"ffn_type":"mptglu","ffn_hidden_size":2816}})";
  const ModelArchitecture g = parse_hf_config_text(gqa);
  CHECK(g.attention.num_kv_heads == 4);
  CHECK(g.mlp.gated);
  CHECK(params(gqa) == 2 * (1024LL * (1024 + 2 * 4 * 64) + 1024LL * 1024 + 3LL * 1024 * 2816 + 2 * 1024) + 100 * 1024 + 1024);
}

TEST_CASE("mpt: missing and unusable keys are coded errors at their JSON Pointer", "[hf_config][mpt]") {
  std::string path;
  CHECK(code_of(R"({"model_type":"mpt","n_heads":32,"n_layers":32,"vocab_size":50432})", &path) == ErrorCode::kMissingField);
  CHECK(path == "/d_model");
  CHECK(code_of(R"({"model_type":"mpt","d_model":4096,"n_layers":32,"vocab_size":50432})", &path) == ErrorCode::kMissingField);
  CHECK(path == "/n_heads");
  CHECK(code_of(R"({"model_type":"mpt","d_model":4096,"n_heads":32,"vocab_size":50432})", &path) == ErrorCode::kMissingField);
  CHECK(path == "/n_layers");
  CHECK(code_of(R"({"model_type":"mpt","d_model":64,"n_heads":4,"n_layers":1,"vocab_size":10,
    "attn_config":{"attn_type":"grouped_query_attention"}})", &path) == ErrorCode::kMissingField);
  CHECK(path == "/attn_config/kv_n_heads");
  CHECK(code_of(R"({"model_type":"mpt","d_model":64,"n_heads":4,"n_layers":1,"vocab_size":10,"attn_config":[]})", &path) ==
        ErrorCode::kInvalidType);
  CHECK(path == "/attn_config");
  CHECK(code_of(R"({"model_type":"mpt","d_model":64,"n_heads":4,"n_layers":1,"vocab_size":10,"norm_type":"batchnorm"})", &path) ==
        ErrorCode::kInvalidValue);
  CHECK(path == "/norm_type");
  CHECK(code_of(R"({"model_type":"mpt","d_model":64,"n_heads":4,"n_layers":1,"vocab_size":10,
    "ffn_config":{"ffn_type":"mb_moe"}})", &path) == ErrorCode::kUnsupported);
  CHECK(path == "/ffn_config/ffn_type");
}
