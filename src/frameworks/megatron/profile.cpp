// Megatron-LM / Megatron-Core: its profile (the defaults it runs with, its distributed behaviours
// and its dated history), what it runs (its capabilities) and, beside this file, its launch file
// writer (launch.cpp: megatron_args). Registered in frameworks/registry.h (kFrameworks).
#include "frameworks/registry.h"

namespace memfit {

FrameworkProfile megatron_profile() {
  FrameworkProfile p{.id = Framework::kMegatron, .key = "megatron", .name = "Megatron-LM / Megatron-Core"};
  TrainingSetup& t = p.defaults;
  // --bf16: bf16 params, fp32 main params and fp32 main_grad (18 B/param with Adam); amp_bf16
  // carries the same 18 bytes (fp32 weights + fp32 grads + 8 state + 2 bf16 copy).
  t.precision = Precision::kAmpBf16;
  t.optimizer = Optimizer::kAdamW;
  t.optimizer_impl = OptimizerImpl::kFused;      // Transformer Engine / apex FusedAdam
  t.checkpointing = Checkpointing::kNone;        // recompute_granularity=None
  t.attention = AttentionKernel::kFlash;         // attention_backend=auto (cuDNN fused / flash)
  t.loss = LossKernel::kStandard;                // vocab_parallel_cross_entropy casts logits to fp32
  t.logits_upcast = true;
  t.logged_counter = MemoryCounter::kMaxAllocated;  // mem-max-allocated-bytes in its logs
  // Float16OptimizerWithFloat16Params / DistributedOptimizer: bf16 model, fp32 master in the
  // optimizer; --bf16 forces accumulate_allreduce_grads_in_fp32 (fp32 main_grad buffer).
  t.amp_weights = AmpWeights::kMasterInOptimizer;
  t.main_grad_bytes = 4;
  t.loss_softmax_in_place = true;
  t.fp8_over_amp = true;                         // --fp8-format with --bf16: fp32 main params and grads
  t.softmax_fused_16bit = true;                  // FusedScaleMaskSoftmax (attention_softmax_in_fp32 off)
  t.fused_elementwise = true;                    // fused layer norm, bias-dropout-add, bias-gelu/swiglu, rope
  t.fused_qkv_linear = true;                     // SelfAttention.linear_qkv
  t.fused_gate_up_linear = true;                 // MLP.linear_fc1 (x2 for gated_linear_unit)
  // _ParamAndGradBuffer allocates grad_data (fp32) at DDP construction; buckets are views.
  p.dist.ddp_bucket_copy = false;
  p.dist.grad_buffer_at_init = true;
  p.dist.vocab_multiple = 128;                   // --make-vocab-size-divisible-by 128 (x tp)
  p.dist.cp_gather_kv = false;                   // ring attention: K/V chunks passed by p2p
  p.dist.tp_backward_overlap = true;             // async dgrad all-reduce / reduce-scatter, input re-gather
  p.dist.param_gather_overlaps_forward = true;   // --overlap-param-gather (the launch command sets it)
  p.dist.moe_parallel_folding = true;            // --expert-tensor-parallel-size, expert rank generator
  p.dist.fp16_grads_reduce_in_fp16 = true;       // --fp16 without --accumulate-allreduce-grads-in-fp32
  p.history = {{202109, "the input gradient's tensor-parallel all-reduce waits for its GEMM (no asynchronous backward collectives)",
                "NVIDIA/Megatron-LM cf7efd4f (2021-08-30, \"allreduce overlap with wgrad gemm\"): the all-reduce launched "
                "async beside the weight-gradient GEMM; before it mpu/layers.py reduced in the autograd function's backward",
                nullptr, [](DistributedBehaviour& d) { d.tp_backward_overlap = false; }},
               {202203, "each micro-batch's weight gradients are added into the gradient buffer by a kernel of their own",
                "NVIDIA/Megatron-LM @ 3d718bfc (2021-08): megatron/model/distributed.py param_hook "
                "(param.main_grad.add_(param.grad.data)); fused into the weight-gradient GEMM by 83b1e42f "
                "(\"gradient accumulation fusion\", merged 9c5a830f, 2022-02-22)",
                nullptr, [](DistributedBehaviour& d) { d.grad_add_per_micro_batch = true; }},
               {202304, "pipeline sends split over the tensor-parallel ranks (scatter-gather): each sends 1/tp of the activation "
                "and the receiving stage all-gathers it in its tp group",
                "NVIDIA/Megatron-LM 27fc4689 (2021-01-20), on by default from 72e4230b (2021-02-16, "
                "--no-scatter-gather-tensors-in-pipeline turns it off); dropped when 3c92fa93 (2023-03-23) moved "
                "p2p_communication.py into megatron/core",
                nullptr, [](DistributedBehaviour& d) { d.pp_scatter_gather = true; }, 202102},
               {202309, "the data-parallel gradient reduction starts when the backward has ended",
                "NVIDIA/Megatron-LM e801b2bb (2023-09-07, merge of 2d5220a4 \"Add --overlap-grad-reduce command-line "
                "argument\"; issues #391 and #456, where the distributed optimizer's reduction ran as \"a long "
                "collective communication before optimizer.step\")",
                nullptr, [](DistributedBehaviour& d) { d.dp_reduce_overlaps_backward = false; }},
               {202311, "the distributed optimizer's parameter all-gather is waited on after the step",
                "NVIDIA/Megatron-LM 3b417268 (2023-11-17, merge of f048bf8c \"Overlap all-gather in distributed "
                "optimizer\": --overlap-param-gather)",
                nullptr, [](DistributedBehaviour& d) { d.param_gather_overlaps_forward = false; }},
               {202411, "experts take tp and ep divides dp x cp (no MoE parallel folding)",
                "NVIDIA/Megatron-LM 7f22e210 (2024-11-23, \"MoE parallel folding: separate MoE parallel states from dense\"); "
                "megatron/core/parallel_state.py @ d98e8a64 (expert rank generator: etp x ep x pp divides the world)",
                nullptr, [](DistributedBehaviour& d) { d.moe_parallel_folding = false; }}};
  p.sources = {"NVIDIA/Megatron-LM @ d98e8a64: megatron/training/arguments.py (bf16, fp32 main_grad, recompute)",
               "NVIDIA/Megatron-LM @ 1afee592: megatron/core/distributed/param_and_grad_buffer.py (grad_data at init)",
               "NVIDIA/Megatron-LM @ 1afee592: megatron/core/pipeline_parallel/schedules.py (warm-up micro-batches)",
               "NVIDIA/Megatron-LM @ 1afee592: megatron/training/tokenizer/tokenizer.py (_vocab_size_with_padding)",
               "NVIDIA/Megatron-LM @ d98e8a64: megatron/core/tensor_parallel/cross_entropy.py (fp32 logits)",
               "NVIDIA/Megatron-LM @ d98e8a64: megatron/core/tensor_parallel/layers.py (async backward collectives)",
               "NVIDIA/TransformerEngine @ d0067d0d: transformer_engine/pytorch/module/layernorm_linear.py (async backward collectives)",
               "NVIDIA/Megatron-LM @ d98e8a64: megatron/training/arguments.py (--overlap-grad-reduce, --overlap-param-gather)",
               "NVIDIA/Megatron-LM @ d98e8a64: megatron/training/utils/common_utils.py (report_memory)"};
  return p;
}

FrameworkCapabilities megatron_capabilities() {
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
  // --optimizer adam (fused AdamW) | sgd (--sgd-momentum, default 0.9), arguments.py @ core_v0.14.0.
  only_optimizers(c, {Optimizer::kAdamW, Optimizer::kSgd, Optimizer::kSgdMomentum});
  c.launch_formats = {"megatron_args"};
  c.sources = {"NVIDIA/Megatron-LM core_v0.14.0: megatron/training/arguments.py (--use-distributed-optimizer, --use-megatron-fsdp, "
               "--data-parallel-sharding-strategy, --optimizer-cpu-offload, --tensor/pipeline-model-parallel-size, "
               "--num-layers-per-virtual-pipeline-stage, --context-parallel-size, --expert-model-parallel-size, "
               "--sequence-parallel, --recompute-activations / --recompute-granularity)",
               "NVIDIA/Megatron-LM @ d98e8a64: megatron/core/transformer/moe/moe_layer.py (MoE with tp > 1 needs sequence parallelism)"};
  return c;
}

}  // namespace memfit
