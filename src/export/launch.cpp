// Launch configurations (see launch.h). Option names, per framework:
//   DeepSpeed: docs/_pages/config-json.md (deepspeed.ai/docs/config-json) @ v0.16.4: train_batch_size,
//     train_micro_batch_size_per_gpu, gradient_accumulation_steps, bf16/fp16.enabled,
//     zero_optimization.{stage, offload_optimizer.device (stages 1-3), offload_param.device (stage
//     3 only), overlap_comm, contiguous_gradients}, gradient_clipping, tensor_parallel.autotp_size
//     (runtime/engine.py @ v0.16.4 rejects it with ZeRO stage 3; runtime/config.py checks
//     train_batch_size against every rank, before the AutoTP groups exist).
//   accelerate: docs/source/usage_guides/fsdp.md and deepspeed.md, `accelerate config` output
//     (compute_environment, distributed_type, mixed_precision, num_machines, num_processes,
//     machine_rank, main_process_ip/port, fsdp_config.fsdp_*, deepspeed_config.*; FSDP's
//     HYBRID_SHARD shards within each node, fsdp_activation_checkpointing wraps whole blocks).
//   Megatron-LM: megatron/training/arguments.py @ core_v0.14.0 (--tensor-model-parallel-size,
//     --pipeline-model-parallel-size, --num-layers-per-virtual-pipeline-stage,
//     --context-parallel-size, --expert-model-parallel-size, --sequence-parallel,
//     --use-distributed-optimizer, --use-megatron-fsdp with --data-parallel-sharding-strategy and
//     --ckpt-format fsdp_dtensor (asserted), --overlap-grad-reduce, --overlap-param-gather (needs
//     the first and the distributed optimizer or Megatron FSDP, asserted), CUDA_DEVICE_MAX_CONNECTIONS=1
//     under tp or cp > 1 (asserted before Blackwell, not with Megatron FSDP), --recompute-*, --optimizer-cpu-offload with
//     --use-precision-aware-optimizer (asserted), --moe-ffn-hidden-size,
//     --moe-shared-expert-intermediate-size).
//   torchtitan: torchtitan/config/job_config.py @ c854924 (2025-10-01) ([model] hf_assets_path,
//     converters ("quantize.linear.float8", components/quantization/float8.py); [training]
//     local_batch_size, global_batch_size (accumulation = global / (local x dp)), seq_len,
//     mixed_precision_param/_reduce; [parallelism] data_parallel_*_degree, tensor_parallel_degree,
//     pipeline_parallel_degree, pipeline_parallel_schedule, pipeline_parallel_microbatch_size
//     (microbatches = local_batch_size / it), pipeline_parallel_layers_per_stage,
//     pipeline_parallel_{first,last}_stage_less_layers, context_parallel_degree,
//     context_parallel_rotate_method,
//     expert_parallel_degree, fsdp_reshard_after_forward; [activation_checkpoint] mode,
//     selective_ac_option; [compile] enable).
//   torchtune: recipes/full_finetune_distributed.py and lora_finetune_distributed.py config keys
//     @ v0.6.1 (batch_size, gradient_accumulation_steps, enable_activation_checkpointing,
//     enable_activation_offloading, dtype, fsdp_cpu_offload, compile, optimizer_in_bwd (full recipes
//     only), tensor_parallel_dim (full recipe, with a tensor_parallel_plan), model.lora_attn_modules,
//     apply_lora_to_mlp, apply_lora_to_output, lora_rank, quantize_base, use_dora (models/llama3_1
//     _model_builders.py), optimizer._component_ (CPUOffloadOptimizer, memory_optimizations.rst)) and
//     `tune run` with torchrun's --nnodes / --nproc_per_node. The distributed recipes always shard with FSDP.
//   Python script: transformers v5.15.0 TrainingArguments (per_device_train_batch_size,
//     gradient_accumulation_steps, gradient_checkpointing, bf16, fp16), BitsAndBytesConfig; peft @
//     5d602fdb LoraConfig, get_peft_model, prepare_model_for_kbit_training; deepspeed.initialize and
//     the `deepspeed` launcher's --num_nodes / --num_gpus; `accelerate launch --num_processes`.
//   fsdp_qlora: train.py @ 05ed9f2 (--train_type, --world_size, --batch_size,
//     --gradient_accumulation_steps, --context_length, --precision, --sharding_strategy,
//     --use_gradient_checkpointing, --use_cpu_offload, --lora_rank, --lora_target_modules).
//   TRL: `trl sft --config` YAML, fields of SFTConfig / TrainingArguments and ModelConfig @ f2cd5771
//     (trl/trainer/sft_config.py, base_config.py, model_config.py: model_name_or_path, dtype,
//     attn_implementation, use_peft, lora_r, lora_dropout, lora_target_modules, use_dora, load_in_4bit,
//     bnb_4bit_quant_type, use_bnb_nested_quant; per_device_train_batch_size,
//     gradient_accumulation_steps, max_length, packing, gradient_checkpointing, bf16, fp16, optim,
//     loss_type, use_liger_kernel, activation_offloading); several GPUs through `accelerate launch`.
//   Unsloth: FastLanguageModel.from_pretrained / get_peft_model arguments @ 015bdef0
//     (unsloth/models/loader.py, llama.py: max_seq_length, load_in_4bit, dtype, r, target_modules,
//     lora_dropout, use_gradient_checkpointing) and TRL's SFTConfig.
#include "export/launch.h"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <string_view>
#include <type_traits>
#include <utility>

#include "hf_config/json_input.h"
#include "training/capabilities.h"
#include "training/peft_linear_adapters.h"
#include "training/peft_shared_adapters.h"
#include "training/setup_names.h"

