// LLaMA-Factory (HF Trainer + PEFT): its profile (the defaults it runs with, its distributed
// behaviours and its dated history), what it runs (its capabilities) and, beside this file, its
// launch file writer (launch.cpp: llamafactory_yaml). Registered in frameworks/registry.h
// (kFrameworks).
#include "frameworks/registry.h"

namespace memfit {

// LLaMA-Factory: `llamafactory-cli train` over the HF Trainer. hiyouga/LLaMA-Factory @ ff6d4d12
// (2026-08-18).
FrameworkProfile llamafactory_profile() {
  FrameworkProfile p = based_on(hf_trainer_profile(), Framework::kLlamaFactory, "llamafactory", "LLaMA-Factory (HF Trainer + PEFT)");
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

FrameworkCapabilities llamafactory_capabilities() {
  FrameworkCapabilities c = hf_trainer_capabilities();
  c.launch_formats = {"llamafactory_yaml"};
  // finetuning_type lora (use_dora, quantization_bit), freeze or full (oft not modelled).
  only_methods(c, {Method::kFull, Method::kLora, Method::kQlora, Method::kDora, Method::kFreeze});
  c.optimizers[static_cast<int>(Optimizer::kAdamMini)] = true;  // use_adam_mini (launch.cpp)
  c.sources.emplace_back("hiyouga/LLaMA-Factory @ ff6d4d12: src/llamafactory/hparams/finetuning_args.py (finetuning_type), "
                         "examples/deepspeed/*.json, examples/accelerate/fsdp_config.yaml");
  return c;
}

}  // namespace memfit
