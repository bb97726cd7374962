// Hugging Face Trainer (+ PEFT): its profile (the defaults it runs with, its distributed behaviours
// and its dated history), what it runs (its capabilities) and, beside this file, its launch file
// writer (launch.cpp: accelerate_yaml and python_script). Registered in frameworks/registry.h
// (kFrameworks).
#include "frameworks/registry.h"

namespace memfit {

FrameworkProfile hf_trainer_profile() {
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

FrameworkCapabilities hf_trainer_capabilities() {
  FrameworkCapabilities c;
  // accelerate: DDP, FSDP (FULL_SHARD = ZeRO-3, SHARD_GRAD_OP = ZeRO-2, HYBRID_SHARD) and DeepSpeed
  // ZeRO 1-3 with offload_optimizer (stages 1-3) and offload_param (stage 3); FSDP offload_params.
  off(c.optimizer_offload_with, {Sharding::kNone});
  // Trainer's gradient_checkpointing recomputes whole decoder layers; accelerate's config sets
  // no tensor, pipeline, context or expert parallelism that memfit writes (accelerate >= 1.10's
  // ParallelismConfig tp/cp is not offered yet).
  no_model_parallel(c);
  c.selective_checkpointing = false;
  // train.py first: it holds the model, the method (PEFT, bitsandbytes) and TrainingArguments; the
  // accelerate file only the distribution (near empty on one GPU).
  c.launch_formats = {"python_script", "accelerate_yaml"};
  c.sources = {"huggingface/accelerate @ d6d3e03: docs/source/usage_guides/fsdp.md, deepspeed.md (strategies, offload)",
               "deepspeedai/DeepSpeed v0.16.4: docs/_pages/config-json.md (offload_optimizer stages 1-3, offload_param stage 3)",
               "huggingface/transformers v5.15.0: src/transformers/modeling_utils.py (gradient_checkpointing_enable: per layer)",
               "huggingface/transformers v4.39.0: BitsAndBytesConfig(bnb_4bit_quant_storage) lets FSDP / ZeRO-3 shard 4-bit weights"};
  return c;
}

// Axolotl and LLaMA-Factory train through the same Trainer and share these (registry.h).
std::vector<DatedCapability> hf_trainer_dated_capabilities() {
  return {{202403, "QLoRA's 4-bit base sharded by FSDP / ZeRO-3",
          "huggingface/transformers v4.39.0 (2024-03): BitsAndBytesConfig bnb_4bit_quant_storage",
          [](FrameworkCapabilities& c) { c.qlora_with_zero3 = false; }}};
}

}  // namespace memfit