namespace memfit {

namespace {

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

LaunchFormat named(const char* format, const char* file_name) {
  LaunchFormat f;
  f.format = format;
  f.file_name = file_name;
  return f;
}

std::string dtype_name(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32";
    case Precision::kAmpFp16:
    case Precision::kFp16: return "fp16";
    default: return "bf16";
  }
}

std::int64_t global_batch(const LaunchInput& in) { return in.layout.dp * in.setup.micro_batch * in.setup.grad_accum; }
std::int64_t nodes(const LaunchInput& in) {
  const std::int64_t g = in.layout.gpus();
  return (g + in.gpus_per_node - 1) / in.gpus_per_node;
}
bool model_parallel(const ParallelLayout& l) { return l.tp > 1 || l.pp > 1 || l.cp > 1 || l.ep > 1; }

int zero_stage(Sharding s) {
  switch (s) {
    case Sharding::kNone: return 0;
    case Sharding::kZero1: return 1;
    case Sharding::kZero2: return 2;
    case Sharding::kZero3: return 3;
  }
  return 0;
}

// DeepSpeed offloads the optimizer from ZeRO stage 1 on and parameters at stage 3 only
// (config-json.md @ v0.16.4); at other stages the offload entries are ignored without a word.
constexpr const char* kDeepSpeedOffloadStages =
    "DeepSpeed offloads the optimizer from ZeRO stage 1 and parameters at stage 3 only; other stages ignore the offload";
bool one_data_rank(const ParallelLayout& l) { return l.dp * l.cp == 1; }
// The ZeRO stage that runs the layout: on one data-parallel rank a stage shards nothing, so an
// optimizer offload there runs as stage 1 (the same memory as no sharding).
int deepspeed_stage(const LaunchInput& in) {
  if (in.setup.offload == Offload::kOptimizer && in.layout.sharding == Sharding::kNone && one_data_rank(in.layout)) return 1;
  return zero_stage(in.layout.sharding);
}
bool deepspeed_ignores_offload(const LaunchInput& in) {
  const int stage = deepspeed_stage(in);
  if (in.setup.offload == Offload::kParamsOptimizer) return stage != 3;
  return in.setup.offload == Offload::kOptimizer && stage == 0;
}

LaunchFormat deepspeed(const LaunchInput& in) {
  LaunchFormat f = named("deepspeed_json", "ds_config.json");
  const ParallelLayout& l = in.layout;
  if (l.pp > 1 || l.cp > 1 || l.ep > 1) {
    f.supported = false;
    f.notes.emplace_back("DeepSpeed's JSON config does not set pipeline, context or expert parallel degrees (they are built in code); use Megatron-LM or torchtitan");
    return f;
  }
  const bool offload_opt = in.setup.offload == Offload::kOptimizer || in.setup.offload == Offload::kParamsOptimizer;
  if (deepspeed_ignores_offload(in)) {
    f.supported = false;
    f.notes.emplace_back(kDeepSpeedOffloadStages);
    return f;
  }
  if (l.tp > 1 && l.sharding == Sharding::kZero3) {
    f.supported = false;
    f.notes.emplace_back("DeepSpeed 0.16 rejects AutoTP (tensor_parallel.autotp_size) with ZeRO stage 3");
    return f;
  }
  Json j;
  // With AutoTP DeepSpeed checks train_batch_size against all ranks before the tensor-parallel
  // groups exist: left out, it follows from the micro-batch and the accumulation.
  if (l.tp == 1) j["train_batch_size"] = global_batch(in);
  j["train_micro_batch_size_per_gpu"] = in.setup.micro_batch;
  j["gradient_accumulation_steps"] = in.setup.grad_accum;
  const std::string dt = dtype_name(in.setup.precision);
  j["bf16"] = {{"enabled", dt == "bf16"}};
  j["fp16"] = {{"enabled", dt == "fp16"}};
  Json zero{{"stage", deepspeed_stage(in)}, {"overlap_comm", true}, {"contiguous_gradients", true}};
  if (offload_opt) zero["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
  if (in.setup.offload == Offload::kParamsOptimizer) zero["offload_param"] = {{"device", "cpu"}, {"pin_memory", true}};
  j["zero_optimization"] = zero;
  if (l.tp > 1) j["tensor_parallel"] = {{"autotp_size", l.tp}};  // DeepSpeed AutoTP (>= 0.16.4)
  j["gradient_clipping"] = 1.0;
  f.text = j.dump(2) + "\n";
  if (l.tp > 1) {
    f.notes.emplace_back("AutoTP: train_batch_size is left out (DeepSpeed would count every rank); in DeepSpeed 0.16 shard the model with deepspeed.tp_model_init before deepspeed.initialize");
  }
  if (in.setup.checkpointing != Checkpointing::kNone) {
    f.notes.emplace_back("activation checkpointing is switched on in the model (model.gradient_checkpointing_enable(), train.py), not in this file");
  }
  return f;
}

LaunchFormat accelerate(const LaunchInput& in) {
  LaunchFormat f = named("accelerate_yaml", "accelerate_config.yaml");
  const ParallelLayout& l = in.layout;
  if (model_parallel(l)) {
    f.supported = false;
    f.notes.emplace_back("accelerate's config covers data parallelism (DDP, FSDP, DeepSpeed ZeRO); for tp/pp/cp/ep use Megatron-LM or torchtitan");
    return f;
  }
  Text y;
  const std::string dt = dtype_name(in.setup.precision);
  const bool ds = l.sharding == Sharding::kZero1 || in.setup.offload == Offload::kOptimizer;
  const bool fsdp = !ds && (l.sharding == Sharding::kZero2 || l.sharding == Sharding::kZero3);
  const bool hybrid = l.shard_degree > 0 && l.shard_degree < l.dp;
  if (ds && deepspeed_ignores_offload(in)) {
    f.supported = false;
    f.notes.emplace_back(kDeepSpeedOffloadStages);
    return f;
  }
  if (fsdp && hybrid && l.shard_degree != in.gpus_per_node) {
    f.supported = false;
    f.notes.emplace_back("accelerate's FSDP hybrid sharding shards within each node; a shard group of " + std::to_string(l.shard_degree) +
                         " ranks on nodes of " + std::to_string(in.gpus_per_node) + " GPUs is not an accelerate option");
    return f;
  }
  y << "compute_environment: LOCAL_MACHINE\n";
  y << "distributed_type: " << (ds ? "DEEPSPEED" : fsdp ? "FSDP" : l.gpus() > 1 ? "MULTI_GPU" : "NO") << "\n";
  y << "mixed_precision: " << (dt == "fp32" ? "no" : dt) << "\n";
  y << "num_machines: " << nodes(in) << "\n";
  y << "num_processes: " << l.gpus() << "\n";
  y << "machine_rank: 0\n";
  if (nodes(in) > 1) {
    y << "main_process_ip: 10.0.0.1\n";
    y << "main_process_port: 29500\n";
  }
  y << "main_training_function: main\n";
  if (ds) {
    y << "deepspeed_config:\n";
    y << "  zero_stage: " << deepspeed_stage(in) << "\n";
    y << "  gradient_accumulation_steps: " << in.setup.grad_accum << "\n";
    y << "  offload_optimizer_device: " << (in.setup.offload == Offload::kNone ? "none" : "cpu") << "\n";
    y << "  offload_param_device: " << (in.setup.offload == Offload::kParamsOptimizer ? "cpu" : "none") << "\n";
    y << "  zero3_init_flag: " << (l.sharding == Sharding::kZero3 ? "true" : "false") << "\n";
    if (nodes(in) > 1) y << "  deepspeed_multinode_launcher: standard\n";
  } else if (fsdp) {
    y << "fsdp_config:\n";
    const char* strategy = l.sharding == Sharding::kZero2 ? (hybrid ? "HYBRID_SHARD_ZERO2" : "SHARD_GRAD_OP") : hybrid ? "HYBRID_SHARD" : "FULL_SHARD";
    y << "  fsdp_sharding_strategy: " << strategy << "\n";
    y << "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n";
    y << "  fsdp_backward_prefetch: BACKWARD_PRE\n";
    y << "  fsdp_offload_params: " << (in.setup.offload == Offload::kParamsOptimizer ? "true" : "false") << "\n";
    y << "  fsdp_state_dict_type: SHARDED_STATE_DICT\n";
    y << "  fsdp_cpu_ram_efficient_loading: true\n";
    y << "  fsdp_sync_module_states: true\n";
    y << "  fsdp_use_orig_params: true\n";
    y << "  fsdp_activation_checkpointing: " << (in.setup.checkpointing == Checkpointing::kNone ? "false" : "true") << "\n";
  }
  f.text = y.str();
  if (nodes(in) > 1) {
    f.notes.emplace_back("multi-node: set main_process_ip to the first node's address and machine_rank to each node's index (0 on the first)");
  }
  if (fsdp && in.setup.checkpointing == Checkpointing::kSelective) {
    f.notes.emplace_back("fsdp_activation_checkpointing recomputes whole blocks (full checkpointing); selective checkpointing is set in the model code");
  }
  f.notes.emplace_back("per-device batch size " + std::to_string(in.setup.micro_batch) + " and gradient_accumulation_steps " +
                       std::to_string(in.setup.grad_accum) + " go to the training script (TrainingArguments)");
  return f;
}

// Megatron-LM's and torchtitan's context parallelism is a ring: a Ulysses layout has no flag there.
constexpr const char* kUlyssesNotRing =
    "Ulysses sequence parallelism (cp_kind ulysses) runs under DeepSpeed (accelerate parallelism_config "
    "sp_backend: deepspeed, or ArcticTraining); this framework's context parallelism is a ring";

bool ulysses_layout(const ParallelLayout& l) { return l.cp > 1 && l.cp_kind == ContextParallelKind::kUlysses; }

LaunchFormat megatron(const LaunchInput& in) {
  LaunchFormat f = named("megatron_args", "megatron_args.sh");
  const ParallelLayout& l = in.layout;
  if (ulysses_layout(l)) {
    f.supported = false;
    f.notes.emplace_back(kUlyssesNotRing);
    return f;
  }
  const ModelArchitecture& a = *in.arch;
  Text s;
  auto arg = [&](const std::string& name, const std::string& value = "") {
    s << "  --" << name << (value.empty() ? "" : " " + value) << " \\\n";
  };
  const auto str = [](std::int64_t v) { return std::to_string(v); };
  const bool megatron_fsdp = l.sharding == Sharding::kZero2 || l.sharding == Sharding::kZero3;
  // arguments.py asserts CUDA_DEVICE_MAX_CONNECTIONS=1 under tp or cp > 1 before Blackwell (it
  // orders the backward's asynchronous collectives ahead of the GEMMs they overlap); Megatron
  // FSDP asserts the opposite.
  if ((l.tp > 1 || l.cp > 1) && !megatron_fsdp) s << "CUDA_DEVICE_MAX_CONNECTIONS=1 ";
  s << "torchrun --nnodes " << nodes(in) << " --nproc-per-node " << std::min(in.gpus_per_node, l.gpus()) << " pretrain_gpt.py \\\n";
  arg("num-layers", str(a.num_layers));
  arg("hidden-size", str(a.hidden_size));
  arg("num-attention-heads", str(a.attention.num_heads));
  if (a.attention.num_kv_heads != a.attention.num_heads) {
    arg("group-query-attention");
    arg("num-query-groups", str(a.attention.num_kv_heads));
  }
  arg("ffn-hidden-size", str(a.mlp.intermediate_size));
  if (a.mlp.gated) arg("swiglu");
  if (a.norm == NormKind::kRmsNorm) arg("normalization", "RMSNorm");
  if (a.position == PositionKind::kRotary) arg("position-embedding-type", "rope");
  if (!a.tie_word_embeddings) arg("untie-embeddings-and-output-weights");
  if (a.is_moe()) {
    arg("num-experts", str(a.moe.num_experts));
    arg("moe-router-topk", str(a.moe.top_k));
    arg("moe-ffn-hidden-size", str(a.moe.expert_intermediate_size));
    if (a.moe.shared_intermediate_size > 0) arg("moe-shared-expert-intermediate-size", str(a.moe.shared_intermediate_size));
  }
  arg("seq-length", str(in.setup.seq_len));
  arg("max-position-embeddings", str(std::max(in.setup.seq_len, a.max_position_embeddings)));
  arg("micro-batch-size", str(in.setup.micro_batch));
  arg("global-batch-size", str(global_batch(in)));
  arg("tensor-model-parallel-size", str(l.tp));
  arg("pipeline-model-parallel-size", str(l.pp));
  if (l.vpp > 1) arg("num-layers-per-virtual-pipeline-stage", str(a.num_layers / (l.pp * l.vpp)));
  if (l.cp > 1) arg("context-parallel-size", str(l.cp));
  if (l.ep > 1) arg("expert-model-parallel-size", str(l.ep));
  if (a.is_moe() && l.expert_tp() != l.tp) arg("expert-tensor-parallel-size", str(l.expert_tp()));
  if (l.sequence_parallel) arg("sequence-parallel");
  // The optimizer offload runs on the distributed optimizer's precision-aware path (asserted).
  const bool distributed_optimizer = l.sharding != Sharding::kNone || in.setup.offload == Offload::kOptimizer;
  if (distributed_optimizer) arg("use-distributed-optimizer");
  // The overlaps the step-time model assumed for the layout's framework version: gradients
  // reduced beside the last backward (dp_reduce_overlaps_backward), the distributed optimizer's
  // parameters gathered beside the next forward (param_gather_overlaps_forward). Both are off by
  // default (arguments.py); the second needs the first; Megatron-LM merged them in e801b2bb
  // (2023-09) and 3b417268 (2023-11), the profile's dated history.
  if (l.dp * l.cp > 1 && l.behaviour.dp_reduce_overlaps_backward) {
    arg("overlap-grad-reduce");
    if (distributed_optimizer && l.behaviour.param_gather_overlaps_forward) arg("overlap-param-gather");
  }
  if (megatron_fsdp) {
    arg("use-megatron-fsdp");
    arg("data-parallel-sharding-strategy", l.sharding == Sharding::kZero2 ? "optim_grads" : "optim_grads_params");
    arg("ckpt-format", "fsdp_dtensor");
  }
  if (in.setup.offload == Offload::kOptimizer) {
    arg("use-precision-aware-optimizer");
    arg("optimizer-cpu-offload");
    arg("overlap-cpu-optimizer-d2h-h2d");
  }
  const std::string dt = dtype_name(in.setup.precision);
  if (dt != "fp32") arg(dt);
  if (in.setup.precision == Precision::kFp8) arg("fp8-format", "hybrid");
  if (in.setup.checkpointing == Checkpointing::kSelective) arg("recompute-activations");
  if (in.setup.checkpointing == Checkpointing::kFull) {
    arg("recompute-granularity", "full");
    arg("recompute-method", "uniform");
    arg("recompute-num-layers", "1");
  }
  s << "  --train-iters 1000\n";
  f.text = s.str();
  if (in.setup.offload == Offload::kParamsOptimizer) {
    f.notes.emplace_back("Megatron-LM offloads optimizer states only: parameter offload has no Megatron option");
  }
  if (in.setup.method != Method::kFull) f.notes.emplace_back("Megatron-LM pretrain_gpt.py trains all weights; LoRA needs NeMo or another recipe");
  if (megatron_fsdp) f.notes.emplace_back("Megatron FSDP asserts CUDA_DEVICE_MAX_CONNECTIONS is not 1: leave it unset");
  if (a.is_moe() && a.moe.first_dense_layers > 0) {
    f.notes.emplace_back("the first " + std::to_string(a.moe.first_dense_layers) + " layers are dense: set --moe-layer-freq to match");
  }
  f.notes.emplace_back("data and tokenizer arguments (--data-path, --tokenizer-type, ...) are left to you");
  return f;
}

LaunchFormat torchtitan(const LaunchInput& in) {
  LaunchFormat f = named("torchtitan_toml", "torchtitan.toml");
  const ParallelLayout& l = in.layout;
  if (ulysses_layout(l)) {
    f.supported = false;
    f.notes.emplace_back(kUlyssesNotRing);
    return f;
  }
  if (l.sharding == Sharding::kZero1 || l.sharding == Sharding::kZero2 || in.setup.offload == Offload::kOptimizer) {
    f.supported = false;
    f.notes.emplace_back("torchtitan shards with FSDP2 (ZeRO-3) or replicates (DDP); ZeRO-1/2 and optimizer-only offload are not options");
    return f;
  }
  if (in.setup.method != Method::kFull) {
    f.supported = false;
    f.notes.emplace_back("torchtitan trains all weights (no LoRA recipe)");
    return f;
  }
  Text t;
  const std::int64_t shard = l.sharding == Sharding::kZero3 ? l.dense_shard() / std::max<std::int64_t>(1, l.cp) : 1;
  const std::int64_t replicate = l.sharding == Sharding::kZero3 ? std::max<std::int64_t>(1, l.dp / std::max<std::int64_t>(1, shard)) : l.dp;
  t << "[job]\ndump_folder = \"./outputs\"\n\n";
  t << "[model]\nname = \"llama3\"\nhf_assets_path = \"" << in.model_id << "\"\n";
  if (in.setup.precision == Precision::kFp8) t << "converters = [\"quantize.linear.float8\"]\n";
  t << "\n[training]\n";
  // Under pipeline parallelism torchtitan splits the local batch into microbatches of
  // pipeline_parallel_microbatch_size; without it, global / (local x dp) steps accumulate.
  const std::int64_t local = l.pp > 1 ? in.setup.micro_batch * in.setup.grad_accum : in.setup.micro_batch;
  t << "local_batch_size = " << local << "\n";
  t << "global_batch_size = " << global_batch(in) << "\n";
  t << "seq_len = " << in.setup.seq_len << "\n";
  t << "mixed_precision_param = \"" << (dtype_name(in.setup.precision) == "fp16" ? "float16" : "bfloat16") << "\"\n";
  t << "mixed_precision_reduce = \"float32\"\n";
  // FSDP2's CPUOffloadPolicy: parameter, gradient and optimizer-state shards on the host.
  if (in.setup.offload == Offload::kParamsOptimizer) t << "enable_cpu_offload = true\n";
  t << "\n";
  t << "[parallelism]\n";
  t << "data_parallel_replicate_degree = " << replicate << "\n";
  t << "data_parallel_shard_degree = " << shard << "\n";
  t << "tensor_parallel_degree = " << l.tp << "\n";
  t << "pipeline_parallel_degree = " << l.pp << "\n";
  if (l.pp > 1) {
    t << "pipeline_parallel_schedule = \"" << (l.vpp > 1 ? "Interleaved1F1B" : "1F1B") << "\"\n";
    t << "pipeline_parallel_microbatch_size = " << in.setup.micro_batch << "\n";
    if (l.vpp > 1) {
      // vpp chunks of equal size per rank: no stage gives up layers for the embedding or output.
      t << "pipeline_parallel_layers_per_stage = " << in.arch->num_layers / (l.pp * l.vpp) << "\n";
      t << "pipeline_parallel_first_stage_less_layers = 0\n";
      t << "pipeline_parallel_last_stage_less_layers = 0\n";
    }
  }
  t << "context_parallel_degree = " << l.cp << "\n";
  // The rotation the step-time model charges (ring_attention_cost): pinned, not left to a default.
  if (l.cp > 1) t << "context_parallel_rotate_method = \"allgather\"\n";
  t << "expert_parallel_degree = " << l.ep << "\n";
  t << "fsdp_reshard_after_forward = \"default\"\n\n";
  t << "[activation_checkpoint]\n";
  t << "mode = \"" << (in.setup.checkpointing == Checkpointing::kFull ? "full" : in.setup.checkpointing == Checkpointing::kSelective ? "selective" : "none") << "\"\n";
  if (in.setup.checkpointing == Checkpointing::kSelective) t << "selective_ac_option = \"op\"\n";
  t << "\n[compile]\nenable = " << (in.setup.compile ? "true" : "false") << "\n";
  f.text = t.str();
  if (!l.sequence_parallel && l.tp > 1) f.notes.emplace_back("torchtitan's tensor parallelism always shards the sequence between blocks (sequence parallel)");
  f.notes.emplace_back("model name and flavor: pick the torchtitan flavor matching " + in.model_id);
  return f;
}

// LoRA target roles (request names) as Hugging Face module names (Llama-style models).
std::vector<std::string> hf_modules(const std::vector<std::string>& roles) {
  static constexpr std::pair<const char*, const char*> kNames[] = {{"q", "q_proj"},       {"k", "k_proj"},   {"v", "v_proj"},
                                                                   {"o", "o_proj"},       {"gate", "gate_proj"},
                                                                   {"up", "up_proj"},     {"down", "down_proj"},
                                                                   {"head", "lm_head"}};
  std::vector<std::string> out;
  for (const std::string& r : roles) {
    std::string name = r;
    for (const auto& [role, module] : kNames) {
      if (r == role) name = module;
    }
    out.push_back(name);
  }
  return out;
}
bool targets_any(const std::vector<std::string>& roles, std::initializer_list<const char*> wanted) {
  for (const std::string& r : roles) {
    if (r == "all-linear") return true;
    for (const char* w : wanted) {
      if (r == w) return true;
    }
  }
  return false;
}
std::string python_list(const std::vector<std::string>& items) {
  std::string s = "[";
  for (const std::string& i : items) s += (s.size() > 1 ? ", " : "") + ("'" + i + "'");
  return s + "]";
}

LaunchFormat torchtune(const LaunchInput& in) {
  LaunchFormat f = named("torchtune_command", "torchtune.sh");
  const ParallelLayout& l = in.layout;
  if (l.pp > 1 || l.cp > 1 || l.ep > 1 || l.sharding == Sharding::kZero1 || l.sharding == Sharding::kZero2) {
    f.supported = false;
    f.notes.emplace_back("torchtune's recipes run one GPU or FSDP (with optional tensor parallelism); pp, cp, ep and ZeRO-1/2 are not options");
    return f;
  }
  const bool lora = is_lora_like(in.setup.method);
  const bool distributed = l.gpus() > 1;
  if (in.setup.method == Method::kFreeze) {
    f.supported = false;
    f.notes.emplace_back("torchtune's recipes train all weights or LoRA/DoRA adapters; freezing all but the last blocks is not an option");
    return f;
  }
  if (distributed && l.sharding == Sharding::kNone && !one_data_rank(l)) {
    f.supported = false;
    f.notes.emplace_back("torchtune's distributed recipes always shard with FSDP; a replicated (DDP) layout is not an option");
    return f;
  }
  if (lora && l.tp > 1) {
    f.supported = false;
    f.notes.emplace_back("torchtune's LoRA recipe (v0.6.1) has no tensor parallelism");
    return f;
  }
  if (distributed && in.setup.offload == Offload::kOptimizer) {
    f.supported = false;
    f.notes.emplace_back("torchtune offloads the optimizer alone only on one GPU (torchao CPUOffloadOptimizer); distributed recipes offload with fsdp_cpu_offload");
    return f;
  }
  std::string recipe = std::string(lora ? "lora" : "full") + "_finetune_" + (distributed ? "distributed" : "single_device");
  Text c;
  c << "tune run";
  if (distributed) c << " --nnodes " << nodes(in) << " --nproc_per_node " << std::min(in.gpus_per_node, l.gpus());
  c << " " << recipe << " --config <model config>";
  c << " batch_size=" << in.setup.micro_batch;
  c << " gradient_accumulation_steps=" << in.setup.grad_accum;
  c << " tokenizer.max_seq_len=" << in.setup.seq_len;
  c << " enable_activation_checkpointing=" << (in.setup.checkpointing != Checkpointing::kNone ? "True" : "False");
  c << " dtype=" << (dtype_name(in.setup.precision) == "fp32" ? "fp32" : "bf16");
  c << " compile=" << (in.setup.compile ? "True" : "False");
  if (distributed && in.setup.offload == Offload::kParamsOptimizer) c << " fsdp_cpu_offload=True";
  // memory_optimizations.rst: torchao's CPUOffloadOptimizer wraps AdamW, its states and step on the CPU.
  if (in.setup.offload == Offload::kOptimizer) c << " optimizer._component_=torchao.prototype.low_bit_optim.CPUOffloadOptimizer";
  if (distributed && l.tp > 1) c << " tensor_parallel_dim=" << l.tp;
  if (in.setup.offload == Offload::kActivations) c << " enable_activation_offloading=True";
  if (in.setup.optimizer_in_backward && !lora) c << " optimizer_in_bwd=True clip_grad_norm=null";
  if (lora) {
    // The llama3 LoRA builders (_model_builders.py): adapted attention projections, MLP and
    // output flags, rank; quantize_base (QLoRA's NF4 base) and use_dora.
    std::vector<std::string> attn;
    for (const char* r : {"q", "k", "v", "o"}) {
      if (targets_any(in.setup.lora_targets, {r})) attn.push_back(std::string(r) + "_proj");
    }
    for (std::string& a : attn) {
      if (a == "o_proj") a = "output_proj";
    }
    c << " model.lora_attn_modules=\"" << python_list(attn) << "\"";
    c << " model.apply_lora_to_mlp=" << (targets_any(in.setup.lora_targets, {"gate", "up", "down"}) ? "True" : "False");
    c << " model.apply_lora_to_output=" << (targets_any(in.setup.lora_targets, {"head"}) ? "True" : "False");
    c << " model.lora_rank=" << in.setup.lora_rank;
    if (in.setup.method == Method::kQlora) c << " model.quantize_base=True";
    if (in.setup.method == Method::kDora) c << " model.use_dora=True";
  }
  c << "\n";
  f.text = c.str();
  if (distributed && l.tp > 1) f.notes.emplace_back("tensor_parallel_dim needs a tensor_parallel_plan in the config (torchtune ships one for the Llama 3 70B configs)");
  if (in.setup.optimizer_in_backward && lora) f.notes.emplace_back("optimizer_in_bwd is a full-finetune option; the LoRA recipes step the optimizer after backward");
  if (lora && (in.setup.lora_saves_embedding || in.setup.lora_saves_head)) {
    f.notes.emplace_back("torchtune's LoRA recipes train no full copy of the embedding or output layer (PEFT's modules_to_save): not expressed");
  }
  if (in.setup.checkpointing == Checkpointing::kSelective) f.notes.emplace_back("enable_activation_checkpointing checkpoints whole blocks (full); selective is ac_mode/ac_option in the full distributed recipe");
  if (dtype_name(in.setup.precision) == "fp16") f.notes.emplace_back("torchtune trains in bf16 or fp32, not fp16");
  if (dtype_name(in.setup.precision) == "bf16") f.notes.emplace_back("torchtune's bf16 keeps no fp32 master weights (pure bf16)");
  if (nodes(in) > 1) f.notes.emplace_back("multi-node: add torchrun's --rdzv_endpoint and --node_rank per node");
  return f;
}

// The TrainingArguments optimizer name of a setup's optimizer ("" when it has none).
std::string hf_optim_name(const TrainingSetup& t) {
  switch (t.optimizer) {
    case Optimizer::kAdamW: return t.optimizer_impl == OptimizerImpl::kFused ? "adamw_torch_fused" : "adamw_torch";
    case Optimizer::kAdamW8bit: return "adamw_8bit";
    case Optimizer::kPagedAdamW8bit: return "paged_adamw_8bit";
    case Optimizer::kPagedAdamW32bit: return "paged_adamw_32bit";
    case Optimizer::kAdamW4bit: return "adamw_torch_4bit";
    case Optimizer::kSgd:
    case Optimizer::kSgdMomentum: return "sgd";
    case Optimizer::kAdafactor: return "adafactor";
    case Optimizer::kLion: return "lion_32bit";
    case Optimizer::kMuon:
    case Optimizer::kAdamMini: return "";
    case Optimizer::kGaloreAdamW: return "galore_adamw";
    case Optimizer::kApolloAdamW:
    case Optimizer::kApolloMini: return "apollo_adamw";
  }
  return "";
}

std::string lora_modules(const TrainingSetup& t) {
  static const std::pair<const char*, const char*> kHfNames[] = {{"q", "q_proj"}, {"k", "k_proj"}, {"v", "v_proj"},
                                                                  {"o", "o_proj"}, {"gate", "gate_proj"}, {"up", "up_proj"},
                                                                  {"down", "down_proj"}, {"head", "lm_head"}};
  std::string list;
  for (const std::string& role : t.lora_targets) {
    std::string name = role;
    for (const auto& [short_name, hf] : kHfNames) {
      if (role == short_name) name = hf;
    }
    list += (list.empty() ? "" : ", ") + (role == "all-linear" ? std::string("all-linear") : "\"" + name + "\"");
  }
  return list;
}

// PEFT's modules_to_save as the checkpoint names them, quoted ("" when none): the token
// embedding is wte in GPT-2 and Qwen-1, word_embeddings in Falcon and BLOOM, embed_tokens elsewhere.
std::string saved_modules(const TrainingSetup& t, const ModelArchitecture& a) {
  std::string list;
  if (t.lora_saves_embedding) {
    const std::string& type = a.model_type;
    const char* name = type == "gpt2" || type == "qwen" ? "wte" : type == "falcon" || type == "bloom" ? "word_embeddings" : "embed_tokens";
    list = "\"" + std::string(name) + "\"";
  }
  if (t.lora_saves_head) list += (list.empty() ? "" : ", ") + std::string("\"lm_head\"");
  return list;
}

std::string unquoted(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), '"'), text.end());
  text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
  return text;
}

