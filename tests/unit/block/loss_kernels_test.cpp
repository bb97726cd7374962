// The logits-free loss kernels (src/block/loss_kernels.cpp): each term checked by hand against
// the kernel's code, the chunk rules against the values their code computes, and the property
// that makes them logits-free: no tokens x vocabulary term beyond one chunk.
#include <catch2/catch.hpp>

#include "block/loss_kernels.h"

using namespace memfit;

namespace {
constexpr std::int64_t kV = 151936, kH = 2560;  // Qwen3-4B's vocabulary and hidden size

LossKernelInput bf16_input(std::int64_t tokens, bool trains) {
  LossKernelInput in;
  in.tokens = tokens;
  in.vocab = kV;
  in.hidden = kH;
  in.stream_bytes = in.compute_bytes = in.weight_bytes = 2;
  in.weight_trains = trains;
  return in;
}
}  // namespace

TEST_CASE("chunked_nll: a sorted copy saved, 256-token fp32 chunks, w.float() and its gradient", "[loss_kernels]") {
  const std::int64_t T = 16384, c = 256, vh = kV * kH, cv = 4 * c * kV;
  const LossKernelBytes frozen = chunked_nll_bytes(bf16_input(T, false));
  CHECK(frozen.chunk_tokens == c);
  CHECK(frozen.saved_input_per_token == 2 * kH);
  // Forward: the unsorted output, then w.float() + h.float() + the fp32 logits at the matmul
  // (above the four fp32 chunk tensors of the softmax and entropy, 4 x 4cV).
  CHECK(4 * vh + 4 * c * kH + cv > 4 * cv);
  CHECK(frozen.forward == T * kH * 2 + 4 * vh + 4 * c * kH + cv);
  // Backward: the running gradient of the sorted copy, the recompute's w.float(), 4 x 4cV.
  CHECK(frozen.backward == T * kH * 2 + 4 * vh + 4 * cv);
  CHECK(frozen.grad == T * kH * 2);
  // A trained bf16 head peaks at its matmul backward: h.float(), the logits' gradient, the fp32
  // gradient of w.float() and the bf16 running sum.
  const LossKernelBytes trained = chunked_nll_bytes(bf16_input(T, true));
  CHECK(trained.backward == T * kH * 2 + 4 * vh + 4 * c * kH + cv + 4 * vh + 2 * vh);
  CHECK(trained.forward == frozen.forward);
}

TEST_CASE("chunked_nll with fp32 weights and hidden states copies neither", "[loss_kernels]") {
  LossKernelInput in = bf16_input(4096, true);
  in.stream_bytes = in.weight_bytes = 4;
  const std::int64_t c = 256, vh = kV * kH, cv = 4 * c * kV;
  const LossKernelBytes b = chunked_nll_bytes(in);
  CHECK(b.forward == 4096 * kH * 4 + 4 * cv);
  // The fp32 weight's gradient and the running sum, no copy of the weight, no cast.
  CHECK(b.backward == 4096 * kH * 4 + cv + 8 * vh);
}

// tools/measure/results/chunked_nll_h200.csv: TRL's chunked_nll algorithm
// (tools/measure/chunked_nll_gpu.py) on one H200, torch 2.11.0+cu130, bytes above the inputs
// (h [T, H] and w [V, H] in bf16): forward peak and backward peak.
TEST_CASE("chunked_nll agrees with its measured peaks within 0.5 %", "[loss_kernels][measured]") {
  struct Measured { std::int64_t tokens; bool trains; double forward, backward; };
  const Measured runs[] = {{4096, false, 1735334400, 2220433920},
                           {4096, true, 1735334400, 4092921344},
                           {16384, false, 1798457856, 2346459648},
                           {16384, true, 1798457856, 4218947072}};
  for (const Measured& m : runs) {
    INFO(m.tokens << " tokens, head trains " << m.trains);
    const LossKernelBytes b = chunked_nll_bytes(bf16_input(m.tokens, m.trains));
    // The input h is among the measured inputs; the sorted copy (saved_input) is not: forward
    // = b.forward - h + copy; the copy is alive through the backward too.
    const double copy = static_cast<double>(b.saved_input_per_token * m.tokens);
    const double h = static_cast<double>(m.tokens * kH * 2);
    CHECK(static_cast<double>(b.forward) - h + copy == Approx(m.forward).epsilon(0.005));
    CHECK(static_cast<double>(b.backward) + copy == Approx(m.backward).epsilon(0.005));
  }
}

