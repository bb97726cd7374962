// Every preset parses through the same path users' configs take, and the index matches the files.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "hf_config/parse_hf_config.h"
#include "model/tensor_inventory.h"
#include "presets/registry.h"

using namespace memfit;

TEST_CASE("every model preset parses and has a positive parameter count", "[presets]") {
  // Presets whose published config memfit reads with a note: a multimodal wrapper (its text model
  // estimated, its text_config's omitted keys from transformers' defaults) or a model_type read as
  // a generic llama-style decoder. Each: the model type it is read as, and what its warnings say.
  const std::map<std::string, std::pair<std::string, std::vector<std::string>>> noted = {
      {"google/gemma-3-4b-it", {"gemma3_text", {"wraps a language model", "transformers' defaults"}}},
      {"google/gemma-3-12b-it", {"gemma3_text", {"wraps a language model", "transformers' defaults"}}},
      {"google/gemma-3-27b-it", {"gemma3_text", {"wraps a language model", "transformers' defaults"}}},
      {"meta-llama/Llama-4-Scout-17B-16E-Instruct", {"llama4_text", {"wraps a language model", "transformers' defaults"}}},
      {"openai/gpt-oss-20b", {"generic", {"32 routed experts, top 4"}}},
      {"openai/gpt-oss-120b", {"generic", {"128 routed experts, top 4"}}},
  };
  for (const presets::ModelPreset& p : presets::model_presets()) {
    INFO(p.id);
    REQUIRE_FALSE(p.config_text.empty());
    const ModelArchitecture a = parse_hf_config_text(p.config_text);
    const auto note = noted.find(p.id);
    if (note == noted.end()) {
      CHECK(a.warnings.empty());
      CHECK(a.model_type == p.model_type);
    } else {
      CHECK(a.model_type == note->second.first);
      std::string all;
      for (const std::string& w : a.warnings) all += w + "\n";
      for (const std::string& part : note->second.second) CHECK(all.find(part) != std::string::npos);
    }
    CHECK(build_tensor_inventory(a).total_params > 0);
  }
}

TEST_CASE("the preset index lists exactly the model files", "[presets]") {
  std::set<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(std::string(MEMFIT_SOURCE_DIR) + "/presets/models")) {
    if (e.path().extension() == ".json") files.insert(e.path().filename().string());
  }
  std::set<std::string> listed;
  for (const presets::ModelPreset& p : presets::model_presets()) {
    std::string f = p.id;
    f.replace(f.find('/'), 1, "__");
    listed.insert(f + ".json");
  }
  CHECK(files == listed);
}

TEST_CASE("gpu presets carry memory, throughput and sources", "[presets][gpu]") {
  REQUIRE(presets::gpu_presets().size() >= 20);
  for (const GpuSpec& g : presets::gpu_presets()) {
    INFO(g.id);
    CHECK(g.memory_total_bytes > 8 * (std::int64_t{1} << 30));
    CHECK(g.dense_tflops_bf16 + g.dense_tflops_fp16 > 0);
    CHECK(g.memory_bandwidth_gb_per_s > 0);
    CHECK_FALSE(g.sources.empty());
  }
  const GpuSpec* h100 = presets::find_gpu("H100-80GB");
  REQUIRE(h100 != nullptr);
  CHECK(h100->memory_total_bytes == 81559LL * (1 << 20));
}

TEST_CASE("find_gpu reads each listed preset from its own file, the same as the list", "[presets][gpu]") {
  for (const GpuSpec& g : presets::gpu_presets()) {
    INFO(g.id);
    const GpuSpec* found = presets::find_gpu(g.id);
    REQUIRE(found != nullptr);
    CHECK(found->id == g.id);
    CHECK(found->name == g.name);
    CHECK(found->memory_total_bytes == g.memory_total_bytes);
    CHECK(found->dense_tflops_bf16 == g.dense_tflops_bf16);
    CHECK(found->host_memory_bytes_per_node == g.host_memory_bytes_per_node);
    CHECK(found->sources == g.sources);
    CHECK(found == presets::find_gpu(g.id));  // read once
  }
  CHECK(presets::find_gpu("H100") == nullptr);
  CHECK(presets::find_gpu("../index") == nullptr);
  CHECK(presets::find_gpu("") == nullptr);
}