// LoraConfig's init_lora_weights for a non-default initialisation (peft v0.21.2 tuners/lora/config.py).
std::string lora_init_argument(const TrainingSetup& t) {
  if (t.lora_init == LoraInit::kDefault) return "";
  return std::string(", init_lora_weights=\"") + name_of(t.lora_init, kLoraInitNames) + "\"";
}

// PEFT's config class of a method other than LoRA (peft v0.21.2 tuners/*/config.py).
const char* peft_config_class(Method m) {
  switch (m) {
    case Method::kIa3: return "IA3Config";
    case Method::kLoha: return "LoHaConfig";
    case Method::kLokr: return "LoKrConfig";
    case Method::kVera: return "VeraConfig";
    case Method::kPromptTuning: return "PromptTuningConfig";
    case Method::kAdaptionPrompt: return "AdaptionPromptConfig";
    case Method::kPTuning: return "PromptEncoderConfig";
    case Method::kOft: return "OFTConfig";
    case Method::kBoft: return "BOFTConfig";
    case Method::kLnTuning: return "LNTuningConfig";
    case Method::kMiss: return "MissConfig";
    case Method::kGlora: return "GloraConfig";
    case Method::kFourierFt: return "FourierFTConfig";
    case Method::kWaveFt: return "WaveFTConfig";
    case Method::kHira: return "HiraConfig";
    case Method::kShira: return "ShiraConfig";
    case Method::kC3a: return "C3AConfig";
    case Method::kDelora: return "DeloraConfig";
    case Method::kGralora: return "GraloraConfig";
    case Method::kPeanut: return "PeanutConfig";
    case Method::kLily: return "LilyConfig";
    case Method::kTinyLora: return "TinyLoraConfig";
    case Method::kVblora: return "VBLoRAConfig";
    case Method::kFrod: return "FrodConfig";
    case Method::kAdamss: return "AdamssConfig";
    case Method::kRoad: return "RoadConfig";
    case Method::kOsf: return "OSFConfig";
    case Method::kDeft: return "DeftConfig";
    case Method::kBeft: return "BeftConfig";
    case Method::kTrainableTokens: return "TrainableTokensConfig";
    case Method::kPvera: return "PveraConfig";
    case Method::kUnilora: return "UniLoraConfig";
    case Method::kAdalora: return "AdaLoraConfig";
    case Method::kPsoft: return "PsoftConfig";
    case Method::kRandlora: return "RandLoraConfig";
    default: return "PrefixTuningConfig";
  }
}

