// Launch configurations (see launch.h). Option names, per framework:
//   DeepSpeed: docs/_pages/config-json.md (deepspeed.ai/docs/config-json) @ v0.16: train_batch_size,
//     train_micro_batch_size_per_gpu, gradient_accumulation_steps, bf16/fp16.enabled,
//     zero_optimization.{stage, offload_optimizer.device, offload_param.device, overlap_comm,
//     contiguous_gradients}, gradient_clipping.
//   accelerate: docs/source/usage_guides/fsdp.md and deepspeed.md, `accelerate config` output
//     (compute_environment, distributed_type, mixed_precision, num_machines, num_processes,
//     fsdp_config.fsdp_*, deepspeed_config.*).
//   Megatron-LM: megatron/training/arguments.py @ core_r0.12 (--tensor-model-parallel-size,
//     --pipeline-model-parallel-size, --num-layers-per-virtual-pipeline-stage,
//     --context-parallel-size, --expert-model-parallel-size, --sequence-parallel,
//     --use-distributed-optimizer, --recompute-*, --optimizer-cpu-offload).
//   torchtitan: torchtitan/config/job_config.py @ c854924 (2025-10-01) ([model] hf_assets_path,
//     converters ("quantize.linear.float8", components/quantization/float8.py); [training]
//     local_batch_size, global_batch_size (accumulation = global / (local x dp)), seq_len,
//     mixed_precision_param/_reduce; [parallelism] data_parallel_*_degree, tensor_parallel_degree,
//     pipeline_parallel_degree, pipeline_parallel_schedule, pipeline_parallel_microbatch_size
//     (microbatches = local_batch_size / it), pipeline_parallel_layers_per_stage,
//     pipeline_parallel_{first,last}_stage_less_layers, context_parallel_degree,
//     expert_parallel_degree, fsdp_reshard_after_forward; [activation_checkpoint] mode,
//     selective_ac_option; [compile] enable).
//   torchtune: recipes/full_finetune_distributed.py and lora_finetune_distributed.py config keys
//     (batch_size, gradient_accumulation_steps, enable_activation_checkpointing, dtype,
//     fsdp_cpu_offload, compile, optimizer_in_bwd) and `tune run --nproc_per_node`.
#include "export/launch.h"

#include <sstream>

#include "hf_config/json_input.h"

