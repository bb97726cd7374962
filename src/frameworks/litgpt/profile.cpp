// LitGPT: its profile (the defaults it runs with, its distributed behaviours and its dated
// history), and what it runs (its capabilities). Registered in frameworks/registry.h (kFrameworks).
#include "frameworks/registry.h"

namespace memfit {

FrameworkProfile litgpt_profile() {
  FrameworkProfile p{.id = Framework::kLitgpt, .key = "litgpt", .name = "LitGPT"};
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

FrameworkCapabilities litgpt_capabilities() {
  FrameworkCapabilities c;
  // finetune/*.py: one device, or Fabric's FSDPStrategy (full shard) on several; no offload.
  off(c.sharding, {Sharding::kNone, Sharding::kZero1, Sharding::kZero2});
  c.optimizer_offload = c.params_offload = false;
  no_model_parallel(c);
  c.selective_checkpointing = false;
  only_methods(c, {Method::kFull, Method::kLora, Method::kQlora, Method::kAdapter, Method::kAdapterV2});
  c.sources = {"Lightning-AI/litgpt @ 26857050: litgpt/finetune/full.py, lora.py (FSDPStrategy, --quantize bnb.nf4)",
               "Lightning-AI/litgpt v0.5.13: litgpt/finetune/adapter.py, adapter_v2.py"};
  return c;
}

}  // namespace memfit
