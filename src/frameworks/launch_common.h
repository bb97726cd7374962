// Shared machinery of the launch file writers (frameworks/<key>/launch.cpp; the dispatcher is
// frameworks/launch.cpp): text building, the layout's batch and node counts, DeepSpeed's stage
// rules, and the helpers of the HF-style configurations (TrainingArguments optimizer names, PEFT
// module lists and config classes, the DeepSpeed block and launch line of HF-Trainer YAMLs).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "frameworks/launch.h"
#include "training/peft_linear_adapters.h"
#include "training/peft_shared_adapters.h"
#include "training/setup_names.h"

namespace memfit::launch_files {

// Text built with `<<` as Text prints it (integers in decimal, doubles as "%g"),
// without the iostream locale machinery (about 20 KiB of the page's gzip).
class Text {
 public:
  Text& operator<<(std::string_view s) {
    out_.append(s);
    return *this;
  }
  Text& operator<<(char c) {
    out_.push_back(c);
    return *this;
  }
  template <class Int, std::enable_if_t<std::is_integral_v<Int>, int> = 0>
  Text& operator<<(Int v) {
    out_.append(std::to_string(v));
    return *this;
  }
  Text& operator<<(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    out_.append(buf);
    return *this;
  }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

LaunchFormat named(const char* format, const char* file_name);
std::string dtype_name(Precision p);
std::int64_t global_batch(const LaunchInput& in);
std::int64_t nodes(const LaunchInput& in);
bool model_parallel(const ParallelLayout& l);
int zero_stage(Sharding s);
// DeepSpeed offloads the optimizer from ZeRO stage 1 on and parameters at stage 3 only
// (config-json.md @ v0.16.4); at other stages the offload entries are ignored without a word.
constexpr const char* kDeepSpeedOffloadStages =
    "DeepSpeed offloads the optimizer from ZeRO stage 1 and parameters at stage 3 only; other stages ignore the offload";
bool one_data_rank(const ParallelLayout& l);
int deepspeed_stage(const LaunchInput& in);
bool deepspeed_ignores_offload(const LaunchInput& in);
// Megatron-LM's and torchtitan's context parallelism is a ring: a Ulysses layout has no flag there.
constexpr const char* kUlyssesNotRing =
    "Ulysses sequence parallelism (cp_kind ulysses) runs under DeepSpeed (accelerate parallelism_config "
    "sp_backend: deepspeed, or ArcticTraining); this framework's context parallelism is a ring";
bool ulysses_layout(const ParallelLayout& l);
std::string python_list(const std::vector<std::string>& items);
std::string hf_optim_name(const TrainingSetup& t);
std::string lora_modules(const TrainingSetup& t);
std::string saved_modules(const TrainingSetup& t, const ModelArchitecture& a);
std::string lora_init_argument(const TrainingSetup& t);
const char* peft_config_class(Method m);
void hf_low_rank_optim(Text& y, const TrainingSetup& t);
// How an HF-Trainer YAML (Axolotl, LLaMA-Factory) shards: DeepSpeed for ZeRO-1 and optimizer
// offload (as accelerate() picks), FSDP for ZeRO-2 / ZeRO-3, nothing on one data rank.
enum class HfSharding { kNone, kDeepspeed, kFsdp };
HfSharding hf_sharding(const LaunchInput& in);
void inline_deepspeed(Text& y, const LaunchInput& in);
std::string accelerate_launch_comment(const LaunchInput& in, const std::string& command);
LaunchFormat hf_yaml_unsupported(LaunchFormat f, const LaunchInput& in, const char* framework);

// The writers, one per format, each in its framework's folder (frameworks/launch.cpp lists them).
LaunchFormat deepspeed(const LaunchInput& in);          // deepspeed_json: deepspeed/launch.cpp
LaunchFormat accelerate(const LaunchInput& in);         // accelerate_yaml: hf_trainer/launch.cpp
LaunchFormat python_script(const LaunchInput& in);      // python_script: hf_trainer/launch.cpp
LaunchFormat megatron(const LaunchInput& in);           // megatron_args: megatron/launch.cpp
LaunchFormat torchtitan(const LaunchInput& in);         // torchtitan_toml: torchtitan/launch.cpp
LaunchFormat torchtune(const LaunchInput& in);          // torchtune_command: torchtune/launch.cpp
LaunchFormat trl_sft(const LaunchInput& in);            // trl_sft_yaml: trl/launch.cpp
LaunchFormat unsloth_script(const LaunchInput& in);     // unsloth_python: unsloth/launch.cpp
LaunchFormat fsdp_qlora(const LaunchInput& in);         // fsdp_qlora_command: fsdp_qlora/launch.cpp
LaunchFormat axolotl_yaml(const LaunchInput& in);       // axolotl_yaml: axolotl/launch.cpp
LaunchFormat llamafactory_yaml(const LaunchInput& in);  // llamafactory_yaml: llamafactory/launch.cpp

}  // namespace memfit::launch_files
