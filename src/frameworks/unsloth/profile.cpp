// Unsloth (FastLanguageModel + TRL): its profile (the defaults it runs with, its distributed
// behaviours and its dated history), what it runs (its capabilities) and, beside this file, its
// launch file writer (launch.cpp: unsloth_python). Registered in frameworks/registry.h
// (kFrameworks).
#include "frameworks/registry.h"

namespace memfit {

// Unsloth: FastLanguageModel loads and patches the model, then TRL's SFTTrainer with Unsloth's
// config defaults trains it. unslothai/unsloth @ 015bdef0 (2026-08-22), unsloth-zoo @ ce232d6c.
FrameworkProfile unsloth_profile() {
  FrameworkProfile p = based_on(trl_profile(), Framework::kUnsloth, "unsloth", "Unsloth (FastLanguageModel + TRL)");
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

// Unsloth as memfit writes it: one GPU, its own script (the launch format's note).
FrameworkCapabilities unsloth_capabilities() {
  FrameworkCapabilities c;
  off(c.sharding, {Sharding::kZero1, Sharding::kZero2, Sharding::kZero3});
  off(c.optimizer_offload_with, {Sharding::kNone});
  no_model_parallel(c);
  c.params_offload = false;
  c.optimizer_offload = false;  // the script has no optimizer offload (activations: "unsloth" checkpointing)
  c.selective_checkpointing = false;
  c.multi_node = c.multi_gpu = false;
  c.launch_formats = {"unsloth_python"};
  // FastLanguageModel.get_peft_model builds LoRA adapters; PEFT's other methods are not offered.
  only_methods(c, {Method::kFull, Method::kLora, Method::kQlora, Method::kDora, Method::kFreeze});
  // SFTConfig's optim (TrainingArguments names, launch_common.cpp hf_optim_name), as hf_trainer.
  c.optimizers[static_cast<int>(Optimizer::kMuon)] = c.optimizers[static_cast<int>(Optimizer::kAdamMini)] = false;
  c.optimizers[static_cast<int>(Optimizer::kSgdMomentum)] = false;
  c.sources = {"unslothai/unsloth @ 015bdef0: unsloth/models/loader.py, llama.py (FastLanguageModel on one device)"};
  return c;
}

}  // namespace memfit
