// Bytes of the logits-free loss kernels (see loss_kernels.h). Each term names the tensor.
#include "block/loss_kernels.h"

#include <algorithm>

#include "common/error.h"
#include "common/units.h"

namespace memfit {

namespace {
const char* const kWhat = "loss kernel bytes";
std::int64_t mul(std::int64_t a, std::int64_t b) { return checked_mul(a, b, kWhat); }
std::int64_t mul(std::int64_t a, std::int64_t b, std::int64_t c) { return mul(mul(a, b), c); }
std::int64_t next_power_of_2(std::int64_t n) {
  std::int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}
}  // namespace

bool is_logits_free_kernel(LossKernel k) {
  return k == LossKernel::kChunkedNll || k == LossKernel::kTrlFusedHead || k == LossKernel::kLigerFlce || k == LossKernel::kCutCe ||
         k == LossKernel::kUnslothFusedCe;
}

bool loss_computes_projection(LossKernel k) { return k == LossKernel::kFused || is_logits_free_kernel(k); }

LossKernelBytes chunked_nll_bytes(const LossKernelInput& in) {
  const std::int64_t T = in.tokens, V = in.vocab, H = in.hidden;
  const std::int64_t c = std::min(T, kTrlChunkedNllChunkTokens);
  const std::int64_t vh = mul(V, H);
  LossKernelBytes b;
  b.chunk_tokens = c;
  // hidden[order]: the sorted copy whose chunk views the checkpoints keep as their inputs.
  b.saved_input_per_token = mul(H, in.stream_bytes);
  // Per chunk: w.float() (a copy unless the weight is fp32) and h.float() live only through the
  // matmul (checkpoint saves nothing in forward); then the fp32 logits, log-probs and the
  // entropy's exp and product side by side (4 x 4cV).
  const std::int64_t w32 = in.weight_bytes == 4 ? 0 : mul(4, vh);
  const std::int64_t h32 = in.stream_bytes == 4 ? 0 : mul(4, c, H);
  const std::int64_t cv = mul(4, c, V);
  // Forward: the decoder's (unsorted) output is alive beside its sorted copy.
  b.forward = mul(T, H, in.stream_bytes) + std::max(w32 + h32 + cv, 4 * cv);
  // Backward of a chunk: the running gradient of the sorted copy (T x H), the recompute's
  // w.float() (saved for the input gradient), four fp32 chunk tensors at a time; a trained head
  // instead peaks at its matmul backward: h.float() saved, the logits' gradient, the fp32
  // gradient of w.float() and the running sum over the chunks in the weight dtype (its .grad
  // afterwards). Measured on an H200 (tools/measure/results/chunked_nll_h200.csv).
  const std::int64_t weight_grad = in.weight_trains ? h32 + cv + mul(4, vh) + mul(in.weight_bytes, vh) : 0;
  b.backward = mul(T, H, in.stream_bytes) + w32 + std::max(4 * cv, weight_grad);
  b.grad = mul(T, H, in.stream_bytes);
  return b;
}

LossKernelBytes trl_fused_head_bytes(const LossKernelInput& in) {
  const std::int64_t T = in.tokens, V = in.vocab, H = in.hidden;
  const std::int64_t c = std::min(T, kTrlFusedHeadTileTokens);
  LossKernelBytes b;
  b.chunk_tokens = c;
  // hidden_states[mask]: the labelled positions' copy, saved for the backward.
  b.saved_input_per_token = mul(H, in.stream_bytes);
  // mm_buf (always 32768 columns wide) and the casts of a tile's inputs to the compute dtype
  // (copies unless already in it); the last tile's stay referenced until the function returns.
  const std::int64_t tile = mul(c, kTrlFusedHeadTileVocab, in.compute_bytes);
  const std::int64_t h_cast = in.stream_bytes == in.compute_bytes ? 0 : mul(c, H, in.compute_bytes);
  const std::int64_t w_cast = in.weight_bytes == in.compute_bytes ? 0 : mul(std::min(V, kTrlFusedHeadTileVocab), H, in.compute_bytes);
  const std::int64_t per_tile = tile + h_cast + w_cast;
  // Forward: the decoder's output beside its copy; seven fp32 running statistics and the int64
  // targets per token.
  b.forward = mul(T, H, in.stream_bytes) + mul(T, 7 * 4 + 8) + per_tile;
  // Backward: fp32 zeros for the hidden-state (and a trained weight's) gradient, accumulated in
  // place (CUDA addmm out_dtype=float32); then each cast back to its input's dtype while the fp32
  // sums and the last tile are still referenced. Saved per token: log_z, entropy, targets.
  const std::int64_t grad_h32 = mul(T, H, 4);
  const std::int64_t grad_w32 = in.weight_trains ? mul(V, H, 4) : 0;
  const std::int64_t grad_h_cast = in.stream_bytes == 4 ? 0 : mul(T, H, in.stream_bytes);
  const std::int64_t grad_w_cast = in.weight_trains && in.weight_bytes != 4 ? mul(V, H, in.weight_bytes) : 0;
  b.backward = mul(T, 4 + 4 + 8 + 4) + grad_h32 + grad_w32 + per_tile + grad_h_cast + grad_w_cast;
  b.grad = mul(T, H, in.stream_bytes);
  return b;
}

LossKernelBytes liger_flce_bytes(const LossKernelInput& in) {
  const std::int64_t T = in.tokens, V = in.vocab, H = in.hidden;
  // chunk_size = next_power_of_2(cdiv(BT, cdiv(V, H))): a chunk's logits about as large as the input.
  const std::int64_t c = std::min(T, next_power_of_2(ceil_div(T, ceil_div(V, H))));
  const std::int64_t vh = mul(V, H);
  LossKernelBytes b;
  b.chunk_tokens = c;
  b.saved_input_per_token = 0;  // the input is not saved: grad_input is
  // grad_input = zeros_like(_input); grad_weight = zeros_like(weight) when it trains; the fp32
  // per-token loss and token-accuracy buffers (TRL asks for the accuracy).
  const std::int64_t grad_input = mul(T, H, in.stream_bytes);
  const std::int64_t grad_weight = in.weight_trains ? mul(vh, in.weight_bytes) : 0;
  const std::int64_t per_token = mul(8, T);
  // Per chunk: logits_chunk (the kernel writes its gradient in place), then grad_input's slice
  // (c x H) and, for a 16-bit weight, grad_weight += mm(...).float(): a 16-bit and an fp32 V x H
  // temporary. An fp32 weight takes torch.addmm(out_dtype=float32) in place (torch >= 2.8).
  const std::int64_t logits_chunk = mul(c, V, in.compute_bytes);
  const std::int64_t weight_update = in.weight_trains && in.weight_bytes != 4 ? mul(vh, in.compute_bytes + 4) : 0;
  const std::int64_t chunk_temp = std::max(mul(c, H, in.compute_bytes), weight_update);
  // The input itself is alive during the forward (an argument), not after it.
  b.forward = mul(T, H, in.stream_bytes) + grad_input + grad_weight + per_token + logits_chunk + chunk_temp;
  // Backward: grad_output is 1.0, so the saved gradients are handed back as they are.
  b.backward = grad_input + grad_weight;
  b.grad = grad_input;
  return b;
}

LossKernelBytes cut_ce_bytes(const LossKernelInput& in) {
  const std::int64_t T = in.tokens, V = in.vocab, H = in.hidden;
  const std::int64_t vh = mul(V, H);
  LossKernelBytes b;
  // Forward saves e and c (cast to the autocast dtype under autocast), the fp32 lse, the fp32
  // logit average over the vocabulary (gradient filtering, filter_eps "auto"); neg_dot per token.
  b.saved_input_per_token = mul(H, in.autocast ? in.compute_bytes : in.stream_bytes);
  const std::int64_t classifier_copy = in.autocast && in.weight_bytes != in.compute_bytes ? mul(vh, in.compute_bytes) : 0;
  const std::int64_t saved = classifier_copy + mul(4, T) + mul(4, V);
  b.forward = saved + mul(4, T);
  // Backward: de = zeros_like(e), dc = zeros_like(c) when it trains (accum_*_fp32 off by
  // default), then each cast back to its input's dtype (dc first, then de).
  const std::int64_t e_bytes = in.autocast ? in.compute_bytes : in.stream_bytes;
  const std::int64_t de = mul(T, H, e_bytes);
  const std::int64_t c_bytes = in.autocast ? in.compute_bytes : in.weight_bytes;
  const std::int64_t dc = in.weight_trains ? mul(vh, c_bytes) : 0;
  const std::int64_t dc_cast = in.weight_trains && c_bytes != in.weight_bytes ? mul(vh, in.weight_bytes) : 0;
  const std::int64_t de_cast = e_bytes != in.stream_bytes ? mul(T, H, in.stream_bytes) : 0;
  b.backward = saved + std::max(de + dc + dc_cast, de + de_cast + (dc_cast > 0 ? dc_cast : dc));
  b.grad = mul(T, H, in.stream_bytes);
  return b;
}

LossKernelBytes unsloth_fused_ce_bytes(const LossKernelInput& in) {
  const std::int64_t T = in.tokens, V = in.vocab, H = in.hidden;
  const std::int64_t vh = mul(V, H);
  // n_chunks: the fp32 logits over the target, rounded up to a multiple of 4 (1 if they fit).
  const std::int64_t logits32 = mul(4, T, V);
  const std::int64_t over = ceil_div(logits32, kUnslothFusedCeTargetBytes);
  const std::int64_t n_chunks = logits32 <= kUnslothFusedCeTargetBytes ? 1 : ceil_div(over, 4) * 4;
  const std::int64_t c = ceil_div(T, n_chunks);
  LossKernelBytes b;
  b.chunk_tokens = c;
  b.saved_input_per_token = 0;  // grad_inputs = empty_like(hidden_states) stands in for it
  const std::int64_t grad_inputs = mul(T, H, in.stream_bytes);
  const std::int64_t grad_weight = in.weight_trains ? mul(vh, in.weight_bytes) : 0;
  // Per chunk (torch.func.grad_and_value of compute_fused_ce_loss): the logits in the weight
  // dtype, their fp32 copy for cross_entropy and its fp32 gradient; a trained weight's chunk
  // gradient before grad_lm_head.add_.
  const std::int64_t chunk = mul(c, V, in.weight_bytes + 8) + (in.weight_trains ? mul(vh, in.weight_bytes) : 0);
  b.forward = mul(T, H, in.stream_bytes) + grad_inputs + grad_weight + chunk;
  b.backward = grad_inputs + grad_weight;
  b.grad = grad_inputs;
  return b;
}

LossKernelBytes logits_free_loss_bytes(LossKernel k, const LossKernelInput& in) {
  switch (k) {
    case LossKernel::kChunkedNll: return chunked_nll_bytes(in);
    case LossKernel::kTrlFusedHead: return trl_fused_head_bytes(in);
    case LossKernel::kLigerFlce: return liger_flce_bytes(in);
    case LossKernel::kCutCe: return cut_ce_bytes(in);
    case LossKernel::kUnslothFusedCe: return unsloth_fused_ce_bytes(in);
    default: break;
  }
  throw Error(ErrorCode::kInternal, "", "not a logits-free loss kernel");
}

}  // namespace memfit