// The GaLore / APOLLO / Adam-mini settings under HF TrainingArguments names (optim,
// optim_target_modules, optim_args: transformers _get_galore_optimizer / _get_apollo_optimizer).
void hf_low_rank_optim(Text& y, const TrainingSetup& t) {
  if (!projects_gradients(t.optimizer)) return;
  y << "optim_target_modules: [attn, mlp]\n";
  y << "optim_args: \"rank=" << t.projection_rank << ",update_proj_gap=" << t.projection_update_gap
    << (t.optimizer == Optimizer::kApolloMini ? ",scale_type=tensor,scale=128" : "") << "\"\n";
}

LaunchFormat trl_sft(const LaunchInput& in) {
  LaunchFormat f = named("trl_sft_yaml", "sft_config.yaml");
  if (model_parallel(in.layout)) {
    f.supported = false;
    f.notes.emplace_back("TRL's SFTTrainer runs data parallelism through accelerate (DDP, FSDP, DeepSpeed ZeRO); for tp/pp/cp/ep use Megatron-LM or torchtitan");
    return f;
  }
  const TrainingSetup& t = in.setup;
  const std::string dt = dtype_name(t.precision);
  const bool lora = is_lora_like(t.method);
  Text y;
  y << "model_name_or_path: " << in.model_id << "\n";
  // AMP: the float32 model under bf16/fp16 autocast; pure 16-bit: the model loaded in that dtype.
  y << "dtype: " << (dt == "fp32" || amp_like(t) ? "float32" : dt == "fp16" ? "float16" : "bfloat16") << "\n";
  y << "attn_implementation: " << (t.attention == AttentionKernel::kFlash || t.attention == AttentionKernel::kFlashTriton ? "flash_attention_2" : t.attention == AttentionKernel::kEager ? "eager" : "sdpa") << "\n";
  y << "bf16: " << (dt == "bf16" ? "true" : "false") << "\n";
  y << "fp16: " << (dt == "fp16" ? "true" : "false") << "\n";
  y << "per_device_train_batch_size: " << t.micro_batch << "\n";
  y << "gradient_accumulation_steps: " << t.grad_accum << "\n";
  y << "max_length: " << t.seq_len << "\n";
  y << "packing: " << (t.packed ? "true" : "false") << "\n";
  y << "gradient_checkpointing: " << (t.checkpointing == Checkpointing::kNone ? "false" : "true") << "\n";
  if (t.offload == Offload::kActivations) y << "activation_offloading: true\n";
  if (const std::string optim = hf_optim_name(t); !optim.empty()) y << "optim: " << optim << "\n";
  hf_low_rank_optim(y, t);
  y << "use_liger_kernel: " << (t.liger_kernels ? "true" : "false") << "\n";
  if (t.loss == LossKernel::kChunkedNll || t.loss == LossKernel::kStandard || t.loss == LossKernel::kTrlFusedHead) {
    y << "loss_type: " << (t.loss == LossKernel::kChunkedNll ? "chunked_nll" : "nll") << "\n";
  }
  if (lora) {
    y << "use_peft: true\n";
    y << "lora_r: " << t.lora_rank << "\n";
    y << "lora_dropout: " << t.lora_dropout << "\n";
    y << "lora_target_modules: [" << lora_modules(t) << "]\n";
    if (const std::string saved = saved_modules(t, *in.arch); !saved.empty()) y << "lora_modules_to_save: [" << saved << "]\n";
    if (t.method == Method::kDora) y << "use_dora: true\n";
    if (effective_base_quant(t) == BaseQuant::kNf4) y << "load_in_4bit: true\nbnb_4bit_quant_type: nf4\nuse_bnb_nested_quant: true\n";
    if (effective_base_quant(t) == BaseQuant::kInt8) y << "load_in_8bit: true\n";
  }
  f.text = y.str();
  f.notes.emplace_back("run: trl sft --config sft_config.yaml --dataset_name <dataset>" +
                       std::string(in.layout.gpus() > 1 ? " under accelerate launch --config_file accelerate_config.yaml (the accelerate format)" : ""));
  if (!(t.loss == LossKernel::kChunkedNll || t.loss == LossKernel::kStandard || t.loss == LossKernel::kTrlFusedHead || (t.loss == LossKernel::kLigerFlce && t.liger_kernels))) {
    f.notes.emplace_back(std::string("SFTConfig has no loss_type for the ") + (t.loss == LossKernel::kCutCe ? "Cut Cross-Entropy" : "chosen") +
                         " loss kernel; it is patched into the model by the training script");
  }
  if (base_frozen(t.method) && !lora) {
    f.notes.emplace_back(std::string("trl sft's command line builds LoRA adapters only (ModelConfig use_peft, lora_*): pass peft_config=") +
                         peft_config_class(t.method) + "(...) to SFTTrainer in Python, as the python_script format writes it");
  }
  if (lora && t.lora_init != LoraInit::kDefault) {
    f.notes.emplace_back("trl sft's command line has no init_lora_weights: pass peft_config=LoraConfig(..." + lora_init_argument(t) +
                         ") to SFTTrainer in Python, as the python_script format writes it");
  }
  if (lora && t.loss == LossKernel::kChunkedNll) {
    f.notes.emplace_back("chunked_nll refuses a LoRA adapter on lm_head: keep lm_head out of lora_target_modules");
  }
  return f;
}

