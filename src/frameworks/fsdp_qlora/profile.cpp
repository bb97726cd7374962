// Answer.AI fsdp_qlora: its profile (the defaults it runs with, its distributed behaviours and its
// dated history), what it runs (its capabilities) and, beside this file, its launch file writer
// (launch.cpp: fsdp_qlora_command). Registered in frameworks/registry.h (kFrameworks).
#include "frameworks/registry.h"

namespace memfit {

FrameworkProfile fsdp_qlora_profile() {
  FrameworkProfile p{.id = Framework::kFsdpQlora, .key = "fsdp_qlora", .name = "Answer.AI fsdp_qlora"};
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

FrameworkCapabilities fsdp_qlora_capabilities() {
  FrameworkCapabilities c;
  // train.py: --sharding_strategy full_shard | shard_grad_op | ddp (FSDP NO_SHARD); --use_cpu_offload
  // (FSDP CPUOffload: parameters with their optimizer states); one node (mp.spawn world_size).
  off(c.sharding, {Sharding::kZero1});
  c.optimizer_offload = false;
  no_model_parallel(c);
  c.selective_checkpointing = false;
  c.multi_node = false;
  only_methods(c, {Method::kFull, Method::kLora, Method::kQlora});
  // --optimizer adamw | adam | sgd | adadelta (train.py get_optimizer: torch.optim, plain SGD).
  only_optimizers(c, {Optimizer::kAdamW, Optimizer::kSgd});
  c.launch_formats = {"fsdp_qlora_command"};
  c.sources = {"AnswerDotAI/fsdp_qlora @ 05ed9f2: train.py (fsdp_main arguments: train_type, sharding_strategy, "
               "use_cpu_offload, use_gradient_checkpointing, world_size)"};
  return c;
}

}  // namespace memfit
