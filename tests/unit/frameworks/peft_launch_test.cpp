// PEFT's other methods in the launch files: the Python script builds their config class; TRL's
// command-line config, which builds LoRA only, says so.
#include <catch2/catch.hpp>

#include <string>

#include "frameworks/launch.h"
#include "../test_support.h"

using namespace memfit;
using namespace memfit_test;

namespace {

const LaunchFormat& format(const std::vector<LaunchFormat>& all, const std::string& name) {
  for (const LaunchFormat& f : all) {
    if (f.format == name) return f;
  }
  FAIL("no launch format " << name);
  return all.front();
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

bool noted(const LaunchFormat& f, const std::string& part) {
  for (const std::string& n : f.notes) {
    if (has(n, part)) return true;
  }
  return false;
}

// Llama-3.1-8B in bf16 at 1 x 2048 tokens, adapters on q and v.
LaunchInput llama_q_v(const ModelArchitecture& a) {
  LaunchInput in;
  in.arch = &a;
  in.model_id = "meta-llama/Llama-3.1-8B";
  in.setup = bf16(1, 2048);
  in.setup.lora_targets = {"q", "v"};
  return in;
}

}  // namespace

TEST_CASE("the Python script builds each PEFT method's config", "[launch][peft]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  LaunchInput in;
  in.arch = &a;
  in.model_id = "meta-llama/Llama-3.1-8B";
  in.setup = bf16(1, 2048);
  const struct { Method method; const char* config; } cases[] = {
      {Method::kIa3, "IA3Config(target_modules=['k_proj', 'v_proj', 'down_proj'], feedforward_modules=[\"down_proj\"]"},
      {Method::kLoha, "LoHaConfig(r=8"}, {Method::kLokr, "LoKrConfig(r=8"}, {Method::kVera, "VeraConfig(r=8"},
      {Method::kPromptTuning, "PromptTuningConfig(num_virtual_tokens=30"},
      {Method::kPrefixTuning, "PrefixTuningConfig(num_virtual_tokens=30"}};
  for (const auto& c : cases) {
    in.setup.method = c.method;
    in.setup.lora_rank = 8;
    in.setup.lora_targets = c.method == Method::kIa3 ? std::vector<std::string>{"k", "v", "down"} : std::vector<std::string>{"q", "v"};
    in.setup.virtual_tokens = 30;
    const std::vector<LaunchFormat> all = launch_configs(in);
    const std::string script = format(all, "python_script").text;
    INFO(script);
    CHECK(has(script, c.config));
    CHECK(has(script, "get_peft_model"));
    CHECK_FALSE(has(script, "LoraConfig("));
    const LaunchFormat& trl = format(all, "trl_sft_yaml");
    CHECK_FALSE(has(trl.text, "use_peft: true"));
    bool noted = false;
    for (const std::string& n : trl.notes) noted = noted || has(n, "builds LoRA adapters only");
    CHECK(noted);
  }
}

TEST_CASE("the Python script writes OFT, BOFT, LN tuning, P-tuning's encoder and LoRA's init", "[launch][peft]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  LaunchInput in = llama_q_v(a);
  const struct { Method method; const char* config; } cases[] = {
      {Method::kOft, "OFTConfig(r=0, oft_block_size=32, target_modules=['q_proj', 'v_proj']"},
      {Method::kBoft, "BOFTConfig(boft_block_size=4, target_modules=['q_proj', 'v_proj']"},
      {Method::kLnTuning, "LNTuningConfig(target_modules=[\"input_layernorm\", \"post_attention_layernorm\", \"norm\"]"},
      {Method::kPTuning, "PromptEncoderConfig(num_virtual_tokens=20, encoder_reparameterization_type=\"LSTM\""}};
  for (const auto& c : cases) {
    in.setup.method = c.method;
    in.setup.prompt_encoder = PromptEncoder::kLstm;
    const std::string script = format(launch_configs(in), "python_script").text;
    INFO(script);
    CHECK(has(script, c.config));
  }
  in.setup.method = Method::kOft;
  in.setup.oft_blocks = 16;
  CHECK(has(format(launch_configs(in), "python_script").text, "OFTConfig(r=16, oft_block_size=0"));
  in.setup.method = Method::kLora;
  in.setup.lora_init = LoraInit::kPissa;
  const std::vector<LaunchFormat> all = launch_configs(in);
  CHECK(has(format(all, "python_script").text, "init_lora_weights=\"pissa\""));
  CHECK(noted(format(all, "trl_sft_yaml"), "init_lora_weights=\"pissa\""));
  CHECK(has(format(all, "llamafactory_yaml").text, "pissa_init: true"));
  in.setup.lora_init = LoraInit::kOlora;
  const std::vector<LaunchFormat> olora = launch_configs(in);
  CHECK_FALSE(has(format(olora, "llamafactory_yaml").text, "pissa_init"));
  CHECK(noted(format(olora, "llamafactory_yaml"), "init_lora_weights=olora is not written"));
}

TEST_CASE("the Python script builds MiSS's and GLoRA's configs with their init and path", "[launch][peft]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  LaunchInput in = llama_q_v(a);
  in.setup.method = Method::kMiss;
  in.setup.lora_rank = 64;
  in.setup.miss_shape = MissShape::kBat;
  CHECK(has(format(launch_configs(in), "python_script").text,
            "MissConfig(r=64, init_weights=\"bat\", mini_r=1, target_modules=['q_proj', 'v_proj']"));
  in.setup.miss_shape = MissShape::kDefault;
  CHECK(has(format(launch_configs(in), "python_script").text, "MissConfig(r=64, init_weights=True,"));
  in.setup.method = Method::kGlora;
  in.setup.lora_rank = 8;
  in.setup.glora_a_b = GloraPath::kVector;
  const std::vector<LaunchFormat> all = launch_configs(in);
  CHECK(has(format(all, "python_script").text, "GloraConfig(r=8, config_A_B=\"vector\", target_modules=['q_proj', 'v_proj']"));
  CHECK(noted(format(all, "trl_sft_yaml"), "pass peft_config=GloraConfig(...)"));
}

TEST_CASE("the Python script builds RoAd's, DEFT's, OSF's and trainable tokens' configs", "[launch][peft]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  LaunchInput in = llama_q_v(a);
  in.setup.method = Method::kRoad;
  in.setup.road_variant = RoadVariant::kRoad2;
  CHECK(has(format(launch_configs(in), "python_script").text, "RoadConfig(variant=\"road_2\", target_modules=['q_proj', 'v_proj']"));
  in.setup.method = Method::kDeft;
  in.setup.lora_rank = 32;
  in.setup.deft_para = true;
  CHECK(has(format(launch_configs(in), "python_script").text, "DeftConfig(r=32, para=True, target_modules="));
  in.setup.method = Method::kOsf;
  in.setup.lora_rank = 0;  // PEFT's default effective_rank
  CHECK(has(format(launch_configs(in), "python_script").text, "OSFConfig(target_modules=['q_proj', 'v_proj'], task_type="));
  in.setup.lora_rank = 128;  // trainable rank 128: effective_rank min(in, out) - 128 per module
  const std::string osf = format(launch_configs(in), "python_script").text;
  CHECK(has(osf, "\"q_proj\": 3968"));
  CHECK(has(osf, "\"k_proj\": 896"));
  in.setup.method = Method::kTrainableTokens;
  in.setup.trainable_token_count = 2;
  CHECK(has(format(launch_configs(in), "python_script").text,
            "TrainableTokensConfig(token_indices=list(range(2)), target_modules=[\"embed_tokens\"]"));
}

TEST_CASE("the Python script builds AdaLoRA's, PSOFT's and RandLoRA's configs; AdaLoRA's allocator runs after each step", "[launch][peft]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  LaunchInput in = llama_q_v(a);
  in.setup.method = Method::kAdalora;
  in.setup.lora_rank = 64;
  const std::string ada = format(launch_configs(in), "python_script").text;
  CHECK(has(ada, "AdaLoraConfig(init_r=64, total_step=1000, target_modules=['q_proj', 'v_proj']"));
  CHECK(has(ada, "model.base_model.update_and_allocate(state.global_step)"));
  CHECK(has(ada, "callbacks=[AdaLoraAllocate()]"));
  in.setup.method = Method::kPsoft;
  in.setup.lora_rank = 256;
  const std::string psoft = format(launch_configs(in), "python_script").text;
  CHECK(has(psoft, "PsoftConfig(r=256, target_modules="));
  CHECK_FALSE(has(psoft, "update_and_allocate"));
  in.setup.method = Method::kRandlora;
  in.setup.lora_rank = 32;
  CHECK(has(format(launch_configs(in), "python_script").text, "RandLoraConfig(r=32, target_modules="));
}