// The training script's model setup: the 4-bit base (bitsandbytes), the adapters (PEFT) or the
// frozen blocks, and activation checkpointing. transformers v5.15.0 BitsAndBytesConfig
// (load_in_4bit, bnb_4bit_quant_type, bnb_4bit_use_double_quant, bnb_4bit_compute_dtype,
// bnb_4bit_quant_storage); peft @ 5d602fdb LoraConfig (r, lora_alpha, lora_dropout,
// target_modules, use_dora), prepare_model_for_kbit_training, get_peft_model.
// PEFT's other methods as their config classes take them (peft v0.21.2 tuners/{ia3,loha,lokr,vera,
// prompt_tuning,prefix_tuning,adaption_prompt,p_tuning,oft,boft,ln_tuning,miss,glora}/config.py: target_modules,
// feedforward_modules, r, num_virtual_tokens, adapter_len, adapter_layers, encoder_reparameterization_type,
// oft_block_size, boft_block_size; tuners/{fourierft,waveft,hira,shira,c3a,delora,gralora,peanut}/config.py: n_frequency, r, block_size;
// tuners/{road,osf,deft,beft,trainable_tokens}/config.py: variant, rank_pattern, para, token_indices;
// tuners/{adalora,psoft,randlora}/config.py: init_r, total_step, r).
void python_other_peft(Text& p, const TrainingSetup& t, const ModelArchitecture& a) {
  const std::int64_t num_layers = a.num_layers;
  if (!base_frozen(t.method) || is_lora_like(t.method)) return;
  std::vector<std::string> targets = hf_modules(t.lora_targets);
  const std::string target_text = targets.size() == 1 && targets[0] == "all-linear" ? "\"all-linear\"" : python_list(targets);
  const SharedAdapterShape& s = t.shared_adapter;
  p << "model = get_peft_model(model, ";
  switch (t.method) {
    case Method::kIa3: p << "IA3Config(target_modules=" << target_text << ", feedforward_modules=[\"down_proj\"]"; break;
    case Method::kLoha: p << "LoHaConfig(r=" << t.lora_rank << ", target_modules=" << target_text; break;
    case Method::kLokr: p << "LoKrConfig(r=" << t.lora_rank << ", target_modules=" << target_text; break;
    case Method::kVera: p << "VeraConfig(r=" << t.lora_rank << ", target_modules=" << target_text; break;
    case Method::kPromptTuning: p << "PromptTuningConfig(num_virtual_tokens=" << t.virtual_tokens; break;
    case Method::kPTuning:
      p << "PromptEncoderConfig(num_virtual_tokens=" << t.virtual_tokens << ", encoder_reparameterization_type=\""
        << (t.prompt_encoder == PromptEncoder::kLstm ? "LSTM" : "MLP") << "\"";
      break;
    case Method::kOft:
      p << "OFTConfig(r=" << t.oft_blocks << ", oft_block_size=" << (t.oft_blocks > 0 ? 0 : orthogonal_block(t))
        << ", target_modules=" << target_text;
      break;
    case Method::kBoft: p << "BOFTConfig(boft_block_size=" << orthogonal_block(t) << ", target_modules=" << target_text; break;
    case Method::kLnTuning: p << "LNTuningConfig(target_modules=[\"input_layernorm\", \"post_attention_layernorm\", \"norm\"]"; break;
    case Method::kMiss:
      p << "MissConfig(r=" << t.lora_rank << ", init_weights="
        << (t.miss_shape == MissShape::kDefault ? std::string("True") : "\"" + std::string(name_of(t.miss_shape, kMissShapeNames)) + "\"")
        << ", mini_r=" << t.miss_mini_r << ", target_modules=" << target_text;
      break;
    case Method::kGlora:
      p << "GloraConfig(r=" << t.lora_rank << ", config_A_B=\"" << name_of(t.glora_a_b, kGloraPathNames)
        << "\", target_modules=" << target_text;
      break;
    case Method::kAdaptionPrompt:
      p << "AdaptionPromptConfig(adapter_len=" << t.adapter_prompt_length << ", adapter_layers="
        << num_layers - std::min(t.adapter_start_layer, num_layers);
      break;
    case Method::kFourierFt:
    case Method::kWaveFt:
      p << peft_config_class(t.method) << "(n_frequency=" << spectral_frequencies(t) << ", target_modules=" << target_text;
      break;
    case Method::kHira:
    case Method::kShira:
    case Method::kDelora:
    case Method::kGralora:
    case Method::kPvera:
    case Method::kUnilora:
    case Method::kPsoft:
    case Method::kRandlora:
    case Method::kPeanut: p << peft_config_class(t.method) << "(r=" << t.lora_rank << ", target_modules=" << target_text; break;
    // tuners/adalora/config.py: init_r is the trained rank; total_step (required) as the script's max_steps.
    case Method::kAdalora:
      p << "AdaLoraConfig(init_r=" << t.lora_rank << ", total_step=1000, target_modules=" << target_text;
      break;
    case Method::kC3a: p << "C3AConfig(block_size=" << circulant_block(t) << ", target_modules=" << target_text; break;
    // peft v0.21.2 tuners/{lily,tinylora,vblora,frod,adamss}/config.py: r, stride_A, num_B, u, weight_tying,
    // num_vectors, vector_length, topk, sparse_rate, runtime_offload_base_weight, num_subspaces, subspace_rank.
    case Method::kLily:
      p << "LilyConfig(r=" << t.lora_rank << ", stride_A=" << s.lily_stride_a << ", num_B=" << s.lily_num_b
        << ", target_modules=" << target_text;
      break;
    case Method::kTinyLora:
      p << "TinyLoraConfig(r=" << t.lora_rank << ", u=" << s.tinylora_u << ", weight_tying=" << s.tinylora_weight_tying
        << ", target_modules=" << target_text;
      break;
    case Method::kVblora:
      p << "VBLoRAConfig(r=" << t.lora_rank << ", num_vectors=" << s.vblora_num_vectors << ", vector_length="
        << s.vblora_vector_length << ", topk=" << s.vblora_topk << ", target_modules=" << target_text;
      break;
    case Method::kFrod:
      p << "FrodConfig(sparse_rate=" << s.frod_sparse_rate << ", runtime_offload_base_weight="
        << (s.frod_offload_base ? "True" : "False") << ", target_modules=" << target_text;
      break;
    case Method::kAdamss:
      p << "AdamssConfig(r=" << t.lora_rank << ", num_subspaces=" << s.adamss_subspaces << ", subspace_rank="
        << s.adamss_subspace_rank << ", target_modules=" << target_text;
      break;
    case Method::kRoad:
      p << "RoadConfig(variant=\"" << name_of(t.road_variant, kRoadVariantNames) << "\", target_modules=" << target_text;
      break;
    case Method::kDeft:
      p << "DeftConfig(r=" << t.lora_rank << ", para=" << (t.deft_para ? "True" : "False") << ", target_modules=" << target_text;
      break;
    case Method::kBeft: p << "BeftConfig(target_modules=" << target_text; break;
    case Method::kOsf: {
      p << "OSFConfig(target_modules=" << target_text;
      if (t.lora_rank <= 0) break;
      // memfit's lora.rank is the trainable rank: PEFT's effective_rank is min(in, out) minus it, per module.
      const std::int64_t h = a.hidden_size, q = a.attention.num_heads * a.attention.head_dim;
      const std::int64_t kv = a.attention.num_kv_heads * a.attention.head_dim, f = a.mlp.intermediate_size;
      const std::pair<const char*, std::int64_t> dims[] = {{"q_proj", std::min(h, q)}, {"k_proj", std::min(h, kv)},
                                                           {"v_proj", std::min(h, kv)}, {"o_proj", std::min(h, q)},
                                                           {"gate_proj", std::min(h, f)}, {"up_proj", std::min(h, f)},
                                                           {"down_proj", std::min(h, f)}};
      p << ", rank_pattern={";
      for (const auto& [module, m] : dims) p << (module == dims[0].first ? "" : ", ") << "\"" << module << "\": " << m - std::min(t.lora_rank, m - 1);
      p << "}";
      break;
    }
    case Method::kTrainableTokens:
      p << "TrainableTokensConfig(token_indices=list(range(" << t.trainable_token_count << ")), target_modules=[\"embed_tokens\"]";
      break;
    default: p << "PrefixTuningConfig(num_virtual_tokens=" << t.virtual_tokens; break;
  }
  p << ", task_type=\"CAUSAL_LM\"))\n";
}