// trl 1.16.0's ChunkedLogProbFunction on CUDA (Triton folds in place, addmm out_dtype=float32).
TEST_CASE("trl_fused_head: [4096 x 32768] tiles, fp32 gradient sums cast back at the end", "[loss_kernels]") {
  const std::int64_t T = 16384, c = 4096, vh = kV * kH, tile = c * 32768 * 2;
  const LossKernelBytes frozen = trl_fused_head_bytes(bf16_input(T, false));
  CHECK(frozen.chunk_tokens == c);
  CHECK(frozen.saved_input_per_token == 2 * kH);
  // Forward: the decoder's output beside its copy, 7 fp32 statistics + int64 targets, one bf16 tile.
  CHECK(frozen.forward == T * kH * 2 + T * 36 + tile);
  // Backward: fp32 grad_hidden, the tile, then grad_hidden.to(bf16); log_z, entropy, targets, grad_logprobs.
  CHECK(frozen.backward == T * 20 + T * kH * 4 + tile + T * kH * 2);
  CHECK(frozen.grad == T * kH * 2);
  // A trained head adds its fp32 gradient sum and the bf16 cast that becomes .grad.
  const LossKernelBytes trained = trl_fused_head_bytes(bf16_input(T, true));
  CHECK(trained.backward == frozen.backward + 4 * vh + 2 * vh);
  // Fewer tokens than a tile: the buffer is that many rows, still 32768 columns wide.
  CHECK(trl_fused_head_bytes(bf16_input(511, false)).forward == 511 * kH * 2 + 511 * 36 + 511 * 32768 * 2);
}

TEST_CASE("trl_fused_head under autocast casts each tile's inputs to bf16 and keeps fp32 gradients", "[loss_kernels]") {
  LossKernelInput in = bf16_input(8192, true);
  in.stream_bytes = in.weight_bytes = 4;
  in.autocast = true;
  const std::int64_t c = 4096, tile = c * 32768 * 2, casts = c * kH * 2 + 32768LL * kH * 2;
  const LossKernelBytes b = trl_fused_head_bytes(in);
  CHECK(b.forward == 8192 * kH * 4 + 8192 * 36 + tile + casts);
  // fp32 inputs: the gradients are returned as they are, no cast back.
  CHECK(b.backward == 8192 * 20 + 8192 * kH * 4 + 4 * kV * kH + tile + casts);
}

TEST_CASE("a logits-free kernel grows with tokens by hidden-size terms only", "[loss_kernels]") {
  for (const LossKernel k : {LossKernel::kChunkedNll, LossKernel::kTrlFusedHead, LossKernel::kLigerFlce, LossKernel::kCutCe}) {
    INFO(static_cast<int>(k));
    // Past the chunk sizes the growth per token is a few H-wide rows (trl_fused_head: the fp32
    // gradient sum and its bf16 cast, 6H), far below one vocabulary row.
    const LossKernelBytes a = logits_free_loss_bytes(k, bf16_input(1 << 16, true));
    const LossKernelBytes b = logits_free_loss_bytes(k, bf16_input(1 << 17, true));
    const std::int64_t per_token_backward = (b.backward - a.backward) / (1 << 16);
    CHECK(per_token_backward <= 6 * kH + 32);
    CHECK(per_token_backward < kV);
  }
}

