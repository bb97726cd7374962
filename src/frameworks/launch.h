// Launch configurations for a chosen layout: DeepSpeed JSON, HF accelerate YAML, Megatron-LM
// arguments, torchtitan TOML, a torchtune command, a Python training script (transformers + PEFT +
// bitsandbytes, or a DeepSpeed engine loop) and an fsdp_qlora command, each written in its
// framework's folder (frameworks/<key>/launch.cpp). Option names follow each framework's
// documentation at the revision named atop its writer; a format that cannot express a layout (e.g.
// pipeline parallelism in accelerate) says so in `notes` instead of emitting something wrong. The formats that launch the request's framework (its capabilities'
// launch_formats) are marked: together they express every knob of a layout it runs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/architecture.h"
#include "parallel/layout.h"
#include "frameworks/profile.h"
#include "training/training_setup.h"

namespace memfit {

struct LaunchInput {
  const ModelArchitecture* arch = nullptr;
  std::string model_id;        // HF id or the config's _name_or_path
  ParallelLayout layout;
  TrainingSetup setup;         // micro_batch, grad_accum, checkpointing, offload, precision, method
  std::int64_t gpus_per_node = 8;
  Framework framework = Framework::kOther;  // marks its formats (LaunchFormat::for_framework)
};

struct LaunchFormat {
  std::string format;          // deepspeed_json, accelerate_yaml, megatron_args, torchtitan_toml, torchtune_command,
                               // trl_sft_yaml, unsloth_python, python_script, fsdp_qlora_command
  std::string file_name;       // suggested file name
  std::string text;            // the configuration ("" when the format cannot express the layout)
  bool supported = true;
  bool for_framework = false;  // one of the formats that launch the request's framework
  std::vector<std::string> notes;
};

std::vector<LaunchFormat> launch_configs(const LaunchInput& in);

}  // namespace memfit
