// Output-projection + cross-entropy kernels that never hold the whole logits: what each keeps
// from the loss forward to its backward and what one of its chunks allocates, from their code.
// The memory replay (memory/timeline.cpp) places these bytes at its loss events.
#pragma once
#include <cstdint>

#include "training/training_setup.h"

namespace memfit {

/// TRL SFTTrainer `loss_type="chunked_nll"`: valid tokens per checkpointed chunk
/// (huggingface/trl @ f2cd5771: trl/trainer/sft_trainer.py _CHUNKED_LM_HEAD_CHUNK_SIZE = 256).
inline constexpr std::int64_t kTrlChunkedNllChunkTokens = 256;
/// TRL >= 1.15's fused LM head: tokens and vocabulary columns per projection tile
/// (trl/kernels/chunked_logprob.py TOKEN_CHUNK_SIZE, trl/trainer/utils.py _CHUNKED_LOGPROB_CHUNK_SIZE @ v1.16.0).
inline constexpr std::int64_t kTrlFusedHeadTileTokens = 4096;
inline constexpr std::int64_t kTrlFusedHeadTileVocab = 32768;
/// Unsloth's fused CE: a chunk's fp32 logits are kept under min(free / 2, 4 GiB); the cap is used
/// (unslothai/unsloth-zoo @ ce232d6c: unsloth_zoo/fused_losses/cross_entropy_loss.py
/// _get_chunk_multiplier, get_chunk_size).
inline constexpr std::int64_t kUnslothFusedCeTargetBytes = 4LL << 30;

/// The shapes and dtypes a loss kernel sees on one rank.
struct LossKernelInput {
  std::int64_t tokens = 0;        // tokens of the micro-batch on this rank (all assumed labelled)
  std::int64_t vocab = 0;         // rows of the output projection
  std::int64_t hidden = 0;
  std::int64_t stream_bytes = 2;  // element bytes of the hidden states entering the loss
  std::int64_t compute_bytes = 2; // element bytes of the matmul output (the autocast dtype)
  std::int64_t weight_bytes = 2;  // element bytes of the output projection weight as stored
  bool autocast = false;          // torch.autocast is on around the loss
  bool weight_trains = false;     // the output projection's weight takes a gradient
};

/// Bytes of a loss kernel at the replay's events. `saved_input_per_token`: what it keeps of its
/// hidden-state input until its backward (replaces the output projection's saved input);
/// `forward`: its peak inside the loss forward beyond that; `backward`: its peak while its
/// backward runs; `grad`: the hidden-state gradient it hands down (the output layer's backward
/// event). A weight gradient it builds itself is in forward/backward until it becomes `.grad`.
struct LossKernelBytes {
  std::int64_t saved_input_per_token = 0;
  std::int64_t forward = 0, backward = 0, grad = 0;
  std::int64_t chunk_tokens = 0;  // tokens per chunk (0: not chunked)
};

/// Whether the kernel computes the output projection itself (its weight is read inside the loss).
bool loss_computes_projection(LossKernel k);
/// The kernels of this file: chunked_nll, trl_fused_head, liger_flce, cut_ce, unsloth_fused_ce.
bool is_logits_free_kernel(LossKernel k);

/// TRL chunked_nll (trl/trainer/sft_trainer.py _chunked_cross_entropy_loss, _chunk): the valid
/// tokens' hidden states gathered into a sorted copy, then per 256-token chunk under
/// non-reentrant checkpointing h.float() @ w.float().t(), log_softmax, nll, argmax and entropy.
LossKernelBytes chunked_nll_bytes(const LossKernelInput& in);
/// TRL >= 1.15 SFTTrainer's default loss (trl/kernels/chunked_logprob.py ChunkedLogProbFunction
/// @ v1.16.0): [4096 x 32768] tiles in the compute dtype, folded in place by Triton; saves the
/// labelled hidden states; backward recomputes each tile and accumulates fp32 gradients.
LossKernelBytes trl_fused_head_bytes(const LossKernelInput& in);
/// Liger fused linear cross-entropy (linkedin/Liger-Kernel @ ead96b61:
/// src/liger_kernel/ops/fused_linear_cross_entropy.py): gradients computed in the forward.
LossKernelBytes liger_flce_bytes(const LossKernelInput& in);
/// Apple Cut Cross-Entropy (apple/ml-cross-entropy @ d42911f9: cut_cross_entropy/cce.py,
/// cce_lse_forward.py, cce_backward.py): log-sum-exp only in forward, logits recomputed blockwise.
LossKernelBytes cut_ce_bytes(const LossKernelInput& in);
/// Unsloth fused CE (unsloth-zoo @ ce232d6c: fused_losses/cross_entropy_loss.py UnslothFusedLoss).
LossKernelBytes unsloth_fused_ce_bytes(const LossKernelInput& in);
/// The one of the four `k` names (k must be one of them).
LossKernelBytes logits_free_loss_bytes(LossKernel k, const LossKernelInput& in);

}  // namespace memfit