void python_model_setup(Text& p, const LaunchInput& in, const char* torch_dtype) {
  const TrainingSetup& t = in.setup;
  const bool lora = is_lora_like(t.method);
  if (t.method == Method::kQlora) {
    p << "quantization = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\", bnb_4bit_use_double_quant=True,\n"
      << "                                  bnb_4bit_compute_dtype=" << torch_dtype << ", bnb_4bit_quant_storage=" << torch_dtype << ")\n";
  }
  p << "model = AutoModelForCausalLM.from_pretrained(MODEL, dtype=" << torch_dtype
    << (t.method == Method::kQlora ? ", quantization_config=quantization" : "") << ")\n";
  const bool ckpt = t.checkpointing != Checkpointing::kNone;
  if (t.method == Method::kQlora) p << "model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=" << (ckpt ? "True" : "False") << ")\n";
  if (lora) {
    std::vector<std::string> targets = hf_modules(t.lora_targets);
    const std::string target_text = targets.size() == 1 && targets[0] == "all-linear" ? "\"all-linear\"" : python_list(targets);
    p << "model = get_peft_model(model, LoraConfig(r=" << t.lora_rank << ", lora_alpha=" << 2 * t.lora_rank
      << ", lora_dropout=" << t.lora_dropout << ", target_modules=" << target_text << ", use_dora="
      << (t.method == Method::kDora ? "True" : "False") << lora_init_argument(t);
    if (const std::string saved = saved_modules(t, *in.arch); !saved.empty()) p << ", modules_to_save=[" << saved << "]";
    p << ", task_type=\"CAUSAL_LM\"))\n";
  }
  python_other_peft(p, t, *in.arch);
  if (t.method == Method::kFreeze) {
    p << "TRAINABLE_BLOCKS = " << t.freeze_trainable_layers << "  # the last blocks train, everything else is frozen\n"
      << "for p in model.parameters():\n    p.requires_grad_(False)\n"
      << "for block in model.model.layers[-TRAINABLE_BLOCKS:]:\n    block.requires_grad_(True)\n";
  }
}

const char* torch_dtype_of(Precision p) {
  switch (p) {
    case Precision::kFp16: return "torch.float16";
    case Precision::kBf16:
    case Precision::kFp8: return "torch.bfloat16";
    default: return "torch.float32";  // fp32 and AMP: fp32 weights
  }
}

// A Python training script: the Hugging Face Trainer (launched by accelerate with
// accelerate_config.yaml) or, for the deepspeed framework, a DeepSpeed engine loop over the same
// model (launched by the deepspeed launcher with ds_config.json).
LaunchFormat python_script(const LaunchInput& in) {
  LaunchFormat f = named("python_script", "train.py");
  const ParallelLayout& l = in.layout;
  const TrainingSetup& t = in.setup;
  if (model_parallel(l) && in.framework != Framework::kDeepspeed) {
    f.supported = false;
    f.notes.emplace_back("the Trainer script runs data parallelism (DDP, FSDP, DeepSpeed ZeRO); for tp/pp/cp/ep use Megatron-LM or torchtitan");
    return f;
  }
  const bool deepspeed_loop = in.framework == Framework::kDeepspeed;
  if (deepspeed_loop && (l.pp > 1 || l.cp > 1 || l.ep > 1)) {
    f.supported = false;
    f.notes.emplace_back("a DeepSpeed engine loop sets tensor parallelism (AutoTP) in ds_config.json; pipeline, context and expert parallelism need model code");
    return f;
  }
  const char* dtype = torch_dtype_of(t.precision);
  const std::string mixed = dtype_name(t.precision);
  Text p;
  if (deepspeed_loop) {
    p << "# deepspeed --num_nodes " << nodes(in) << " --num_gpus " << std::min(in.gpus_per_node, l.gpus()) << " train.py\n";
  } else {
    p << "# accelerate launch --config_file accelerate_config.yaml --num_processes " << l.gpus() << " train.py\n";
  }
  p << "import torch\n";
  p << (deepspeed_loop ? "import deepspeed\nfrom transformers import AutoModelForCausalLM\n"
                       : "from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer, TrainingArguments\n");
  if (is_lora_like(t.method)) p << "from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training\n";
  else if (base_frozen(t.method)) p << "from peft import " << peft_config_class(t.method) << ", get_peft_model\n";
  p << "\nMODEL = \"" << in.model_id << "\"\n";
  python_model_setup(p, in, dtype);
  const bool ckpt = t.checkpointing != Checkpointing::kNone;
  if (deepspeed_loop) {
    if (ckpt) p << "model.gradient_checkpointing_enable()\n";
    p << "engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=[p for p in model.parameters() if p.requires_grad],\n"
      << "                                             config=\"ds_config.json\")  # micro-batch " << t.micro_batch
      << ", accumulation " << t.grad_accum << "\n";
    p << "for batch in loader:  # sequences of " << t.seq_len << " tokens, " << t.micro_batch << " per GPU\n"
      << "    loss = engine(**batch).loss\n    engine.backward(loss)\n";
    // AdaLoRA's allocator reads the gradients, which engine.step() zeroes (safe_get_full_grad under ZeRO).
    if (t.method == Method::kAdalora) p << "    model.base_model.update_and_allocate(engine.global_steps)  # AdaLoRA's rank allocator\n";
    p << "    engine.step()\n";
  } else {
    p << "args = TrainingArguments(output_dir=\"out\", per_device_train_batch_size=" << t.micro_batch
      << ", gradient_accumulation_steps=" << t.grad_accum << ",\n"
      << "                         gradient_checkpointing=" << (ckpt ? "True" : "False") << ", bf16=" << (mixed == "bf16" ? "True" : "False")
      << ", fp16=" << (mixed == "fp16" ? "True" : "False") << ", max_steps=1000)\n";
    const bool adalora = t.method == Method::kAdalora;
    if (adalora) {
      // peft v0.21.2 tuners/adalora/model.py update_and_allocate: after each optimizer step, before
      // zero_grad; transformers' Trainer calls on_optimizer_step there.
      p << "from transformers import TrainerCallback\n\n\nclass AdaLoraAllocate(TrainerCallback):\n"
        << "    def on_optimizer_step(self, args, state, control, **kwargs):\n"
        << "        model.base_model.update_and_allocate(state.global_step)\n\n\n";
    }
    p << "trainer = Trainer(model=model, args=args, train_dataset=dataset" << (adalora ? ", callbacks=[AdaLoraAllocate()]" : "")
      << ")  # your dataset: sequences of " << t.seq_len << " tokens\n"
      << "trainer.train()\n";
  }
  f.text = p.str();
  if (t.checkpointing == Checkpointing::kSelective) {
    f.notes.emplace_back("gradient_checkpointing recomputes whole decoder layers (full); selective recompute is not a Trainer option");
  }
  return f;
}

LaunchFormat unsloth_script(const LaunchInput& in) {
  LaunchFormat f = named("unsloth_python", "train_unsloth.py");
  const TrainingSetup& t = in.setup;
  if (in.layout.gpus() > 1) {
    f.supported = false;
    f.notes.emplace_back("this script trains on one GPU; Unsloth on several GPUs goes through accelerate (DDP) with the same script");
    return f;
  }
  const bool lora = is_lora_like(t.method);
  const std::string dt = dtype_name(t.precision);
  Text py;
  py << "from unsloth import FastLanguageModel\n";
  py << "import torch\n";
  py << "from trl import SFTConfig, SFTTrainer\n\n";
  py << "model, tokenizer = FastLanguageModel.from_pretrained(\n";
  py << "    model_name=\"" << in.model_id << "\",\n";
  py << "    max_seq_length=" << t.seq_len << ",\n";
  py << "    dtype=" << (dt == "fp16" ? "torch.float16" : dt == "fp32" ? "torch.float32" : "None") << ",\n";
  py << "    load_in_4bit=" << (effective_base_quant(t) == BaseQuant::kNf4 ? "True" : "False") << ",\n";
  py << "    load_in_8bit=" << (effective_base_quant(t) == BaseQuant::kInt8 ? "True" : "False") << ",\n";
  py << "    full_finetuning=" << (t.method == Method::kFull ? "True" : "False") << ",\n";
  const std::string gc = t.checkpointing == Checkpointing::kNone ? "False"
                         : t.offload == Offload::kActivations  ? "\"unsloth\""
                                                               : "True";
  if (!lora) py << "    use_gradient_checkpointing=" << gc << ",\n";  // full fine-tuning: set at load
  py << ")\n";
  if (lora) {
    py << "model = FastLanguageModel.get_peft_model(\n";
    py << "    model,\n";
    py << "    r=" << t.lora_rank << ",\n";
    py << "    target_modules=[" << lora_modules(t) << "],\n";
    if (const std::string saved = saved_modules(t, *in.arch); !saved.empty()) py << "    modules_to_save=[" << saved << "],\n";
    py << "    lora_dropout=" << t.lora_dropout << ",\n";
    py << "    use_gradient_checkpointing=" << gc << ",\n";
    py << ")\n";
  }
  py << "args = SFTConfig(\n";
  py << "    per_device_train_batch_size=" << t.micro_batch << ",\n";
  py << "    gradient_accumulation_steps=" << t.grad_accum << ",\n";
  py << "    max_length=" << t.seq_len << ",\n";
  if (const std::string optim = hf_optim_name(t); !optim.empty()) py << "    optim=\"" << optim << "\",\n";
  py << ")\n";
  py << "trainer = SFTTrainer(model=model, processing_class=tokenizer, train_dataset=dataset, args=args)\n";
  py << "trainer.train()\n";
  f.text = py.str();
  f.notes.emplace_back("define `dataset` (a datasets.Dataset) before SFTTrainer");
  if (t.loss != LossKernel::kUnslothFusedCe) {
    f.notes.emplace_back("Unsloth computes the loss with its fused cross-entropy unless UNSLOTH_RETURN_LOGITS=1; the estimate's loss kernel differs");
  }
  return f;
}

