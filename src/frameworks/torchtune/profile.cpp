// torchtune: its profile (the defaults it runs with, its distributed behaviours and its dated
// history), what it runs (its capabilities) and, beside this file, its launch file writer
// (launch.cpp: torchtune_command). Registered in frameworks/registry.h (kFrameworks).
#include "frameworks/registry.h"

namespace memfit {

FrameworkProfile torchtune_profile() {
  FrameworkProfile p{.id = Framework::kTorchtune, .key = "torchtune", .name = "torchtune"};
  TrainingSetup& t = p.defaults;
  t.precision = Precision::kBf16;                // dtype: bf16 builds the model in bf16, no master
  t.optimizer = Optimizer::kAdamW;
  t.optimizer_impl = OptimizerImpl::kFused;      // optimizer: torch.optim.AdamW, fused: True
  t.checkpointing = Checkpointing::kFull;        // enable_activation_checkpointing: True
  t.attention = AttentionKernel::kSdpa;
  t.loss = LossKernel::kChunked;                 // 8 output chunks, each logits.float() -> CE
  t.loss_chunks = 8;
  t.logits_upcast = true;
  t.compile_fuses_chunk_upcast = true;           // compile_loss compiles compute_cross_entropy, which
                                                 // upcasts each chunk (logits.float()) inside; the
                                                 // unchunked output is upcast by the model, outside
  t.adapters_fp32 = false;                       // LoRALinear adapters in the model dtype
  t.kbit_prep_fp32 = false;                      // QLoRA: torchao NF4 base, the rest stays bf16
  // torchao v0.11.0 NF4Tensor.get_original_weight (eager): two int64 code halves (4 + 4 bytes per
  // parameter), looked up (1 + 1) and scaled (1 + 1) in bf16, stacked (2), all live at the stack.
  t.nf4_dequant_bytes_per_param = 14;
  t.lora_rank = 8;
  t.lora_targets = {"q", "v"};
  t.logged_counter = MemoryCounter::kPeakActive; // README tables: active_bytes.all.peak
  // Its memory log prints the three side by side, each peak reset at every log (torchtune/utils/
  // memory.py @a95c6b931 memory_stats_log; training/memory.py get_memory_stats @1814feb17): a
  // published figure that does not name its counter may be any of them.
  p.logged_counters = {MemoryCounter::kPeakActive, MemoryCounter::kMaxAllocated, MemoryCounter::kMaxReserved};
  t.model_rotary_cache_values_per_dim = 1;       // RotaryPositionalEmbeddings / Llama3ScaledRoPE: [max_seq_len, dim/2, 2] fp32
  p.history = {{202408, "single-device recipes keep the fp32 logits (shifted copy) alive through backward",
                "pytorch/torchtune PR #1235 (merged 2024-07-27): del logits before backward (after PR #1046)",
                [](TrainingSetup& s) {
                  s.loss = LossKernel::kStandard;  // chunked output loss arrived with PR #1390
                  s.loss_shift_copy = true;
                  s.loss_input_held = true;
                }},
               {202408, "compile: True compiles the model only; the loss runs eager",
                "pytorch/torchtune recipes/lora_finetune_single_device.py @0217d44c2 (utils.wrap_compile(model)); "
                "PR #1296 (merged 2024-08-10) compiled model and loss together",
                [](TrainingSetup& s) { s.compile_loss = false; }},
               {202409, "optimizer: torch.optim.AdamW without flags: the foreach implementation on CUDA",
                "pytorch/torchtune recipes/configs/llama2/7B_full.yaml, 7B_lora_single_device.yaml @0217d44c2 (AdamW with "
                "lr and weight_decay only); cca50f02e (#1575, merged 2024-09-14) added fused: True to every AdamW config",
                [](TrainingSetup& s) {
                  if (s.optimizer_impl == OptimizerImpl::kFused) s.optimizer_impl = OptimizerImpl::kForeach;
                }},
               {202408, "the distributed recipes wrap the model in FSDP1 (FullyShardedDataParallel, FULL_SHARD, "
                "no mixed precision): blocks compute on views of the gathered flat parameter, and the root unit "
                "(embeddings, final norm, output) is not resharded after its forward",
                "pytorch/torchtune recipes/full_finetune_distributed.py, lora_finetune_distributed.py @fef3ed10d "
                "(FSDP(..., auto_wrap_policy=ModuleWrapPolicy({TransformerDecoderLayer}))); torch "
                "distributed/fsdp/_runtime_utils.py _post_forward_reshard (the root keeps its parameters); FSDP2 "
                "(fully_shard) from afd23fd0b (#1287, merged 2024-08-11) in the full recipe, 6deeda92c (#1517, "
                "2024-09-10) in the LoRA one",
                nullptr,
                [](DistributedBehaviour& d) {
                  d.gather_copy_out = false;
                  d.root_unit_gathered = true;
                }},
               {202406, "QLoRA quantises each base weight on the GPU whole while the model is built and loaded "
                "(torchao 0.1's quantize_tensor_nearest: 68 bytes per parameter of the largest weight), and those "
                "segments stay reserved",
                "pytorch/torchtune torchtune/modules/peft/lora.py @fef3ed10d (_create_weight_and_bias: "
                "to_nf4(nn.Linear(...).weight) on the device), utils/_register_nf4_dispatch_ops.py (inplace_copy: "
                "to_nf4(incoming.to(device))); pyproject torchao==0.1 from 2ab2721e6 (2024-04-04, a nightly before) "
                "to c1c9f308a (2024-06-26, torchao 0.3: 2^20-element chunks); executed: "
                "tools/oracle/torchtune_qlora_init_probe.py (68.08 bytes per parameter)",
                [](TrainingSetup& s) { s.nf4_quantize_at_init_bytes_per_param = 68; }, nullptr, 202403},
               sp_batch1_gather_copied()};
  // Since PR #1512 (2024-09-07) only lora_finetune_single_device assigns training.compile_loss's
  // result; full_finetune_single_device and the distributed recipes discard it, so a loss other
  // than CEWithChunkedOutputLoss (compiled in place) runs eager.
  p.recipe = [](TrainingSetup& s, bool distributed, std::int64_t yyyymm) {
    const bool discards = yyyymm == 0 || yyyymm >= 202409;
    if (discards && s.loss != LossKernel::kChunked && (distributed || !is_lora_like(s.method))) s.compile_loss = false;
  };
  p.sources.push_back("pytorch/torchtune @1814feb17: recipes/full_finetune_single_device.py, full_finetune_distributed.py, "
                      "lora_finetune_distributed.py (training.compile_loss(self._loss_fn), result unused); "
                      "lora_finetune_single_device.py (self._loss_fn = training.compile_loss(...)); torchtune/training/_compile.py");
  p.sources.push_back("pytorch/torchtune v0.6.1: torchtune/modules/position_embeddings.py, models/llama3_1/_position_embeddings.py "
                      "(cache [max_seq_len, dim/2, 2] fp32), models/qwen2/_positional_embeddings.py ([max_seq_len, 2*dim]); "
                      "modules/transformer.py TransformerDecoder.chunked_output (one projection per chunk)");
  p.sources.push_back("pytorch/torchtune @ bd2a0fc7: torchtune/models/llama3/_parallelism.py (base_llama_tp_plan: "
                      "SequenceParallel norms, Shard(1) layouts)");
  // training.shard_model: fully_shard per layer and the root, reshard_after_forward=True, no
  // MixedPrecisionPolicy (the model is bf16): gradients reduced in bf16.
  p.dist.ddp_bucket_copy = false;
  p.dist.reduce_in_fp32 = false;
  p.dist.gather_copy_out = true;                 // FSDP2 fully_shard
  p.dist.sharded_grads_on_reduce_stream = true;
  // Tensor parallelism (models/llama3/_parallelism.py base_llama_tp_plan): DTensor sequence
  // parallelism over [batch, seq, hidden], Shard(1) between blocks, as in torchtitan.
  p.dist.sp_saves_gathered_inputs = true;
  p.dist.sp_collective_copies = true;
  p.dist.sp_gather_view_at_batch_1 = true;
  p.dist.tp_sequence_parallel_only = true;       // every training plan has SequenceParallel norms
  // Distributed configs list custom_sharded_layers: ['tok_embeddings', 'output']: units of
  // their own, resharded like the blocks (not a root that stays gathered).
  p.dist.root_unit_gathered = false;
  p.sources = {"pytorch/torchtune @ bd2a0fc7: recipes/configs/llama3_1/8B_full.yaml, 8B_lora_single_device.yaml",
               "pytorch/torchtune @ bd2a0fc7: recipes/configs/llama3_1/70B_lora.yaml, 405B_qlora.yaml (custom_sharded_layers)",
               "pytorch/torchtune @ bd2a0fc7: torchtune/training/_distributed.py (shard_model)",
               "pytorch/torchtune @ bd2a0fc7: torchtune/modules/loss/cross_entropy_loss.py (chunked CE, 8 chunks)",
               "pytorch/torchtune @ bd2a0fc7: torchtune/training/memory.py (get_memory_stats: active, alloc, reserved)"};
  return p;
}

FrameworkCapabilities torchtune_capabilities() {
  FrameworkCapabilities c;
  // Distributed recipes always shard with FSDP2 (training.shard_model), fsdp_cpu_offload for
  // parameters; one device offloads the optimizer with torchao's CPUOffloadOptimizer.
  off(c.sharding, {Sharding::kNone, Sharding::kZero1, Sharding::kZero2});
  c.optimizer_offload_single_gpu_only = true;
  // CPUOffloadOptimizer(params, optimizer_class: Type[Optimizer] = torch.optim.AdamW, ...) takes a
  // class (torchao prototype/low_bit_optim/cpu_offload.py), which a config or command-line value
  // cannot name: torchtune's one-GPU optimizer offload steps AdamW.
  for (bool& r : c.optimizer_offload_runs) r = false;
  c.optimizer_offload_runs[static_cast<int>(Optimizer::kAdamW)] = true;
  // tensor_parallel_dim: full_finetune_distributed only (its plans shard the sequence too).
  c.tp_with_adapters = false;
  c.pp = c.vpp = c.cp = c.ep = false;
  c.selective_checkpointing = false;
  only_methods(c, {Method::kFull, Method::kLora, Method::kQlora, Method::kDora});
  // optimizer._component_ (launch.cpp): torch.optim.AdamW / SGD and bitsandbytes' (Paged)AdamW8bit /
  // PagedAdamW32bit, as the recipes' configs name them (recipes/configs/llama3_1/8B_full_single_device.yaml:
  // bitsandbytes.optim.PagedAdamW8bit).
  only_optimizers(c, {Optimizer::kAdamW, Optimizer::kAdamW8bit, Optimizer::kPagedAdamW8bit, Optimizer::kPagedAdamW32bit,
                      Optimizer::kSgd, Optimizer::kSgdMomentum});
  c.launch_formats = {"torchtune_command"};
  c.sources = {"pytorch/torchtune v0.6.1: recipes/full_finetune_distributed.py (shard_model, fsdp_cpu_offload, tensor_parallel_dim)",
               "pytorch/torchtune v0.6.1: recipes/lora_finetune_distributed.py, lora_finetune_single_device.py",
               "pytorch/torchtune v0.6.1: torchtune/models/llama3_1/_model_builders.py (quantize_base, use_dora)",
               "pytorch/torchtune v0.6.1: docs/source/tutorials/memory_optimizations.rst (CPUOffloadOptimizer)"};
  return c;
}

// fsdp_cpu_offload (FSDP2's CPUOffloadPolicy) steps the recipe's optimizer on CPU tensors:
// bitsandbytes' optimizers from 0.50.0.
std::vector<DatedCapability> torchtune_dated_capabilities() {
  return {{kBitsandbytesCpuStepSince, "bitsandbytes' 8-bit and paged optimizers stepped on the CPU under fsdp_cpu_offload",
           kBitsandbytesCpuStepSource, [](FrameworkCapabilities& c) { no_bitsandbytes_on_cpu(c.params_offload_runs); }}};
}

}  // namespace memfit
