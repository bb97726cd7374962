// The request schema of PEFT's other methods: defaults from PEFT's configs and coded errors with
// the JSON Pointer of the field at fault.
#include "request_support.h"

using nlohmann::json;
using namespace memfit;
using request_support::request;
using request_support::run;

namespace {

void expect_error(const json& training, const char* path, const char* code = "invalid_value") {
  request_support::expect_error(request(training), path, code);
}

}  // namespace

TEST_CASE("PEFT methods estimate with PEFT's defaults", "[api][peft]") {
  const json ia3 = run(request({{"method", "ia3"}}));
  REQUIRE(ia3["ok"] == true);
  CHECK(ia3["result"]["training"]["lora"]["targets"] == json::array({"k", "v", "down"}));
  const json vera = run(request({{"method", "vera"}}));
  REQUIRE(vera["ok"] == true);
  CHECK(vera["result"]["training"]["lora"]["rank"] == 256);
  const json prompt = run(request({{"method", "prompt_tuning"}, {"virtual_tokens", 30}}));
  REQUIRE(prompt["ok"] == true);
  CHECK(prompt["result"]["training"]["virtual_tokens"] == 30);
  CHECK(prompt["result"]["states"]["trainable_params"] == 30 * 4096);
  for (const char* m : {"loha", "lokr", "prefix_tuning"}) {
    const json out = run(request({{"method", m}}));
    CHECK(out["ok"] == true);
  }
}

TEST_CASE("PEFT settings that do not fit the method are refused with their pointer", "[api][peft]") {
  expect_error({{"method", "prompt_tuning"}, {"lora", {{"rank", 8}}}}, "/training/lora");
  expect_error({{"method", "ia3"}, {"lora", {{"rank", 8}}}}, "/training/lora/rank");
  expect_error({{"method", "lora"}, {"virtual_tokens", 10}}, "/training/virtual_tokens");
  expect_error({{"method", "prefix_tuning"}, {"activation_checkpointing", "full"}}, "/training/activation_checkpointing");
  expect_error({{"method", "prompt_tuning"}, {"virtual_tokens", 0}}, "/training/virtual_tokens", "out_of_range");
}

TEST_CASE("LitGPT's adapters estimate under framework litgpt with LitGPT's defaults", "[api][litgpt]") {
  const json v1 = run(request({{"framework", "litgpt"}, {"method", "adapter"}}));
  REQUIRE(v1["ok"] == true);
  CHECK(v1["result"]["training"]["adapter"] == json({{"prompt_length", 10}, {"start_layer", 2}}));
  const json v2 = run(request({{"framework", "litgpt"}, {"method", "adapter_v2"},
                               {"adapter", {{"prompt_length", 20}, {"start_layer", 0}}}}));
  REQUIRE(v2["ok"] == true);
  CHECK(v2["result"]["training"]["adapter"]["start_layer"] == 0);
}

TEST_CASE("LitGPT adapter settings that do not fit are refused with their pointer", "[api][litgpt]") {
  expect_error({{"method", "adapter"}}, "/training/method");  // the default framework is hf_trainer
  expect_error({{"framework", "litgpt"}, {"method", "lora"}, {"adapter", {{"prompt_length", 4}}}}, "/training/adapter");
  expect_error({{"framework", "litgpt"}, {"method", "adapter"}, {"adapter", {{"prompt", 4}}}}, "/training/adapter/prompt",
               "unknown_field");
  expect_error({{"framework", "litgpt"}, {"method", "adapter"}, {"adapter", {{"start_layer", 33}}}},
               "/training/adapter/start_layer", "out_of_range");
  expect_error({{"framework", "litgpt"}, {"method", "adapter"}, {"adapter", 3}}, "/training/adapter", "invalid_type");
}

TEST_CASE("PEFT adaption prompt needs PEFT's adapter_len and adapter_layers", "[api][peft]") {
  const json ok = run(request({{"method", "adaption_prompt"}, {"adapter", {{"prompt_length", 100}, {"layers", 28}}}}));
  REQUIRE(ok["ok"] == true);
  CHECK(ok["result"]["training"]["adapter"]["start_layer"] == 32 - 28);  // Llama-3.1-8B: 32 layers
  expect_error({{"method", "adaption_prompt"}}, "/training/adapter", "missing_field");
  expect_error({{"method", "adaption_prompt"}, {"adapter", {{"prompt_length", 10}}}}, "/training/adapter/layers", "missing_field");
  expect_error({{"method", "adaption_prompt"}, {"adapter", {{"prompt_length", 10}, {"layers", 2}, {"start_layer", 3}}}},
               "/training/adapter/layers");
  const json p = run(request({{"method", "p_tuning"}, {"virtual_tokens", 20}}));
  REQUIRE(p["ok"] == true);
}

