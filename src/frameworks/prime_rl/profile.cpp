// prime-rl's SFT trainer (PrimeIntellect-ai/prime-rl, src/prime_rl/trainer/sft/train.py): its
// profile (the defaults it runs with, its distributed behaviours and its dated history) and what it
// runs (its capabilities); memfit writes no launch file for it. Registered in
// frameworks/registry.h (kFrameworks).
#include "frameworks/registry.h"

namespace memfit {

// The current code is prime-rl @ 559b44772 (2026-08-21); the dated entries go back to the SFT
// trainer's first version (b683e2d69, 2025-08-13). Its FSDP2 + fp32-master recipe is torchtitan's
// (prime-rl depends on torchtitan), so the profile starts from torchtitan's.
FrameworkProfile prime_rl_profile() {
  FrameworkProfile p = based_on(torchtitan_profile(), Framework::kPrimeRl, "prime_rl", "prime-rl SFT trainer");
  TrainingSetup& t = p.defaults;
  t.precision = Precision::kAmpBf16;              // model.optimization_dtype "float32" under MixedPrecisionPolicy(param bf16)
  t.optimizer = Optimizer::kAdamW;                // optim AdamWConfig (weight_decay 0.01, max_norm 1.0)
  t.optimizer_impl = OptimizerImpl::kForeach;     // optim.py: torch.optim.AdamW(params, lr, weight_decay, betas): foreach on CUDA
  t.checkpointing = Checkpointing::kNone;         // model.ac None (--model.ac: checkpoint_wrapper on every freq-th block, freq 1)
  t.selective_every_other_mm = false;
  t.compile = false;                              // model.compile None
  t.compile_loss = false;                         // model.py apply_compile: each decoder block compiled, the head and loss eager
  t.compile_fuses_upcast = false;
  t.attention = AttentionKernel::kFlash;          // model.attn "flash_attention_2"
  t.micro_batch = 1;                              // data.micro_batch_size 1
  t.packed = true;                                // data.pack_function "cat": samples packed to seq_len
  // model.fused_lm_head_token_chunk_size 8192: sft/train.py computes the loss as -logprobs of the
  // chunked LM head (models/layers/lm_head.py _SequenceChunkedLogProbEntropyFn: 8192-token x
  // 8192-vocabulary tiles, fp32 running stats, saves hidden and logz, recomputes tiles in
  // backward). memfit's nearest kernel is TRL's fused LM head (4096 x 32768 tiles, the same
  // saved set); neither ever holds the [tokens, vocabulary] logits.
  t.loss = LossKernel::kTrlFusedHead;
  t.logits_upcast = true;
  t.logits_upcast_in_model = true;                // forward(): cast_float_and_contiguous(out) (logits, logprobs .float())
  // forward() drops the 16-bit projection output once it is upcast, before the loss and its
  // backward: its freed block stays cached, too small for the fp32 loss buffers that follow.
  t.logits_freed_before_backward = true;
  t.outputs_held_across_steps = false;
  t.expandable_segments = true;                   // entrypoints/sft.py launches the trainer with DEFAULT_TRAINER_ENV_VARS
  t.logged_counter = MemoryCounter::kMaxReserved; // perf/peak_memory = torch.cuda.max_memory_reserved(), reset each step
  // model.py setup_fsdp: fully_shard per block and the root, MixedPrecisionPolicy(param bf16,
  // reduce_dtype "float32"), reshard_after_forward = model.reshard_after_forward (True) for every
  // block: no last-block exception (an untied lm_head + final norm group stays gathered).
  p.dist.last_unit_kept = false;
  // Newest first: an entry reads what the later ones left. Sources: PrimeIntellect-ai/prime-rl.
  p.history = {
      {202607, "the SFT loss runs on the whole logits, upcast to fp32 by forward()",
       "@8718eb143 trainer/sft/train.py, model.py forward; e0d60e4d8 (2026-07-16, #3044): the chunked LM head",
       [](TrainingSetup& s) { s.loss = LossKernel::kStandard; }},
      {202603, "the loop keeps forward()'s output (the fp32 logits) through backward, the step and the next forward",
       "@8718eb143 trainer/sft/train.py (out = forward(...); del logits); 447cafede (2026-03-10, #1850): del out",
       [](TrainingSetup& s) { s.outputs_held_across_steps = true; }, nullptr, 202601},
      {202602, "the sft command is the trainer itself: no expandable segments",
       "@8718eb143 pyproject.toml; 1826b1892 (2026-02-24, #1859): entrypoints/sft.py sets them",
       [](TrainingSetup& s) { s.expandable_segments = false; }},
      {202601, "forward() returns the model's bf16 logits: the cross-entropy runs in bf16",
       "@8b2ef0daa trainer/model.py forward; 5ad6f62fc (2026-01-05, #1525): cast_float_and_contiguous",
       [](TrainingSetup& s) {
         s.logits_upcast = false;
         s.logits_upcast_in_model = false;
       },
       nullptr, 202509},
      {202509, "forward() returns model(...).logits.float()",
       "b683e2d69 (2025-08-13, #708) trainer/model.py forward; 0559e567f (2025-09-15, #914) dropped the upcast",
       [](TrainingSetup& s) {
         s.logits_upcast = true;
         s.logits_upcast_in_model = true;
       }}};
  p.sources = {"PrimeIntellect-ai/prime-rl @ 559b44772: configs/trainer.py, trainer/model.py (setup_fsdp, apply_ac, "
               "apply_compile, forward), trainer/sft/train.py, models/layers/lm_head.py, utils/process.py",
               "PrimeIntellect-ai/prime-rl @ 8718eb143: trainer/optim.py (AdamW without flags)",
               "tools/oracle/prime_rl_sft_probe.py (the 2026-01 loop on CPU)"};
  return p;
}

// FSDP2 on every layout (fully_shard even on one rank, HSDP with model.dp_replicate), FSDP2's
// CPUOffloadPolicy (parameters, gradients and optimizer states together), ring-attention context
// parallelism, expert parallelism; no tensor or pipeline parallelism; checkpointing by whole blocks only
// (ac.freq: every freq-th block); full fine-tuning and its own LoRA. No launch file memfit writes.
FrameworkCapabilities prime_rl_capabilities() {
  FrameworkCapabilities c = torchtitan_capabilities();
  off(c.sharding, {Sharding::kNone});  // model.py setup_model: setup_fsdp always, no DDP path
  c.pp = c.vpp = false;                // parallel_dims.py: dp_replicate, dp_shard, cp, tp, ep; no pp
  // model.py setup_model: no tensor-parallel plan (parallelize_module only for EP experts), whatever model.tp says.
  c.tp = c.sequence_parallel = false;
  c.selective_checkpointing = false;   // config.py ActivationCheckpointConfig: freq only (model.py apply_ac)
  only_methods(c, {Method::kFull, Method::kLora});
  c.launch_formats = {};
  c.sources = {"PrimeIntellect-ai/prime-rl @ 8718eb143: trainer/model.py, parallel_dims.py, config.py, lora.py"};
  return c;
}

}  // namespace memfit
