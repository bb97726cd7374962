// The framework capability matrix (see capabilities.h). Revisions: those of docs/frameworks.md and
// export/launch.cpp (DeepSpeed v0.16.4, accelerate d6d3e03, Megatron-LM core_v0.14.0, torchtitan
// c854924, torchtune v0.6.1, litgpt 26857050, fsdp_qlora 05ed9f2).
#include "training/capabilities.h"

#include <cstring>
#include <initializer_list>
#include <utility>

namespace memfit {

namespace {

void off(bool (&flags)[4], std::initializer_list<Sharding> which) {
  for (Sharding s : which) flags[static_cast<int>(s)] = false;
}
void only_methods(FrameworkCapabilities& c, std::initializer_list<Method> which) {
  for (bool& m : c.methods) m = false;
  for (Method m : which) c.methods[static_cast<int>(m)] = true;
}
void no_model_parallel(FrameworkCapabilities& c) { c.tp = c.sequence_parallel = c.pp = c.vpp = c.cp = c.ulysses_cp = c.ep = false; }

FrameworkCapabilities hf_trainer() {
  FrameworkCapabilities c;
  // accelerate: DDP, FSDP (FULL_SHARD = ZeRO-3, SHARD_GRAD_OP = ZeRO-2, HYBRID_SHARD) and DeepSpeed
  // ZeRO 1-3 with offload_optimizer (stages 1-3) and offload_param (stage 3); FSDP offload_params.
  off(c.optimizer_offload_with, {Sharding::kNone});
  // Trainer's gradient_checkpointing recomputes whole decoder layers; accelerate's config sets
  // no tensor, pipeline, context or expert parallelism that memfit writes (accelerate >= 1.10's
  // ParallelismConfig tp/cp is not offered yet).
  no_model_parallel(c);
  c.selective_checkpointing = false;
  c.launch_formats = {"accelerate_yaml", "python_script"};
  c.sources = {"huggingface/accelerate @ d6d3e03: docs/source/usage_guides/fsdp.md, deepspeed.md (strategies, offload)",
               "deepspeedai/DeepSpeed v0.16.4: docs/_pages/config-json.md (offload_optimizer stages 1-3, offload_param stage 3)",
               "huggingface/transformers v5.15.0: src/transformers/modeling_utils.py (gradient_checkpointing_enable: per layer)",
               "huggingface/transformers v4.39.0: BitsAndBytesConfig(bnb_4bit_quant_storage) lets FSDP / ZeRO-3 shard 4-bit weights"};
  return c;
}

// TRL's SFTTrainer is a transformers Trainer: accelerate's strategies, as hf_trainer; its own
// `trl sft --config` file carries the training knobs, accelerate's file the sharding.
FrameworkCapabilities trl() {
  FrameworkCapabilities c = hf_trainer();
  c.launch_formats = {"trl_sft_yaml", "accelerate_yaml"};
  c.sources.emplace_back("huggingface/trl @ f2cd5771: trl/trainer/sft_trainer.py (SFTTrainer subclasses transformers.Trainer)");
  return c;
}

// Axolotl and LLaMA-Factory train through the HF Trainer (accelerate: DDP, FSDP, DeepSpeed ZeRO);
// their own YAML carries the training knobs and the sharding (DeepSpeed inline, FSDP keys), the
// launch command (first comment) the GPU count.
FrameworkCapabilities axolotl() {
  FrameworkCapabilities c = hf_trainer();
  c.launch_formats = {"axolotl_yaml"};
  // load_adapter: lora / qlora (PEFT LoraConfig, peft_use_dora) and full; no other PEFT method.
  only_methods(c, {Method::kFull, Method::kLora, Method::kQlora, Method::kDora});
  c.sources.emplace_back("axolotl-ai-cloud/axolotl @ 067b021c: src/axolotl/utils/schemas/config.py (deepspeed: str | dict, "
                         "fsdp_config, fsdp_version), src/axolotl/loaders/adapter.py (adapter lora / qlora)");
  return c;
}

FrameworkCapabilities llamafactory() {
  FrameworkCapabilities c = hf_trainer();
  c.launch_formats = {"llamafactory_yaml"};
  // finetuning_type lora (use_dora, quantization_bit), freeze or full (oft not modelled).
  only_methods(c, {Method::kFull, Method::kLora, Method::kQlora, Method::kDora, Method::kFreeze});
  c.sources.emplace_back("hiyouga/LLaMA-Factory @ ff6d4d12: src/llamafactory/hparams/finetuning_args.py (finetuning_type), "
                         "examples/deepspeed/*.json, examples/accelerate/fsdp_config.yaml");
  return c;
}

// Unsloth as memfit writes it: one GPU, its own script (the launch format's note).
FrameworkCapabilities unsloth() {
  FrameworkCapabilities c;
  off(c.sharding, {Sharding::kZero1, Sharding::kZero2, Sharding::kZero3});
  off(c.optimizer_offload_with, {Sharding::kNone});
  no_model_parallel(c);
  c.params_offload = false;
  c.optimizer_offload = false;  // the script has no optimizer offload (activations: "unsloth" checkpointing)
  c.selective_checkpointing = false;
  c.multi_node = c.multi_gpu = false;
  c.launch_formats = {"unsloth_python"};
  // FastLanguageModel.get_peft_model builds LoRA adapters; PEFT's other methods are not offered.
  only_methods(c, {Method::kFull, Method::kLora, Method::kQlora, Method::kDora, Method::kFreeze});
  c.sources = {"unslothai/unsloth @ 015bdef0: unsloth/models/loader.py, llama.py (FastLanguageModel on one device)"};
  return c;
}

FrameworkCapabilities deepspeed() {
  FrameworkCapabilities c;
  off(c.optimizer_offload_with, {Sharding::kNone});
  // AutoTP (tensor_parallel.autotp_size) without sequence parallelism, rejected with stage 3
  // (runtime/engine.py); pipeline parallelism needs the model rebuilt as a deepspeed.pipe
  // PipelineModule and MoE its deepspeed.moe layers: code, not a config, and not offered.
  c.sequence_parallel = c.tp_with_zero3 = false;
  c.pp = c.vpp = c.cp = c.ep = false;
  c.selective_checkpointing = false;
  // The engine trains what the client script builds; memfit's DeepSpeed runs are full training
  // (adapters: hf_trainer with parallel.backend deepspeed).
  only_methods(c, {Method::kFull});
  c.launch_formats = {"deepspeed_json", "python_script"};
  c.sources = {"deepspeedai/DeepSpeed v0.16.4: docs/_pages/config-json.md (zero_optimization, offload, tensor_parallel.autotp_size)",
               "deepspeedai/DeepSpeed v0.16.4: deepspeed/runtime/engine.py (AutoTP rejected with ZeRO stage 3)",
               "deepspeedai/DeepSpeed: deepspeed/runtime/pipe/module.py (PipelineModule), deepspeed/moe/layer.py (MoE)"};
  return c;
}

FrameworkCapabilities megatron() {
  FrameworkCapabilities c;
  c.ulysses_cp = false;  // context parallelism is Transformer Engine's p2p ring
  // --use-distributed-optimizer (ZeRO-1); --use-megatron-fsdp with
  // --data-parallel-sharding-strategy optim_grads (ZeRO-2) / optim_grads_params (ZeRO-3);
  // --optimizer-cpu-offload asserts the distributed optimizer (and --use-precision-aware-optimizer);
  // parameters are never offloaded.
  off(c.optimizer_offload_with, {Sharding::kNone, Sharding::kZero2, Sharding::kZero3});
  c.params_offload = false;
  // moe_layer.py MoELayer.forward raises in training when tp > 1 runs without sequence parallelism.
  c.moe_tp_needs_sequence_parallel = true;
  // pretrain_gpt.py trains every weight (LoRA: NeMo's PEFT, not Megatron-LM).
  only_methods(c, {Method::kFull});
  c.launch_formats = {"megatron_args"};
  c.sources = {"NVIDIA/Megatron-LM core_v0.14.0: megatron/training/arguments.py (--use-distributed-optimizer, --use-megatron-fsdp, "
               "--data-parallel-sharding-strategy, --optimizer-cpu-offload, --tensor/pipeline-model-parallel-size, "
               "--num-layers-per-virtual-pipeline-stage, --context-parallel-size, --expert-model-parallel-size, "
               "--sequence-parallel, --recompute-activations / --recompute-granularity)",
               "NVIDIA/Megatron-LM @ d98e8a64: megatron/core/transformer/moe/moe_layer.py (MoE with tp > 1 needs sequence parallelism)"};
  return c;
}

FrameworkCapabilities torchtitan() {
  FrameworkCapabilities c;
  c.ulysses_cp = false;  // context_parallel: PyTorch's ring attention
  // FSDP2 (data_parallel_shard_degree, HSDP with replicate) or DDP (replicate only, and only as
  // 1-D parallelism: parallelize.py raises "DDP has not supported > 1D parallelism");
  // training.enable_cpu_offload applies FSDP2's CPUOffloadPolicy (parameters, gradients and
  // optimizer states together).
  off(c.sharding, {Sharding::kZero1, Sharding::kZero2});
  c.replicate_with_model_parallel = false;
  c.optimizer_offload = false;
  only_methods(c, {Method::kFull});
  c.launch_formats = {"torchtitan_toml"};
  c.sources = {"pytorch/torchtitan @ c854924: torchtitan/config/job_config.py ([parallelism] degrees, "
               "enable_cpu_offload, [activation_checkpoint] mode)",
               "pytorch/torchtitan @ c854924: torchtitan/models/llama3/infra/parallelize.py (apply_fsdp, apply_ddp 1-D only)"};
  return c;
}

FrameworkCapabilities torchtune() {
  FrameworkCapabilities c;
  // Distributed recipes always shard with FSDP2 (training.shard_model), fsdp_cpu_offload for
  // parameters; one device offloads the optimizer with torchao's CPUOffloadOptimizer.
  off(c.sharding, {Sharding::kNone, Sharding::kZero1, Sharding::kZero2});
  c.optimizer_offload_single_gpu_only = true;
  // tensor_parallel_dim: full_finetune_distributed only (its plans shard the sequence too).
  c.tp_with_adapters = false;
  c.pp = c.vpp = c.cp = c.ep = false;
  c.selective_checkpointing = false;
  only_methods(c, {Method::kFull, Method::kLora, Method::kQlora, Method::kDora});
  c.launch_formats = {"torchtune_command"};
  c.sources = {"pytorch/torchtune v0.6.1: recipes/full_finetune_distributed.py (shard_model, fsdp_cpu_offload, tensor_parallel_dim)",
               "pytorch/torchtune v0.6.1: recipes/lora_finetune_distributed.py, lora_finetune_single_device.py",
               "pytorch/torchtune v0.6.1: torchtune/models/llama3_1/_model_builders.py (quantize_base, use_dora)",
               "pytorch/torchtune v0.6.1: docs/source/tutorials/memory_optimizations.rst (CPUOffloadOptimizer)"};
  return c;
}

FrameworkCapabilities litgpt() {
  FrameworkCapabilities c;
  // finetune/*.py: one device, or Fabric's FSDPStrategy (full shard) on several; no offload.
  off(c.sharding, {Sharding::kNone, Sharding::kZero1, Sharding::kZero2});
  c.optimizer_offload = c.params_offload = false;
  no_model_parallel(c);
  c.selective_checkpointing = false;
  only_methods(c, {Method::kFull, Method::kLora, Method::kQlora, Method::kAdapter, Method::kAdapterV2});
  c.sources = {"Lightning-AI/litgpt @ 26857050: litgpt/finetune/full.py, lora.py (FSDPStrategy, --quantize bnb.nf4)",
               "Lightning-AI/litgpt v0.5.13: litgpt/finetune/adapter.py, adapter_v2.py"};
  return c;
}

FrameworkCapabilities fsdp_qlora() {
  FrameworkCapabilities c;
  // train.py: --sharding_strategy full_shard | shard_grad_op | ddp (FSDP NO_SHARD); --use_cpu_offload
  // (FSDP CPUOffload: parameters with their optimizer states); one node (mp.spawn world_size).
  off(c.sharding, {Sharding::kZero1});
  c.optimizer_offload = false;
  no_model_parallel(c);
  c.selective_checkpointing = false;
  c.multi_node = false;
  only_methods(c, {Method::kFull, Method::kLora, Method::kQlora});
  c.launch_formats = {"fsdp_qlora_command"};
  c.sources = {"AnswerDotAI/fsdp_qlora @ 05ed9f2: train.py (fsdp_main arguments: train_type, sharding_strategy, "
               "use_cpu_offload, use_gradient_checkpointing, world_size)"};
  return c;
}

}  // namespace

std::vector<DatedCapability> dated_capabilities(Framework f) {
  switch (f) {
    case Framework::kHfTrainer:
    case Framework::kAxolotl:
    case Framework::kLlamaFactory:
      return {{202403, "QLoRA's 4-bit base sharded by FSDP / ZeRO-3",
               "huggingface/transformers v4.39.0 (2024-03): BitsAndBytesConfig bnb_4bit_quant_storage",
               [](FrameworkCapabilities& c) { c.qlora_with_zero3 = false; }}};
    case Framework::kDeepspeed:
      return {{202502, "tensor parallelism (AutoTP training, tensor_parallel.autotp_size)",
               "deepspeedai/DeepSpeed v0.16.4 (2025-02): AutoTP training", [](FrameworkCapabilities& c) { c.tp = false; }}};
    default: return {};
  }
}

FrameworkCapabilities framework_capabilities(Framework f, std::int64_t yyyymm) {
  FrameworkCapabilities c;
  switch (f) {
    case Framework::kHfTrainer: c = hf_trainer(); break;
    case Framework::kDeepspeed: c = deepspeed(); break;
    case Framework::kMegatron: c = megatron(); break;
    case Framework::kTorchtitan: c = torchtitan(); break;
    case Framework::kTorchtune: c = torchtune(); break;
    case Framework::kLitgpt: c = litgpt(); break;
    case Framework::kFsdpQlora: c = fsdp_qlora(); break;
    case Framework::kTrl: c = trl(); break;
    case Framework::kUnsloth: c = unsloth(); break;
    case Framework::kAxolotl: c = axolotl(); break;
    case Framework::kLlamaFactory: c = llamafactory(); break;
    // Measurement harnesses and plain PyTorch: no limit memfit knows of, no launch format.
    default: break;
  }
  for (const DatedCapability& d : dated_capabilities(f)) {
    if (yyyymm > 0 && yyyymm < d.since_yyyymm) d.revoke(c);
  }
  return c;
}

bool runs_everything(const FrameworkCapabilities& c) {
  bool all = c.optimizer_offload && c.params_offload && c.tp && c.sequence_parallel && c.tp_with_zero3 && c.tp_with_adapters &&
             c.pp && c.vpp && c.cp && c.ulysses_cp && c.ep && c.replicate_with_model_parallel && c.selective_checkpointing &&
             c.qlora_with_zero3 && c.multi_node && c.multi_gpu && !c.optimizer_offload_single_gpu_only && !c.moe_tp_needs_sequence_parallel;
  for (int s = 0; s < 4; ++s) all = all && c.sharding[s] && c.optimizer_offload_with[s];
  for (bool m : c.methods) all = all && m;
  return all;
}

const char* capability_rule(const FrameworkCapabilities& c, const ParallelLayout& l, const TrainingSetup& t,
                            std::int64_t gpus_per_node, bool moe) {
  if (!c.methods[static_cast<int>(t.method)]) return "framework_method";
  if (!c.multi_gpu && l.gpus() > 1) return "framework_single_gpu";
  if (!c.multi_node && l.gpus() > gpus_per_node) return "framework_single_node";
  if (l.tp > 1) {
    if (!c.tp) return "framework_no_tp";
    if (l.sharding == Sharding::kZero3 && !c.tp_with_zero3) return "framework_tp_not_with_zero3";
    if (base_frozen(t.method) && !c.tp_with_adapters) return "framework_tp_not_with_adapters";
  }
  if (l.sequence_parallel && !c.sequence_parallel) return "framework_no_sequence_parallel";
  if (moe && l.tp > 1 && !l.sequence_parallel && c.moe_tp_needs_sequence_parallel) return "framework_moe_tp_needs_sequence_parallel";
  if (l.pp > 1 && !c.pp) return "framework_no_pp";
  if (l.vpp > 1 && !c.vpp) return "framework_no_vpp";
  if (l.cp > 1 && !c.cp) return "framework_no_cp";
  if (l.cp > 1 && l.cp_kind == ContextParallelKind::kUlysses && !c.ulysses_cp) return "framework_no_ulysses";
  if (l.ep > 1 && !c.ep) return "framework_no_ep";
  const bool data_parallel = l.dp * l.cp > 1;
  if (data_parallel) {
    static constexpr const char* kNoSharding[] = {"framework_no_ddp", "framework_no_zero1", "framework_no_zero2",
                                                  "framework_no_zero3"};
    if (!c.sharding[static_cast<int>(l.sharding)]) return kNoSharding[static_cast<int>(l.sharding)];
    if (l.sharding == Sharding::kNone && !c.replicate_with_model_parallel && (l.tp > 1 || l.pp > 1 || l.cp > 1)) {
      return "framework_ddp_1d_only";
    }
  }
  if (t.offload == Offload::kOptimizer || t.offload == Offload::kParamsOptimizer) {
    const bool params = t.offload == Offload::kParamsOptimizer;
    if (params && !c.params_offload) return "framework_no_param_offload";
    if (!params) {
      if (!c.optimizer_offload) return "framework_no_optimizer_offload";
      if (c.optimizer_offload_single_gpu_only && l.gpus() > 1) return "framework_optimizer_offload_single_gpu";
      if (data_parallel && !c.optimizer_offload_with[static_cast<int>(l.sharding)]) return "framework_optimizer_offload_sharding";
    }
  }
  if (t.checkpointing == Checkpointing::kSelective && !c.selective_checkpointing) return "framework_no_selective_checkpointing";
  if (t.method == Method::kQlora && l.sharding == Sharding::kZero3 && data_parallel && !c.qlora_with_zero3) {
    return "framework_qlora_not_with_zero3";
  }
  return nullptr;
}

std::string capability_message(const char* code) {
  static constexpr std::pair<const char*, const char*> kMessages[] = {
      {"framework_method", "the framework does not train this method"},
      {"framework_single_node", "the framework runs on one node only"},
      {"framework_single_gpu", "the framework's launch script trains on one GPU"},
      {"framework_no_tp", "the framework has no tensor parallelism"},
      {"framework_tp_not_with_zero3", "the framework's tensor parallelism does not run with ZeRO-3"},
      {"framework_tp_not_with_adapters", "the framework's adapter (LoRA) recipes have no tensor parallelism"},
      {"framework_moe_tp_needs_sequence_parallel", "the framework trains mixture-of-experts models with tp > 1 only under sequence parallelism"},
      {"framework_no_sequence_parallel", "the framework has no sequence parallelism"},
      {"framework_no_pp", "the framework has no pipeline parallelism"},
      {"framework_no_vpp", "the framework has no interleaved (virtual) pipeline stages"},
      {"framework_no_cp", "the framework has no context parallelism"},
      {"framework_no_ulysses", "the framework's context parallelism is a ring, not Ulysses all-to-alls"},
      {"framework_no_ep", "the framework has no expert parallelism"},
      {"framework_no_ddp", "the framework does not replicate over data-parallel ranks (DDP); it shards"},
      {"framework_no_zero1", "the framework has no ZeRO-1 (optimizer-state sharding alone)"},
      {"framework_no_zero2", "the framework has no ZeRO-2 (gradient and optimizer-state sharding)"},
      {"framework_no_zero3", "the framework has no ZeRO-3 / FSDP parameter sharding"},
      {"framework_ddp_1d_only", "the framework replicates (DDP) only without tensor, pipeline or context parallelism"},
      {"framework_no_param_offload", "the framework does not offload parameters to the CPU"},
      {"framework_no_optimizer_offload", "the framework does not offload the optimizer alone to the CPU"},
      {"framework_optimizer_offload_single_gpu", "the framework offloads the optimizer on one GPU only"},
      {"framework_optimizer_offload_sharding", "the framework offloads the optimizer only with another sharding"},
      {"framework_no_selective_checkpointing", "the framework checkpoints whole blocks only (no selective recompute)"},
      {"framework_qlora_not_with_zero3", "this framework version cannot shard a 4-bit base with ZeRO-3 / FSDP"}};
  for (const auto& [c, m] : kMessages) {
    if (std::strcmp(c, code) == 0) return m;
  }
  return code;
}

}  // namespace memfit