// How an HF-Trainer YAML (Axolotl, LLaMA-Factory) shards: DeepSpeed for ZeRO-1 and optimizer
// offload (as accelerate() picks), FSDP for ZeRO-2 / ZeRO-3, nothing on one data rank.
enum class HfSharding { kNone, kDeepspeed, kFsdp };
HfSharding hf_sharding(const LaunchInput& in) {
  const ParallelLayout& l = in.layout;
  if (l.sharding == Sharding::kZero1 || in.setup.offload == Offload::kOptimizer) return HfSharding::kDeepspeed;
  if (l.sharding == Sharding::kZero2 || l.sharding == Sharding::kZero3) return HfSharding::kFsdp;
  return HfSharding::kNone;
}

// The DeepSpeed config inline under `deepspeed:` (both take a dict: transformers
// TrainingArguments.deepspeed, Axolotl's schema `deepspeed: str | dict`), "auto" where the
// trainer fills it in.
void inline_deepspeed(Text& y, const LaunchInput& in) {
  y << "deepspeed:\n";
  y << "  train_micro_batch_size_per_gpu: auto\n  gradient_accumulation_steps: auto\n";
  y << "  bf16: {enabled: auto}\n  fp16: {enabled: auto}\n";
  y << "  zero_optimization:\n    stage: " << deepspeed_stage(in) << "\n";
  if (in.setup.offload == Offload::kOptimizer || in.setup.offload == Offload::kParamsOptimizer) {
    y << "    offload_optimizer: {device: cpu, pin_memory: true}\n";
  }
  if (in.setup.offload == Offload::kParamsOptimizer) y << "    offload_param: {device: cpu, pin_memory: true}\n";
}

// The launch line both write as the file's first comment (gpus and nodes are not YAML keys).
std::string accelerate_launch_comment(const LaunchInput& in, const std::string& command) {
  return "# run: accelerate launch --num_processes " + std::to_string(in.layout.gpus()) + " --num_machines " +
         std::to_string(nodes(in)) + " " + command + "\n";
}

LaunchFormat hf_yaml_unsupported(LaunchFormat f, const LaunchInput& in, const char* framework) {
  f.supported = false;
  if (model_parallel(in.layout)) {
    f.notes.emplace_back(std::string(framework) + " runs data parallelism (DDP, FSDP, DeepSpeed ZeRO) under the HF Trainer; "
                         "for tp/pp/cp/ep use Megatron-LM or torchtitan");
  } else {
    f.notes.emplace_back(kDeepSpeedOffloadStages);
  }
  return f;
}

// Axolotl `axolotl train` YAML @ 067b021c (src/axolotl/utils/schemas/config.py, training.py,
// peft.py, fsdp.py: base_model, adapter, load_in_4bit / load_in_8bit, lora_r, lora_dropout,
// lora_target_linear, lora_target_modules, peft_use_dora, sequence_len, sample_packing,
// micro_batch_size, gradient_accumulation_steps, optimizer, bf16, fp16, gradient_checkpointing,
// activation_offloading, attn_implementation, torch_compile, plugins + liger_* / cut_cross_entropy,
// deepspeed, fsdp_version, fsdp_config.{reshard_after_forward, offload_params, ...}).
LaunchFormat axolotl_yaml(const LaunchInput& in) {
  LaunchFormat f = named("axolotl_yaml", "axolotl.yaml");
  if (model_parallel(in.layout) || deepspeed_ignores_offload(in)) return hf_yaml_unsupported(f, in, "Axolotl");
  const TrainingSetup& t = in.setup;
  const std::string dt = dtype_name(t.precision);
  Text y;
  y << accelerate_launch_comment(in, "-m axolotl.cli.train axolotl.yaml");
  y << "base_model: " << in.model_id << "\n";
  if (is_lora_like(t.method)) {
    y << "adapter: " << (t.method == Method::kQlora ? "qlora" : "lora") << "\n";
    y << "load_in_4bit: " << (effective_base_quant(t) == BaseQuant::kNf4 ? "true" : "false") << "\n";
    y << "load_in_8bit: " << (effective_base_quant(t) == BaseQuant::kInt8 ? "true" : "false") << "\n";
    y << "lora_r: " << t.lora_rank << "\n";
    y << "lora_alpha: " << 2 * t.lora_rank << "\n";
    y << "lora_dropout: " << t.lora_dropout << "\n";
    if (t.lora_targets == std::vector<std::string>{"all-linear"}) y << "lora_target_linear: true\n";
    else y << "lora_target_modules: [" << lora_modules(t) << "]\n";
    if (const std::string saved = saved_modules(t, *in.arch); !saved.empty()) y << "lora_modules_to_save: [" << saved << "]\n";
    if (t.method == Method::kDora) y << "peft_use_dora: true\n";
  }
  y << "sequence_len: " << t.seq_len << "\n";
  y << "sample_packing: " << (t.packed ? "true" : "false") << "\n";
  y << "micro_batch_size: " << t.micro_batch << "\n";
  y << "gradient_accumulation_steps: " << t.grad_accum << "\n";
  if (t.optimizer == Optimizer::kAdamMini) y << "optimizer: adamw_torch  # Adam-mini: no Axolotl optimizer name\n";
  else if (const std::string optim = hf_optim_name(t); !optim.empty()) y << "optimizer: " << optim << "\n";
  hf_low_rank_optim(y, t);
  y << "bf16: " << (dt == "bf16" ? "true" : "false") << "\n";
  y << "fp16: " << (dt == "fp16" ? "true" : "false") << "\n";
  y << "gradient_checkpointing: " << (t.checkpointing == Checkpointing::kNone ? "false" : "true") << "\n";
  if (t.offload == Offload::kActivations) y << "activation_offloading: true\n";
  y << "attn_implementation: " << (t.attention == AttentionKernel::kFlash || t.attention == AttentionKernel::kFlashTriton ? "flash_attention_2" : t.attention == AttentionKernel::kEager ? "eager" : "sdpa") << "\n";
  if (t.compile) y << "torch_compile: true\n";
  if (t.liger_kernels || t.loss == LossKernel::kLigerFlce) {
    y << "plugins: [axolotl.integrations.liger.LigerPlugin]\n";
    y << "liger_fused_linear_cross_entropy: " << (t.loss == LossKernel::kLigerFlce ? "true" : "false") << "\n";
    if (t.liger_kernels) y << "liger_rms_norm: true\nliger_glu_activation: true\nliger_rope: true\n";
  } else if (t.loss == LossKernel::kCutCe) {
    y << "plugins: [axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin]\ncut_cross_entropy: true\n";
  }
  const HfSharding how = hf_sharding(in);
  if (how == HfSharding::kDeepspeed) inline_deepspeed(y, in);
  if (how == HfSharding::kFsdp) {
    y << "fsdp_version: 2\n";
    y << "fsdp_config:\n";
    y << "  reshard_after_forward: " << (in.layout.sharding == Sharding::kZero2 ? "false" : "true") << "\n";
    y << "  offload_params: " << (t.offload == Offload::kParamsOptimizer ? "true" : "false") << "\n";
    y << "  auto_wrap_policy: TRANSFORMER_BASED_WRAP\n  state_dict_type: SHARDED_STATE_DICT\n";
    y << "  activation_checkpointing: " << (t.checkpointing == Checkpointing::kNone ? "false" : "true") << "\n";
  }
  f.text = y.str();
  f.notes.emplace_back("add datasets: and output_dir:; multi-node: --machine_rank and --main_process_ip per node");
  if (amp_like(t)) f.notes.emplace_back("Axolotl loads the weights in the bf16 / fp16 it trains in: fp32 weights under autocast are not an Axolotl setting");
  if (is_lora_like(t.method) && t.lora_init != LoraInit::kDefault) {
    f.notes.emplace_back(std::string("LoRA's init_lora_weights=") + name_of(t.lora_init, kLoraInitNames) +
                         " is not written to this YAML (same memory as LoRA's default)");
  }
  if (how == HfSharding::kNone && t.embeddings_fp32) f.notes.emplace_back("Axolotl upcasts the embeddings and lm_head to fp32 outside FSDP (the estimate counts them)");
  return f;
}

