// TRL's SFTTrainer (+ PEFT): its profile (the defaults it runs with, its distributed behaviours and
// its dated history), what it runs (its capabilities) and, beside this file, its launch file writer
// (launch.cpp: trl_sft_yaml). Registered in frameworks/registry.h (kFrameworks).
#include "frameworks/registry.h"

namespace memfit {

// TRL's SFTTrainer: an HF Trainer whose SFTConfig changes TrainingArguments' defaults.
// huggingface/trl @ f2cd5771 (2026-07-24).
FrameworkProfile trl_profile() {
  FrameworkProfile p = based_on(hf_trainer_profile(), Framework::kTrl, "trl", "TRL SFTTrainer (+ PEFT)");
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

// TRL's SFTTrainer is a transformers Trainer: accelerate's strategies, as hf_trainer; its own
// `trl sft --config` file carries the training knobs, accelerate's file the sharding.
FrameworkCapabilities trl_capabilities() {
  FrameworkCapabilities c = hf_trainer_capabilities();
  c.launch_formats = {"trl_sft_yaml", "accelerate_yaml"};
  c.sources.emplace_back("huggingface/trl @ f2cd5771: trl/trainer/sft_trainer.py (SFTTrainer subclasses transformers.Trainer)");
  return c;
}

}  // namespace memfit
