// Parameter counts are exact: unique trainable parameters as transformers counts them, tied
// weights once. Expected values: presets/models/SOURCES.md (HF API / safetensors index totals /
// printed model.num_parameters()); "computed" rows there come from an independent computation of
// the transformers module layout and are checked as a second opinion.
#include <catch2/catch.hpp>

#include "hf_config/parse_hf_config.h"
#include "model/tensor_inventory.h"
#include "presets/registry.h"

using namespace memfit;

namespace {

struct Expected {
  const char* id;
  long long params;
};

std::int64_t count(const char* id) {
  const presets::ModelPreset* p = presets::find_model(id);
  REQUIRE(p != nullptr);
  return build_tensor_inventory(parse_hf_config_text(p->config_text)).total_params;
}

}  // namespace

TEST_CASE("parameter counts equal the published exact totals", "[model][params]") {
  const Expected cases[] = {
    {"EleutherAI/pythia-160m", 162322944LL},
    {"EleutherAI/pythia-6.9b", 6857302016LL},
    {"Qwen/Qwen2-0.5B-Instruct", 494032768LL},
    {"Qwen/Qwen2-1.5B-Instruct", 1543714304LL},
    {"Qwen/Qwen2-72B", 72706203648LL},
    {"Qwen/Qwen2-7B", 7615616512LL},
    {"Qwen/Qwen2.5-14B", 14770033664LL},
    {"Qwen/Qwen2.5-32B", 32763876352LL},
    {"Qwen/Qwen2.5-3B", 3085938688LL},
    {"Qwen/Qwen2.5-7B", 7615616512LL},
    {"Qwen/Qwen3-0.6B", 596049920LL},
    {"Qwen/Qwen3-1.7B", 1720574976LL},
    {"Qwen/Qwen3-14B", 14768307200LL},
    {"Qwen/Qwen3-30B-A3B", 30532122624LL},
    {"Qwen/Qwen3-4B", 4022468096LL},
    {"Qwen/Qwen3-8B", 8190735360LL},
    {"bigscience/bloomz-560m", 559214592LL},
    {"bigscience/bloomz-7b1", 7069016064LL},
    {"deepseek-ai/DeepSeek-V3", 671026419200LL},
    {"facebook/opt-125m", 125239296LL},
    {"google-bert/bert-base-uncased", 109482240LL},
    {"google-bert/bert-large-uncased", 335141888LL},
    {"google-t5/t5-base", 222903552LL},
    {"google-t5/t5-small", 60506624LL},
    {"google/gemma-2-2b", 2614341888LL},
    {"google/gemma-2-9b", 9241705984LL},
    {"google/gemma-2b", 2506172416LL},
    {"google/gemma-3-1b-it", 999885952LL},
    {"meta-llama/Llama-2-13b-hf", 13015864320LL},
    {"meta-llama/Llama-2-70b-hf", 68976648192LL},
    {"meta-llama/Llama-2-7b-hf", 6738415616LL},
    {"meta-llama/Llama-3.1-405B-Instruct", 405853388800LL},
    {"meta-llama/Llama-3.1-70B-Instruct", 70553706496LL},
    {"meta-llama/Llama-3.1-8B", 8030261248LL},
    {"meta-llama/Llama-3.2-1B-Instruct", 1235814400LL},
    {"meta-llama/Llama-3.2-3B", 3212749824LL},
    {"meta-llama/Meta-Llama-3-8B", 8030261248LL},
    {"microsoft/phi-2", 2779683840LL},
    {"mistral-community/Mistral-7B-v0.2", 7241732096LL},
    {"mistralai/Mistral-7B-v0.1", 7241732096LL},
    {"mistralai/Mistral-7B-v0.3", 7248023552LL},
    {"mistralai/Mixtral-8x7B-Instruct-v0.1", 46702792704LL},
    {"openai-community/gpt2", 124439808LL},
    {"openai-community/gpt2-large", 774030080LL},
    {"openai-community/gpt2-medium", 354823168LL},
    {"tiiuae/falcon-7b", 6921720704LL},
    {"tiiuae/falcon-7b-instruct", 6921720704LL},
  };
  for (const Expected& e : cases) {
    INFO(e.id);
    CHECK(count(e.id) == e.params);
  }
}

TEST_CASE("parameter counts agree with the independent layout computation", "[model][params]") {
  const Expected cases[] = {
    {"01-ai/Yi-34B", 34388917248LL},
    {"Qwen/Qwen-14B", 14167290880LL},
    {"Qwen/Qwen-1_8B", 1836828672LL},
    {"Qwen/Qwen-72B", 72287920128LL},
    {"Qwen/Qwen-7B", 7721324544LL},
    {"TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T", 1100048384LL},
    {"bigcode/starcoder2-7b", 7173923840LL},
    {"bigscience/T0_3B", 2849757184LL},
    {"bigscience/mt0-xxl", 12921057280LL},
    {"google/gemma-7b", 8537680896LL},
    {"iseekyan/mixtral-8x2b-4layers", 1251035136LL},
    {"megatron/gpt-100b", 101199564800LL},
    {"megatron/gpt-175b", 174615846912LL},
    {"megatron/gpt-1t", 1008038758400LL},
    {"megatron/gpt-22b", 22074273792LL},
    {"megatron/gpt-530b", 529600819200LL},
    {"megatron/gpt3-6.7b-32k", 6784425984LL},
    {"microsoft/phi-1_5", 1418270720LL},
    {"stabilityai/stablelm-base-alpha-3b", 3637321728LL},
  };
  for (const Expected& e : cases) {
    INFO(e.id);
    CHECK(count(e.id) == e.params);
  }
}