TEST_CASE("Liger FLCE: chunk size from its code, gradients built in forward", "[loss_kernels]") {
  // fused_linear_cross_entropy.py's own example: BT = 4096*4, V = 32000, H = 4096 -> inc_factor 8, chunk 2048.
  LossKernelInput doc = bf16_input(4096 * 4, false);
  doc.vocab = 32000;
  doc.hidden = 4096;
  CHECK(liger_flce_bytes(doc).chunk_tokens == 2048);
  // Qwen3-4B, 16384 tokens: cdiv(V, H) = 60, cdiv(16384, 60) = 274 -> 512.
  const std::int64_t T = 16384, c = 512, vh = kV * kH;
  const LossKernelBytes frozen = liger_flce_bytes(bf16_input(T, false));
  CHECK(frozen.chunk_tokens == c);
  CHECK(frozen.saved_input_per_token == 0);
  // Input, grad_input, loss + accuracy per token, one chunk's logits, grad_input's chunk slice.
  CHECK(frozen.forward == T * kH * 2 + T * kH * 2 + 8 * T + c * kV * 2 + c * kH * 2);
  CHECK(frozen.backward == T * kH * 2);
  // Trained bf16 head: grad_weight (bf16) from the forward on; mm(...).float() adds 2 + 4 bytes per weight.
  const LossKernelBytes trained = liger_flce_bytes(bf16_input(T, true));
  CHECK(trained.forward == T * kH * 2 + T * kH * 2 + 8 * T + c * kV * 2 + 2 * vh + 6 * vh);
  CHECK(trained.backward == T * kH * 2 + 2 * vh);
  // An fp32 weight accumulates in place (addmm out_dtype): no V x H temporary.
  LossKernelInput amp = bf16_input(T, true);
  amp.weight_bytes = amp.stream_bytes = 4;
  amp.autocast = true;
  CHECK(liger_flce_bytes(amp).forward == T * kH * 4 * 2 + 8 * T + c * kV * 2 + c * kH * 2 + 4 * vh);
}

TEST_CASE("Cut Cross-Entropy keeps the fp32 lse and allocates the gradients in backward", "[loss_kernels]") {
  const std::int64_t T = 8192, vh = kV * kH;
  const LossKernelBytes frozen = cut_ce_bytes(bf16_input(T, false));
  CHECK(frozen.chunk_tokens == 0);
  CHECK(frozen.saved_input_per_token == 2 * kH);
  CHECK(frozen.forward == 4 * T + 4 * kV + 4 * T);
  CHECK(frozen.backward == 4 * T + 4 * kV + T * kH * 2);
  CHECK(cut_ce_bytes(bf16_input(T, true)).backward == 4 * T + 4 * kV + T * kH * 2 + 2 * vh);
  // Under autocast over fp32 weights: the classifier's bf16 copy is saved, and the gradients are
  // cast back to fp32 (dc first: bf16 dc + its fp32 cast + bf16 de at that moment).
  LossKernelInput amp = bf16_input(T, true);
  amp.autocast = true;
  amp.stream_bytes = amp.weight_bytes = 4;
  const LossKernelBytes a = cut_ce_bytes(amp);
  CHECK(a.saved_input_per_token == 2 * kH);
  CHECK(a.forward == 2 * vh + 4 * T + 4 * kV + 4 * T);
  CHECK(a.backward == 2 * vh + 4 * T + 4 * kV + T * kH * 2 + 2 * vh + 4 * vh);
}

TEST_CASE("Unsloth fused CE: chunks whose fp32 logits stay under 4 GiB, a multiple of 4", "[loss_kernels]") {
  // 2048 tokens: 4 * 2048 * V = 1.16 GiB fits one chunk.
  CHECK(unsloth_fused_ce_bytes(bf16_input(2048, false)).chunk_tokens == 2048);
  // 32768 tokens: 18.5 GiB / 4 GiB = 4.6 -> 8 chunks of 4096.
  const LossKernelBytes b = unsloth_fused_ce_bytes(bf16_input(32768, false));
  CHECK(b.chunk_tokens == 4096);
  CHECK(b.forward == 32768 * kH * 2 * 2 + 4096 * kV * (2 + 8));
  CHECK(b.backward == 32768 * kH * 2);
}

TEST_CASE("which kernels are logits-free and which compute the projection", "[loss_kernels]") {
  CHECK_FALSE(is_logits_free_kernel(LossKernel::kStandard));
  CHECK_FALSE(is_logits_free_kernel(LossKernel::kChunked));
  CHECK_FALSE(is_logits_free_kernel(LossKernel::kFused));
  CHECK(loss_computes_projection(LossKernel::kFused));
  CHECK_FALSE(loss_computes_projection(LossKernel::kChunked));
  for (const LossKernel k : {LossKernel::kChunkedNll, LossKernel::kLigerFlce, LossKernel::kCutCe, LossKernel::kUnslothFusedCe}) {
    CHECK(is_logits_free_kernel(k));
    CHECK(loss_computes_projection(k));
  }
  CHECK_THROWS(logits_free_loss_bytes(LossKernel::kStandard, bf16_input(8, false)));
}
