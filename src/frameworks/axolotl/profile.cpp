// Axolotl (HF Trainer + PEFT): its profile (the defaults it runs with, its distributed behaviours
// and its dated history), what it runs (its capabilities) and, beside this file, its launch file
// writer (launch.cpp: axolotl_yaml). Registered in frameworks/registry.h (kFrameworks).
#include "frameworks/registry.h"

namespace memfit {

// Axolotl: a YAML config over the HF Trainer, with its own model loader.
// axolotl-ai-cloud/axolotl @ 067b021c (2026-07-24).
FrameworkProfile axolotl_profile() {
  FrameworkProfile p = based_on(hf_trainer_profile(), Framework::kAxolotl, "axolotl", "Axolotl (HF Trainer + PEFT)");
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
  // Its memory logs: utils/bench.py log_gpu_memory_usage printed allocated, "+cache" (reserved) and
  // "+misc" (NVML used beyond reserved) from 7b55fe641 (2023-08-13); core/trainers/base.py @ 067b021c
  // logs memory/max_active, max_allocated and device_reserved peaks per logging step. A figure that
  // does not name its counter may be any of them.
  p.logged_counters = {MemoryCounter::kMaxAllocated, MemoryCounter::kPeakActive, MemoryCounter::kMaxReserved,
                       MemoryCounter::kNvidiaSmi};
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

// Axolotl and LLaMA-Factory train through the HF Trainer (accelerate: DDP, FSDP, DeepSpeed ZeRO);
// their own YAML carries the training knobs and the sharding (DeepSpeed inline, FSDP keys), the
// launch command (first comment) the GPU count.
FrameworkCapabilities axolotl_capabilities() {
  FrameworkCapabilities c = hf_trainer_capabilities();
  c.launch_formats = {"axolotl_yaml"};
  // load_adapter: lora / qlora (PEFT LoraConfig, peft_use_dora) and full; no other PEFT method.
  only_methods(c, {Method::kFull, Method::kLora, Method::kQlora, Method::kDora});
  c.sources.emplace_back("axolotl-ai-cloud/axolotl @ 067b021c: src/axolotl/utils/schemas/config.py (deepspeed: str | dict, "
                         "fsdp_config, fsdp_version), src/axolotl/loaders/adapter.py (adapter lora / qlora)");
  return c;
}

}  // namespace memfit