TEST_CASE("OFT, BOFT, LN tuning and P-tuning's encoders estimate with PEFT's defaults", "[api][peft]") {
  const json oft = run(request({{"method", "oft"}}));
  REQUIRE(oft["ok"] == true);
  CHECK(oft["result"]["training"]["lora"] == json({{"block_size", 32}, {"targets", {"q", "v"}}}));
  const json oft_r = run(request({{"method", "oft"}, {"lora", {{"rank", 32}}}}));
  REQUIRE(oft_r["ok"] == true);
  CHECK(oft_r["result"]["training"]["lora"]["rank"] == 32);
  // 32 blocks of 128 on 4096-wide q and v: fewer, larger blocks than 128 of 32
  CHECK(oft_r["result"]["states"]["trainable_params"] > oft["result"]["states"]["trainable_params"]);
  const json boft = run(request({{"method", "boft"}}));
  REQUIRE(boft["ok"] == true);
  CHECK(boft["result"]["training"]["lora"]["block_size"] == 4);
  CHECK(run(request({{"method", "ln_tuning"}}))["ok"] == true);
  const json mlp = run(request({{"method", "p_tuning"}}));
  const json lstm = run(request({{"method", "p_tuning"}, {"prompt_encoder", "lstm"}}));
  REQUIRE(lstm["ok"] == true);
  CHECK(lstm["result"]["training"]["prompt_encoder"] == "lstm");
  CHECK(lstm["result"]["states"]["trainable_params"] > mlp["result"]["states"]["trainable_params"]);
}

TEST_CASE("PiSSA and OLoRA are LoRA initialisations: the same estimate", "[api][peft]") {
  const json plain = run(request({{"method", "lora"}}));
  for (const char* init : {"pissa", "olora", "gaussian"}) {
    const json out = run(request({{"method", "lora"}, {"lora", {{"init", init}}}}));
    REQUIRE(out["ok"] == true);
    CHECK(out["result"]["training"]["lora"]["init"] == init);
    CHECK(out["result"]["peak_allocated_bytes"] == plain["result"]["peak_allocated_bytes"]);
  }
}

TEST_CASE("orthogonal, encoder and init settings that do not fit are refused with their pointer", "[api][peft]") {
  expect_error({{"method", "boft"}, {"lora", {{"rank", 8}}}}, "/training/lora/rank");
  expect_error({{"method", "oft"}, {"lora", {{"dropout", 0.1}}}}, "/training/lora/dropout");
  expect_error({{"method", "oft"}, {"lora", {{"rank", 8}, {"block_size", 16}}}}, "/training/lora/block_size");
  expect_error({{"method", "lora"}, {"lora", {{"block_size", 16}}}}, "/training/lora/block_size");
  expect_error({{"method", "oft"}, {"lora", {{"block_size", 0}}}}, "/training/lora/block_size", "out_of_range");
  expect_error({{"method", "prompt_tuning"}, {"prompt_encoder", "lstm"}}, "/training/prompt_encoder");
  expect_error({{"method", "p_tuning"}, {"prompt_encoder", "gru"}}, "/training/prompt_encoder");
  expect_error({{"method", "ia3"}, {"lora", {{"init", "pissa"}}}}, "/training/lora/init");
  expect_error({{"method", "lora"}, {"lora", {{"init", "svd"}}}}, "/training/lora/init");
  expect_error({{"method", "qlora"}, {"lora", {{"init", "pissa"}}}}, "/training/lora/init");
  expect_error({{"method", "lora"}, {"base_quant", "nf4"}, {"lora", {{"init", "pissa"}}}}, "/training/lora/init");
  expect_error({{"method", "ln_tuning"}, {"lora", {{"rank", 8}}}}, "/training/lora");
}