// LLaMA-Factory `llamafactory-cli train` YAML @ ff6d4d12 (hparams/*_args.py: model_name_or_path,
// stage, finetuning_type, lora_rank, lora_dropout, lora_target, use_dora, quantization_bit,
// cutoff_len, packing, pure_bf16, disable_gradient_checkpointing, flash_attn, enable_liger_kernel,
// use_galore / galore_rank / galore_update_interval / galore_target / galore_layerwise, use_apollo /
// apollo_rank / apollo_scale_type, use_adam_mini; TrainingArguments: per_device_train_batch_size,
// gradient_accumulation_steps, bf16, fp16, optim, deepspeed, fsdp).
LaunchFormat llamafactory_yaml(const LaunchInput& in) {
  LaunchFormat f = named("llamafactory_yaml", "llamafactory.yaml");
  if (model_parallel(in.layout) || deepspeed_ignores_offload(in)) return hf_yaml_unsupported(f, in, "LLaMA-Factory");
  const TrainingSetup& t = in.setup;
  const std::string dt = dtype_name(t.precision);
  Text y;
  y << accelerate_launch_comment(in, "-m llamafactory.launcher llamafactory.yaml");
  y << "model_name_or_path: " << in.model_id << "\nstage: sft\ndo_train: true\n";
  const bool lora = is_lora_like(t.method);
  y << "finetuning_type: " << (lora ? "lora" : t.method == Method::kFreeze ? "freeze" : "full") << "\n";
  if (t.method == Method::kFreeze) y << "freeze_trainable_layers: " << t.freeze_trainable_layers << "\n";
  // finetuning_args.py use_badam, badam_mode, badam_start_block, badam_switch_mode (ascending),
  // badam_switch_interval (50): the estimated block starts; every block has its turn.
  if (t.method == Method::kFull && t.badam_active_layer >= 0) {
    y << "use_badam: true\nbadam_mode: layer\nbadam_start_block: " << t.badam_active_layer << "\nbadam_switch_mode: ascending\nbadam_switch_interval: 50\n";
  }
  if (lora) {
    y << "lora_rank: " << t.lora_rank << "\n";
    y << "lora_dropout: " << t.lora_dropout << "\n";
    const std::string targets = unquoted(lora_modules(t));
    y << "lora_target: " << (targets == "all-linear" ? "all" : targets) << "\n";
    if (const std::string saved = saved_modules(t, *in.arch); !saved.empty()) y << "additional_target: " << unquoted(saved) << "\n";
    if (t.method == Method::kDora) y << "use_dora: true\n";
    if (t.lora_init == LoraInit::kPissa) y << "pissa_init: true\n";  // init_adapter: init_lora_weights "pissa"
    if (effective_base_quant(t) == BaseQuant::kNf4) y << "quantization_bit: 4\nquantization_method: bnb\n";
    if (effective_base_quant(t) == BaseQuant::kInt8) y << "quantization_bit: 8\nquantization_method: bnb\n";
  }
  y << "cutoff_len: " << t.seq_len << "\n";
  y << "packing: " << (t.packed ? "true" : "false") << "\n";
  y << "per_device_train_batch_size: " << t.micro_batch << "\n";
  y << "gradient_accumulation_steps: " << t.grad_accum << "\n";
  const bool pure16 = !amp_like(t) && dt == "bf16" && !lora;
  if (pure16) y << "pure_bf16: true\n";
  else y << "bf16: " << (dt == "bf16" ? "true" : "false") << "\nfp16: " << (dt == "fp16" ? "true" : "false") << "\n";
  y << "disable_gradient_checkpointing: " << (t.checkpointing == Checkpointing::kNone ? "true" : "false") << "\n";
  y << "flash_attn: " << (t.attention == AttentionKernel::kFlash || t.attention == AttentionKernel::kFlashTriton ? "fa2" : t.attention == AttentionKernel::kEager ? "disabled" : "sdpa") << "\n";
  if (t.liger_kernels || t.loss == LossKernel::kLigerFlce) y << "enable_liger_kernel: true\n";
  if (t.optimizer == Optimizer::kGaloreAdamW) {
    y << "use_galore: true\ngalore_target: all\ngalore_rank: " << t.projection_rank << "\ngalore_update_interval: " << t.projection_update_gap << "\n";
    if (t.optimizer_in_backward) y << "galore_layerwise: true\n";
  } else if (t.optimizer == Optimizer::kApolloAdamW || t.optimizer == Optimizer::kApolloMini) {
    y << "use_apollo: true\napollo_target: all\napollo_rank: " << t.projection_rank << "\napollo_update_interval: " << t.projection_update_gap << "\n";
    if (t.optimizer == Optimizer::kApolloMini) y << "apollo_scale_type: tensor\n";
    if (t.optimizer_in_backward) y << "apollo_layerwise: true\n";
  } else if (t.optimizer == Optimizer::kAdamMini) {
    y << "use_adam_mini: true\n";
  } else if (const std::string optim = hf_optim_name(t); !optim.empty()) {
    y << "optim: " << optim << "\n";
  }
  const HfSharding how = hf_sharding(in);
  if (how == HfSharding::kDeepspeed) inline_deepspeed(y, in);
  if (how == HfSharding::kFsdp) {
    y << "fsdp: \"" << (in.layout.sharding == Sharding::kZero2 ? "shard_grad_op" : "full_shard") << " auto_wrap"
      << (t.offload == Offload::kParamsOptimizer ? " offload" : "") << "\"\n";
  }
  f.text = y.str();
  f.notes.emplace_back("add dataset:, template: and output_dir:; or run FORCE_TORCHRUN=1 llamafactory-cli train llamafactory.yaml");
  if (lora && t.lora_init != LoraInit::kDefault && t.lora_init != LoraInit::kPissa) {
    f.notes.emplace_back("LLaMA-Factory's YAML sets LoRA's initialisation only through pissa_init: init_lora_weights=" +
                         std::string(name_of(t.lora_init, kLoraInitNames)) + " is not written (same memory as LoRA's default)");
  }
  if (t.loss == LossKernel::kCutCe || t.loss == LossKernel::kUnslothFusedCe || t.loss == LossKernel::kChunkedNll) {
    f.notes.emplace_back("LLaMA-Factory has no switch for the estimate's loss kernel: it computes the model's own loss (or Liger's with enable_liger_kernel)");
  }
  return f;
}

// Answer.AI fsdp_qlora train.py @ 05ed9f2 (fsdp_main's arguments): one node, mp.spawn over
// world_size GPUs.
LaunchFormat fsdp_qlora(const LaunchInput& in) {
  LaunchFormat f = named("fsdp_qlora_command", "fsdp_qlora.sh");
  const ParallelLayout& l = in.layout;
  const TrainingSetup& t = in.setup;
  std::string why;
  if (model_parallel(l)) why = "fsdp_qlora runs FSDP data parallelism only (no tp, pp, cp or ep)";
  else if (nodes(in) > 1) why = "fsdp_qlora's train.py spawns its ranks on one node";
  else if (l.sharding == Sharding::kZero1) why = "fsdp_qlora's sharding strategies are full_shard, shard_grad_op and ddp (no ZeRO-1)";
  else if (t.offload == Offload::kOptimizer) why = "fsdp_qlora offloads parameters with their optimizer states (use_cpu_offload), not the optimizer alone";
  else if (t.method != Method::kFull && t.method != Method::kLora && t.method != Method::kQlora) why = "fsdp_qlora trains full, lora or qlora";
  if (!why.empty()) {
    f.supported = false;
    f.notes.push_back(why);
    return f;
  }
  const char* strategy = l.sharding == Sharding::kZero3 ? "full_shard" : l.sharding == Sharding::kZero2 ? "shard_grad_op" : "ddp";
  const char* precision = t.precision == Precision::kFp32      ? "fp32"
                          : t.precision == Precision::kAmpBf16 ? "bf16_autocast"
                          : t.precision == Precision::kAmpFp16 ? "fp16_autocast"
                                                               : "bf16";
  Text c;
  c << "python train.py --model_name " << in.model_id << " --train_type " << (t.method == Method::kFull ? "full" : t.method == Method::kLora ? "lora" : "qlora")
    << " --world_size " << l.gpus() << " --batch_size " << t.micro_batch << " --gradient_accumulation_steps " << t.grad_accum
    << " --context_length " << t.seq_len << " --precision " << precision << " --sharding_strategy " << strategy
    << " --use_gradient_checkpointing " << (t.checkpointing != Checkpointing::kNone ? "true" : "false")
    << " --use_cpu_offload " << (t.offload == Offload::kParamsOptimizer ? "true" : "false");
  if (is_lora_like(t.method)) {
    const bool all = t.lora_targets.size() == 1 && t.lora_targets[0] == "all-linear";
    c << " --lora_rank " << t.lora_rank << " --lora_target_modules " << (all ? "all" : "default");
    if (!all) f.notes.emplace_back("--lora_target_modules default adapts k, q, v, up and down projections; other target sets need code");
    if (t.lora_saves_embedding || t.lora_saves_head) f.notes.emplace_back("train.py has no option for PEFT's modules_to_save: it needs code");
  }
  c << " --dataset <yours>\n";
  f.text = c.str();
  if (t.checkpointing == Checkpointing::kSelective) f.notes.emplace_back("use_gradient_checkpointing checkpoints whole blocks (full)");
  return f;
}

// The framework each framework-specific format launches: a method outside that framework's
// capabilities (capabilities.cpp, e.g. Axolotl's lora / qlora / dora and full) has no spelling in it.
constexpr std::pair<std::string_view, Framework> kFormatFrameworks[] = {
    {"axolotl_yaml", Framework::kAxolotl},       {"llamafactory_yaml", Framework::kLlamaFactory},
    {"torchtune_command", Framework::kTorchtune}, {"unsloth_python", Framework::kUnsloth},
    {"megatron_args", Framework::kMegatron},      {"torchtitan_toml", Framework::kTorchtitan},
    {"fsdp_qlora_command", Framework::kFsdpQlora}};

/// A format whose framework cannot train the method is unsupported, said, instead of a file that
/// silently trains something else.
void refuse_untrained_method(LaunchFormat& f, Method method) {
  for (const auto& [format, framework] : kFormatFrameworks) {
    if (format != f.format || !f.supported) continue;
    const FrameworkCapabilities caps = framework_capabilities(framework);
    if (caps.methods[static_cast<int>(method)]) return;
    std::string trained;
    for (const auto& [name, m] : kMethodNames) {
      if (caps.methods[static_cast<int>(m)]) trained += (trained.empty() ? "" : ", ") + std::string(name);
    }
    f.supported = false;
    f.text.clear();
    f.notes.assign({f.file_name + " cannot train " + name_of(method, kMethodNames) + ": its framework trains " + trained});
    return;
  }
}

}  // namespace

std::vector<LaunchFormat> launch_configs(const LaunchInput& in) {
  std::vector<LaunchFormat> all = {deepspeed(in),     accelerate(in),     megatron(in),        torchtitan(in),
                                   torchtune(in),     trl_sft(in),        unsloth_script(in),  python_script(in),
                                   fsdp_qlora(in),    axolotl_yaml(in),   llamafactory_yaml(in)};
  for (LaunchFormat& f : all) refuse_untrained_method(f, in.setup.method);
  const std::vector<std::string> own = framework_capabilities(in.framework).launch_formats;
  // The framework's own formats first, in the order its capabilities list them (its main file first).
  std::vector<LaunchFormat> ordered;
  ordered.reserve(all.size());
  for (const std::string& name : own) {
    for (LaunchFormat& f : all) {
      if (f.format == name && !f.for_framework) {
        f.for_framework = true;
        ordered.push_back(f);
      }
    }
  }
  for (LaunchFormat& f : all) {
    if (!f.for_framework) ordered.push_back(std::move(f));
  }
  // BAdam's BlockOptimizer (pip badam) is a setting of LLaMA-Factory only.
  if (in.setup.method == Method::kFull && in.setup.badam_active_layer >= 0) {
    for (LaunchFormat& f : ordered) {
      if (f.format != "llamafactory_yaml") f.notes.emplace_back("BAdam is not a setting here: this trains every layer at once (llamafactory.yaml has use_badam)");
    }
  }
  return ordered;
}

}  // namespace memfit