namespace memfit {

namespace {

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

LaunchFormat deepspeed(const LaunchInput& in) {
  LaunchFormat f{"deepspeed_json", "ds_config.json", "", true, {}};
  const ParallelLayout& l = in.layout;
  if (l.pp > 1 || l.cp > 1 || l.ep > 1) {
    f.supported = false;
    f.notes.emplace_back("DeepSpeed's JSON config does not set pipeline, context or expert parallel degrees (they are built in code); use Megatron-LM or torchtitan");
    return f;
  }
  Json j;
  j["train_batch_size"] = global_batch(in);
  j["train_micro_batch_size_per_gpu"] = in.setup.micro_batch;
  j["gradient_accumulation_steps"] = in.setup.grad_accum;
  const std::string dt = dtype_name(in.setup.precision);
  j["bf16"] = {{"enabled", dt == "bf16"}};
  j["fp16"] = {{"enabled", dt == "fp16"}};
  Json zero{{"stage", zero_stage(l.sharding)}, {"overlap_comm", true}, {"contiguous_gradients", true}};
  if (in.setup.offload == Offload::kOptimizer || in.setup.offload == Offload::kParamsOptimizer) {
    zero["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
  }
  if (in.setup.offload == Offload::kParamsOptimizer) zero["offload_param"] = {{"device", "cpu"}, {"pin_memory", true}};
  j["zero_optimization"] = zero;
  if (l.tp > 1) j["tensor_parallel"] = {{"autotp_size", l.tp}};  // DeepSpeed AutoTP (>= 0.16.4)
  j["gradient_clipping"] = 1.0;
  f.text = j.dump(2) + "\n";
  if (in.setup.checkpointing != Checkpointing::kNone) {
    f.notes.emplace_back("activation checkpointing is switched on in the model (model.gradient_checkpointing_enable()), not in this file");
  }
  return f;
}

LaunchFormat accelerate(const LaunchInput& in) {
  LaunchFormat f{"accelerate_yaml", "accelerate_config.yaml", "", true, {}};
  const ParallelLayout& l = in.layout;
  if (model_parallel(l)) {
    f.supported = false;
    f.notes.emplace_back("accelerate's config covers data parallelism (DDP, FSDP, DeepSpeed ZeRO); for tp/pp/cp/ep use Megatron-LM or torchtitan");
    return f;
  }
  std::ostringstream y;
  const std::string dt = dtype_name(in.setup.precision);
  const bool ds = l.sharding == Sharding::kZero1 || in.setup.offload == Offload::kOptimizer;
  const bool fsdp = !ds && (l.sharding == Sharding::kZero2 || l.sharding == Sharding::kZero3);
  y << "compute_environment: LOCAL_MACHINE\n";
  y << "distributed_type: " << (ds ? "DEEPSPEED" : fsdp ? "FSDP" : l.gpus() > 1 ? "MULTI_GPU" : "NO") << "\n";
  y << "mixed_precision: " << (dt == "fp32" ? "no" : dt) << "\n";
  y << "num_machines: " << nodes(in) << "\n";
  y << "num_processes: " << l.gpus() << "\n";
  y << "machine_rank: 0\n";
  y << "main_training_function: main\n";
  if (ds) {
    y << "deepspeed_config:\n";
    y << "  zero_stage: " << zero_stage(l.sharding) << "\n";
    y << "  gradient_accumulation_steps: " << in.setup.grad_accum << "\n";
    y << "  offload_optimizer_device: " << (in.setup.offload == Offload::kNone ? "none" : "cpu") << "\n";
    y << "  offload_param_device: " << (in.setup.offload == Offload::kParamsOptimizer ? "cpu" : "none") << "\n";
    y << "  zero3_init_flag: " << (l.sharding == Sharding::kZero3 ? "true" : "false") << "\n";
  } else if (fsdp) {
    const bool hybrid = l.shard_degree > 0 && l.shard_degree < l.dp;
    y << "fsdp_config:\n";
    y << "  fsdp_sharding_strategy: " << (l.sharding == Sharding::kZero2 ? "SHARD_GRAD_OP" : hybrid ? "HYBRID_SHARD" : "FULL_SHARD") << "\n";
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
  f.notes.emplace_back("per-device batch size " + std::to_string(in.setup.micro_batch) + " and gradient_accumulation_steps " +
                       std::to_string(in.setup.grad_accum) + " go to the training script (TrainingArguments)");
  return f;
}

LaunchFormat megatron(const LaunchInput& in) {
  LaunchFormat f{"megatron_args", "megatron_args.sh", "", true, {}};
  const ParallelLayout& l = in.layout;
  const ModelArchitecture& a = *in.arch;
  std::ostringstream s;
  auto arg = [&](const std::string& name, const std::string& value = "") {
    s << "  --" << name << (value.empty() ? "" : " " + value) << " \\\n";
  };
  const auto str = [](std::int64_t v) { return std::to_string(v); };
  s << "torchrun --nnodes " << nodes(in) << " --nproc-per-node " << std::min(in.gpus_per_node, l.gpus()) << " pretrain_gpt.py \\\n";
  arg("num-layers", str(a.num_layers));
  arg("hidden-size", str(a.hidden_size));
  arg("num-attention-heads", str(a.attention.num_heads));
  if (a.attention.num_kv_heads != a.attention.num_heads) {
    arg("group-query-attention");
    arg("num-query-groups", str(a.attention.num_kv_heads));
  }
  arg("ffn-hidden-size", str(a.is_moe() ? a.moe.expert_intermediate_size : a.mlp.intermediate_size));
  if (a.mlp.gated) arg("swiglu");
  if (a.norm == NormKind::kRmsNorm) arg("normalization", "RMSNorm");
  if (a.position == PositionKind::kRotary) arg("position-embedding-type", "rope");
  if (!a.tie_word_embeddings) arg("untie-embeddings-and-output-weights");
  if (a.is_moe()) {
    arg("num-experts", str(a.moe.num_experts));
    arg("moe-router-topk", str(a.moe.top_k));
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
  if (l.sequence_parallel) arg("sequence-parallel");
  if (l.sharding == Sharding::kZero1) arg("use-distributed-optimizer");
  if (l.sharding == Sharding::kZero2 || l.sharding == Sharding::kZero3) {
    arg("use-distributed-optimizer");
    arg("use-megatron-fsdp");
    arg("data-parallel-sharding-strategy", l.sharding == Sharding::kZero2 ? "optim_grads" : "optim_grads_params");
  }
  if (in.setup.offload == Offload::kOptimizer) {
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
  arg("use-flash-attn");
  s << "  --train-iters 1000\n";
  f.text = s.str();
  if (in.setup.offload == Offload::kParamsOptimizer) {
    f.notes.emplace_back("Megatron-LM offloads optimizer states only: parameter offload has no Megatron option");
  }
  if (in.setup.method != Method::kFull) f.notes.emplace_back("Megatron-LM pretrain_gpt.py trains all weights; LoRA needs NeMo or another recipe");
  f.notes.emplace_back("data and tokenizer arguments (--data-path, --tokenizer-type, ...) are left to you");
  return f;
}

LaunchFormat torchtitan(const LaunchInput& in) {
  LaunchFormat f{"torchtitan_toml", "torchtitan.toml", "", true, {}};
  const ParallelLayout& l = in.layout;
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
  std::ostringstream t;
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
  t << "mixed_precision_reduce = \"float32\"\n\n";
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
  t << "expert_parallel_degree = " << l.ep << "\n";
  t << "fsdp_reshard_after_forward = \"default\"\n\n";
  t << "[activation_checkpoint]\n";
  t << "mode = \"" << (in.setup.checkpointing == Checkpointing::kFull ? "full" : in.setup.checkpointing == Checkpointing::kSelective ? "selective" : "none") << "\"\n";
  if (in.setup.checkpointing == Checkpointing::kSelective) t << "selective_ac_option = \"op\"\n";
  t << "\n[compile]\nenable = " << (in.setup.compile ? "true" : "false") << "\n";
  f.text = t.str();
  if (in.setup.offload == Offload::kParamsOptimizer) f.notes.emplace_back("set [training] enable_cpu_offload = true for FSDP parameter offload");
  if (!l.sequence_parallel && l.tp > 1) f.notes.emplace_back("torchtitan's tensor parallelism always shards the sequence between blocks (sequence parallel)");
  f.notes.emplace_back("model name and flavor: pick the torchtitan flavor matching " + in.model_id);
  return f;
}

LaunchFormat torchtune(const LaunchInput& in) {
  LaunchFormat f{"torchtune_command", "torchtune.sh", "", true, {}};
  const ParallelLayout& l = in.layout;
  if (l.pp > 1 || l.cp > 1 || l.ep > 1 || l.sharding == Sharding::kZero1 || l.sharding == Sharding::kZero2) {
    f.supported = false;
    f.notes.emplace_back("torchtune's recipes run one GPU or FSDP (with optional tensor parallelism); pp, cp, ep and ZeRO-1/2 are not options");
    return f;
  }
  const bool lora = is_lora_like(in.setup.method);
  const bool distributed = l.gpus() > 1;
  std::string recipe = std::string(lora ? "lora" : "full") + "_finetune_" + (distributed ? "distributed" : "single_device");
  std::ostringstream c;
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
  if (distributed && l.tp > 1) c << " tensor_parallel_dim=" << l.tp;
  if (in.setup.optimizer_in_backward) c << " optimizer_in_bwd=True";
  if (lora) c << " model.lora_rank=" << in.setup.lora_rank;
  c << "\n";
  f.text = c.str();
  if (in.setup.offload == Offload::kOptimizer) f.notes.emplace_back("torchtune offloads optimizer states only on one GPU (optimizer=torchao.optim.CPUOffloadOptimizer)");
  return f;
}

}  // namespace

std::vector<LaunchFormat> launch_configs(const LaunchInput& in) {
  return {deepspeed(in), accelerate(in), megatron(in), torchtitan(in), torchtune(in)};
}

}  // namespace memfit