TEST_CASE("MiSS estimates with PEFT's r 64 and its init shapes; misplaced settings are refused", "[api][peft]") {
  const json plain = run(request({{"method", "miss"}}));
  REQUIRE(plain["ok"] == true);
  CHECK(plain["result"]["training"]["lora"]["rank"] == 64);
  CHECK(plain["result"]["training"]["miss"]["init"] == "default");
  // q (out 4096) and v (out 1024) in 32 layers, r x out each
  CHECK(plain["result"]["states"]["trainable_params"] == 64 * (4096 + 1024) * 32);
  const json mini = run(request({{"method", "miss"}, {"miss", {{"init", "mini"}, {"mini_r", 64}}}}));
  REQUIRE(mini["ok"] == true);
  CHECK(mini["result"]["states"]["trainable_params"] == 64 * 64 * 2 * 32);
  CHECK(mini["result"]["training"]["miss"]["mini_r"] == 64);
  const json bat = run(request({{"method", "miss"}, {"miss", {{"init", "bat"}}}}));
  REQUIRE(bat["ok"] == true);
  CHECK(bat["result"]["states"]["trainable_params"] == plain["result"]["states"]["trainable_params"]);
  CHECK(bat["result"]["peak_allocated_bytes"].get<std::int64_t>() >
        plain["result"]["peak_allocated_bytes"].get<std::int64_t>());
  expect_error({{"method", "lora"}, {"miss", {{"init", "bat"}}}}, "/training/miss");
  expect_error({{"method", "miss"}, {"miss", {{"init", "tiny"}}}}, "/training/miss/init");
  expect_error({{"method", "miss"}, {"miss", {{"mini_r", 4}}}}, "/training/miss/mini_r");
  expect_error({{"method", "miss"}, {"miss", {{"shape", "bat"}}}}, "/training/miss/shape", "unknown_field");
  expect_error({{"method", "miss"}, {"miss", "bat"}}, "/training/miss", "invalid_type");
}

TEST_CASE("GLoRA estimates with PEFT's r 8 and its weight path; misplaced settings are refused", "[api][peft]") {
  const json lora = run(request({{"method", "glora"}}));
  REQUIRE(lora["ok"] == true);
  CHECK(lora["result"]["training"]["lora"]["rank"] == 8);
  CHECK(lora["result"]["training"]["glora"]["a_b"] == "lora");
  // q (4096 x 4096) and v (1024 x 4096) in 32 layers, two rank-8 pairs each
  CHECK(lora["result"]["states"]["trainable_params"] == 2 * 8 * ((4096 + 4096) + (4096 + 1024)) * 32);
  const json vector = run(request({{"method", "glora"}, {"glora", {{"a_b", "vector"}}}}));
  REQUIRE(vector["ok"] == true);
  CHECK(vector["result"]["states"]["trainable_params"] == 2 * (4096 + 1024) * 32);
  expect_error({{"method", "miss"}, {"glora", {{"a_b", "vector"}}}}, "/training/glora");
  expect_error({{"method", "glora"}, {"glora", {{"a_b", "none"}}}}, "/training/glora/a_b");
  expect_error({{"method", "glora"}, {"glora", {{"c", "none"}}}}, "/training/glora/c", "unknown_field");
}

TEST_CASE("PEFT's shared-bank adapters read their shapes and refuse others' with pointers", "[api][peft]") {
  const json lily = run(request({{"method", "lily"}, {"lily", {{"stride_a", 4}, {"num_b", 3}}}}));
  REQUIRE(lily["ok"] == true);
  CHECK(lily["result"]["training"]["lora"]["rank"] == 32);  // LilyConfig r
  CHECK(lily["result"]["training"]["lily"]["stride_a"] == 4);
  const json frod = run(request({{"method", "frod"}, {"frod", {{"sparse_rate", 0.02}, {"offload_base_weight", true}}}}));
  REQUIRE(frod["ok"] == true);
  CHECK(frod["result"]["training"]["frod"]["offload_base_weight"] == true);
  for (const char* m : {"tinylora", "vblora", "adamss"}) CHECK(run(request({{"method", m}}))["ok"] == true);
  expect_error({{"method", "lora"}, {"lily", {{"num_b", 2}}}}, "/training/lily");
  expect_error({{"method", "lily"}, {"lily", {{"num_b", 1}}}}, "/training/lily/num_b", "out_of_range");
  expect_error({{"method", "vblora"}, {"vblora", {{"topk", 300}}}}, "/training/vblora/topk");
  expect_error({{"method", "tinylora"}, {"tinylora", {{"weight_tying", 1.5}}}}, "/training/tinylora/weight_tying", "out_of_range");
  expect_error({{"method", "frod"}, {"lora", {{"rank", 8}}}}, "/training/lora/rank");
  expect_error({{"method", "adamss"}, {"adamss", {{"clusters", 3}}}}, "/training/adamss/clusters", "unknown_field");
}
