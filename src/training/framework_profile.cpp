// The framework profiles. Each default names where it comes from; revisions are those read for
// docs/frameworks.md (transformers v5.15.0, peft 5d602fdb, torchtune bd2a0fc7, torchtitan
// b5bcd76c, litgpt 26857050, Megatron-LM d98e8a64, DeepSpeed edaa7221, fsdp_qlora 05ed9f2,
// ColossalAI 4f9953be).
#include "training/framework_profile.h"

#include <algorithm>
#include <iterator>

namespace memfit {

namespace {

// A framework whose code builds on another's: that profile under a new id, key and name.
FrameworkProfile based_on(FrameworkProfile p, Framework id, const char* key, const char* name) {
  p.id = id;
  p.key = key;
  p.name = name;
  return p;
}

FrameworkProfile hf_trainer() {
  FrameworkProfile p{Framework::kHfTrainer, "hf_trainer", "Hugging Face Trainer (+ PEFT)", {}, {}, {}, {}};
  TrainingSetup& t = p.defaults;
  // v5 from_pretrained loads the checkpoint dtype (bf16); bf16=True autocasts over bf16 weights,
  // so weights, gradients and AdamW states are all bf16 (no fp32 master).
  t.precision = Precision::kBf16;
  t.optimizer = Optimizer::kAdamW;
  t.optimizer_impl = OptimizerImpl::kFused;      // optim="adamw_torch_fused" for torch >= 2.8
  t.checkpointing = Checkpointing::kNone;        // gradient_checkpointing=False
  t.attention = AttentionKernel::kSdpa;          // attn_implementation resolves to sdpa
  t.loss = LossKernel::kStandard;                // ForCausalLMLoss: full logits, .float()
  t.logits_upcast = true;
  t.adapters_fp32 = true;                        // PEFT get_peft_model(autocast_adapter_dtype=True)
  t.kbit_prep_fp32 = true;                       // PEFT prepare_model_for_kbit_training
  t.logged_counter = MemoryCounter::kMaxAllocated;  // TrainerMemoryTracker: max_memory_allocated
  t.logits_freed_before_backward = true;         // Trainer.compute_loss returns the loss only
  t.lora_merges_fused_experts = true;            // PEFT ParamWrapper on v5's 3-d expert stacks
  p.history = {{202502, "ForCausalLMLoss copies the shifted logits (logits[..., :-1, :].contiguous())",
                "huggingface/transformers PR #35646 (merged 2025-01): pad the labels instead of shifting the logits; "
                "first released in v4.49.0 (2025-02-17): v4.48.1 (2025-01-20) loss/loss_utils.py still copies",
                [](TrainingSetup& s) { s.loss_shift_copy = true; }},
               {202411, "each model's forward computes its own loss: some upcast the logits and return them in fp32, "
                "others run the cross-entropy in the logits dtype (apply_model_loss_code)",
                "huggingface/transformers v4.44.2: models/*/modeling_*.py *ForCausalLM.forward; v4.46.0 (2024-10-24) "
                "passes the logits to self.loss_function (loss/loss_utils.py ForCausalLMLoss: logits.float())",
                [](TrainingSetup& s) { s.model_computes_loss = true; }},
               {202502, "GPT-2-style models (gpt2, opt, bloom, gpt_neox, falcon, gpt_bigcode, biogpt) still compute their "
                "own loss in the logits dtype (apply_model_code)",
                "huggingface/transformers v4.47.1 and v4.48.1 (2025-01-20): models/{gpt2,opt,bloom,gpt_neox,falcon,"
                "gpt_bigcode,biogpt}/modeling_*.py CrossEntropyLoss on the logits as returned; v4.49.0 (2025-02-17) passes "
                "them to self.loss_function; the oracle's y2024_11 and y2025_01 records (transformers 4.46.3, 4.48.1)",
                [](TrainingSetup& s) { s.own_loss_in_logits_dtype = true; }, nullptr, 202411},
               {202407, "PEFT keeps LoRA adapters in the base layer's dtype: 16-bit A and B, no fp32 input copy",
                "huggingface/peft v0.11.1 tuners/lora/layer.py update_layer (self.to(weight.device, dtype=weight.dtype)); "
                "v0.12.0 (2024-07-24) casts 16-bit adapters to fp32 (tuners/tuners_utils.py _cast_adapter_dtype, "
                "get_peft_model(autocast_adapter_dtype=True)); the oracle's y2024_05 records (peft 0.11.1)",
                [](TrainingSetup& s) { s.adapters_fp32 = false; }},
               {202508, "optim defaults to adamw_torch: torch.optim.AdamW without flags, foreach on CUDA",
                "huggingface/transformers v4.52.4 training_args.py (default_optim = \"adamw_torch\"); v4.56.1 picks "
                "\"adamw_torch_fused\" when torch >= 2.8 (2025-08); the oracle's y2024_11 and y2025_06 records",
                [](TrainingSetup& s) {
                  if (s.optimizer_impl == OptimizerImpl::kFused) s.optimizer_impl = OptimizerImpl::kForeach;
                }},
               {202410, "rotary cos/sin caches are buffers of every attention layer (apply_model_code)",
                "huggingface/transformers v4.44.2: models/{qwen2,qwen2_moe,mixtral,phi,starcoder2,falcon,gpt_neox,stablelm}/"
                "modeling_*.py *RotaryEmbedding._set_cos_sin_cache; v4.45.0 (2024-09-25) computes them per forward "
                "(mixtral keeps its cache there, not modelled)",
                [](TrainingSetup& s) { s.rotary_cache_per_layer = true; }},
               {202601, "MoE experts are nn.Linear modules of their own: LoRA adapts each beside its frozen weight",
                "huggingface/transformers PR #41580, released in v5.0.0 (2026-01): experts as 3-d gate_up_proj/down_proj "
                "tensors, which PEFT adapts with ParamWrapper (peft v0.21.2 tuners/lora/layer.py _LoraFactorsProxy: "
                "torch.baddbmm(W, B, A) per forward)",
                [](TrainingSetup& s) { s.lora_merges_fused_experts = false; }}};
  // accelerate @ d6d3e03: DistributedDataParallelKwargs(gradient_as_bucket_view=False) -> the
  // reducer's buckets copy every gradient; FSDP plugin: FSDP1 with limit_all_gathers=True (two
  // all-gathers in flight), MixedPrecision param_dtype = the AMP dtype.
  p.dist.ddp_bucket_copy = true;
  p.dist.prefetch_units = 1;
  p.dist.reduce_in_fp32 = false;
  p.dist.root_outputs_include_loss = true;       // model(**inputs) with labels returns the loss
  p.dist.sharded_grads_on_reduce_stream = true;  // accelerate's FSDP (torch FSDP1 / FSDP2)
  p.sources = {"huggingface/transformers v5.15.0: src/transformers/training_args.py (bf16, optim, gradient_checkpointing)",
               "huggingface/accelerate @ d6d3e03: src/accelerate/utils/dataclasses.py (DDP kwargs, FSDP plugin)",
               "huggingface/transformers: src/transformers/loss/loss_utils.py (ForCausalLMLoss upcasts logits)",
               "huggingface/transformers: src/transformers/trainer_utils.py (TrainerMemoryTracker)",
               "huggingface/peft @ 5d602fdb: src/peft/mapping_func.py (autocast_adapter_dtype), src/peft/utils/other.py"};
  return p;
}

FrameworkProfile transformers_loop() {
  FrameworkProfile p = hf_trainer();
  p.id = Framework::kTransformersLoop;
  p.key = "transformers_loop";
  p.name = "transformers model in a plain PyTorch loop";
  // torch.optim.AdamW picks the foreach implementation on CUDA when neither flag is given.
  p.defaults.optimizer_impl = OptimizerImpl::kForeach;
  p.defaults.logits_freed_before_backward = false;  // the loop keeps `outputs` through backward
  p.defaults.outputs_held_across_steps = true;      // ... and the step, until the next forward rebinds it
  p.sources.push_back("pytorch/pytorch: torch/optim/optimizer.py (_default_to_fused_or_foreach)");
  p.sources.push_back("huggingface/accelerate: examples/nlp_example.py (outputs = model(**batch); loss.backward(); "
                      "optimizer.step()); the oracle's records: the previous logits live at the step and the next forward");
  return p;
}

FrameworkProfile peft_bench() {
  FrameworkProfile p = hf_trainer();
  p.id = Framework::kPeftBench;
  p.key = "peft_bench";
  p.name = "PEFT method-comparison benchmark (MetaMathQA)";
  TrainingSetup& t = p.defaults;
  t.precision = Precision::kBf16;                // default_training_params.json: bfloat16, use_amp false
  t.optimizer_impl = OptimizerImpl::kForeach;    // torch AdamW with default flags
  t.checkpointing = Checkpointing::kNone;
  t.packed = false;                              // length-bucketed dynamic padding
  t.logits_freed_before_backward = false;        // run.py keeps `outputs` through loss.backward()
  t.logged_counter = MemoryCounter::kMaxReserved;  // accelerator_memory_max = max_memory_reserved - init
  p.sources = {"huggingface/peft @ 5d602fdb: method_comparison/MetaMathQA/default_training_params.json",
               "huggingface/peft @ 5d602fdb: method_comparison/MetaMathQA/run.py, utils.py (max_memory_reserved)",
               "huggingface/transformers: src/transformers/loss/loss_utils.py (ForCausalLMLoss upcasts logits)"};
  return p;
}

// DTensor sequence parallelism (torchtitan, torchtune): PyTorch's functional all-gather copied
// its output into sequence order at every micro-batch until _maybe_view_chunk_cat returned a view
// for a batch of 1; the month is the first in which the helper is known to be in the code.
DatedBehaviour sp_batch1_gather_copied() {
  return {202604, "a sequence-parallel all-gather at micro-batch 1 is copied into sequence order too (no view)",
          "pytorch/pytorch #169404 (opened 2025-12-02, \"Optimize bs=1 case for allgather on dim 1 to not "
          "split/cat\"); torch/_utils.py _maybe_view_chunk_cat is in the code by #180389 (2026-04-15)",
          nullptr, [](DistributedBehaviour& d) { d.sp_gather_view_at_batch_1 = false; }};
}

FrameworkProfile torchtune() {
  FrameworkProfile p{Framework::kTorchtune, "torchtune", "torchtune", {}, {}, {}, {}};
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

FrameworkProfile torchtitan() {
  FrameworkProfile p{Framework::kTorchtitan, "torchtitan", "torchtitan", {}, {}, {}, {}};
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

FrameworkProfile megatron() {
  FrameworkProfile p{Framework::kMegatron, "megatron", "Megatron-LM / Megatron-Core", {}, {}, {}, {}};
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

FrameworkProfile deepspeed() {
  FrameworkProfile p{Framework::kDeepspeed, "deepspeed", "DeepSpeed", {}, {}, {}, {}};
  TrainingSetup& t = p.defaults;
  t.precision = Precision::kAmpBf16;             // bf16 model + fp32 master partitions
  t.optimizer = Optimizer::kAdamW;
  t.optimizer_impl = OptimizerImpl::kFused;      // deepspeed.ops.adam.FusedAdam
  t.checkpointing = Checkpointing::kNone;        // the client's choice
  t.loss = LossKernel::kStandard;
  t.logged_counter = MemoryCounter::kMaxAllocated;  // see_memory_usage: Max_MA
  // bf16/fp16 optimizers: 16-bit model, fp32 master partitions in the optimizer; gradients in
  // the model dtype (an fp32 copy only transiently at step()).
  t.amp_weights = AmpWeights::kMasterInOptimizer;
  t.main_grad_bytes = 2;
  // zero/config.py (v0.16.2): reduce_bucket_size 5e8 elements, an ipg buffer in the model dtype;
  // stage3_prefetch_bucket_size 5e7 elements.
  p.dist.ddp_bucket_copy = false;
  p.dist.reduce_bucket_bytes = 500'000'000LL * 2;
  p.dist.prefetch_bytes = 50'000'000LL * 2;
  // zero/config.py (v0.18.9): stage3_max_live_parameters 1e9 elements.
  p.dist.zero3_max_live_elements = 1'000'000'000LL;
  p.dist.reduce_in_fp32 = false;
  // v0.19.8 stage3.py / stage_1_and_2.py (measured: TG-14..18, TD-16): ZeRO-3's gradient partition
  // and reduce bucket from engine init; fp32 gradient copies at the step, ZeRO-3 by sub-groups of
  // sub_group_size (zero/config.py default 1e9 elements).
  p.dist.zero3_grad_partition_at_init = true;
  p.dist.fp32_grads_at_step = true;
  p.dist.fp32_grad_sub_group_elements = 1'000'000'000LL;
  p.sources = {"deepspeedai/DeepSpeed @ edaa7221: deepspeed/runtime/engine.py (get_data_types, optimizer)",
               "deepspeedai/DeepSpeed @ b344c04: deepspeed/runtime/zero/config.py, stage_1_and_2.py (ipg buffers)",
               "deepspeedai/DeepSpeed @ edaa7221: deepspeed/runtime/utils.py (see_memory_usage)"};
  return p;
}

FrameworkProfile litgpt() {
  FrameworkProfile p{Framework::kLitgpt, "litgpt", "LitGPT", {}, {}, {}, {}};
  TrainingSetup& t = p.defaults;
  t.precision = Precision::kBf16;                // config_hub/finetune/*.yaml: precision bf16-true
  t.optimizer = Optimizer::kAdamW;
  t.optimizer_impl = OptimizerImpl::kForeach;    // torch AdamW
  t.checkpointing = Checkpointing::kNone;        // single GPU: no AC
  t.loss = LossKernel::kChunked;                 // chunked_cross_entropy(chunk_size=128)
  t.loss_chunk_tokens = 128;
  // Fabric's bf16-true plugin casts the model's output to the default dtype (HalfPrecision.
  // convert_output): the loss gets fp32 logits, the bf16 ones are dropped.
  t.logits_upcast = true;
  t.logits_upcast_in_model = true;
  t.outputs_held_across_steps = true;            // fit(): `logits` stays bound until the next forward returns
  t.adapters_fp32 = false;
  t.kbit_prep_fp32 = false;
  t.logged_counter = MemoryCounter::kMaxAllocated;  // max_memory_allocated / 1e9
  t.fused_qkv_linear = true;                     // model.py CausalSelfAttention.qkv (LLaMAMLP keeps fc_1, fc_2)
  p.own_output_layer = true;                     // model.py GPT: lm_head beside transformer.wte, never tied
  // full.py calls model(input_ids) and shifts the whole logits (a copy at micro-batch > 1);
  // lora.py calls model(input_ids, lm_head_chunk_size=128) and shifts the last chunk only.
  p.recipe = [](TrainingSetup& s, bool, std::int64_t) { s.loss_shift_copy = s.method == Method::kFull; };
  p.dist.sharded_grads_on_reduce_stream = true;  // Fabric FSDPStrategy: torch FSDP1
  p.sources = {"Lightning-AI/litgpt @ 26857050: litgpt/finetune/lora.py, config_hub/finetune/*.yaml",
               "Lightning-AI/litgpt @ 26857050: litgpt/utils.py (chunked_cross_entropy, memory report)",
               "Lightning-AI/litgpt v0.5.13: litgpt/finetune/full.py, lora.py fit() (logits = model(...); "
               "chunked_cross_entropy), litgpt/model.py GPT.__init__ (lm_head), scripts/convert_hf_checkpoint.py",
               "Lightning-AI/pytorch-lightning 2.6.6: src/lightning/fabric/plugins/precision/half.py (convert_output), "
               "src/lightning/fabric/wrappers.py _FabricModule.forward; the oracle's lg_2026_11 records"};
  return p;
}

FrameworkProfile fsdp_qlora() {
  FrameworkProfile p{Framework::kFsdpQlora, "fsdp_qlora", "Answer.AI fsdp_qlora", {}, {}, {}, {}};
  TrainingSetup& t = p.defaults;
  t.method = Method::kQlora;                     // train_type="qlora"
  t.precision = Precision::kBf16;                // precision="bf16": pure bf16, quant_storage bf16
  t.optimizer = Optimizer::kAdamW;
  t.optimizer_impl = OptimizerImpl::kForeach;    // torch AdamW, non-fused
  t.checkpointing = Checkpointing::kFull;        // use_gradient_checkpointing=True
  t.offload = Offload::kNone;                    // use_cpu_offload=False (train.py main() default)
  t.lora_rank = 64;
  t.lora_targets = {"all-linear"};               // lora_target_modules="all"
  t.lora_dropout = 0.1;                          // lora_dropout=0.1
  // transformers of its time (requirements: 4.38-4.40): LlamaForCausalLM returns logits.float()
  // and the loss takes a contiguous shifted copy; the loop keeps `output` (the fp32 logits)
  // referenced through loss.backward().
  t.logits_upcast = true;
  t.loss_shift_copy = true;
  t.loss_input_held = true;
  t.adapters_fp32 = false;
  t.kbit_prep_fp32 = false;
  t.logged_counter = MemoryCounter::kMaxAllocated;  // "Peak allocated memory" after epoch 0
  // FSDP1 (sharding_strategy "ddp" = NO_SHARD, no DDP reducer), pure bf16 without a
  // MixedPrecision policy: gradients reduced in bf16; limit_all_gathers=True.
  p.dist.ddp_bucket_copy = false;
  p.dist.reduce_in_fp32 = false;
  p.dist.sharded_grads_on_reduce_stream = true;  // torch FSDP1
  // low_memory=True: rank 0 loads the model on the CPU, FSDP1 (device_id, sync_module_states)
  // builds each unit on the GPU; no empty_cache after the wrap (train.py @ 4cd6923, 05ed9f2).
  p.dist.fsdp1_wrap_from_host = true;
  p.sources = {"AnswerDotAI/fsdp_qlora @ 05ed9f2: train.py (fsdp_main arguments, memory report)",
               "AnswerDotAI/fsdp_qlora @ 4cd6923: train.py (low_memory loading, FSDP(sync_module_states, param_init_fn), "
               "reset_peak_memory_stats before the first step), benchmarks_03_2024.md (reserved_after_model_wrap)",
               "AnswerDotAI/fsdp_qlora @ 02586ac: train.py (output = model(...) held through loss.backward())",
               "huggingface/transformers v4.38: models/llama/modeling_llama.py (logits.float(), shift_logits contiguous)"};
  return p;
}

FrameworkProfile colossalai() {
  FrameworkProfile p{Framework::kColossalai, "colossalai", "Colossal-AI (Gemini)", {}, {}, {}, {}};
  TrainingSetup& t = p.defaults;
  t.precision = Precision::kAmpFp16;             // precision="fp16", master_weights=True
  t.optimizer = Optimizer::kAdamW;
  t.optimizer_impl = OptimizerImpl::kFused;      // HybridAdam
  // model.half() under the Gemini plugin: fp16 parameter chunks, the fp32 master copy in
  // chunks of its own that only the optimizer touches, fp16 gradients reduced in place.
  t.amp_weights = AmpWeights::kMasterInOptimizer;
  t.main_grad_bytes = 2;
  t.logged_counter = MemoryCounter::kMaxAllocated;  // max_memory_allocated / 1024**2
  // placement_policy "cuda": a chunk gathered for the forward is never evicted
  // (CUDAPlacementPolicy.evict_tensors returns 0; GeminiZeROHook.post_op only marks HOLD); it is
  // scattered once its gradients are reduce-scattered in the backward (Chunk.reduce).
  p.dist.reshard_after_forward = false;
  p.dist.grads_in_param_chunks = true;
  p.dist.gather_replaces_shard = true;             // Chunk.__gather frees cuda_shard
  p.dist.reduce_in_fp32 = false;
  p.dist.ddp_bucket_copy = false;
  // ColoTensor 1D TP as LLMem's tp_real.py applies it (init_colo_module, ComputeSpec TP1D):
  // nn.Linear row mode (weight split on its input dimension, lm_head included), nn.Embedding col
  // mode; every tp rank holds whole activations and logits.
  p.dist.tp_row_linears = true;
  p.sources = {"hpcaitech/ColossalAI @ 4f9953be: colossalai/booster/plugin/gemini_plugin.py",
               "hpcaitech/ColossalAI @ 4f9953be: examples/language/llama/benchmark.py (memory report)",
               "taehokim20/LLMem @ 3d289b46: dp_real.py, tp_real.py (GeminiPlugin placement_policy='cuda', model.half())",
               "taehokim20/LLMem @ 3d289b46: colossalai/zero/gemini/{gemini_ddp.py, gemini_hook.py, placement_policy.py, chunk/chunk.py}",
               "taehokim20/LLMem @ 3d289b46: colossalai/nn/_ops/linear.py (colo_linear_1drow), nn/_ops/embedding.py, "
               "nn/parallel/layers/{linear.py, embedding.py} (default modes row / col), zero/gemini/colo_init_context.py"};
  return p;
}

// TRL's SFTTrainer: an HF Trainer whose SFTConfig changes TrainingArguments' defaults.
// huggingface/trl @ f2cd5771 (2026-07-24).
FrameworkProfile trl() {
  FrameworkProfile p = based_on(hf_trainer(), Framework::kTrl, "trl", "TRL SFTTrainer (+ PEFT)");
  TrainingSetup& t = p.defaults;
  // A model given by name loads in float32 unless model_init_kwargs name a dtype, and bf16=True
  // autocasts over it: fp32 weights, gradients and AdamW states with bf16 compute.
  t.precision = Precision::kAmpBf16;
  t.checkpointing = Checkpointing::kFull;        // gradient_checkpointing=True
  t.loss = LossKernel::kTrlFusedHead;            // loss_type "nll" through add_fused_lm_head, liger or not
  t.liger_kernels = false;                       // use_liger_kernel=False (TrainingArguments)
  t.packed = false;                              // packing=False, padding_free=False: batches padded to their longest
  t.seq_len = 1024;                              // max_length=1024
  // Before chunked_nll's own entry below, which reads the loss this one leaves.
  p.history.push_back({202610, "loss_type None defaults to \"chunked_nll\" (the fused LM head is not in the SFTTrainer)",
                       "trl 1.14.0 (2026-09-25) sft_config.py loss_type None -> chunked_nll; trl 1.15.0 (PyPI 2026-10-08) "
                       "sft_trainer.py add_fused_lm_head, loss_type default \"nll\"",
                       [](TrainingSetup& s) { if (s.loss == LossKernel::kTrlFusedHead) s.loss = LossKernel::kChunkedNll; }});
  p.history.push_back({202606, "loss_type defaults to \"nll\": the model's own loss over the full logits",
                       "huggingface/trl b58947c7e (2026-06-14, #5846 \"Default SFT loss to chunked_nll\"; chunked_nll "
                       "itself from 9bcf72943, 2026-04-27, #5575)",
                       [](TrainingSetup& s) { if (s.loss == LossKernel::kChunkedNll) s.loss = LossKernel::kStandard; }});
  p.history.push_back({202508, "gradient_checkpointing defaults to False (TrainingArguments)",
                       "huggingface/trl a222aeb46 (2025-08-08, #3510 \"New defaults: gradient_checkpointing=True\")",
                       [](TrainingSetup& s) { s.checkpointing = Checkpointing::kNone; }});
  p.history.push_back({202506, "bf16 defaults to False (TrainingArguments): the float32 model trains in fp32",
                       "huggingface/trl 32ffa1170 (2025-06-13, #3515 \"New defaults: bf16=True\")",
                       [](TrainingSetup& s) { s.precision = Precision::kFp32; }});
  p.sources.insert(p.sources.begin(),
                   {"huggingface/trl @ f2cd5771: trl/trainer/sft_config.py (max_length 1024, packing / padding_free False, "
                    "completion_only_loss None, loss_type None -> chunked_nll unless use_liger_kernel)",
                    "huggingface/trl @ f2cd5771: trl/trainer/base_config.py (gradient_checkpointing True, bf16 True unless fp16)",
                    "huggingface/trl @ f2cd5771: trl/trainer/utils.py create_model_from_path (dtype defaults to float32)",
                    "huggingface/trl @ f2cd5771: trl/trainer/sft_trainer.py (_chunked_cross_entropy_loss, "
                    "_CHUNKED_LM_HEAD_CHUNK_SIZE 256; chunked_nll refused with use_liger_kernel)",
                    "trl 1.16.0 (PyPI wheel): trl/trainer/sft_trainer.py (add_fused_lm_head; liger's "
                    "fused_linear_cross_entropy forced off), trl/kernels/chunked_logprob.py (ChunkedLogProbFunction)"});
  return p;
}

// Unsloth: FastLanguageModel loads and patches the model, then TRL's SFTTrainer with Unsloth's
// config defaults trains it. unslothai/unsloth @ 015bdef0 (2026-08-22), unsloth-zoo @ ce232d6c.
FrameworkProfile unsloth() {
  FrameworkProfile p = based_on(trl(), Framework::kUnsloth, "unsloth", "Unsloth (FastLanguageModel + TRL)");
  TrainingSetup& t = p.defaults;
  t.method = Method::kQlora;                     // from_pretrained(load_in_4bit=True): nf4, double quant
  t.precision = Precision::kBf16;                // dtype None -> bf16 on bf16-capable GPUs
  t.lora_rank = 16;                              // get_peft_model(r=16, lora_dropout=0.0)
  t.lora_targets = {"q", "k", "v", "o", "gate", "up", "down"};
  t.lora_dropout = 0.0;
  // use_gradient_checkpointing="unsloth": each block's input goes to the host
  // (Unsloth_Offloaded_Gradient_Checkpointer) and comes back for its recompute.
  t.checkpointing = Checkpointing::kFull;
  t.offload = Offload::kActivations;
  t.loss = LossKernel::kUnslothFusedCe;          // unsloth_fused_ce_loss unless UNSLOTH_RETURN_LOGITS=1
  t.adapters_fp32 = true;                        // float32_mixed_precision=True: trainable params upcast
  t.kbit_prep_fp32 = false;                      // its prepare_model_for_kbit_training upcasts trainables and norms only
  t.optimizer = Optimizer::kAdamW8bit;           // Unsloth's TRL config defaults: optim "adamw_8bit",
  t.micro_batch = 4;                             // per_device_train_batch_size 4,
  t.grad_accum = 2;                              // gradient_accumulation_steps 2
  t.seq_len = 2048;                              // from_pretrained(max_seq_length=2048)
  p.history = {};  // Unsloth sets precision, checkpointing and loss itself: TRL's dated defaults do not reach it
  p.history.push_back({202508, "the loss runs Unsloth's Triton cross-entropy over the whole logits (fast_cross_entropy_loss)",
                       "unslothai/unsloth 806bee2433 (2025-08-13, \"Nightly (#3148)\"): models/llama.py calls "
                       "unsloth_fused_ce_loss; modelled as the standard loss without the fp32 upcast (an upper bound: "
                       "its kernel writes the gradient into the logits in place)",
                       [](TrainingSetup& s) {
                         s.loss = LossKernel::kStandard;
                         s.logits_upcast = false;
                       }});
  p.sources = {"unslothai/unsloth @ 015bdef0: unsloth/models/loader.py FastLanguageModel.from_pretrained (load_in_4bit True, "
               "max_seq_length 2048, use_gradient_checkpointing \"unsloth\")",
               "unslothai/unsloth @ 015bdef0: unsloth/models/llama.py (bnb_4bit_quant_type nf4, double quant; get_peft_model "
               "r 16, q/k/v/o/gate/up/down, dropout 0; unsloth_fused_ce_loss)",
               "unslothai/unsloth @ 015bdef0: unsloth/models/rl.py (config defaults: optim adamw_8bit, batch 4, accumulation 2)",
               "unslothai/unsloth @ 015bdef0: unsloth/models/_utils.py prepare_model_for_kbit_training",
               "unslothai/unsloth-zoo @ ce232d6c: unsloth_zoo/gradient_checkpointing.py (Unsloth_Offloaded_Gradient_Checkpointer)",
               "unslothai/unsloth-zoo @ ce232d6c: unsloth_zoo/fused_losses/cross_entropy_loss.py (UnslothFusedLoss, get_chunk_size)",
               "unslothai/unsloth-zoo @ ce232d6c: unsloth_zoo/training_utils.py prepare_model_for_training (float32_mixed_precision)"};
  return p;
}

// Axolotl: a YAML config over the HF Trainer, with its own model loader.
// axolotl-ai-cloud/axolotl @ 067b021c (2026-07-24).
FrameworkProfile axolotl() {
  FrameworkProfile p = based_on(hf_trainer(), Framework::kAxolotl, "axolotl", "Axolotl (HF Trainer + PEFT)");
  TrainingSetup& t = p.defaults;
  t.precision = Precision::kBf16;                // bf16: "auto" -> bf16 on bf16 GPUs; torch_dtype bf16 (resolve_dtype)
  t.optimizer = Optimizer::kAdamW;
  t.optimizer_impl = OptimizerImpl::kFused;      // optimizer: "adamw_torch_fused"
  t.checkpointing = Checkpointing::kNone;        // gradient_checkpointing: False
  t.seq_len = 512;                               // sequence_len: 512
  t.micro_batch = 1;                             // micro_batch_size: 1
  t.grad_accum = 1;                              // gradient_accumulation_steps: 1
  t.packed = false;                              // sample_packing: None (dynamic padding)
  t.attention = AttentionKernel::kSdpa;          // attn_implementation None: transformers' sdpa
  t.lora_dropout = 0.0;                          // lora_dropout: 0.0
  // _configure_embedding_dtypes (outside FSDP): embed_tokens and lm_head (and every "norm"
  // module) to float32 over the 16-bit model; the recipe says when they go back.
  t.embeddings_fp32 = true;
  // loaders/model.py should_convert: with an adapter, an attention implementation other than
  // eager / sdpa (attn_needs_dtype_cast) or Cut Cross-Entropy, the norms and embeddings go back to
  // torch_dtype, after prepare_model_for_kbit_training upcast them for a 4/8-bit base. Before
  // #478 (merged 2023-08-25) nothing was upcast for a full fine-tune, and a k-bit base's fp32
  // params went back only under flash attention.
  p.recipe = [](TrainingSetup& s, bool, std::int64_t yyyymm) {
    const bool before_478 = yyyymm > 0 && yyyymm < 202309;
    const bool flash = s.attention == AttentionKernel::kFlash;
    const bool converted_back = before_478 ? flash : is_adapter_method(s.method) || flash || s.loss == LossKernel::kCutCe;
    if (before_478 || converted_back) s.embeddings_fp32 = false;
    if (converted_back && is_adapter_method(s.method)) s.kbit_prep_fp32 = false;
  };
  p.sources.insert(p.sources.begin(),
                   {"axolotl-ai-cloud/axolotl @ 067b021c: src/axolotl/utils/schemas/config.py (bf16 \"auto\", "
                    "gradient_checkpointing False, sequence_len 512, sample_packing None, attn_implementation None)",
                    "axolotl-ai-cloud/axolotl @ 067b021c: src/axolotl/utils/schemas/training.py (optimizer adamw_torch_fused, "
                    "micro_batch_size 1, gradient_accumulation_steps 1); src/axolotl/utils/schemas/peft.py (lora_dropout 0.0)",
                    "axolotl-ai-cloud/axolotl @ 067b021c: src/axolotl/utils/config/__init__.py resolve_dtype (bf16 auto -> bf16)",
                    "axolotl-ai-cloud/axolotl @ 067b021c: src/axolotl/loaders/model.py _configure_embedding_dtypes, "
                    "_convert_embedding_modules_dtype (embeddings, lm_head, norms to float32 unless FSDP; "
                    "prepare_model_for_kbit_training for 4/8-bit LoRA outside FSDP / ZeRO-3)",
                    "axolotl-ai-cloud/axolotl @ 067b021c: src/axolotl/loaders/model.py should_convert (adapter, "
                    "attn_needs_dtype_cast, cut_cross_entropy: back to torch_dtype); utils/schemas/enums.py "
                    "ATTN_IMPLS_WITHOUT_DTYPE_CAST {eager, sdpa}",
                    "axolotl-ai-cloud/axolotl 0b7ba57e (2023-08-25, #478 \"fix types w lora\"): the fp32 upcast per "
                    "Ramesh et al. and the conversion back; before it, utils/models.py @ dc71d887 converted back under "
                    "flash_attention only",
                    "axolotl-ai-cloud/axolotl @ 067b021c: src/axolotl/loaders/adapter.py (get_peft_model: PEFT's "
                    "autocast_adapter_dtype unless peft_autocast_adapter_dtype)"});
  return p;
}

// LLaMA-Factory: `llamafactory-cli train` over the HF Trainer. hiyouga/LLaMA-Factory @ ff6d4d12
// (2026-08-18).
FrameworkProfile llamafactory() {
  FrameworkProfile p = based_on(hf_trainer(), Framework::kLlamaFactory, "llamafactory", "LLaMA-Factory (HF Trainer + PEFT)");
  TrainingSetup& t = p.defaults;
  t.method = Method::kLora;                      // finetuning_type: "lora"
  t.lora_rank = 8;                               // lora_rank: 8
  t.lora_targets = {"all-linear"};               // lora_target: "all" (find_all_linear_modules)
  t.lora_dropout = 0.0;                          // lora_dropout: 0.0
  t.seq_len = 2048;                              // cutoff_len: 2048
  t.packed = false;                              // packing: None -> stage == "pt" (sft: padded)
  t.checkpointing = Checkpointing::kFull;        // disable_gradient_checkpointing: False
  t.precision = Precision::kBf16;                // compute_dtype bf16 (bf16: true, or infer_optim_dtype)
  // init_adapter: trainable weights cast to fp32 unless pure_bf16 or use_badam (under ZeRO-3 they
  // load in fp32): full and freeze train fp32 weights under the bf16 autocast of the examples' bf16: true.
  p.method_defaults = [](TrainingSetup& s) {
    if (s.method == Method::kFull || s.method == Method::kFreeze) s.precision = Precision::kAmpBf16;
  };
  p.history.push_back({202411, "cutoff_len defaults to 1024",
                       "hiyouga/LLaMA-Factory 1e6f9650 (2024-11-10, \"add vllm config\"): "
                       "src/llamafactory/hparams/data_args.py cutoff_len 1024 -> 2048",
                       [](TrainingSetup& s) { s.seq_len = 1024; }});
  p.sources.insert(p.sources.begin(),
                   {"hiyouga/LLaMA-Factory @ ff6d4d12: src/llamafactory/hparams/finetuning_args.py (finetuning_type lora, "
                    "lora_rank 8, lora_target all, lora_dropout 0.0, pure_bf16 False; galore_rank 16, apollo_rank 16)",
                    "hiyouga/LLaMA-Factory @ ff6d4d12: src/llamafactory/hparams/data_args.py (cutoff_len 2048, packing None); "
                    "hparams/parser.py (packing = stage == pt; compute_dtype from bf16 / fp16)",
                    "hiyouga/LLaMA-Factory @ ff6d4d12: src/llamafactory/hparams/model_args.py (flash_attn auto, "
                    "disable_gradient_checkpointing False, use_reentrant_gc True, upcast_layernorm / upcast_lmhead_output False, "
                    "enable_liger_kernel False)",
                    "hiyouga/LLaMA-Factory @ ff6d4d12: src/llamafactory/model/adapter.py init_adapter "
                    "(cast_trainable_params_to_fp32; autocast_adapter_dtype)",
                    "hiyouga/LLaMA-Factory @ ff6d4d12: src/llamafactory/model/model_utils/checkpointing.py "
                    "prepare_model_for_training (gradient_checkpointing_enable per decoder layer)"});
  return p;
}

FrameworkProfile other() {
  FrameworkProfile p{Framework::kOther, "other", "other (PyTorch defaults)", {}, {}, {}, {}};
  p.defaults.optimizer_impl = OptimizerImpl::kForeach;
  p.sources = {"pytorch/pytorch: torch/optim/optimizer.py (_default_to_fused_or_foreach)"};
  return p;
}

}  // namespace

// transformers v4.44.2, by model type. *ForCausalLM.forward: `logits = logits.float()` (or
// `.to(torch.float32)`) before the loss, returned as fp32 (llama ... codegen); an upcast for the
// loss only, the returned logits cast back (gpt_neo); none, the loss in the logits dtype (gpt2 ...
// biogpt; mpt: MptForCausalLM shifts lm_logits and calls CrossEntropyLoss on them as bloom does).
// *RotaryEmbedding with cos_cached/sin_cached buffers per attention layer (qwen2 ... stablelm).
// Model types that arrived later are left as the current code has them.
void apply_model_code(TrainingSetup& t, const ModelArchitecture& a) {
  static const char* const kUpcastInModel[] = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "gemma", "gemma2",
                                               "phi",   "phi3",    "starcoder2", "gptj", "codegen"};
  static const char* const kNoUpcast[] = {"gpt2", "opt", "bloom", "gpt_neox", "falcon", "stablelm", "gpt_bigcode", "biogpt", "mpt"};
  static const char* const kRotaryCache[] = {"qwen2", "qwen2_moe", "mixtral", "phi", "starcoder2", "falcon", "gpt_neox", "stablelm"};
  auto listed = [&](const auto& types) {
    return std::any_of(std::begin(types), std::end(types), [&](const char* m) { return a.model_type == m; });
  };
  static const char* const kLossFunctionLate[] = {"gpt2", "opt", "bloom", "gpt_neox", "falcon", "gpt_bigcode", "biogpt", "mpt"};
  if (t.rotary_cache_per_layer) t.rotary_cache_per_layer = listed(kRotaryCache);
  // torchtune's Qwen2RotaryPositionalEmbeddings caches cos and sin over the whole head dimension;
  // lora_qwen2_self_attention builds one per layer (torchtune v0.6.1 models/qwen2/_component_builders.py).
  if (t.model_rotary_cache_values_per_dim > 0 && a.model_type == "qwen2") {
    t.model_rotary_cache_values_per_dim = 2;
    t.model_rotary_cache_per_layer = is_lora_like(t.method);
  }
  if (t.own_loss_in_logits_dtype && listed(kLossFunctionLate)) t.logits_upcast = false;
  if (!t.model_computes_loss) return;
  if (listed(kUpcastInModel)) {
    t.logits_upcast = true;
    t.logits_upcast_in_model = true;
  } else if (listed(kNoUpcast)) {
    t.logits_upcast = false;
  }
}

bool runs_deepspeed_engine(Framework f) {
  return f == Framework::kHfTrainer || f == Framework::kTrl || f == Framework::kAxolotl || f == Framework::kLlamaFactory;
}

// accelerate/accelerator.py (Accelerator.__init__): native_amp is set for fp16/bf16 only when the
// distributed type is not DEEPSPEED or MEGATRON_LM; DeepSpeed's bf16/fp16 optimizer keeps the fp32
// master partitions (deepspeed/runtime/engine.py, as the deepspeed profile above).
// Buckets: `accelerate launch` from an accelerate config without a DeepSpeed file (TRL's
// examples/accelerate_configs and its benchmark's deepspeed_zero3.yaml.j2) leaves DeepSpeed's
// defaults (the engine's resolved config, TG-14: reduce_bucket_size 5e8, prefetch 5e7 elements).
// Axolotl's deepspeed_configs/*.json (@1aaebb0) and LLaMA-Factory's examples/deepspeed/*.json
// (@1d6e8b2) say "auto", which transformers integrations/deepspeed.py
// (HfTrainerDeepSpeedConfig.trainer_config_finalize) fills as reduce_bucket_size = hidden²,
// stage3_prefetch_bucket_size = 0.9 hidden² elements, in the 16-bit model dtype. Axolotl's
// zero3*.json set stage3_max_live_parameters 0 (no block kept gathered past its forward); LLaMA-Factory's
// ds_z3_config.json keeps DeepSpeed's 1e9.
void apply_deepspeed_engine(Framework wrapper, TrainingSetup& t, DistributedBehaviour& b, std::int64_t hidden_size) {
  const TrainingSetup engine = framework_profile(Framework::kDeepspeed).defaults;
  if (amp_like(t)) t.amp_weights = engine.amp_weights;
  t.main_grad_bytes = engine.main_grad_bytes;
  if (wrapper != Framework::kAxolotl && wrapper != Framework::kLlamaFactory) return;
  const std::int64_t square = hidden_size * hidden_size;
  b.reduce_bucket_bytes = square * 2;
  b.prefetch_bytes = square * 9 / 10 * 2;
  if (wrapper == Framework::kAxolotl) b.zero3_max_live_elements = 0;
}

const std::vector<FrameworkProfile>& framework_profiles() {
  static const std::vector<FrameworkProfile> all = {hf_trainer(), transformers_loop(), peft_bench(), torchtune(),
                                                    torchtitan(), megatron(),          deepspeed(),  litgpt(),
                                                    fsdp_qlora(), colossalai(),        trl(),
                                                    unsloth(),    axolotl(),          llamafactory(), other()};
  return all;
}

TrainingSetup framework_defaults(const FrameworkProfile& p, std::int64_t yyyymm) {
  TrainingSetup t = p.defaults;
  for (const DatedBehaviour& b : p.history) {
    if (b.apply && b.applies_to(yyyymm)) b.apply(t);
  }
  return t;
}

DistributedBehaviour framework_behaviour(const FrameworkProfile& p, std::int64_t yyyymm) {
  DistributedBehaviour d = p.dist;
  for (const DatedBehaviour& b : p.history) {
    if (b.apply_dist && b.applies_to(yyyymm)) b.apply_dist(d);
  }
  return d;
}

const FrameworkProfile& framework_profile(Framework f) {
  for (const FrameworkProfile& p : framework_profiles()) {
    if (p.id == f) return p;
  }
  return framework_profiles().back();
}

const FrameworkProfile* find_framework(std::string_view key) {
  for (const FrameworkProfile& p : framework_profiles()) {
    if (p.key == key) return &p;
  }
  return nullptr;
}

}  // namespace memfit
