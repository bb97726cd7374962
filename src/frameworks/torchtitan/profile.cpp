// torchtitan: its profile (the defaults it runs with, its distributed behaviours and its dated
// history), what it runs (its capabilities) and, beside this file, its launch file writer
// (launch.cpp: torchtitan_toml). Registered in frameworks/registry.h (kFrameworks).
#include "frameworks/registry.h"

namespace memfit {

FrameworkProfile torchtitan_profile() {
  FrameworkProfile p{.id = Framework::kTorchtitan, .key = "torchtitan", .name = "torchtitan"};
  TrainingSetup& t = p.defaults;
  // training.dtype float32 with mixed_precision_param bfloat16: on one device torch.autocast.
  t.precision = Precision::kAmpBf16;
  t.optimizer = Optimizer::kAdamW;
  t.optimizer_impl = OptimizerImpl::kFused;      // implementation="fused"
  t.checkpointing = Checkpointing::kSelective;   // SelectiveAC by default
  t.selective_every_other_mm = true;             // train_configs/llama3_8b.toml: selective_ac_option 'op'
                                                 // (_custom_policy saves every other mm and SDPA outputs)
  t.compile_loss = true;                         // [compile] components = ["model", "loss"]
  t.compile_fuses_upcast = true;                 // components/loss.py: cross_entropy(pred.float()) compiled whole
  t.logits_freed_before_backward = true;         // train.py: del pred before loss.backward()
  t.fp8_saves_fp8_inputs = false;                // float8 via torchao Float8Linear: saves bf16 inputs
  t.fp8_over_amp = true;                         // float8 linears over the fp32 model with bf16 mixed precision
  t.attention = AttentionKernel::kFlash;         // flex attention: output + logsumexp saved
  t.loss = LossKernel::kStandard;                // cross_entropy(pred.float())
  t.logits_upcast = true;
  t.logged_counter = MemoryCounter::kMaxReserved;  // console: reserved_bytes.all.peak
  // parallelize_llama.apply_fsdp @ 9dec370: MixedPrecisionPolicy(param bf16, reduce fp32);
  // reshard_after_forward = layer_id < n_layers - 1 (the last block stays gathered), False for
  // every block under pipeline parallelism; the root never reshards (FSDP2 _lazy_init).
  // Context parallel: torch _ContextParallelOptions rotate_method=ALL_GATHER.
  p.dist.ddp_bucket_copy = false;
  p.dist.sharded_params_16bit = true;
  p.dist.reduce_in_fp32 = true;
  p.dist.last_unit_kept = true;
  p.dist.reshard_after_forward_with_pp = false;
  p.dist.gather_copy_out = true;                 // FSDP2 fully_shard
  p.dist.sharded_grads_on_reduce_stream = true;
  p.dist.pp_defers_grad_sync = true;             // torch.distributed.pipelining PipelineStage
  p.dist.cp_gather_kv = true;
  p.dist.sp_saves_gathered_inputs = true;        // DTensor ColwiseParallel: mm saves the gathered input
  p.dist.sp_collective_copies = false;           // #4121: activations [tokens, hidden], Shard(0) between blocks
  p.dist.sp_gather_view_at_batch_1 = true;
  p.dist.tp_sequence_parallel_only = true;       // apply_tp: SequenceParallel norms in every plan
  p.dist.loss_parallel_decomposed = true;        // train.py: loss_parallel() context under tp > 1
  p.history = {{202608, "sequence-parallel collectives gather and scatter [batch, seq, hidden] activations on the sequence "
                "(Shard(1)), copying each gathered and scattered tensor whole",
                "pytorch/torchtitan @ 9dec370: parallelisms/parallelize_llama.py apply_tp (Shard(1) layouts; its note: "
                "folding batch and sequence would accelerate sequence parallelism, PR #437); 73aed7f6c (#4121, 2026-08-20, "
                "\"fold batch dim\") made activations [tokens, hidden], Shard(0) between blocks",
                nullptr, [](DistributedBehaviour& d) { d.sp_collective_copies = true; }},
               sp_batch1_gather_copied(),
               {202504, "torch.compile covers the transformer blocks only, not the loss",
                "pytorch/torchtitan PR #1033 (merged 2025-04-01): build_loss_fn compiles the loss when training.compile is "
                "set (PR #1608, 2025-08, made model and loss separate compile components, both on by default)",
                [](TrainingSetup& s) { s.compile_loss = false; }},
               {202601, "K/V heads repeated for every query head before the attention kernel",
                "pytorch/torchtitan @ 9dec370, 820504e: models/llama(3)/model.py Attention.forward repeat_kv; "
                "ff0829c1 (2026-01-27, #2259 \"GQA without kv repeats\") passes enable_gqa instead",
                [](TrainingSetup& s) { s.attention_repeats_kv = true; }}};
  p.sources = {"pytorch/torchtitan @ b5bcd76c: torchtitan/config/configs.py (dtype, AC, optimizer)",
               "pytorch/torchtitan @ 9dec370: torchtitan/parallelisms/parallelize_llama.py (apply_fsdp)",
               "pytorch/pytorch @ 0123248a: torch/distributed/tensor/experimental/_attention.py (all-gather K/V)",
               "pytorch/pytorch: torch/distributed/_functional_collectives.py (all_gather_tensor, reduce_scatter_tensor: "
               "chunk + cat off dim 0)",
               "pytorch/pytorch @ 02eef6b8: torch/distributed/tensor/parallel/loss.py (_log_softmax, "
               "_nll_loss_and_log_softmax_backward)",
               "pytorch/pytorch: torch/distributed/pipelining/stage.py (backward_maybe_with_nosync)",
               "pytorch/ao: torchao/float8/float8_linear.py (matmul_with_hp_or_float8_args saves input_hp)",
               "pytorch/torchtitan @ b5bcd76c: torchtitan/components/loss.py (pred.float())",
               "pytorch/torchtitan @ b5bcd76c: torchtitan/components/metrics.py (DeviceMemoryMonitor)"};
  return p;
}

FrameworkCapabilities torchtitan_capabilities() {
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
  // [optimizer] name: "Adam" or "AdamW" (components/optimizer.py build_optimizers @ c854924).
  only_optimizers(c, {Optimizer::kAdamW});
  c.launch_formats = {"torchtitan_toml"};
  c.sources = {"pytorch/torchtitan @ c854924: torchtitan/config/job_config.py ([parallelism] degrees, "
               "enable_cpu_offload, [activation_checkpoint] mode)",
               "pytorch/torchtitan @ c854924: torchtitan/models/llama3/infra/parallelize.py (apply_fsdp, apply_ddp 1-D only)",
               "pytorch/torchtitan @ c854924: torchtitan/components/optimizer.py (optimizer_classes Adam, AdamW)"};
  return c;
}

}  // namespace memfit
