// torchtitan: its launch file (frameworks/launch.h; the writers' shared machinery: launch_common.h;
// its profile: profile.cpp).
// Option names:
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
#include "frameworks/launch_common.h"

namespace memfit::launch_files {

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
  t << "[optimizer]\nname = \"AdamW\"\n\n";  // components/optimizer.py: Adam or AdamW (capabilities: AdamW only)
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

}  // namespace memfit::launch_files
