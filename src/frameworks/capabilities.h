// What each framework can run: data-parallel sharding, offload, the model-parallel kinds, the
// checkpointing modes and the training methods, each cited to the framework's code or docs
// (frameworks/<key>/profile.cpp; docs/frameworks.md "What each framework runs"), with the month a
// capability arrived where it is dated. The search offers only these combinations (capability_rule, its
// rejections counted by code) and the launch exporter writes the framework's own formats.
//
// Adding a framework (README "Add a framework"): its folder's profile.cpp has one function that
// starts from FrameworkCapabilities{} (everything) and turns off what it lacks, each line with its
// source, and lists in `launch_formats` the launch format(s) that express it (its launch.cpp);
// tests/unit/frameworks/capabilities_test.cpp then sweeps it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "parallel/layout.h"
#include "frameworks/profile.h"
#include "training/training_setup.h"

namespace memfit {

struct FrameworkCapabilities {
  /// Data-parallel sharding by Sharding value; kNone is replicated data parallelism (DDP) over
  /// dp x cp > 1 ranks (one rank shards nothing and is always allowed).
  bool sharding[4] = {true, true, true, true};
  bool optimizer_offload = true;             // optimizer states and step on the CPU
  /// ... over dp x cp > 1 ranks, with which sharding (DeepSpeed: ZeRO >= 1; Megatron: the
  /// distributed optimizer). One rank shards nothing: any.
  bool optimizer_offload_with[4] = {true, true, true, true};
  bool optimizer_offload_single_gpu_only = false;  // torchtune: torchao CPUOffloadOptimizer
  bool params_offload = true;                // parameter shards on the CPU (ZeRO-3 / FSDP)
  /// Optimizers (by Optimizer value) whose step the framework's offload runs on the CPU, for the
  /// optimizer offloaded alone (Offload::kOptimizer) and with the parameters (kParamsOptimizer).
  /// DeepSpeed's ZeRO-Offload steps its own CPU optimizers only; FSDP's and torchao's offload step
  /// the client optimizer on CPU tensors, which bitsandbytes' 8-bit and paged kernels do not take.
  bool optimizer_offload_runs[kOptimizerCount] = {true, true, true, true, true, true, true,
                                                  true, true, true, true, true, true, true};
  bool params_offload_runs[kOptimizerCount] = {true, true, true, true, true, true, true,
                                               true, true, true, true, true, true, true};
  bool tp = true;
  bool sequence_parallel = true;             // Megatron-style SP within the tp group
  bool tp_with_zero3 = true;
  bool tp_with_adapters = true;
  bool pp = true, vpp = true, cp = true, ep = true;
  /// Context parallelism as Ulysses all-to-alls (parallel.cp_kind ulysses): DeepSpeed's
  /// UlyssesSPAttentionHF under accelerate's parallelism_config or ArcticTraining, neither a launch
  /// format memfit writes; Megatron-LM and torchtitan run a ring.
  bool ulysses_cp = true;
  /// More than one GPU (Unsloth's script as memfit writes it trains on one).
  bool multi_gpu = true;
  /// Replicated data parallelism beside tp/pp/cp (torchtitan: DDP is 1-D only).
  bool replicate_with_model_parallel = true;
  bool selective_checkpointing = true;       // full and none are every framework's
  /// Methods by Method value (full, lora, qlora, dora, freeze, then PEFT's others: setup_names.h).
  bool methods[kMethodCount] = {true, true, true, true, true, true, true, true, true,
                                true, true, true, true, true, true, true, true, true,
                                true, true, true, true, true, true, true, true, true, true,
                                true, true, true, true, true, true, true, true, true, true, true, true,
                                true, true, true};
  /// Optimizers (by Optimizer value) the framework's launch files set.
  bool optimizers[kOptimizerCount] = {true, true, true, true, true, true, true, true, true, true, true, true, true, true};
  /// QLoRA's 4-bit base sharded by ZeRO-3 / FSDP.
  bool qlora_with_zero3 = true;
  bool multi_node = true;
  /// A mixture-of-experts model trains with tp > 1 only under sequence parallelism.
  bool moe_tp_needs_sequence_parallel = false;
  /// Launch formats that launch this framework's runs (frameworks/launch.h LaunchFormat::format),
  /// together expressing every knob; empty: memfit writes no launch file for it.
  std::vector<std::string> launch_formats;
  std::vector<std::string> sources;
};

/// A capability that arrived in a known month: requests naming an earlier framework_version
/// (YYYY-MM) run without it.
struct DatedCapability {
  std::int64_t since_yyyymm;
  std::string what;
  std::string source;
  void (*revoke)(FrameworkCapabilities&);
};

/// Whether `c` limits nothing a layout can use (plain PyTorch, measurement harnesses): the search
/// then skips capability_rule.
bool runs_everything(const FrameworkCapabilities& c);

/// The capabilities of `f` as of `yyyymm` (0: the current code).
FrameworkCapabilities framework_capabilities(Framework f, std::int64_t yyyymm = 0);
/// The dated capabilities of `f` (docs and tests list them).
std::vector<DatedCapability> dated_capabilities(Framework f);

/// The code of the first capability the run needs and `c` lacks ("framework_no_pp"), or null.
/// `gpus_per_node`: the cluster's (single-node frameworks); `moe`: the model has experts.
const char* capability_rule(const FrameworkCapabilities& c, const ParallelLayout& l, const TrainingSetup& t,
                            std::int64_t gpus_per_node, bool moe);
/// The rule in words, for a code capability_rule returns.
std::string capability_message(const char* code);

}  // namespace memfit
