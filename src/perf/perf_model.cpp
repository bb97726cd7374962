// Step-time model (see perf_model.h; the derivations are in docs/performance_model.md).
#include "perf/perf_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <optional>

#include "block/activations.h"
#include "block/adapters.h"
#include "block/loss_kernels.h"
#include "hardware/nvlink_topology.h"
#include "parallel/as_run.h"
#include "parallel/rank_plan.h"
#include "training/parameters.h"

namespace memfit {

namespace {

// The forward traffic and launches of the block's norms, residual adds, rotary, attention core and
// activation are its program's steps (block/block_program.cpp).
// The backward of an elementwise chain reads the saved inputs and the incoming gradient and
// writes the outgoing one: about twice the forward traffic.
constexpr double kBackwardElementwiseRatio = 2;
// Cross-entropy per logit, eager: upcast (2 + 4), log_softmax (4 + 4), gather/nll (4), backward
// softmax - onehot (4 + 4), cast back (4 + 2): 32, plus the matmul's 2-byte write: 34.
// Compiled or fused kernels read the 16-bit logits and write the 16-bit gradient: 2 + 2 + 2.
constexpr double kEagerLossBytesPerLogit = 34, kFusedLossBytesPerLogit = 6;
// Of these, the forward's: eager 6 + 8 + 4 + 2 = 20; fused, the matmul's write and the read 2 + 2.
constexpr double kEagerLossForwardBytesPerLogit = 20, kFusedLossForwardBytesPerLogit = 4;
// FlashAttention's backward runs five matmuls against the forward's two, recomputing the scores
// (Dao 2023, Algorithm 2): 2.5 x the forward FLOPs.
constexpr double kFlashBackwardRatio = 2.5;
// A flash-attention kernel pays a fixed cost per query tile that its keys amortise: measured on
// H100 (pytorch/benchmark PR #2391, D60117034: forward TFLOP/s at head dim 128 with batch x
// sequence = 16k, FlashAttention-3 and the Triton FlashAttention-2 tutorial kernel), both
// kernels' rates at 512 ... 16k keys follow L / (L + 240) within 1 % of their 16k rate
// (0.69, 0.82, 0.91, 0.95–0.96, 0.99 at 512, 1k, 2k, 4k, 8k). The efficiencies above are long-
// sequence figures: a kernel whose queries see L keys on average runs at
// (L / (L + 240)) / (16k / (16k + 240)) of them, at most 1.
constexpr double kFlashHalfRateKeys = 240, kFlashLongKeys = 16384;
// FlashAttention's Triton kernel (flash_attn_triton.py, the "FlashAttention in Triton" of Dao 2023,
// "FlashAttention-2", §4.1): FlashAttention-2 is "around 1.3-1.5x faster than FlashAttention in
// Triton in the forward pass and around 2x faster in the backward pass" (A100, head dims 64 and
// 128, causal and not, 512 to 16k tokens). The kernel runs at the flash rates (attention_efficiency_for,
// FlashAttention-2's) divided by the middle of the forward range and by the backward's 2.
constexpr double kTritonFlashForwardSlowdown = 1.4, kTritonFlashBackwardSlowdown = 2.0;
// The backward launches about two kernels per forward kernel (a linear's dgrad and wgrad GEMMs, an
// elementwise op's gradient and its accumulation).
constexpr double kBackwardKernelsPerForward = 2;
constexpr double kLoraKernels = 4;
// The output layer and the loss: the head GEMM, the loss's upcast, log-softmax, gather and mean.
constexpr double kHeadLossKernels = 5;
// Eager attention writes the scores, the softmax (and its fp32 upcast in most models) and reads
// them back: ~12 bytes per score in the forward, twice that in the backward.
constexpr double kEagerScoreBytes = 12;
// fp8 linears with dynamic tensorwise scaling that keep their high-precision inputs (torchao
// Float8Linear @eab345c, float8/float8_linear.py matmul_with_hp_or_float8_args and
// float8_scaling_utils.hp_tensor_to_float8_dynamic): each cast reads the 16-bit tensor for its
// amax, reads it again and writes the fp8 copy, 2 + 2 + 1 = 5 bytes per element. Forward: the
// input (and the weight, per micro-batch). Backward: grad_output twice (for grad_input and, along
// the other dimension, for grad_weight), the input again, the weight again, and the two
// grad_weight operands re-laid out for _scaled_mm (read 1 + write 1 each).
constexpr double kFp8CastBytes = 5, kFp8RelayoutBytes = 2;
// Transformer Engine's fused cast + transpose reads the 16-bit tensor and writes a row-major and a
// transposed fp8 copy (2 + 1 + 1 bytes per element); a transpose of an fp8 tensor reads and
// writes one byte each.
constexpr double kTeCastTransposeBytes = 4, kTeTransposeBytes = 2;
// Training GEMMs run below the largest rate a shape sweep finds (MAMF picks the fastest shape and
// the fastest of its runs, stas00/ml-engineering benchmarks/README.md): measured at transformer
// layer shapes they reach 0.90 of it. H100 SXM: about 720 TFLOP/s over Llama 70B's tensor-parallel
// linears (M 16384; fused QKV, attention out, FFN up and down) and 8192^3, median time, L2 flushed,
// random inputs (SemiAnalysis, "MI300X vs H100 vs H200 Benchmark Part 1: Training", Dec 2024),
// against an H100 MAMF of 794.5: 0.906. A100-class results of EleutherAI/cookbook @0f810f8e
// benchmarks/sizing/sample_results/transformer.out (h 4096, 8192 tokens: QKV 241.6, attention
// out 234.9, h->4h 241.1, 4h->h 252.8 TFLOP/s; 244.5 FLOP-weighted) against the A100 MAMF of
// 271.2: 0.902. A check that set nothing: on an H200 NVL (835.5 TFLOP/s dense), Transformer
// Engine's GEMM profiling example times a layer's bf16 GEMMs (h 4096, FFN 16384, 15,872 tokens;
// NVIDIA/TransformerEngine @d0067d0d docs/examples/gemm_profiling/gemm_profiling.rst) at 10.653 ms
// forward for 6.39 TFLOP: 600 TFLOP/s, where 0.90 x 80.3 % of 835.5 gives 604.
constexpr double kTrainingShapeShareOfSweepMax = 0.90;

double peak_tflops(const GpuSpec& g, Precision p, bool linears) {
  double v = 0;
  switch (p) {
    case Precision::kFp32: v = g.dense_tflops_fp32; break;
    case Precision::kAmpFp16:
    case Precision::kFp16: v = g.dense_tflops_fp16; break;
    case Precision::kFp8: v = linears && g.dense_tflops_fp8 > 0 ? g.dense_tflops_fp8 : g.dense_tflops_bf16; break;
    default: v = g.dense_tflops_bf16; break;
  }
  if (v <= 0) v = g.dense_tflops_fp16 > 0 && p != Precision::kFp32 && p != Precision::kAmpBf16 && p != Precision::kBf16
                      ? g.dense_tflops_fp16
                      : g.dense_tflops_fp32;  // bf16 emulated where the tensor cores lack it (V100)
  return std::max(v, 1e-3) * 1e12;
}

bool is_hopper(const GpuSpec& gpu) {
  const std::string& id = gpu.id;
  return id.rfind("H100", 0) == 0 || id == "H200" || id == "H20" || id == "GH200";
}

double sixteen_bit_peak(const GpuSpec& g) {
  const double v = g.dense_tflops_bf16 > 0 ? g.dense_tflops_bf16 : g.dense_tflops_fp16 > 0 ? g.dense_tflops_fp16 : g.dense_tflops_fp32;
  return std::max(v, 1e-3) * 1e12;
}

// One group of ranks and the links it crosses: ranks are placed tp innermost, then cp, dp
// (with ep inside dp x cp), pp outermost (Megatron's default order tp-cp-ep-dp-pp). A group of
// `group` ranks, `stride` ranks apart (the product of the degrees inside it), stays in a node when
// stride x group fits one. Across nodes a collective runs over the NICs of all its ranks in a
// node: NCCL builds one ring per NIC and splits the operation between them over NVLink
// (NVIDIA/nccl issue #601: "creates 4 rings, each using a different NIC"; multi-NIC aggregation
// "works well when GPUs are connected through NVLink"), so each rank moves its share at the
// per-GPU NIC bandwidth times its group's ranks per node, up to the node's own links. A
// point-to-point transfer (a pipeline send, a ring-attention hand-off) crosses one NIC. Its
// latency follows NCCL's model over the nodes the group spans (nccl_all_reduce_s).
using Link = CollectiveLink;

enum class Traffic { kCollective, kPointToPoint };

Link link_for(std::int64_t stride, std::int64_t group, const ClusterSpec& c, const PerfConstants& k,
              Traffic traffic = Traffic::kCollective) {
  stride = std::max<std::int64_t>(stride, 1);
  group = std::max<std::int64_t>(group, 1);
  // In doubles: no overflow whatever the degrees, and exact wherever the answer is close.
  const bool intra = static_cast<double>(stride) * static_cast<double>(group) <= static_cast<double>(c.gpus_per_node);
  // The group's ranks in one node: all of it inside a node, else those `stride` apart in it.
  const std::int64_t per_node = intra ? group : stride < c.gpus_per_node ? std::min(c.gpus_per_node / stride, group) : 1;
  // Inside a node, the links among the group's GPUs (all alike behind NVSwitch; DGX-1's hybrid cube mesh).
  double gb = intra ? intra_node_group_gb_per_s(c.gpu, c.gpus_per_node, stride, group) : c.gpu.intra_node_bandwidth_gb_per_s;
  if (!intra) {
    gb = c.inter_node_bandwidth_gb_per_s;
    if (traffic == Traffic::kCollective && per_node > 1) {
      gb = std::max(gb, std::min(c.gpu.intra_node_bandwidth_gb_per_s, static_cast<double>(per_node) * gb));
    }
  }
  Link l;
  l.bytes_per_s = std::max(gb, 1e-3) * 1e9 * k.collective_efficiency;
  l.nodes = traffic == Traffic::kPointToPoint && !intra ? 2 : (group + per_node - 1) / per_node;
  // NVLink-class links inside a node (NVLink, Infinity Fabric) are several times PCIe's.
  l.nvlink = c.gpu.intra_node_bandwidth_gb_per_s > 2 * c.gpu.pcie_bandwidth_gb_per_s;
  return l;
}

double all_reduce_s(double bytes, std::int64_t n, const Link& l, const PerfConstants& k) {
  return nccl_all_reduce_s(bytes, n, l, k);
}
double gather_s(double bytes, std::int64_t n, const Link& l, const PerfConstants& k) {
  return nccl_ring_gather_s(bytes, n, l, k);
}

const std::vector<BlockMatmul>* matmuls_for(const PerfLayer& pl, std::int64_t tp) {
  for (const auto& [t, mms] : pl.matmuls_by_tp) {
    if (t == tp) return &mms;
  }
  return nullptr;
}

// What the checkpointing policy keeps of one micro-batch over the whole model on a rank of `l`:
// the memory replay's kept set (the setup as the layout runs it, the plan's tokens and activation
// split, layer_keep).
double kept_activation_bytes(const PerfBasis& b, const TrainingSetup& t, const ParallelLayout& l, const RankPlan& plan) {
  const double tokens = static_cast<double>(plan.tokens_per_micro_batch), positions = static_cast<double>(plan.positions);
  std::optional<TrainingSetup> resolved;  // a copy (the LoRA target list) only when the layout changes it
  if (setup_changes_as_run(l, t)) resolved = resolve_distributed_setup(l, t);
  const TrainingSetup& run = resolved ? *resolved : t;
  std::optional<TrainingSetup> unchecked;
  if (policy_reads_unchecked_layer(run)) {
    unchecked = run;
    unchecked->checkpointing = Checkpointing::kNone;
  }
  const ActivationSplit& split = plan.split;
  // As the replay (memory/timeline.cpp): a freeze run's frozen layers are a range of their own,
  // and without checkpointing they keep nothing.
  const bool decoder_freeze = trains_block_range(run) && b.arch.kind == ArchKind::kDecoder;
  const std::int64_t first_trained = decoder_freeze ? first_trained_layer(run, b.arch.num_layers) : 0;
  const std::int64_t badam_above = decoder_freeze && run.method == Method::kFull ? first_trained + 1 : first_trained;
  double kept = 0;
  for (const PerfLayer& pl : b.layers) {
    const std::int64_t lo = pl.first_layer, hi = pl.first_layer + pl.count;
    const std::int64_t cut = std::clamp(first_trained, lo, hi), cut_above = std::clamp(badam_above, cut, hi);
    for (const auto& [from, to] : {std::pair{lo, cut}, std::pair{cut, cut_above}, std::pair{cut_above, hi}}) {
      const bool trains = layer_trains(run, to - 1, b.arch.num_layers);
      if (to <= from || (decoder_freeze && to <= first_trained && run.checkpointing == Checkpointing::kNone)) continue;
      const LayerActivations acts = layer_activations(b.arch, unchecked ? *unchecked : run, pl.moe, pl.cross_attention,
                                                      decoder_freeze ? trains : pl.base_trains, split);
      kept += layer_keep(acts, run, from, to).bytes_per_layer(tokens, positions) * static_cast<double>(to - from);
    }
  }
  return kept;
}

}  // namespace

double flash_length_factor(double keys) {
  if (keys <= 0) return 1;
  const double at = keys / (keys + kFlashHalfRateKeys);
  return std::min(1.0, at / (kFlashLongKeys / (kFlashLongKeys + kFlashHalfRateKeys)));
}

double nccl_ring_gather_s(double bytes, std::int64_t ranks, const CollectiveLink& l, const PerfConstants& k) {
  if (ranks <= 1 || bytes <= 0) return 0;
  const double n = static_cast<double>(ranks);
  const double inter = static_cast<double>(std::clamp<std::int64_t>(l.nodes, 1, ranks) - 1);
  const double hop = l.nvlink ? k.nccl_ring_hop_nvlink_s : k.nccl_ring_hop_pcie_s;
  const double latency = k.nccl_base_latency_s + (n - 1 - inter) * hop + inter * k.nccl_ring_hop_net_s;
  return latency + (n - 1) / n * bytes / l.bytes_per_s;
}

double nccl_all_reduce_s(double bytes, std::int64_t ranks, const CollectiveLink& l, const PerfConstants& k) {
  if (ranks <= 1 || bytes <= 0) return 0;
  const double n = static_cast<double>(ranks);
  const std::int64_t nodes = std::clamp<std::int64_t>(l.nodes, 1, ranks);
  const double inter = 2.0 * static_cast<double>(nodes - 1);
  const double hop = l.nvlink ? k.nccl_ring_hop_nvlink_s : k.nccl_ring_hop_pcie_s;
  const double ring = k.nccl_base_latency_s + (2 * (n - 1) - inter) * hop + inter * k.nccl_ring_hop_net_s +
                      2 * (n - 1) / n * bytes / l.bytes_per_s;
  if (nodes == 1) return ring;
  const double per_node = n / static_cast<double>(nodes);
  const double tree = 2 * ((per_node - 1) * k.nccl_tree_hop_intra_s + std::floor(std::log2(static_cast<double>(nodes))) * k.nccl_tree_hop_net_s) +
                      bytes / (k.nccl_tree_bandwidth_share * l.bytes_per_s);
  return std::min(ring, tree);
}

double nccl_p2p_latency_s(const CollectiveLink& l, const PerfConstants& k) {
  return k.nccl_base_latency_s + (l.nodes > 1 ? k.nccl_ring_hop_net_s : l.nvlink ? k.nccl_ring_hop_nvlink_s : k.nccl_ring_hop_pcie_s);
}

namespace {
// Output tiles of cuBLAS's largest kernels (Matrix Multiplication Background User's Guide, §2.3:
// 256 x 128 and 128 x 256 the most efficient, 128 x 128 next).
constexpr double kGemmTiles[][2] = {{256, 128}, {128, 256}, {128, 128}};
constexpr double kSplitKPartialBytes = 4;  // fp32 partial sums, written and read back once each
}  // namespace

namespace {
// gemm_time_s is pure and a search asks for the same few shapes on thousands of layouts: the
// last answers, direct-mapped by shape and kernel.
struct GemmMemo {
  double batch = -1, m = -1, n = -1, k = -1;
  GemmKernel g;
  double seconds = 0;
};
constexpr std::size_t kGemmMemoSlots = 512;  // 2^9: the slot is a product hash's top 9 bits

bool same_kernel(const GemmKernel& a, const GemmKernel& b) {
  return a.mainloop_flops == b.mainloop_flops && a.sms == b.sms && a.hbm_bytes_per_s == b.hbm_bytes_per_s &&
         a.in_bytes == b.in_bytes && a.out_bytes == b.out_bytes;
}

double shaped_gemm_time_s(double batch, double m, double n, double k, const GemmKernel& g);

std::uint64_t bits_of(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
}  // namespace

double batched_gemm_time_s(double batch, double m, double n, double k, const GemmKernel& g) {
  if (batch <= 0 || m <= 0 || n <= 0 || k <= 0) return 0;
  thread_local GemmMemo memo[kGemmMemoSlots];
  const std::size_t slot = (bits_of(m) * 0x9E3779B97F4A7C15ULL ^ bits_of(n) * 0xC2B2AE3D27D4EB4FULL ^
                            bits_of(k) * 0x165667B19E3779F9ULL ^ bits_of(batch) * 0x27D4EB2F165667C5ULL ^
                            bits_of(g.mainloop_flops)) >> 55;  // 9 bits
  GemmMemo& e = memo[slot];
  if (e.batch != batch || e.m != m || e.n != n || e.k != k || !same_kernel(e.g, g)) {
    e = {batch, m, n, k, g, shaped_gemm_time_s(batch, m, n, k, g)};
  }
  return e.seconds;
}

double gemm_time_s(double m, double n, double k, const GemmKernel& g) { return batched_gemm_time_s(1, m, n, k, g); }

GemmKernel gemm_kernel_for_leading_dims(const GemmKernel& g, std::initializer_list<double> leading_dims) {
  constexpr std::int64_t kAlignedBytes = 16;
  GemmKernel out = g;
  for (const double dim : leading_dims) {
    const double bytes = dim * g.in_bytes;
    const auto whole = static_cast<std::int64_t>(bytes);
    if (static_cast<double>(whole) != bytes || whole % kAlignedBytes != 0) {  // a fraction of an element is unaligned too
      out.mainloop_flops = g.mainloop_flops * kGemmUnalignedMainloopShare;
      break;
    }
  }
  return out;
}

namespace {
double shaped_gemm_time_s(double batch, double m, double n, double k, const GemmKernel& g) {
  const double flops = 2 * batch * m * n * k;
  const double hbm = std::max(g.hbm_bytes_per_s, 1.0);
  const double roofline = batch * ((m * k + k * n) * g.in_bytes + m * n * g.out_bytes) / hbm;
  const double rate = std::max(g.mainloop_flops, 1.0);
  if (g.sms <= 0) return std::max(flops / rate, roofline);
  const double per_sm = rate / g.sms;
  double best = 0;
  for (const auto& tile : kGemmTiles) {
    const double tiles = batch * std::ceil(m / tile[0]) * std::ceil(n / tile[1]);
    const double tile_flops_per_k = 2 * tile[0] * tile[1];
    // Split k while the chunks stay kGemmSplitKMinChunk deep; split 1 is always allowed.
    for (double split = 1; split == 1 || k / split >= kGemmSplitKMinChunk; split *= 2) {
      const double waves = std::ceil(tiles * split / g.sms);
      double t = waves * tile_flops_per_k * (std::ceil(k / split) + kGemmTileFixedK) / per_sm;
      if (split > 1) t += split * batch * m * n * 2 * kSplitKPartialBytes / hbm;
      if (best == 0 || t < best) best = t;
    }
  }
  return std::max(best, roofline);
}
}  // namespace

double overlapped_exposed_s(double comm_s, double window_s, double slowdown) {
  if (comm_s <= 0) return 0;
  return std::max(comm_s - std::max(window_s, 0.0), comm_s * overlap_contention_share(slowdown));
}

RingAttentionCost ring_attention_cost(const RingAttentionShape& s, double attn_fwd_s, double attn_bwd_s,
                                      double link_bytes_per_s, double link_latency_s, double hbm_bytes_per_s,
                                      double slowdown) {
  RingAttentionCost r;
  if (s.cp <= 1 || s.tokens <= 0) return r;
  const double cp = static_cast<double>(s.cp), later = cp - 1, e = s.act_bytes;
  const double fwd_step = attn_fwd_s / cp, bwd_step = attn_bwd_s / cp;
  const double kv = s.tokens * s.kv_width, q = s.tokens * s.q_width, out = s.tokens * s.out_width;
  const double bw = std::max(link_bytes_per_s, 1.0), hbm = std::max(hbm_bytes_per_s, 1.0);
  auto send_s = [&](double bytes) { return bytes / bw + link_latency_s; };
  if (!s.gather_rotation) {
    // Transformer Engine: step i computes on the chunk received in step i - 1 while the next
    // one travels; the backward sends K/V and the accumulated dK/dV on together.
    const double kv_send = send_s(kv * e);
    r.forward_exposed_s = later * overlapped_exposed_s(kv_send, fwd_step, slowdown);
    r.backward_exposed_s = later * overlapped_exposed_s(2 * kv_send, bwd_step, slowdown);
    // Its corrections, one fused kernel per step in the compute dtype (context_parallel.py @
    // d0067d0d: flash_attn_fwd_out_correction_init, then out.add_(out_per_step x exp(lse diff));
    // backward dq, dk, dv copied on the first step and added on later ones): the first step reads
    // and writes each element (2e), every later step reads two and writes one (3e); counted for
    // the ring's last rank, whose steps all take whole chunks.
    const double steps_bytes = 2 * e + later * 3 * e;
    r.forward_merge_s = out * steps_bytes / hbm;
    r.backward_merge_s = (q + kv) * steps_bytes / hbm;
    r.forward_kernels = cp * kTeRingForwardKernelsPerStep;
    r.backward_kernels = cp * kTeRingBackwardKernelsPerStep;
    return r;
  }
  // PyTorch: _AllGatherRotater gathers every rank's K/V once and next_buffer() waits for it
  // before the second step, so only the first step's kernel hides it (forward, and again in the
  // backward). The backward's dK/dV travel in fp32 (convert_to_f32) one rank on after every
  // step (_AllToAllRotater); the send after the last step is waited on with nothing to hide it.
  const double gather = later * kv * e / bw + link_latency_s;
  const double dkv_send = send_s(kv * 4);
  r.forward_exposed_s = overlapped_exposed_s(gather, fwd_step, slowdown);
  r.backward_exposed_s = overlapped_exposed_s(gather, bwd_step, slowdown) +
                         later * overlapped_exposed_s(dkv_send, bwd_step, slowdown) + dkv_send;
  // Merge kernels, read off _SDPAMerger and _templated_ring_attention(_backward) as eager
  // PyTorch runs them, for the last rank of the ring (its later steps all take whole chunks):
  // forward, per output element: each step's output cast to fp32 (e + 4), then per later step
  // out - block_out (12), x sigmoid(lse diff) (8), out - that (12), and the result cast back
  // (4 + e); per K/V element, the torch.cat of K and V before each send (2e).
  const double cast_in = e + 4, cast_out = 4 + e;
  const double fwd_bytes = out * (cp * cast_in + later * 32 + cast_out) + kv * later * 2 * e;
  // Backward: fp32 zeros for dQ, dK, dV (4 each); per step dQ += the kernel's dq (4 + e + 4);
  // dK/dV: += on the first step, then a half-chunk add plus the torch.cat that rebuilds the
  // whole (_partial_update: (4 + e + 4) / 2 + 8) on later steps, the torch.cat of dK and dV
  // before every send (8), the K/V concatenation before each later send (2e); casts back (4 + e).
  const double accum = 4 + e + 4;
  const double bwd_bytes = q * (4 + cp * accum + cast_out) +
                           kv * (4 + accum + later * (accum / 2 + 8) + cp * 8 + later * 2 * e + cast_out);
  r.forward_merge_s = fwd_bytes / hbm;
  r.backward_merge_s = bwd_bytes / hbm;
  r.forward_kernels = cp * kTorchRingForwardKernelsPerStep;
  r.backward_kernels = cp * kTorchRingBackwardKernelsPerStep;
  return r;
}

double wave_fill(double ctas, double slots) {
  if (slots <= 0 || ctas <= 0) return 1;
  return ctas / (std::ceil(ctas / slots) * slots);
}

FlashFill flash_call_fill(double batch, double heads, double queries, double keys, double sms, double forward_calls) {
  FlashFill f;
  if (sms <= 0) return f;
  const double bh = std::max(batch, 1.0) * std::max(heads, 1.0);
  f.forward = wave_fill(forward_calls * bh * std::ceil(queries / kFlashForwardBlockQueries), sms * kFlashForwardCtasPerSm);
  f.backward = wave_fill(bh * std::ceil(keys / kFlashBackwardBlockKeys), sms * kFlashBackwardCtasPerSm);
  return f;
}

FlashFill ring_flash_fill(double batch, double heads, double local, std::int64_t cp, bool causal, double sms,
                          bool two_streams) {
  if (cp <= 1 || sms <= 0) return {};
  const double later = static_cast<double>(cp - 1), steps = static_cast<double>(cp);
  const double pair = two_streams ? 2.0 : 1.0;
  // The first step's causal block: its CTAs carry unequal work (query block j computes j + 1 key
  // blocks), so it is taken at the kernel's measured causal rate, as a whole-sequence call is.
  const FlashFill first = causal ? FlashFill{} : flash_call_fill(batch, heads, local, local, sms);
  // Time over fill, summed over the steps (each 1/cp of the FLOPs), gives the harmonic mean.
  double fwd = 1 / first.forward, bwd = 1 / first.backward;
  if (!causal) {
    const FlashFill whole = flash_call_fill(batch, heads, local, local, sms, pair);
    fwd += later / whole.forward;
    bwd += later / whole.backward;
  } else {
    const FlashFill half_keys = flash_call_fill(batch, heads, local, local / 2, sms, pair);
    const FlashFill half_queries = flash_call_fill(batch, heads, local / 2, local, sms, pair);
    fwd += later / 2 * (1 / half_keys.forward + 1 / half_queries.forward);
    bwd += later / 2 * (1 / half_keys.backward + 1 / half_queries.backward);
  }
  return {steps / fwd, steps / bwd};
}

double ulysses_all_to_all_s(const RingAttentionShape& s, double link_bytes_per_s, double link_latency_s) {
  if (s.cp <= 1 || s.tokens <= 0) return 0;
  const double cp = static_cast<double>(s.cp), bw = std::max(link_bytes_per_s, 1.0);
  const double sent = s.tokens * s.act_bytes * (cp - 1) / cp;
  const double widths[] = {s.q_width, s.kv_width / 2, s.kv_width / 2, s.out_width};
  double seconds = 0;
  for (double w : widths) seconds += sent * w / bw + link_latency_s;
  return seconds;
}

double matmul_efficiency_for(const GpuSpec& gpu) {
  const std::string& id = gpu.id;
  double sweep_max = 0.80;
  if (id.rfind("A100", 0) == 0) sweep_max = 0.869;
  else if (id == "GH200") sweep_max = 0.836;
  else if (id.rfind("H100", 0) == 0 || id == "H200" || id == "H20") sweep_max = 0.803;
  else if (id == "MI250X") sweep_max = 0.767;
  // stas00/ml-engineering's current table (mean of 100 iterations after 50 warm-ups, the one the
  // NVIDIA figures above come from): MI300X 668.4 of 1300 with TunableOp (51.4 %), MI325X 784.9
  // (60.4 %); its 60.1 % for the MI300X came from the earlier fastest-iteration table.
  else if (id == "MI325X") sweep_max = 0.604;
  else if (id.rfind("MI3", 0) == 0) sweep_max = 0.514;
  // Blackwell, the same table @744d01e1 (2026-08): B200 SXM 1745.0 of 2250 (77.6 %, torch 2.7.1+cu128),
  // GB200 1822.0 of 2500 (72.9 %, torch 2.10 dev).
  else if (id == "B200") sweep_max = 0.776;
  else if (id == "GB200") sweep_max = 0.729;
  return sweep_max * kTrainingShapeShareOfSweepMax;
}

double fp8_matmul_share_of_bf16(const GpuSpec& gpu) {
  // FP8 (float8_e4m3fn) MAMF over the bf16 one, both of their own dense peaks (stas00/ml-engineering
  // compute/accelerator/README.md @744d01e1, FP8 and BF16 tables): H100 SXM 70.9 / 80.3 %, H200 73.4 /
  // 80.3 % (bf16 "H200 is the same"), GH200 77.6 / 83.8 %, B200 76.3 / 77.6 %, GB200 72.3 / 72.9 %.
  // The H100 PCIe and H20 take the H100 SXM's, as their bf16 share does; other GPUs 1 (unmeasured).
  const std::string& id = gpu.id;
  if (id == "H200") return 0.734 / 0.803;
  if (id == "GH200") return 0.776 / 0.838;
  if (id.rfind("H100", 0) == 0 || id == "H20") return 0.709 / 0.803;
  if (id == "B200") return 0.763 / 0.776;
  if (id == "GB200") return 0.723 / 0.729;
  return 1.0;
}

double attention_efficiency_for(const GpuSpec& gpu) {
  const std::string& id = gpu.id;
  if (is_hopper(gpu)) return 0.35;
  // CDNA3 (MI300X, MI325X): PyTorch's fused attention on ROCm runs AOTriton's kernel, measured on
  // an MI300X forward at head dim 128, causal, at 256.9 / 289.5 / 306.5 TFLOP/s for 4k / 8k / 16k
  // tokens (midiareshadi/attn-dsl-bench @603819b3 results/raw/sweep_v1.csv, ROCm 7.2.2, PyTorch
  // 2.10, 2026-05): 306.5 at 8k keys per query on average is 0.986 of its long-sequence rate
  // (flash_length_factor), 311 TFLOP/s, 0.238 of the 1307.4 TFLOP/s peak. No backward was
  // measured; it is taken at the same rate, as on the other GPUs.
  if (id.rfind("MI3", 0) == 0) return 0.238;
  return 0.5;
}

GemmKernel gemm_kernel_for(const GpuSpec& gpu, Precision precision, const PerfConstants& k) {
  const double training_shape_rate = k.matmul_efficiency > 0 ? k.matmul_efficiency : matmul_efficiency_for(gpu);
  GemmKernel g;
  g.mainloop_flops = peak_tflops(gpu, precision, true) * training_shape_rate / kTrainingShapeShareOfSweepMax *
                     kGemmMainloopShareOfSweepMax * (precision == Precision::kFp8 ? fp8_matmul_share_of_bf16(gpu) : 1.0);
  g.sms = static_cast<double>(gpu.sm_count);
  g.hbm_bytes_per_s = std::max(gpu.memory_bandwidth_gb_per_s, 1e-3) * 1e9 * k.memory_efficiency;
  g.out_bytes = static_cast<double>(activation_bytes(precision));
  g.in_bytes = precision == Precision::kFp8 ? 1.0 : g.out_bytes;  // _scaled_mm / TE GEMMs read 1-byte operands
  return g;
}

double AttentionRates::forward_share(double keys) const {
  if (normalised) return flash_length_factor(keys);
  return keys <= 0 ? 1.0 : keys / (keys + half_rate_keys);
}

AttentionRates attention_rates_for(const GpuSpec& gpu, AttentionKernel kernel, const PerfConstants& k, bool measured_sdpa) {
  AttentionRates r;
  // The H200 sweep's SDPA rates (kSdpaHopper*) apply only where the run is known to use that
  // kernel: `measured_sdpa`. Which backend torch 2.11 picked was not recorded, and its 617 TFLOP/s
  // forward is 1.8x what FlashAttention-2 reaches on Hopper, the kernel of the runs measured so far.
  if (measured_sdpa && k.flash_attention_efficiency <= 0 && kernel == AttentionKernel::kSdpa && is_hopper(gpu)) {
    r.fwd_efficiency = kSdpaHopperForwardEfficiency;
    r.bwd_efficiency = kSdpaHopperBackwardEfficiency;
    r.half_rate_keys = kSdpaHopperHalfRateKeys;
    r.normalised = false;
    return r;
  }
  r.fwd_efficiency = r.bwd_efficiency = k.flash_attention_efficiency > 0 ? k.flash_attention_efficiency : attention_efficiency_for(gpu);
  r.half_rate_keys = kFlashHalfRateKeys;
  if (kernel == AttentionKernel::kFlashTriton) {
    r.fwd_efficiency /= kTritonFlashForwardSlowdown;
    r.bwd_efficiency /= kTritonFlashBackwardSlowdown;
  }
  return r;
}

PerfConstants resolved_for(const PerfConstants& k, const GpuSpec& gpu) {
  PerfConstants r = k;
  if (r.matmul_efficiency <= 0) r.matmul_efficiency = matmul_efficiency_for(gpu);
  if (r.flash_attention_efficiency <= 0) r.flash_attention_efficiency = attention_efficiency_for(gpu);
  return r;
}

PerfBasis build_perf_basis(const ModelArchitecture& a, const TensorInventory& inv, const TrainingSetup& t) {
  PerfBasis b;
  b.arch = a;
  b.num_layers = a.num_layers + a.num_encoder_layers;
  b.hidden = a.hidden_size;
  b.vocab = a.vocab_size;
  b.causal = a.kind != ArchKind::kEncoder;
  b.sliding_window = a.attention.sliding_window;
  const bool lora = is_lora_like(t.method);
  const AttentionSpec& at = a.attention;
  const AttentionDims dims = attention_dims(a);
  const double qk_dim = static_cast<double>(dims.qk_head_dim), v_dim = static_cast<double>(dims.v_head_dim);
  const double heads = static_cast<double>(dims.heads);
  const double h = static_cast<double>(a.hidden_size);
  double active_block_params = 0;
  // The block's matmuls as the framework's modules run them (fused projections read their input
  // once); the checkpointing policy below counts them in the checkpoint's own order.
  ModelArchitecture as_run_storage;
  const bool fuse_qkv = t.fused_qkv_linear && at.layout == QkvLayout::kSeparate;
  const bool fuse_gate_up = t.fused_gate_up_linear && a.mlp.gated && !a.mlp.fused_gate_up;
  if (fuse_qkv || fuse_gate_up) {
    as_run_storage = a;
    if (fuse_qkv) as_run_storage.attention.layout = QkvLayout::kFused;
    if (fuse_gate_up) as_run_storage.mlp.fused_gate_up = true;
  }
  const ModelArchitecture& as_run = fuse_qkv || fuse_gate_up ? as_run_storage : a;
  for (const LayerGroup& g : inv.groups) {
    PerfLayer pl;
    pl.count = g.layer_count;
    pl.first_layer = g.first_layer;
    pl.moe = g.moe;
    // Layers of the group whose base weights train (freeze trains the last k blocks).
    std::int64_t training_layers = 0;
    if (!lora) {
      for (std::int64_t i = 0; i < g.layer_count; ++i) training_layers += layer_trains(t, g.first_layer + i, a.num_layers) ? 1 : 0;
    }
    const double train_fraction = static_cast<double>(training_layers) / static_cast<double>(std::max<std::int64_t>(1, g.layer_count));
    double active_linear = 0, adapter_params = 0, adapter_active = 0, adapted_linears = 0;
    for (const TensorSpec& s : g.tensors) {
      const double n = static_cast<double>(s.numel());
      if (s.kind == ModuleKind::kExpert) pl.expert_params += n * static_cast<double>(s.copies);
      else pl.dense_params += n * static_cast<double>(s.copies);
      if (!s.linear_weight) continue;
      const double per_token_copies = s.kind == ModuleKind::kExpert ? static_cast<double>(a.moe.top_k) : static_cast<double>(s.copies);
      active_linear += n * per_token_copies;
      if (s.shape.size() == 2) {  // [out, in]
        pl.linear_out_width += static_cast<double>(s.shape[0]) * per_token_copies;
        pl.linear_in_width += static_cast<double>(s.shape[1]) * per_token_copies;
        pl.linear_count += per_token_copies;
      }
      const std::optional<AdaptedLinear> adapter = lora ? adapted_linear(t, s) : std::nullopt;
      if (adapter) {
        // The trainable parameters the memory model holds (DoRA's magnitude beside A and B); the
        // FLOPs of A and B, r(in + out) per token.
        adapter_params += static_cast<double>(adapter->params) * static_cast<double>(s.copies);
        adapter_active += static_cast<double>(adapter->lora_factor_elems) * per_token_copies;
        adapted_linears += per_token_copies;
      }
    }
    active_block_params += active_linear * static_cast<double>(g.layer_count);
    pl.matmul_flops_fwd = 2.0 * (active_linear + adapter_active);
    pl.matmul_trainable_flops_fwd = lora ? 2.0 * adapter_active : 2.0 * active_linear * train_fraction;
    pl.trainable_params = lora ? adapter_params : (pl.dense_params + pl.expert_params) * train_fraction;
    b.trainable_params += pl.trainable_params * static_cast<double>(g.layer_count);
    pl.attention_flops_fwd_per_ctx = 2.0 * heads * (qk_dim + v_dim);
    pl.heads = heads;
    pl.ring_kv_heads = static_cast<double>(kernel_kv_heads(a, t));
    pl.cross_attention = g.stack == Stack::kDecoder && a.kind == ArchKind::kEncoderDecoder;
    pl.base_trains = layer_trains(t, g.first_layer + g.layer_count - 1, a.num_layers);
    pl.qk_dim = qk_dim;
    pl.v_dim = v_dim;
    // The block's steps (norms, residual adds, rotary, activation): their forward traffic on the
    // hidden width (`wide`) and on heads and MLP columns, and their launches, per runtime; the MoE
    // dispatch's expert-parallel exchange.
    const BlockProgram steps = block_program(a, t, g.moe, pl.base_trains);
    ByRuntime step_kernels;
    for (std::size_t i = 0; i < steps.step_count; ++i) {
      const BlockStep& st = steps.steps[i];
      const double copies = st.part == BlockPart::kRoutedExpert ? static_cast<double>(steps.routed_copies) : 1.0;
      if (st.kind == StepKind::kDispatch) {
        pl.routed_tokens = copies;
        pl.dispatch_elems = static_cast<double>(st.elems.at(1));
        pl.all_to_alls_fwd = st.all_to_alls_fwd;
      }
      const double elems = static_cast<double>(st.elems.at(1)) * copies;
      (st.sequence_split ? pl.elementwise_wide_fwd : pl.elementwise_split_fwd) += st.hbm_bytes_per_elem.eager * elems;
      (st.sequence_split ? pl.elementwise_wide_fwd_compiled : pl.elementwise_split_fwd_compiled) += st.hbm_bytes_per_elem.compiled * elems;
      (st.sequence_split ? pl.elementwise_wide_fwd_fused : pl.elementwise_split_fwd_fused) += st.hbm_bytes_per_elem.fused * elems;
      step_kernels.eager += st.kernels.eager;
      step_kernels.compiled += st.kernels.compiled;
      step_kernels.fused += st.kernels.fused;
    }
    // The block's matmuls: as the model's modules run them (the op policy counts those), and as
    // the framework runs them.
    const BlockProgram program = block_program(a, g.moe), run_program = block_program(as_run, g.moe);
    {
      double all = 0, recomputed = 0;
      std::size_t i = 0;
      program.for_each_matmul(1, 1, [&](const BlockOp& op, std::int64_t tp) {
        const double flops = op.flops_per_token(tp);
        all += flops;
        if (i++ % 2 == 1) recomputed += flops;
      });
      pl.mm_policy_recomputed_fraction = all > 0 ? recomputed / all : 0;
    }
    for (std::int64_t tp = 1; tp <= at.num_heads; ++tp) {
      if (at.num_heads % tp == 0) pl.matmuls_by_tp.emplace_back(tp, block_matmuls(run_program, tp));
    }
    pl.adapter_flops_fwd = 2.0 * adapter_active;
    pl.base_train_share = lora ? 0.0 : train_fraction;
    {
      // Kernels per forward: the steps' and one per linear as the framework runs them.
      const double linears = static_cast<double>(run_program.matmul_count());
      // PEFT's LoRA Linear adds lora_A, lora_B, the scaling product and the sum per adapted
      // linear (and the dropout when it is on; peft tuners/lora/layer.py Linear.forward).
      const double adapters = adapted_linears * (kLoraKernels + (t.lora_dropout > 0 ? 1 : 0));
      pl.kernels_fwd_eager = step_kernels.eager + linears + adapters;
      pl.kernels_fwd_compiled = step_kernels.compiled + linears + adapters;
      pl.kernels_fwd_fused = step_kernels.fused + linears + adapters;
    }
    b.layers.push_back(pl);
  }
  const double head_matmul = a.has_lm_head ? static_cast<double>(a.vocab_size) * h : 0;
  b.head_flops_fwd = 2.0 * head_matmul;
  b.embedding_params = static_cast<double>(inv.params_by_kind[static_cast<int>(ModuleKind::kEmbedding)] +
                                           inv.params_by_kind[static_cast<int>(ModuleKind::kPositionEmbedding)]);
  b.head_params = static_cast<double>(inv.params_by_kind[static_cast<int>(ModuleKind::kLmHead)]);
  const bool whole_model_trains = globals_train(t, a.num_layers);
  b.head_trains = head_weight_trains(t, a.num_layers);
  // PEFT's modules_to_save copies train alone (a tied output layer's copy is its own).
  const double token_table = static_cast<double>(a.vocab_size) * h;
  b.embedding_trainable_params = whole_model_trains ? b.embedding_params : t.lora_saves_embedding ? token_table : 0;
  b.head_trainable_params = whole_model_trains ? b.head_params : t.lora_saves_head ? token_table : 0;
  b.trainable_params += b.embedding_trainable_params + b.head_trainable_params;
  b.model_flops_per_token_base = 6.0 * (active_block_params + head_matmul);
  b.model_flops_attention_per_ctx = 12.0 * static_cast<double>(b.num_layers) * heads * qk_dim;
  return b;
}

namespace {

// Eager attention's matmuls on one rank for one micro-batch (Megatron-LM's CoreAttention:
// torch.baddbmm for the scores and torch.bmm for the context over [micro-batch x heads];
// transformers' eager_attention_forward: torch.matmul over [batch, heads]): every score of the
// queries x keys matrix is computed, the causal mask's half included, as batched GEMMs at their
// own shapes (the tile model, gemm_time_s): forward Q K^T (queries x keys over the qk head dim)
// and P V (queries x v dim over the keys); backward dP = dO V^T, dV = P^T dO, dQ = dS K and
// dK = dS^T Q, twice the forward's FLOPs. A head dim far below a tile's K steps runs the scores'
// GEMMs well below the mainloop rate (BLOOM's 224: 54 %).
struct EagerAttentionGemms {
  double forward_s = 0, backward_s = 0, flops_fwd = 0;
};

EagerAttentionGemms eager_attention_gemms(const PerfLayer& pl, std::int64_t micro_batch, double queries, double keys,
                                          double head_split, const GemmKernel& g) {
  EagerAttentionGemms e;
  const double batch = static_cast<double>(micro_batch) * pl.heads / std::max(head_split, 1.0);
  const double qk = pl.qk_dim, v = pl.v_dim;
  // Each product's operands and output have the keys and one head dim as leading dimensions.
  const GemmKernel by_qk = gemm_kernel_for_leading_dims(g, {keys, qk}), by_v = gemm_kernel_for_leading_dims(g, {keys, v});
  e.forward_s = batched_gemm_time_s(batch, queries, keys, qk, by_qk) + batched_gemm_time_s(batch, queries, v, keys, by_v);
  e.backward_s = batched_gemm_time_s(batch, queries, keys, v, by_v) + batched_gemm_time_s(batch, keys, v, queries, by_v) +
                 batched_gemm_time_s(batch, queries, qk, keys, by_qk) + batched_gemm_time_s(batch, keys, qk, queries, by_qk);
  e.flops_fwd = 2.0 * batch * queries * keys * (qk + v);
  return e;
}

// Bytes of one gradient element as the buffer holds it (the main_grad as run under AMP).
double gradient_element_bytes(const TrainingSetup& t, const DistributedBehaviour& b) {
  if (!amp_like(t)) return static_cast<double>(weight_bytes(t.precision));
  return t.amp_weights == AmpWeights::kMasterInOptimizer ? static_cast<double>(main_grad_bytes_as_run(t, b)) : 4.0;
}

// stage_costs with the layout's rank plan (tokens, activation split, recomputation) at hand.
// `times`, when given, receives one micro-batch's parts (micro_batch_times, before any launch stretch).
StageCosts planned_stage_costs(const PerfBasis& b, const TrainingSetup& t, const ParallelLayout& l, const RankPlan& plan,
                               const ClusterSpec& c, const PerfConstants& k, MicroBatchTimes* times = nullptr) {
  const GpuSpec& g = c.gpu;
  const double tp = static_cast<double>(l.tp), cp = static_cast<double>(plan.cp);
  const double seq = static_cast<double>(model_positions(t));
  const double tokens = static_cast<double>(plan.tokens_per_micro_batch);  // per rank per micro-batch
  const double act_bytes = static_cast<double>(activation_bytes(t.precision));
  const PerfConstants by_gpu = resolved_for(k, g);
  const double mm_eff = by_gpu.matmul_efficiency;
  const double mm_peak = peak_tflops(g, t.precision, true) * mm_eff;
  const AttentionRates attn_rates = attention_rates_for(g, t.attention, k);
  const GemmKernel gemm = gemm_kernel_for(g, t.precision, by_gpu);
  // Attention's matmuls run in the 16-bit compute dtype under fp8 linears.
  const GemmKernel attn_gemm = gemm_kernel_for(g, t.precision == Precision::kFp8 ? Precision::kBf16 : t.precision, by_gpu);
  const double attn_peak = peak_tflops(g, t.precision == Precision::kFp8 ? Precision::kBf16 : t.precision, false);
  const double hbm = std::max(g.memory_bandwidth_gb_per_s, 1e-3) * 1e9 * k.memory_efficiency;
  const double elem_scale = act_bytes / 2.0;
  const bool nf4_base = effective_base_quant(t) == BaseQuant::kNf4;
  // A gradient add per micro-batch (grad_add_per_micro_batch): the 16-bit weight gradient read,
  // the buffer read and written, per trained weight, in the buffer's dtype as run (fp16 under
  // Megatron-LM's --fp16: main_grad_bytes_as_run).
  const double grad_add_bytes =
      l.behaviour.grad_add_per_micro_batch ? act_bytes + 2.0 * gradient_element_bytes(t, l.behaviour) : 0.0;
  const double ctx = !b.causal ? seq
                     : b.sliding_window > 0 ? std::min(static_cast<double>(b.sliding_window), seq / 2)
                                            : seq / 2;
  const bool flash = t.attention != AttentionKernel::kEager;
  const bool fp8_casts = t.precision == Precision::kFp8 && !t.fp8_saves_fp8_inputs;
  const bool fp8_operands = t.precision == Precision::kFp8;  // _scaled_mm / TE GEMMs read 1-byte operands
  const bool te_fp8_casts = fp8_operands && !fp8_casts;       // Transformer Engine's cast + transpose kernels
  const double sp_div = static_cast<double>(plan.sequence_split());
  const bool ulysses = plan.cp > 1 && plan.cp_kind == ContextParallelKind::kUlysses;
  // Row-split linears (Colossal-AI 1D TP) split only the matmuls: attention and the
  // elementwise kernels run on whole activations on every tp rank.
  const bool row_tp = plan.row_split_linears;
  const double act_tp = static_cast<double>(plan.activation_tp());

  // Links: tp innermost, then cp, dp (ep inside dp x cp), pp outermost.
  const Link tp_link = link_for(1, l.tp, c, k);
  const Link cp_link = link_for(l.tp, l.cp, c, k, Traffic::kPointToPoint);
  // Expert parallel groups sit just outside the experts' tensor parallelism (Megatron's expert
  // order tp-ep-dp-pp, with etp in place of tp under MoE parallel folding).
  const Link ep_link = link_for(l.expert_tp(), std::max<std::int64_t>(l.ep, 1), c, k, Traffic::kPointToPoint);
  const double expert_split = static_cast<double>(std::max<std::int64_t>(1, l.ep) * l.expert_tp());

  // Recomputation multipliers on the forward of a block. torchtitan's op-level policy keeps the
  // attention kernel's outputs and every other matmul output and recomputes everything else:
  // the other matmuls and every memory-bound op of the forward.
  const double recompute_all = plan.recompute.whole_block_share;
  const double recompute_attention = plan.recompute.attention_core ? 1 : 0;
  const bool recompute_mm_policy = plan.recompute.op_level;

  struct LayerCost {
    double compute_s = 0, recompute_s = 0, tp_s = 0, tp_total_s = 0, cp_exposed_s = 0, ep_s = 0, bwd_s = 0;
    double forward_pass_s = 0;    // the forward's compute and its exposed tp, cp and ep collectives
    double sp_gather_copy_s = 0;  // part of compute_s
    double wave_excess_s = 0;     // part of compute_s
    double launch_s = 0, launch_gap_s = 0;
  };
  auto layer_cost = [&](const PerfLayer& pl) {
    LayerCost lc;
    const double mm_fwd_flops = tokens * pl.matmul_flops_fwd / tp;
    // The layer's weights on this rank (local experts only).
    const double weights = pl.dense_params / tp + pl.expert_params / expert_split;
    // Small micro-batches are bound by reading the weights (16-bit compute copies) instead.
    const double mm_weight_bytes = weights * act_bytes;
    const double trainable_share = pl.matmul_flops_fwd > 0 ? pl.matmul_trainable_flops_fwd / pl.matmul_flops_fwd : 0;
    // Each of the block's GEMMs at its shape (gemm_time_s): forward tokens x in -> out, dgrad
    // tokens x out -> in, wgrad (trained base weights) in x out over the tokens; row-split linears
    // (Colossal-AI 1D TP) split the input width only. `ideal` is the same FLOPs at the mainloop
    // rate, which every shape's time exceeds (the speed bound keeps only that).
    const std::vector<BlockMatmul>* mms = matmuls_for(pl, plan.activation_tp());
    double shaped_fwd = 0, shaped_bwd = 0, shaped_flops = 0;
    if (mms) {
      for (const BlockMatmul& mm : *mms) {
        const double in = static_cast<double>(mm.in) / (row_tp ? tp : 1.0), out = static_cast<double>(mm.out);
        const GemmKernel mm_gemm = gemm_kernel_for_leading_dims(gemm, {in, out});
        shaped_fwd += gemm_time_s(tokens, out, in, mm_gemm);
        shaped_bwd += gemm_time_s(tokens, in, out, mm_gemm) + pl.base_train_share * gemm_time_s(in, out, tokens, mm_gemm);
        shaped_flops += 2.0 * tokens * in * out;
      }
    }
    // What the shapes leave out (LoRA adapters; every matmul where the basis has no shapes) at
    // the training-shape rate: forward and dgrad, and the adapters' wgrad.
    const double rest_fwd_flops = std::max(0.0, mm_fwd_flops - shaped_flops);
    const double base_wgrad_flops = pl.base_train_share * shaped_flops;
    const double rest_bwd_flops = rest_fwd_flops + std::max(0.0, tokens * pl.matmul_trainable_flops_fwd / tp - base_wgrad_flops);
    const double mm_fwd = std::max(shaped_fwd + rest_fwd_flops / mm_peak, mm_weight_bytes / hbm);
    const double mm_bwd = shaped_bwd + rest_bwd_flops / mm_peak;
    const double ideal_fwd = std::max(shaped_flops / gemm.mainloop_flops + rest_fwd_flops / mm_peak, mm_weight_bytes / hbm);
    const double ideal_bwd = (shaped_flops + base_wgrad_flops) / gemm.mainloop_flops + rest_bwd_flops / mm_peak;
    const double attn_flops = tokens * pl.attention_flops_fwd_per_ctx * ctx / act_tp;
    double attn_fwd = 0, attn_bwd = 0, attn_fwd_excess = 0, attn_bwd_excess = 0;
    if (flash) {
      // Each kernel call sees ctx / cp keys per query on average (a context-parallel ring splits
      // the keys over its cp steps; Ulysses attends over the whole sequence with heads / cp).
      const double share = attn_rates.forward_share(ulysses ? ctx : ctx / cp);
      // A ring's later steps run equal-work half-blocks whose grids fill the SMs in whole waves
      // (ring_flash_fill; FlashAttention-2's sm80/sm90 grids, A100 and Hopper). A whole-sequence
      // call keeps the kernel's measured rate.
      const bool fa2_grid = g.id.rfind("A100", 0) == 0 || is_hopper(g);
      const double sms = fa2_grid ? static_cast<double>(g.sm_count) : 0.0;
      const FlashFill fill = plan.cp > 1 && !ulysses ? ring_flash_fill(static_cast<double>(t.micro_batch), pl.heads / act_tp, seq / cp, plan.cp,
                                                                       b.causal, sms, !l.behaviour.cp_gather_kv)
                                                     : FlashFill{};
      attn_fwd = attn_flops / (attn_peak * attn_rates.fwd_efficiency * share * fill.forward);
      attn_bwd = kFlashBackwardRatio * attn_flops /
                 (attn_peak * attn_rates.bwd_efficiency * (attn_rates.normalised ? share : 1.0) * fill.backward);
      // Time above whole waves: a larger micro-batch fills them better (not monotone in the
      // tokens, so the search's speed bound leaves it out, as the GEMMs' wave excess).
      attn_fwd_excess = attn_fwd * (1 - fill.forward);
      attn_bwd_excess = attn_bwd * (1 - fill.backward);
    } else {
      const EagerAttentionGemms e = eager_attention_gemms(pl, t.micro_batch, ulysses ? seq : static_cast<double>(plan.positions),
                                                          seq, act_tp * (ulysses ? cp : 1.0), attn_gemm);
      // Every score of the s x s matrix is written, read by the softmax and read back (the mask included).
      const double scores = tokens * pl.heads / act_tp * seq;
      const double score_bytes = scores * kEagerScoreBytes * elem_scale;
      attn_fwd = e.forward_s + score_bytes / hbm;
      attn_bwd = e.backward_s + 2.0 * score_bytes / hbm;
      attn_fwd_excess = e.forward_s - e.flops_fwd / attn_gemm.mainloop_flops;
      attn_bwd_excess = e.backward_s - 2.0 * e.flops_fwd / attn_gemm.mainloop_flops;
    }
    // Context parallel: the ring's exposed transfers (paid per forward pass, recomputations
    // included) and its merge kernels, which run beside the attention kernels.
    RingAttentionCost ring;
    if (l.cp > 1) {
      RingAttentionShape rs;
      rs.tokens = tokens;
      const double kv_heads = std::max(pl.ring_kv_heads / act_tp, 1.0);
      rs.kv_width = (ulysses ? std::max(kv_heads, cp) : kv_heads) * (pl.qk_dim + pl.v_dim);
      rs.q_width = pl.heads / act_tp * pl.qk_dim;
      rs.out_width = pl.heads / act_tp * pl.v_dim;
      rs.act_bytes = act_bytes;
      rs.cp = l.cp;
      rs.gather_rotation = l.behaviour.cp_gather_kv;
      if (ulysses) {
        ring.forward_exposed_s = ring.backward_exposed_s =
            ulysses_all_to_all_s(rs, cp_link.bytes_per_s, nccl_p2p_latency_s(cp_link, k));
      } else {
        ring = ring_attention_cost(rs, attn_fwd, attn_bwd, cp_link.bytes_per_s, nccl_p2p_latency_s(cp_link, k), hbm,
                                   k.overlap_compute_slowdown);
      }
      attn_fwd += ring.forward_merge_s;
      attn_bwd += ring.backward_merge_s;
    }
    const double wide = t.compile ? pl.elementwise_wide_fwd_compiled
                        : t.fused_elementwise ? pl.elementwise_wide_fwd_fused : pl.elementwise_wide_fwd;
    const double split = t.compile ? pl.elementwise_split_fwd_compiled
                         : t.fused_elementwise ? pl.elementwise_split_fwd_fused : pl.elementwise_split_fwd;
    double elem_fwd = tokens * (wide / sp_div + split / act_tp) * elem_scale / hbm;
    double elem_bwd = kBackwardElementwiseRatio * elem_fwd;
    const double mm_policy = recompute_mm_policy ? pl.mm_policy_recomputed_fraction : 0;
    // The op policy recomputes the block's memory-bound ops and the casts of recomputed fp8
    // matmuls' inputs (it keeps their amax: torch.ops.aten.abs/max are on its save list).
    double recompute_elem = recompute_mm_policy ? elem_fwd : 0;
    if (fp8_casts) {
      recompute_elem += mm_policy * tokens * pl.linear_in_width / tp * kFp8CastBytes / hbm;
      elem_fwd += (tokens * pl.linear_in_width / tp + weights) * kFp8CastBytes / hbm;
      elem_bwd += (tokens * (pl.linear_in_width * (kFp8CastBytes + kFp8RelayoutBytes) +
                             pl.linear_out_width * (2 * kFp8CastBytes + kFp8RelayoutBytes)) / tp +
                   weights * kFp8CastBytes) / hbm;
    }
    if (te_fp8_casts && mms) {
      // Transformer Engine's fp8 linears cast their inputs and output gradients with fused
      // cast + transpose kernels (fp8_cast_transpose_fused, fp8_cast_transpose_bgrad_fused;
      // transformer_engine/pytorch/module/linear.py): the row-major fp8 copy for one GEMM and a
      // transposed one for the other, read 2 bytes, write 1 + 1. A column-parallel linear's input
      // comes out of the fused norm already in fp8 (LayerNormLinear, LayerNormMLP) and the second
      // row-parallel input out of the fused activation, so those pay the transpose alone (1 + 1);
      // the attention output pays the whole cast. Every GEMM's output gradient is cast in full.
      double fwd_bytes = 0, bwd_bytes = 0;
      bool first_row = true;
      for (const BlockMatmul& mm : *mms) {
        const double in = static_cast<double>(mm.in);
        fwd_bytes += (mm.column || !first_row ? kTeTransposeBytes : kTeCastTransposeBytes) * in;
        if (!mm.column) first_row = false;
        bwd_bytes += kTeCastTransposeBytes * static_cast<double>(mm.out);
      }
      elem_fwd += tokens * fwd_bytes / hbm;
      elem_bwd += tokens * bwd_bytes / hbm;
    }
    if (nf4_base) {
      // QLoRA: bitsandbytes MatMul4Bit and torchao's linear_nf4 dequantize the whole NF4 weight
      // to the compute dtype before a 16-bit matmul, in the forward and again for the input
      // gradient (bitsandbytes autograd/_functions.py MatMul4Bit; torchao dtypes/nf4tensor.py
      // LinearNF4): read the packed weight and its absmax, write the 16-bit copy.
      const double dequant = weights * (static_cast<double>(kNf4MicroBytesPerParam) / 1e6 + act_bytes) / hbm;
      elem_fwd += dequant;
      elem_bwd += dequant;
    }
    // Sequence-parallel collectives whose tensors are copied whole into and out of rank order
    // (DTensor, sp_collective_copies): each pass of the block gathers its attention and MLP
    // inputs and reduce-scatters their outputs, the backward gathers the two output gradients,
    // reduce-scatters the two input gradients and re-gathers any saved shards; a full
    // recomputation repeats the forward's four (inside elem_fwd), the op-level policy its two
    // all-gathers (it saves reduce-scatter outputs). Each copy reads and writes the whole tensor.
    // Under sequence parallelism the backward gathers a saved local input shard again for a
    // weight gradient, unless the gathered input itself was saved (sp_saves_gathered_inputs).
    const bool sp_regathers = l.sequence_parallel && !l.behaviour.sp_saves_gathered_inputs && trainable_share > 0;
    if (!row_tp && l.tp > 1 && l.sequence_parallel && l.behaviour.sp_collective_copies) {
      const double copy_s = 2 * tokens * static_cast<double>(b.hidden) * act_bytes / hbm;
      const double gather_copy_s = t.micro_batch == 1 && l.behaviour.sp_gather_view_at_batch_1 ? 0.0 : copy_s;
      const double bwd_gathers = sp_regathers ? 4.0 : 2.0, policy_gathers = recompute_mm_policy ? 2.0 : 0.0;
      elem_fwd += 2 * (gather_copy_s + copy_s);
      elem_bwd += 2 * copy_s + bwd_gathers * gather_copy_s;
      recompute_elem += policy_gathers * gather_copy_s;
      lc.sp_gather_copy_s = (2 * (1 + recompute_all) + bwd_gathers + policy_gathers) * gather_copy_s;
    }
    const double fwd = mm_fwd + attn_fwd + elem_fwd;
    const double trained_share = pl.dense_params + pl.expert_params > 0 ? pl.trainable_params / (pl.dense_params + pl.expert_params) : 0;
    lc.bwd_s = mm_bwd + attn_bwd + elem_bwd + weights * trained_share * grad_add_bytes / hbm;
    lc.recompute_s = recompute_all * fwd + recompute_attention * attn_fwd + mm_policy * mm_fwd + recompute_elem;
    lc.compute_s = fwd + lc.bwd_s + lc.recompute_s;
    lc.wave_excess_s = (1 + recompute_all + mm_policy) * (mm_fwd - ideal_fwd) + (mm_bwd - ideal_bwd) +
                       (1 + recompute_all + recompute_attention) * attn_fwd_excess + attn_bwd_excess;
    const double kernels_fwd = t.compile ? pl.kernels_fwd_compiled : t.fused_elementwise ? pl.kernels_fwd_fused : pl.kernels_fwd_eager;
    // A ring launches its steps' kernels in place of the one attention kernel, in every forward
    // pass (recomputations included) and in the backward.
    const double ring_kernels = ring.forward_kernels > 0 ? (ring.forward_kernels - 1) * (1 + recompute_all + recompute_attention) +
                                                               ring.backward_kernels - kBackwardKernelsPerForward
                                                         : 0.0;
    const double kernels = kernels_fwd * (1 + recompute_all + kBackwardKernelsPerForward) + ring_kernels;
    lc.launch_s = kernels * k.host_launch_s;
    lc.launch_gap_s = t.cuda_launch_blocking ? kernels * kBlockingLaunchGapS : 0.0;
    // Tensor parallel: two collectives of the block's activations in the forward (attention and
    // MLP outputs; all-gather + reduce-scatter under sequence parallelism, the same volume), two
    // more when the forward is recomputed, and the backward's (Shoeybi et al. 2019 §3;
    // Korthikanti et al. 2022 §4.2.2). The forward's are not overlapped (no async TP).
    if (row_tp) {
      // Row-split linears: each all-reduces its partial output in the forward (again when
      // recomputed) and all-gathers its input gradient in the backward, one collective per
      // linear (LLMem-patched ColossalAI nn/_ops/linear.py).
      const double extra = std::max(0.0, pl.linear_count - 1) * nccl_p2p_latency_s(tp_link, k);
      const double fwd_s = all_reduce_s(tokens * pl.linear_out_width * act_bytes, l.tp, tp_link, k) + extra;
      const double bwd_s = gather_s(tokens * pl.linear_in_width * act_bytes, l.tp, tp_link, k) + extra;
      lc.tp_s = (1 + recompute_all) * fwd_s + bwd_s;
      lc.tp_total_s = lc.tp_s;
      lc.forward_pass_s += fwd_s;
    } else if (l.tp > 1) {
      const double msg = tokens * static_cast<double>(b.hidden) * act_bytes;
      const double ar = all_reduce_s(msg, l.tp, tp_link, k), ag = gather_s(msg, l.tp, tp_link, k);
      lc.tp_s = (2 + 2 * recompute_all) * ar;
      lc.forward_pass_s += 2 * ar;
      // Backward, for each column-parallel group (attention's q k v, the MLP's gate and up): its
      // input gradient all-reduced (reduce-scattered under sequence parallelism); under sequence
      // parallelism the row-parallel output's gradient all-gathered, and, for a weight gradient,
      // a saved local input shard gathered again (the memory model keeps the shard unless
      // sp_saves_gathered_inputs). With tp_backward_overlap the reduction runs beside the
      // group's weight-gradient GEMMs and the re-gather beside its input-gradient GEMMs.
      const double column_reduce = l.sequence_parallel ? ag : ar;
      const double row_gather = l.sequence_parallel ? ag : 0.0;
      const double regather = sp_regathers ? ag : 0.0;
      // The column-parallel groups' backward GEMMs (before and after the first row-parallel one).
      double group_dgrad_s[2] = {0, 0}, group_wgrad_s[2] = {0, 0};
      if (const std::vector<BlockMatmul>* mms = matmuls_for(pl, l.tp)) {
        std::size_t group = 0;
        for (const BlockMatmul& mm : *mms) {
          if (!mm.column) {
            group = 1;
            continue;
          }
          const double in = static_cast<double>(mm.in), out = static_cast<double>(mm.out);
          const GemmKernel mm_gemm = gemm_kernel_for_leading_dims(gemm, {in, out});
          group_dgrad_s[group] += gemm_time_s(tokens, in, out, mm_gemm);
          group_wgrad_s[group] += pl.base_train_share * gemm_time_s(in, out, tokens, mm_gemm);
        }
      }
      lc.tp_s += 2 * row_gather;
      lc.tp_total_s = lc.tp_s + 2 * (column_reduce + regather);
      for (std::size_t group = 0; group < 2; ++group) {
        if (l.behaviour.tp_backward_overlap) {
          lc.tp_s += overlapped_exposed_s(column_reduce, group_wgrad_s[group], k.overlap_compute_slowdown) +
                     overlapped_exposed_s(regather, group_dgrad_s[group], k.overlap_compute_slowdown);
        } else {
          lc.tp_s += column_reduce + regather;
        }
      }
      // torchtitan's op-level policy saves reduce-scatter outputs but not all-gathers or
      // all-reduces (_save_list @9dec370, @820504e): recomputing the block runs the two
      // all-gathers again under sequence parallelism, the two all-reduces without it.
      if (recompute_mm_policy) {
        const double again = l.sequence_parallel ? 2 * ag : 2 * ar;
        lc.tp_s += again;
        lc.tp_total_s += again;
      }
    }
    // Each forward pass of the attention core runs the ring again: full recomputation and
    // Megatron-style selective recomputation both repeat it.
    lc.cp_exposed_s = (1 + recompute_all + recompute_attention) * ring.forward_exposed_s + ring.backward_exposed_s;
    lc.forward_pass_s += fwd + ring.forward_exposed_s;
    // Expert parallel: the dispatch's all-to-alls (to the experts and back) in the forward, again
    // in the backward for the gradients and in a recomputed forward (GShard, Lepikhin et al. 2020).
    if (pl.moe && l.ep > 1) {
      const double msg = tokens * pl.routed_tokens * pl.dispatch_elems * act_bytes;
      lc.ep_s = pl.all_to_alls_fwd * (2 + recompute_all) * gather_s(msg, l.ep, ep_link, k);
      lc.forward_pass_s += pl.all_to_alls_fwd * gather_s(msg, l.ep, ep_link, k);
    }
    return lc;
  };

  // Per micro-batch cost of every stage (the slowest sets the pace). Chunks of the even split
  // hold layers / (pp x vpp) layers, the remainder going to the earliest chunks (chunk_layers).
  constexpr std::size_t kInline = 8;
  LayerCost inline_costs[kInline];
  std::vector<LayerCost> heap_costs;
  LayerCost* costs = inline_costs;
  if (b.layers.size() > kInline) {
    heap_costs.resize(b.layers.size());
    costs = heap_costs.data();
  }
  for (std::size_t gi = 0; gi < b.layers.size(); ++gi) {
    costs[gi] = layer_cost(b.layers[gi]);
    const LayerCost& lc = costs[gi];
    if (times) {
      const double total = lc.compute_s + lc.tp_s + lc.cp_exposed_s + lc.ep_s;
      times->layers.push_back({b.layers[gi].first_layer, b.layers[gi].count, lc.forward_pass_s, total - lc.forward_pass_s});
    }
  }
  auto add_layers = [&](StageCost& sc, std::int64_t first, std::int64_t last) {
    for (std::size_t gi = 0; gi < b.layers.size(); ++gi) {
      const PerfLayer& pl = b.layers[gi];
      double n = 0;
      if (l.pp == 1) {
        n = static_cast<double>(pl.count);  // one stage: every stack counts in full
      } else {
        const std::int64_t lo = std::max(first, pl.first_layer), hi = std::min(last, pl.first_layer + pl.count);
        if (hi <= lo) continue;
        n = static_cast<double>(hi - lo);
      }
      const LayerCost& lc = costs[gi];
      sc.compute_s += n * lc.compute_s;
      sc.recompute_s += n * lc.recompute_s;
      sc.bwd_s += n * lc.bwd_s;
      sc.tp_s += n * lc.tp_s;
      sc.tp_total_s += n * lc.tp_total_s;
      sc.cp_s += n * lc.cp_exposed_s;
      sc.ep_s += n * lc.ep_s;
      sc.sp_gather_copy_s += n * lc.sp_gather_copy_s;
      sc.wave_excess_s += n * lc.wave_excess_s;
      sc.launch_s += n * lc.launch_s;
      sc.launch_gap_s += n * lc.launch_gap_s;
      sc.trainable += n * pl.trainable_params;
      const double block = n * (pl.dense_params / tp + pl.expert_params / expert_split);
      sc.params += block;
      sc.block_params += block;
    }
  };
  const std::int64_t n_chunks = l.pp * l.vpp;
  auto stage_cost = [&](std::int64_t stage) {
    StageCost sc;
    if (l.pp == 1) {
      add_layers(sc, 0, b.num_layers);
      return sc;
    }
    for (std::int64_t ci = stage; ci < n_chunks; ci += l.pp) {
      const LayerRange r = chunk_range(l, b.num_layers, ci);
      add_layers(sc, r.first, r.first + r.count);
    }
    return sc;
  };
  // The first stage holds the most layers of an even split; the last adds the head and loss.
  StageCosts out;
  StageCost& first_stage = out.first;
  StageCost& last_stage = out.last;
  first_stage = stage_cost(0);
  last_stage = l.pp > 1 ? stage_cost(l.pp - 1) : first_stage;
  // Output layer and loss on the last stage; embeddings on the first.
  {
    StageCost& last = last_stage;
    // The output layer's GEMMs at their shapes (vocab split by tp; Megatron pads it to a multiple
    // of vocab_multiple x tp, as the memory model's ranks do).
    const double vocab = b.head_flops_fwd / 2.0 / static_cast<double>(std::max<std::int64_t>(b.hidden, 1));
    const double vocab_step = static_cast<double>(l.behaviour.vocab_multiple) * tp;
    const double head_out = (l.behaviour.vocab_multiple > 1 ? std::ceil(vocab / vocab_step) * vocab_step : vocab) / tp;
    const double head_in = static_cast<double>(b.hidden);
    const GemmKernel head_gemm = gemm_kernel_for_leading_dims(gemm, {head_in, head_out});
    const double head_fwd = gemm_time_s(tokens, head_out, head_in, head_gemm);
    const double head_bwd = gemm_time_s(tokens, head_in, head_out, head_gemm) +
                            (b.head_trains ? gemm_time_s(head_in, head_out, tokens, head_gemm) : 0.0);
    const double head_ideal = b.head_flops_fwd / tp * tokens * (b.head_trains ? 3.0 : 2.0) / gemm.mainloop_flops;
    last.wave_excess_s += head_fwd + head_bwd - head_ideal;
    last.launch_s += kHeadLossKernels * (1 + kBackwardKernelsPerForward) * k.host_launch_s;
    if (t.cuda_launch_blocking) last.launch_gap_s += kHeadLossKernels * (1 + kBackwardKernelsPerForward) * kBlockingLaunchGapS;
    // A compile that covers the blocks only (torchtitan before 2025-04, torchtune's distributed
    // recipes: TrainingSetup::compile_loss) leaves the loss eager.
    const bool loss_fused = (t.compile && t.compile_loss) || loss_computes_projection(t.loss);
    const double loss_bytes = tokens * static_cast<double>(b.vocab) / act_tp *
                              (loss_fused ? kFusedLossBytesPerLogit : kEagerLossBytesPerLogit);
    const double loss_s = loss_bytes / hbm;
    last.compute_s += head_fwd + head_bwd + loss_s;
    last.bwd_s += head_bwd;
    if (times) {
      const double forward_share = loss_fused ? kFusedLossForwardBytesPerLogit / kFusedLossBytesPerLogit
                                              : kEagerLossForwardBytesPerLogit / kEagerLossBytesPerLogit;
      times->head_forward_s = head_fwd;
      times->head_backward_s = head_bwd;
      times->loss_forward_s = loss_s * forward_share;
      times->loss_backward_s = loss_s - times->loss_forward_s;
    }
    if (row_tp) {
      // The row-split output layer all-reduces whole logits and all-gathers its input gradient;
      // the column-split embedding all-gathers its output (twice in LLMem's ColossalAI copy:
      // nn/_ops/embedding.py discards one to_replicate()).
      const double logits_reduce = all_reduce_s(tokens * static_cast<double>(b.vocab) * act_bytes, l.tp, tp_link, k);
      const double input_grad_gather = gather_s(tokens * static_cast<double>(b.hidden) * act_bytes, l.tp, tp_link, k);
      const double head_tp = logits_reduce + input_grad_gather;
      const double embedding_tp = 2 * gather_s(tokens * static_cast<double>(b.hidden) * act_bytes, l.tp, tp_link, k);
      if (times) {
        times->head_forward_s += logits_reduce;
        times->head_backward_s += input_grad_gather;
        times->embedding_forward_s += embedding_tp;
      }
      last.tp_s += head_tp;
      last.tp_total_s += head_tp;
      StageCost& embedding_stage = l.pp > 1 ? first_stage : last_stage;
      embedding_stage.tp_s += embedding_tp;
      embedding_stage.tp_total_s += embedding_tp;
    }
    last.trainable += b.head_trainable_params;
    last.params += b.head_params / tp;
    StageCost& first = l.pp > 1 ? first_stage : last_stage;
    first.trainable += b.embedding_trainable_params;
    first.params += b.embedding_params / tp;
    if (b.head_trains && grad_add_bytes > 0) {
      // The vocabulary-parallel weights' gradient adds: the embedding on the first stage, the head
      // (or, tied, Megatron's copy of the word embedding) on the last.
      const double head = b.head_params > 0 ? b.head_params : l.pp > 1 && b.arch.tie_word_embeddings ? b.embedding_params : 0.0;
      const double embedding_add_s = b.embedding_params / tp * grad_add_bytes / hbm;
      const double head_add_s = head / tp * grad_add_bytes / hbm;
      first.compute_s += embedding_add_s;
      first.bwd_s += embedding_add_s;
      last.compute_s += head_add_s;
      last.bwd_s += head_add_s;
      if (times) {
        times->embedding_backward_s += embedding_add_s;
        times->head_backward_s += head_add_s;
      }
    }
  }
  return out;
}

// A micro-batch on a stage: its GPU time (and, with blocking launches, the GPU's idle gap before
// every kernel), or the host's time to issue its kernels when longer.
double stage_gpu_s(const StageCost& s) { return s.compute_s + s.tp_s + s.cp_s + s.ep_s; }
double stage_micro_batch_s(const StageCost& s) { return std::max(stage_gpu_s(s) + s.launch_gap_s, s.launch_s); }
// The stage that sets the pipeline's pace (the last on a tie).
const StageCost& pacing_stage(const StageCosts& costs, const ParallelLayout& l) {
  return l.pp > 1 && stage_micro_batch_s(costs.first) > stage_micro_batch_s(costs.last) ? costs.first : costs.last;
}

}  // namespace

StageCosts stage_costs(const PerfBasis& b, const TrainingSetup& t, const ParallelLayout& l, const ClusterSpec& c,
                       const PerfConstants& k, const RankPlan* plan) {
  return planned_stage_costs(b, t, l, plan ? *plan : plan_rank(l, t), c, k);
}

StepTime estimate_step_time(const PerfBasis& b, const TrainingSetup& t, const ParallelLayout& l,
                            const ClusterSpec& c, const PerfConstants& k, const StageCosts* known, const RankPlan* given) {
  StepTime st;
  const GpuSpec& g = c.gpu;
  const RankPlan plan = given ? *given : plan_rank(l, t);
  const double tp = static_cast<double>(l.tp);
  const double m = static_cast<double>(std::max<std::int64_t>(1, t.grad_accum));
  const double v = static_cast<double>(l.vpp);
  const double p = static_cast<double>(l.pp);
  const double seq = static_cast<double>(model_positions(t));
  const double tokens = static_cast<double>(plan.tokens_per_micro_batch);  // per rank per micro-batch
  const double act_bytes = static_cast<double>(activation_bytes(t.precision));
  const double hbm = std::max(g.memory_bandwidth_gb_per_s, 1e-3) * 1e9 * k.memory_efficiency;
  const double sp_div = static_cast<double>(plan.sequence_split());
  const Link pp_link = link_for(l.tp * l.cp * l.dp, l.pp, c, k, Traffic::kPointToPoint);
  StageCosts computed;
  const StageCosts& costs = known ? *known : (computed = planned_stage_costs(b, t, l, plan, c, k));
  const StageCost& sc = pacing_stage(costs, l);
  const double per_mb = stage_micro_batch_s(sc);
  st.per_micro_batch_s = per_mb;
  st.launch_wait_s = m * (per_mb - stage_gpu_s(sc));
  st.compute_s = m * sc.compute_s;
  st.recompute_s = m * sc.recompute_s;
  st.comm.tp_s = m * sc.tp_s;
  st.comm.cp_s = m * sc.cp_s;
  st.comm.ep_s = m * sc.ep_s;
  // Pipeline: fill and drain (Narayanan et al. 2021, §2.2: (p - 1) / v micro-batch slots when the
  // stages are equal), and one activation send plus one gradient receive per micro-batch and chunk
  // boundary. The fill is the first micro-batch's forward through the stages before the pacing
  // one, the drain the last micro-batch's backward back through them, so each of those stages adds
  // its own time, not the pacing stage's: p stages over m micro-batches take sum t_i + (m - 1) max t_i
  // (identical jobs through a flow shop). The stages between the ends are charged the first
  // stage's time (an even split gives the first the most layers; it also holds the embedding).
  if (l.pp > 1) {
    const double first_s = stage_micro_batch_s(costs.first), last_s = stage_micro_batch_s(costs.last);
    st.bubble_s = ((p - 2) * first_s + std::min(first_s, last_s)) / v;
    double msg = tokens * static_cast<double>(b.hidden) * act_bytes / sp_div;
    double regather = 0;
    if (l.behaviour.pp_scatter_gather && !l.sequence_parallel && l.tp > 1) {
      // Each tp rank sends its 1/tp of the activation; the receiving stage all-gathers them.
      regather = gather_s(msg, l.tp, link_for(1, l.tp, c, k), k);
      msg /= tp;
    }
    st.comm.pp_s = 2.0 * m * v * (gather_s(msg * 2.0, 2, pp_link, k) + regather);  // a 2-rank transfer of msg
  }
  // Data parallel gradient reduction and parameter gathers over dp x cp ranks.
  const std::int64_t dpn = l.dp * l.cp;
  const double shard_n = static_cast<double>(l.sharding == Sharding::kNone ? 1 : l.dense_shard());
  const double trainable_rank = sc.trainable / tp;  // before data-parallel sharding
  const bool amp = amp_like(t);
  // Gradients as the optimizer reads them, and as the data-parallel collective moves them.
  const double grad_elem = gradient_element_bytes(t, l.behaviour);
  st.gradient_reduce_element_bytes = static_cast<double>(plan.reduced_gradient_bytes);
  const double grad_bytes = trainable_rank * st.gradient_reduce_element_bytes;
  const double param16_bytes = sc.params * act_bytes;
  // The last micro-batch's backward hides the reduction, where the framework overlaps them.
  const double overlap_window = l.behaviour.dp_reduce_overlaps_backward ? sc.bwd_s : 0.0;
  // The least share of an overlapped collective's time the step pays (overlapped_exposed_s).
  const double contention = overlap_contention_share(k.overlap_compute_slowdown);
  if (dpn > 1) {
    const std::int64_t group = l.sharding == Sharding::kNone ? dpn : l.dense_shard();
    const Link dp_link = link_for(l.tp, group, c, k);  // dp x cp ranks (or a shard group of them), tp apart
    double dp_s = 0;
    switch (l.sharding) {
      case Sharding::kNone:
        dp_s = overlapped_exposed_s(all_reduce_s(grad_bytes, dpn, dp_link, k), overlap_window, k.overlap_compute_slowdown);
        st.communication_total_s += all_reduce_s(grad_bytes, dpn, dp_link, k);
        break;
      case Sharding::kZero1:
      case Sharding::kZero2: {
        const double rs = gather_s(grad_bytes, group, dp_link, k);
        const double reductions = l.sharding == Sharding::kZero2 ? m : 1.0;  // ZeRO-2 reduces every micro-batch
        // The updated parameters' all-gather: waited on, or beside the next step's first
        // forward (Megatron --overlap-param-gather).
        const double ag = gather_s(param16_bytes, group, dp_link, k);
        const double first_forward = sc.compute_s - sc.bwd_s - sc.recompute_s;
        dp_s = reductions * overlapped_exposed_s(rs, overlap_window, k.overlap_compute_slowdown) +
               (l.behaviour.param_gather_overlaps_forward ? overlapped_exposed_s(ag, first_forward, k.overlap_compute_slowdown) : ag);
        if (l.sharding == Sharding::kZero2) st.dp_per_micro_batch_floor_s = rs * contention;
        st.communication_total_s += reductions * rs + ag;
        break;
      }
      case Sharding::kZero3: {
        const bool reshard = plan.reshard_after_forward;
        // A QLoRA base is gathered packed: NF4 block weights (torchao NF4Tensor's FSDP2
        // all-gather extension, bitsandbytes Params4bit with a 16-bit quant_storage).
        const double unit_bytes =
            effective_base_quant(t) == BaseQuant::kNf4
                ? param16_bytes - sc.block_params * (act_bytes - static_cast<double>(kNf4MicroBytesPerParam) / 1e6)
                : param16_bytes;
        const double ag = gather_s(unit_bytes, group, dp_link, k);
        const double rs = gather_s(grad_bytes, group, dp_link, k);
        const double gathers_per_mb = reshard ? 2.0 : 1.0;
        const double reduces = l.behaviour.pp_defers_grad_sync && l.pp > 1 ? 1.0 : m;
        const double total = m * gathers_per_mb * ag + reduces * rs;
        // Prefetching hides gathers and reductions behind the micro-batch's compute; the first
        // block's gather of each micro-batch is exposed.
        const double hidden = m * sc.compute_s;
        const double first_unit = ag / std::max(1.0, static_cast<double>(b.num_layers) / p);
        // FSDP2 copies each gathered unit out of the all-gather buffer into its parameters
        // (split_with_sizes_copy) on the compute stream: the 16-bit unit read and written.
        const double copy_out = l.behaviour.gather_copy_out ? gathers_per_mb * 2.0 * unit_bytes / hbm : 0.0;
        dp_s = overlapped_exposed_s(total, hidden, k.overlap_compute_slowdown) + m * (first_unit + copy_out);
        const bool reduce_per_mb = !(l.behaviour.pp_defers_grad_sync && l.pp > 1);
        st.dp_per_micro_batch_floor_s = (gathers_per_mb * ag + (reduce_per_mb ? rs : 0.0)) * contention + first_unit + copy_out;
        st.communication_total_s += total;
        break;
      }
    }
    // HSDP: the shards are all-reduced across the replicas of each shard group.
    if (l.sharding != Sharding::kNone && l.dense_shard() < dpn) {
      const std::int64_t replicas = dpn / l.dense_shard();
      const Link across = link_for(l.tp * l.dense_shard(), replicas, c, k);
      const double ar = all_reduce_s(grad_bytes / shard_n, replicas, across, k);
      dp_s += ar;
      st.communication_total_s += ar;
    }
    st.comm.dp_s = dp_s;
  }
  // A tied word embedding split over the pipeline lives on the first and the last stage; their
  // gradients are all-reduced once a step, after the backward and before the optimizer
  // (Megatron-LM 2021 training.py train_step, core finalize_model_grads._allreduce_word_embedding_grads;
  // DeepSpeed PipelineEngine._exec_reduce_tied_grads), one vocabulary-parallel shard per tp rank.
  if (l.pp > 1 && b.arch.tie_word_embeddings && b.head_trains) {
    const double shard_bytes = static_cast<double>(b.vocab) * static_cast<double>(b.hidden) / tp * st.gradient_reduce_element_bytes;
    const Link ends = link_for(l.tp * l.cp * l.dp * (l.pp - 1), 2, c, k);
    st.tied_embedding_sync_s = all_reduce_s(shard_bytes, 2, ends, k);
    st.comm.pp_s += st.tied_embedding_sync_s;
  }
  st.communication_total_s += m * sc.tp_total_s + st.comm.cp_s + st.comm.ep_s + st.comm.pp_s;

  // Optimizer step: memory-bound over this rank's trainable shard (read weight, gradient and
  // states, write weight and states), on the GPU or, offloaded, on the host.
  const double opt_params = trainable_rank / (l.sharding == Sharding::kNone ? 1.0 : shard_n);
  const double w_elem = static_cast<double>(stored_weight_bytes(t));
  const double state = static_cast<double>(state_bytes_per_param(t.optimizer, static_cast<std::int64_t>(w_elem)));
  double bytes_per_param = 2 * w_elem + grad_elem + 2 * state;
  if (t.amp_weights == AmpWeights::kMasterInOptimizer && amp) bytes_per_param += 2 * 2;  // 16-bit model copy
  if (step_upcasts_main_grad(t, l.behaviour)) bytes_per_param += 2 * 4;  // the fp32 copy written, then read
  const bool host_optimizer = t.offload == Offload::kOptimizer || t.offload == Offload::kParamsOptimizer;
  if (host_optimizer) {
    // The node's ranks step their shards on one host: at the measured AdamW rate of the setup's
    // implementation (fused, or foreach / for-loop), and no faster than host memory moves the bytes.
    const double ranks_on_node = static_cast<double>(std::max<std::int64_t>(1, std::min(c.gpus, c.gpus_per_node)));
    const double host_bw = std::max(c.host_memory_bandwidth_gb_per_s, 1e-3) * 1e9 / ranks_on_node;
    const double adam_rate = t.optimizer_impl == OptimizerImpl::kFused ? k.host_adam_params_per_s_fused : k.host_adam_params_per_s_unfused;
    const double pcie = std::max(g.pcie_bandwidth_gb_per_s, 1e-3) * 1e9 * k.host_link_efficiency;
    const bool adamw = t.optimizer == Optimizer::kAdamW || t.optimizer == Optimizer::kPagedAdamW32bit;
    st.optimizer_s = std::max(adamw ? opt_params * ranks_on_node / std::max(adam_rate, 1.0) : 0.0,
                              opt_params * (bytes_per_param + 4) / host_bw);  // + fp32 gradient copy on the host
    st.offload_s += opt_params * (grad_elem + act_bytes) / pcie;    // gradients down, 16-bit weights up
    if (t.offload == Offload::kParamsOptimizer) {
      const double per_mb = 2.0 * param16_bytes / shard_n / pcie;  // shards up for forward and backward
      st.offload_s += std::max(0.0, m * per_mb - st.compute_s);
    }
  } else {
    st.optimizer_s = opt_params * bytes_per_param / hbm;
  }
  if (t.offload == Offload::kActivations) {
    // What the memory model keeps per layer under this checkpointing mode goes to the host as
    // forward produces it and comes back for backward (torchtune OffloadActivations: its own
    // CUDA streams, so the copies run beside the compute, down and up).
    const double pcie = std::max(g.pcie_bandwidth_gb_per_s, 1e-3) * 1e9 * k.host_link_efficiency;
    const double saved = kept_activation_bytes(b, t, l, plan) / p;
    st.activation_offload_bytes_per_micro_batch = saved;
    st.offload_s += std::max(0.0, m * 2.0 * saved / pcie - st.compute_s);
  }

  st.step_s = st.compute_s + st.launch_wait_s + st.bubble_s + st.comm.total() + st.optimizer_s + st.offload_s;
  st.global_batch = l.dp * t.micro_batch * t.grad_accum;
  st.tokens_per_step = st.global_batch * t.seq_len;
  st.tokens_per_s = static_cast<double>(st.tokens_per_step) / std::max(st.step_s, 1e-12);
  st.tokens_per_s_per_gpu = st.tokens_per_s / static_cast<double>(std::max<std::int64_t>(1, l.gpus()));
  const double model_flops_per_token = b.model_flops_per_token_base + b.model_flops_attention_per_ctx * seq;
  st.model_tflops_per_gpu = st.tokens_per_s_per_gpu * model_flops_per_token / 1e12;
  st.mfu = st.model_tflops_per_gpu * 1e12 / sixteen_bit_peak(g);
  return st;
}

MicroBatchTimes micro_batch_times(const PerfBasis& b, const TrainingSetup& t, const ParallelLayout& l, const ClusterSpec& c,
                                  const PerfConstants& k, const RankPlan* plan) {
  MicroBatchTimes times;
  const StageCosts costs = planned_stage_costs(b, t, l, plan ? *plan : plan_rank(l, t), c, k, &times);
  // The GPU waits for the host's launches evenly over the micro-batch (StepTime::launch_wait_s).
  const StageCost& sc = pacing_stage(costs, l);
  const double stretch = stage_gpu_s(sc) > 0 ? stage_micro_batch_s(sc) / stage_gpu_s(sc) : 1.0;
  for (LayerPassTimes& p : times.layers) {
    p.forward_s *= stretch;
    p.backward_s *= stretch;
  }
  for (double* part : {&times.embedding_forward_s, &times.head_forward_s, &times.loss_forward_s, &times.loss_backward_s,
                       &times.head_backward_s, &times.embedding_backward_s}) {
    *part *= stretch;
  }
  return times;
}

std::vector<std::string> perf_assumptions(const PerfConstants& k, const ClusterSpec& c) {
  char buf[512];
  std::vector<std::string> out;
  const PerfConstants by_gpu = resolved_for(k, c.gpu);
  const GemmKernel gemm = gemm_kernel_for(c.gpu, Precision::kBf16, k);
  std::snprintf(buf, sizeof buf,
                "GEMMs by shape: a full wave of tiles at %.1f %% of the dense peak (%s), tiles of 256 x 128 / 128 x 256 / "
                "128 x 128 over %lld SMs with %.0f K-steps of fixed cost each, split-K where the tiles leave SMs idle, "
                "no faster than moving their operands (fitted to an H200 bf16 sweep), at %.0f %% of that rate with a "
                "width not a multiple of 16 bytes; other matmuls at %.1f %%",
                100 * gemm.mainloop_flops / (c.gpu.dense_tflops_bf16 * 1e12),
                k.matmul_efficiency > 0 ? "from the given matmul efficiency" : "the GPU's maximum achievable matmul FLOPS x 0.934",
                static_cast<long long>(c.gpu.sm_count), kGemmTileFixedK, 100 * kGemmUnalignedMainloopShare,
                100 * by_gpu.matmul_efficiency);
  out.emplace_back(buf);
  std::snprintf(buf, sizeof buf, "fused attention at %.0f %% of the 16-bit peak; backward %.1fx the forward FLOPs",
                100 * by_gpu.flash_attention_efficiency, kFlashBackwardRatio);
  out.emplace_back(buf);
  std::snprintf(buf, sizeof buf, "a micro-batch takes at least its kernels x %.1f us to launch from the host", 1e6 * k.host_launch_s);
  out.emplace_back(buf);
  std::snprintf(buf, sizeof buf, "elementwise kernels memory-bound at %.0f %% of HBM bandwidth; torch.compile fuses each chain", 100 * k.memory_efficiency);
  out.emplace_back(buf);
  std::snprintf(buf, sizeof buf,
                "collectives at %.0f %% of link bandwidth (intra-node %.0f GB/s, inter-node %.0f GB/s per GPU) plus NCCL's latency "
                "model: %.1f us + a hop per ring step (%.1f us NVLink, %.1f us network), all-reduce by ring or, across nodes, tree",
                100 * k.collective_efficiency, c.gpu.intra_node_bandwidth_gb_per_s, c.inter_node_bandwidth_gb_per_s,
                1e6 * k.nccl_base_latency_s, 1e6 * k.nccl_ring_hop_nvlink_s, 1e6 * k.nccl_ring_hop_net_s);
  out.emplace_back(buf);
  out.emplace_back("ranks placed tp innermost, then cp, dp, pp: a group is intra-node when it fits in one node");
  out.emplace_back("data-parallel reductions overlap the last backward; ZeRO-3 gathers overlap compute except the first block's");
  std::snprintf(buf, sizeof buf, "compute runs %.1f %% slower while an overlapped collective runs beside it", 100 * k.overlap_compute_slowdown);
  out.emplace_back(buf);
  out.emplace_back("tensor-parallel collectives of the forward are not overlapped (no async TP); the backward's run beside their GEMMs where the framework launches them asynchronously (Megatron-LM, Transformer Engine); pipeline bubble: the fill and drain through the stages other than the pacing one, each at its own time, over v ((p-1)/v slots for equal stages)");
  out.emplace_back("context-parallel ring: each step's transfer overlaps that step's attention (PyTorch's all-gather rotation: the first step's only; its fp32 merges as eager kernels); its half-block steps fill the SMs in whole waves of FlashAttention-2's grid, and each step launches its own kernels");
  out.emplace_back("load-balanced experts and stages; no data-loading overhead");
  return out;
}

}  // namespace memfit
