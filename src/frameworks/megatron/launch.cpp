// Megatron-LM / Megatron-Core: its launch file (frameworks/launch.h; the writers' shared machinery:
// launch_common.h; its profile: profile.cpp).
// Option names:
//   Megatron-LM: megatron/training/arguments.py @ core_v0.14.0 (--tensor-model-parallel-size,
//     --pipeline-model-parallel-size, --num-layers-per-virtual-pipeline-stage,
//     --context-parallel-size, --expert-model-parallel-size, --sequence-parallel,
//     --use-distributed-optimizer, --use-megatron-fsdp with --data-parallel-sharding-strategy and
//     --ckpt-format fsdp_dtensor (asserted), --overlap-grad-reduce, --overlap-param-gather (needs
//     the first and the distributed optimizer or Megatron FSDP, asserted), CUDA_DEVICE_MAX_CONNECTIONS=1
//     under tp or cp > 1 (asserted before Blackwell, not with Megatron FSDP), --recompute-*, --optimizer-cpu-offload with
//     --use-precision-aware-optimizer (asserted), --moe-ffn-hidden-size,
//     --moe-shared-expert-intermediate-size).
#include "frameworks/launch_common.h"

namespace memfit::launch_files {

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
  // --optimizer adam (fused, decoupled weight decay) | sgd with --sgd-momentum (default 0.9).
  if (in.setup.optimizer == Optimizer::kSgd || in.setup.optimizer == Optimizer::kSgdMomentum) {
    arg("optimizer", "sgd");
    arg("sgd-momentum", in.setup.optimizer == Optimizer::kSgd ? "0" : "0.9");
  } else {
    arg("optimizer", "adam");
  }
  const std::string dt = dtype_name(in.setup.precision);
  if (dt != "fp32") arg(dt);
  // An fp32 main_grad under --fp16 (the layout's behaviour; --bf16 forces it).
  if (in.setup.precision == Precision::kAmpFp16 && !in.layout.behaviour.fp16_grads_reduce_in_fp16) {
    arg("accumulate-allreduce-grads-in-fp32");
  }
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

}  // namespace memfit::launch_files
