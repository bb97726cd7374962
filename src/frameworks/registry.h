// The framework registry: one entry per framework, in kFrameworks (the order of
// framework_profiles(), which docs and the page list). A framework is a folder
// frameworks/<key>/ holding profile.cpp (its profile, dated history and capabilities) and, when
// memfit writes its launch file, launch.cpp (a row of kLaunchWriters in frameworks/launch.cpp).
// README "Add a framework" is the checklist.
#pragma once
#include <initializer_list>
#include <vector>

#include "frameworks/capabilities.h"
#include "frameworks/profile.h"

namespace memfit {

// Each framework's entry points (frameworks/<key>/profile.cpp).
FrameworkProfile hf_trainer_profile();
FrameworkProfile transformers_loop_profile();
FrameworkProfile peft_bench_profile();
FrameworkProfile torchtune_profile();
FrameworkProfile torchtitan_profile();
FrameworkProfile megatron_profile();
FrameworkProfile deepspeed_profile();
FrameworkProfile litgpt_profile();
FrameworkProfile fsdp_qlora_profile();
FrameworkProfile colossalai_profile();
FrameworkProfile trl_profile();
FrameworkProfile unsloth_profile();
FrameworkProfile axolotl_profile();
FrameworkProfile llamafactory_profile();
FrameworkProfile prime_rl_profile();
FrameworkProfile other_profile();
FrameworkCapabilities hf_trainer_capabilities();
FrameworkCapabilities torchtune_capabilities();
FrameworkCapabilities torchtitan_capabilities();
FrameworkCapabilities megatron_capabilities();
FrameworkCapabilities deepspeed_capabilities();
FrameworkCapabilities litgpt_capabilities();
FrameworkCapabilities fsdp_qlora_capabilities();
FrameworkCapabilities trl_capabilities();
FrameworkCapabilities unsloth_capabilities();
FrameworkCapabilities axolotl_capabilities();
FrameworkCapabilities llamafactory_capabilities();
FrameworkCapabilities prime_rl_capabilities();
std::vector<DatedCapability> hf_trainer_dated_capabilities();
std::vector<DatedCapability> deepspeed_dated_capabilities();
std::vector<DatedCapability> torchtune_dated_capabilities();

struct FrameworkEntry {
  Framework id;
  FrameworkProfile (*profile)();
  FrameworkCapabilities (*capabilities)();               // null: no limit memfit knows of (FrameworkCapabilities{})
  std::vector<DatedCapability> (*dated_capabilities)();  // null: none dated
};

inline constexpr FrameworkEntry kFrameworks[] = {
    {Framework::kHfTrainer, hf_trainer_profile, hf_trainer_capabilities, hf_trainer_dated_capabilities},
    {Framework::kTransformersLoop, transformers_loop_profile, nullptr, nullptr},
    {Framework::kPeftBench, peft_bench_profile, nullptr, nullptr},
    {Framework::kTorchtune, torchtune_profile, torchtune_capabilities, torchtune_dated_capabilities},
    {Framework::kTorchtitan, torchtitan_profile, torchtitan_capabilities, nullptr},
    {Framework::kMegatron, megatron_profile, megatron_capabilities, nullptr},
    {Framework::kDeepspeed, deepspeed_profile, deepspeed_capabilities, deepspeed_dated_capabilities},
    {Framework::kLitgpt, litgpt_profile, litgpt_capabilities, nullptr},
    {Framework::kFsdpQlora, fsdp_qlora_profile, fsdp_qlora_capabilities, nullptr},
    {Framework::kColossalai, colossalai_profile, nullptr, nullptr},
    {Framework::kTrl, trl_profile, trl_capabilities, nullptr},
    {Framework::kUnsloth, unsloth_profile, unsloth_capabilities, nullptr},
    {Framework::kAxolotl, axolotl_profile, axolotl_capabilities, hf_trainer_dated_capabilities},
    {Framework::kLlamaFactory, llamafactory_profile, llamafactory_capabilities, hf_trainer_dated_capabilities},
    {Framework::kPrimeRl, prime_rl_profile, prime_rl_capabilities, nullptr},
    {Framework::kOther, other_profile, nullptr, nullptr},
};

// A framework whose code builds on another's: that profile under a new id, key and name.
inline FrameworkProfile based_on(FrameworkProfile p, Framework id, const char* key, const char* name) {
  p.id = id;
  p.key = key;
  p.name = name;
  return p;
}

// DTensor sequence parallelism (torchtitan, torchtune): PyTorch's functional all-gather copied
// its output into sequence order at every micro-batch until _maybe_view_chunk_cat returned a view
// for a batch of 1; the month is the first in which the helper is known to be in the code.
DatedBehaviour sp_batch1_gather_copied();

// Helpers of the capability entries.
inline void off(bool (&flags)[4], std::initializer_list<Sharding> which) {
  for (Sharding s : which) flags[static_cast<int>(s)] = false;
}
inline void only_methods(FrameworkCapabilities& c, std::initializer_list<Method> which) {
  for (bool& m : c.methods) m = false;
  for (Method m : which) c.methods[static_cast<int>(m)] = true;
}
inline void only_optimizers(FrameworkCapabilities& c, std::initializer_list<Optimizer> which) {
  for (bool& o : c.optimizers) o = false;
  for (Optimizer o : which) c.optimizers[static_cast<int>(o)] = true;
}
inline void no_model_parallel(FrameworkCapabilities& c) { c.tp = c.sequence_parallel = c.pp = c.vpp = c.cp = c.ulysses_cp = c.ep = false; }

// ZeRO-Offload steps DeepSpeed's own CPU optimizers only: ds_config's Adam/AdamW as DeepSpeedCPUAdam,
// Lion as DeepSpeedCPULion (deepspeed/runtime/engine.py _configure_basic_optimizer @ v0.16.4). A client
// optimizer is refused unless zero_force_ds_cpu_optimizer is false (engine.py _configure_optimizer
// @ v0.16.4, default True in runtime/constants.py since v0.8.3), and accelerate swaps it for
// DeepSpeedCPUAdam (accelerate @ d6d3e03 src/accelerate/utils/deepspeed.py map_pytorch_optim_to_deepspeed):
// neither runs an 8-bit, paged, Adafactor, SGD or projected-gradient optimizer as the layout says.
inline void deepspeed_cpu_optimizers_only(bool (&runs)[kOptimizerCount]) {
  for (bool& r : runs) r = false;
  runs[static_cast<int>(Optimizer::kAdamW)] = runs[static_cast<int>(Optimizer::kLion)] = true;
}
// bitsandbytes' 8-bit and paged optimizers on CPU tensors (FSDP's CPU offload, torchao's
// CPUOffloadOptimizer): no CPU kernel for optimizer_update_8bit_blockwise before 0.50.0
// (bitsandbytes 0.49.2 backends/: cuda and xpu only; 0.50.0, 2026-07, backends/cpu/ops.py registers
// it, and optim/optimizer.py get_state_buffer falls back to unpaged states on the CPU).
inline constexpr std::int64_t kBitsandbytesCpuStepSince = 202607;
inline void no_bitsandbytes_on_cpu(bool (&runs)[kOptimizerCount]) {
  for (Optimizer o : {Optimizer::kAdamW8bit, Optimizer::kPagedAdamW8bit, Optimizer::kPagedAdamW32bit}) runs[static_cast<int>(o)] = false;
}
inline constexpr const char* kBitsandbytesCpuStepSource =
    "bitsandbytes-foundation/bitsandbytes 0.50.0 (2026-07): backends/cpu/ops.py optimizer_update_8bit_blockwise on the CPU";

}  // namespace memfit
