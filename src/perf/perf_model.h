// Step time of one training step for a layout: compute from FLOPs over the GPU's dense peak at an
// achievable efficiency per kernel class (matmuls, attention, memory-bound elementwise kernels),
// plus the communication that is not hidden behind compute, the pipeline bubble and offload
// traffic. Closed form: a PerfBasis is built once per model and setup, and each candidate layout
// costs a few hundred arithmetic operations (src/search uses it for every candidate).
// Every constant is a named field of PerfConstants with its source (docs/performance_model.md).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "block/activations.h"
#include "hardware/gpu_spec.h"
#include "model/architecture.h"
#include "model/tensor_inventory.h"
#include "parallel/layout.h"
#include "parallel/rank_plan.h"
#include "training/training_setup.h"

namespace memfit {

/// Per-GPU network bandwidth between nodes when the request does not give one: one 400 Gb/s
/// NIC per GPU (NVIDIA DGX H100 / HGX reference design, 8x ConnectX-7 400 Gb/s; the torchtitan
/// and Trainy H100/H200 benchmark clusters state the same), per direction.
inline constexpr double kDefaultInterNodeBandwidthGbPerS = 50.0;
/// Host memory bandwidth of one node, shared by its GPUs' CPU optimizer steps: two sockets of
/// 8-channel DDR5-4800 (2 x 307 GB/s, Intel Xeon 4th gen / AMD EPYC 9004 datasheets).
inline constexpr double kDefaultHostMemoryBandwidthGbPerS = 614.0;

/// The machines a layout runs on.
struct ClusterSpec {
  GpuSpec gpu;
  std::int64_t gpus = 1;
  std::int64_t gpus_per_node = 8;
  double inter_node_bandwidth_gb_per_s = kDefaultInterNodeBandwidthGbPerS;  // per GPU, per direction
  double host_memory_bandwidth_gb_per_s = kDefaultHostMemoryBandwidthGbPerS;  // per node
  std::int64_t host_memory_bytes_per_node = 0;  // CPU memory of one node (0: unknown, not checked)
};

/// Achievable fractions and overheads; each is a documented property of kernels or libraries.
struct PerfConstants {
  /// Matmul throughput at training shapes as a fraction of the dense peak. 0: by GPU
  /// architecture (matmul_efficiency_for): 0.90 of the largest throughput measured over shapes
  /// ("MAMF", stas00/ml-engineering compute/accelerator/README.md, bf16 table: A100 SXM 86.9 %,
  /// H100 SXM 80.3 %, GH200 83.6 %, MI250X 76.7 %, MI300X 51.4 %, MI325X 60.4 %, B200 77.6 %, GB200 72.9 %; 80 % for GPUs
  /// without a measurement), the share transformer-layer GEMMs reach (perf_model.cpp). The block's
  /// and the output layer's GEMMs run by shape (gemm_time_s, gemm_kernel_for: this rate / 0.90 x
  /// kGemmMainloopShareOfSweepMax per full wave); this flat rate is for the matmuls without a
  /// shape (LoRA adapters, eager attention's).
  double matmul_efficiency = 0;
  /// Fraction of the 16-bit peak the fused attention kernel (sdpa, flash: FlashAttention-2)
  /// sustains over forward and backward. 0: by GPU architecture (attention_efficiency_for):
  /// 0.5 where FlashAttention-2 was built for the GPU (Dao 2023, §4.1, Fig. 5–6: 50–73 % of the
  /// A100 peak forward, 40–63 % backward), 0.35 on Hopper, where it lacks the asynchronous
  /// (TMA, WGMMA) instructions (Shah et al. 2024, FlashAttention-3, abstract: "only 35 %
  /// utilization on the H100 GPU"; Dao 2023 §4.1: up to 335 TFLOP/s forward + backward on H100),
  /// 0.238 on CDNA3 (MI300X, MI325X), PyTorch's ROCm kernel (AOTriton) as measured (perf_model.cpp).
  /// PyTorch's SDPA on Hopper as measured on an H200: attention_rates_for (not applied by default).
  double flash_attention_efficiency = 0;
  /// Fraction of HBM bandwidth that memory-bound elementwise kernels sustain (STREAM-like copy
  /// kernels reach 85–92 % of the datasheet bandwidth on A100/H100; 0.85 taken).
  double memory_efficiency = 0.85;
  /// NCCL bus bandwidth over the link's datasheet bandwidth for large messages (nccl-tests
  /// all_reduce_perf busbw on NVLink and 400G InfiniBand: ~80 %).
  double collective_efficiency = 0.8;
  /// Latencies of NCCL's own cost model for the Simple protocol (NVIDIA/nccl src/graph/tuning.cc
  /// @01afd20a, baseLat and hwLat): a ring collective pays a base latency plus one hop per ring
  /// step (NVLink 3.4 µs, PCIe 5.7 µs, network 9.6 µs; an all-reduce takes 2 (n - 1) steps, of
  /// which 2 (nodes - 1) cross the network, an all-gather or reduce-scatter n - 1); a tree
  /// all-reduce 2 x ((ranks per node - 1) x 28 µs + floor(log2 nodes) x 50 µs), at 0.9 x 1/2 of the
  /// link's bus bandwidth. Not taken: the ring's 1.9 x latency above nRanks / 16 x 64 KiB across
  /// nodes ("plateau effect"), a step that would let a larger micro-batch run slower per token.
  double nccl_base_latency_s = 8.4e-6;
  double nccl_ring_hop_nvlink_s = 3.4e-6;
  double nccl_ring_hop_pcie_s = 5.7e-6;
  double nccl_ring_hop_net_s = 9.6e-6;
  double nccl_tree_hop_intra_s = 28e-6;
  double nccl_tree_hop_net_s = 50e-6;
  double nccl_tree_bandwidth_share = 0.9 * 0.5;
  /// PCIe achieves ~80 % of its datasheet rate for pinned host copies (cudaMemcpy bandwidth test).
  double host_link_efficiency = 0.8;
  /// How much longer compute takes while a collective runs beside it: NCCL's kernels hold SMs
  /// and HBM bandwidth that the matmuls and attention then lack. Lee et al. 2025 ("Characterizing
  /// Compute-Communication Overlap in GPU-Accelerated Distributed Deep Learning", arXiv
  /// 2507.03114, abstract) measure an average computational slowdown of 18.9 % (up to 40 %)
  /// over GPT and LLaMA training on A100, H100, MI250 and MI210. Host copies over PCIe run on
  /// the copy engines and are not charged.
  double overlap_compute_slowdown = 0.189;
  /// Host time to issue one kernel when the GPU keeps up: 8.0 us per small eager PyTorch op queued
  /// back to back (add_ on one element, 2,000 in a row, wall time; H200 host, torch 2.11,
  /// tests/validation/kernels_h200). A micro-batch takes at least its kernels x this.
  double host_launch_s = 8e-6;
  /// AdamW steps on the host, fp32 parameters per second of one node (all its ranks together):
  /// torch.optim.AdamW over one 200M-parameter tensor, 16 threads, on the H200 machine's host
  /// (16-core Xeon, torch 2.11; tests/validation/kernels_h200, 28 bytes moved per parameter):
  /// foreach 0.280 s (714 M/s, 20.0 GB/s), fused 0.0532 s (3.76 G/s, 105 GB/s). By the setup's
  /// OptimizerImpl (each framework's, frameworks/<key>/profile.cpp); a for-loop runs foreach's ops per
  /// tensor. DeepSpeedCPUAdam (ZeRO-Offload, a fused C++ kernel) is taken at the fused rate.
  double host_adam_params_per_s_unfused = 200e6 / 0.280042;
  double host_adam_params_per_s_fused = 200e6 / 0.05316;
};

/// The share of its long-sequence rate a flash-attention kernel reaches when its queries see
/// `keys` keys on average: (L / (L + 240)) / (16k / (16k + 240)), at most 1 (H100 measurements of
/// FlashAttention-3 and a Triton FlashAttention-2, pytorch/benchmark PR #2391).
double flash_length_factor(double keys);

/// A group of ranks as a collective sees it: its per-rank bus bandwidth, the nodes it spans and
/// whether the hops inside a node are NVLink-class (else PCIe).
struct CollectiveLink {
  double bytes_per_s = 1;
  std::int64_t nodes = 1;
  bool nvlink = true;
};
/// NCCL's time for an all-reduce of `bytes` over `ranks`: the faster of its ring and, across
/// nodes, its tree (PerfConstants::nccl_*).
double nccl_all_reduce_s(double bytes, std::int64_t ranks, const CollectiveLink& l, const PerfConstants& k);
/// NCCL's ring time for an all-gather or reduce-scatter whose full result is `bytes`.
double nccl_ring_gather_s(double bytes, std::int64_t ranks, const CollectiveLink& l, const PerfConstants& k);
/// Latency of one point-to-point transfer over `l` (a two-rank ring step).
double nccl_p2p_latency_s(const CollectiveLink& l, const PerfConstants& k);

/// A GEMM kernel on one GPU as the tile model sees it (gemm_time_s).
struct GemmKernel {
  double mainloop_flops = 1;   // FLOP/s of a full wave of output tiles at long K (every SM busy)
  double sms = 0;              // SMs the tiles spread over; 0: no tile or wave quantization
  double hbm_bytes_per_s = 1;  // for the roofline and split-K's partial sums
  double in_bytes = 2, out_bytes = 2;
};
/// Time of one GEMM, C[m x n] += A[m x k] B[k x n], on `g`: cuBLAS cuts the output into tiles (the
/// fastest of 256 x 128, 128 x 256 and 128 x 128; NVIDIA "Matrix Multiplication Background User's
/// Guide" §2.3, §3.1-3.2) that run `sms` at a time, each taking (k + kGemmTileFixedK) K-steps at
/// the mainloop rate, so partial tiles, a partly filled last wave and a short k run idle; where
/// the tiles do not fill the SMs it may split k in 2, 4, ... chunks of at least
/// kGemmSplitKMinChunk, writing and reading back fp32 partial sums; and it takes no less than
/// moving its operands over HBM (roofline, Williams et al. 2009). The constants are fitted to a
/// bf16 sweep of Llama-3.1 8B/70B linears on an H200 (tests/validation/kernels_h200, docs).
double gemm_time_s(double m, double n, double k, const GemmKernel& g);
/// The tile model's constants from that sweep: a full wave of tiles at long K runs at 0.75 of the
/// H200's dense bf16 peak (742 TFLOP/s), kGemmMainloopShareOfSweepMax of its MAMF (0.803); a tile
/// pays 192 K-steps of prologue and epilogue; split-K chunks are at least 2048 deep.
inline constexpr double kGemmMainloopShareOfSweepMax = 0.75 / 0.803;
inline constexpr double kGemmTileFixedK = 192;
inline constexpr double kGemmSplitKMinChunk = 2048;
/// `batch` independent GEMMs of one shape in one launch (a strided-batched GEMM, torch.bmm /
/// baddbmm): gemm_time_s's model with their tiles sharing the waves.
double batched_gemm_time_s(double batch, double m, double n, double k, const GemmKernel& g);
/// cuBLAS's fastest tensor-core kernels move operands 16 bytes at a time; a GEMM with a leading
/// dimension (an operand's or the output's contiguous width) that is not a multiple of 16 bytes,
/// 8 fp16/bf16 elements, runs a kernel with narrower loads (NVIDIA "Matrix Multiplication
/// Background User's Guide" §2.2, Tensor Core Requirements; cuBLAS docs, Tensor Core Usage). Its
/// tiles run at this share of the mainloop rate: the H200 sweep's fp16 eager-attention GEMMs at
/// head dims 108 and 150 (tests/validation/kernels_h200/eager_attention.csv, torch 2.11, CUDA
/// 13.0), less the single-call latency, took 1 / 0.421 of the tile model's time at their shapes
/// (pooled; scores 0.48 and 0.40, context 0.40 and 0.41), where head dims 64, 96, 128 and 224
/// are within 19 % of it. Measured on Hopper only.
inline constexpr double kGemmUnalignedMainloopShare = 0.42;
/// `g` for a GEMM whose operands and output have these leading dimensions (elements): at
/// kGemmUnalignedMainloopShare of its mainloop rate when one is not a multiple of 16 bytes.
GemmKernel gemm_kernel_for_leading_dims(const GemmKernel& g, std::initializer_list<double> leading_dims);
/// The sweep timed one call at a time from an idle stream (CUDA events around one launch), so
/// every time includes the host's launch latency, fitted with the tile model at 24 us; training
/// queues kernels ahead of the GPU and does not pay it (launch-bound micro-batches pay
/// PerfConstants::host_launch_s per kernel instead).
inline constexpr double kSweepSingleCallLatencyS = 24e-6;
/// Under CUDA_LAUNCH_BLOCKING=1 every launch waits for its kernel, so each kernel starts on an idle
/// stream, as every call of that sweep did: the GPU idles kSweepSingleCallLatencyS per kernel.
inline constexpr double kBlockingLaunchGapS = kSweepSingleCallLatencyS;
/// The GEMM kernel of `gpu` for `precision`'s linears (fp8: 1-byte operands at the fp8 peak):
/// mainloop at the dense peak x the GPU's MAMF x kGemmMainloopShareOfSweepMax (or, where
/// `k.matmul_efficiency` is given, at that training-shape rate / 0.90 x the same share), over
/// its SMs. Other GPUs than the H200 scale by their peak, MAMF and SM count.
GemmKernel gemm_kernel_for(const GpuSpec& gpu, Precision precision, const PerfConstants& k);

/// A fused attention kernel's rates: forward at fwd_efficiency x keys / (keys + half_rate_keys),
/// backward at bwd_efficiency (normalised: at most the long-sequence rate; see attention_rates_for).
struct AttentionRates {
  double fwd_efficiency = 0, bwd_efficiency = 0;
  double half_rate_keys = 0;
  bool normalised = true;  // true: the length factor is flash_length_factor (1 at 16k keys)
  double forward_share(double keys) const;  // of fwd_efficiency at `keys` keys per query
};
/// PyTorch's SDPA on Hopper as measured on an H200 (torch 2.11, causal, head dim 128, 32 heads;
/// tests/validation/kernels_h200): forward 0.67 of the dense peak x L / (L + 672) at L keys per
/// query, backward 0.54 at 1k-32k tokens (the forward + backward calls include 252 us of host
/// latency, the autograd call from an idle stream). Used only with `measured_sdpa`: which backend
/// ran was not recorded, and its 617 TFLOP/s forward at 16k tokens is 1.8x FlashAttention-2 on
/// Hopper, the kernel of the runs measured so far. Otherwise (and for other kernels, other GPUs,
/// or `k.flash_attention_efficiency` given): that efficiency both ways, flash_length_factor.
AttentionRates attention_rates_for(const GpuSpec& gpu, AttentionKernel kernel, const PerfConstants& k,
                                   bool measured_sdpa = false);
inline constexpr double kSdpaHopperForwardEfficiency = 0.67, kSdpaHopperBackwardEfficiency = 0.54,
                        kSdpaHopperHalfRateKeys = 672;

/// The least share of an overlapped collective's own time a step pays: slowdown / (1 + slowdown).
inline double overlap_contention_share(double slowdown) { return slowdown / (1 + slowdown); }

/// Time a collective of `comm_s` adds to the `window_s` of compute it overlaps: while both run,
/// compute runs `slowdown` slower, so a collective shorter than the stretched window costs
/// comm_s x overlap_contention_share(slowdown); a longer one leaves comm_s - window_s exposed.
double overlapped_exposed_s(double comm_s, double window_s, double slowdown);

/// One layer's context-parallel attention on one rank for one micro-batch.
struct RingAttentionShape {
  double tokens = 0;       // this rank's tokens: micro-batch x sequence / cp
  double kv_width = 0;     // K and V elements per token that travel (the rank's heads, both)
  double q_width = 0;      // query elements per token on the rank
  double out_width = 0;    // attention output elements per token on the rank
  double act_bytes = 2;
  std::int64_t cp = 1;
  /// PyTorch's ring (torch.distributed.tensor.experimental._attention, the default
  /// _RotateMethod.ALL_GATHER): one all-gather of K/V waited on before the second step, dK/dV
  /// accumulated in fp32 and passed one rank on after every step, outputs merged in fp32 by
  /// separate eager kernels. false: Transformer Engine's p2p ring (context_parallel.py
  /// AttnFuncWithCPAndKVP2P), K/V and dK/dV sent one step ahead in the compute dtype.
  bool gather_rotation = false;
};
/// Exposed communication and the memory-bound merge kernels of ring attention, per pass. The
/// load-balanced ring (two chunks per rank, head and tail) gives every step 1/cp of the rank's
/// attention FLOPs, so each step's transfer overlaps attn_s / cp of kernel time.
struct RingAttentionCost {
  double forward_exposed_s = 0;   // one forward pass (paid again when it is recomputed)
  double backward_exposed_s = 0;
  double forward_merge_s = 0;
  double backward_merge_s = 0;
  /// Kernels the ring launches per pass in place of the one attention kernel (ring_kernels_per_step).
  double forward_kernels = 0, backward_kernels = 0;
};
RingAttentionCost ring_attention_cost(const RingAttentionShape& s, double attn_fwd_s, double attn_bwd_s,
                                      double link_bytes_per_s, double link_latency_s, double hbm_bytes_per_s,
                                      double slowdown);

/// Kernels one ring step launches, counted from the code. PyTorch's ring
/// (torch/distributed/tensor/experimental/_attention.py @ 0123248a, _templated_ring_attention
/// and its backward): forward, the K/V
/// torch.cat before a send, the SDPA kernel, the out and lse casts to fp32, and _SDPAMerger's
/// eight elementwise ops (out: lse difference, sigmoid, out - block_out, x, -; lse: difference,
/// logsigmoid, -) = 12; backward, the K/V cat, the flash backward's three kernels
/// (flash_bwd_launch_template.h: dot_do_o, dq_dk_dv, convert_dq), the dK/dV update (a chunk add
/// and the _partial_update cat, for each), the dK/dV cat and its permute, the dQ add = 11.
/// Transformer Engine (attention.py FlashAttnUnpaddedFuncWithCP / AttnFuncWithCPAndKVP2P, the
/// 1.x releases NeMo 24.03-24.07 ship, and context_parallel.py @ d0067d0d): forward, the send
/// and the receive (isend and irecv apart unless cp is 2, flash_attn_p2p_communicate), the
/// half-block .contiguous() copy, the flash kernel, the TorchScript-fused lse and out
/// corrections = 6; backward, the send and the receive, the half-block copies (of K/V, or of q,
/// out and dout: 2 on average), the flash backward's three kernels, the dq and dkv adds = 9.
inline constexpr double kTorchRingForwardKernelsPerStep = 12, kTorchRingBackwardKernelsPerStep = 11;
inline constexpr double kTeRingForwardKernelsPerStep = 6, kTeRingBackwardKernelsPerStep = 9;

/// FlashAttention-2's grids at head dim 128 on sm80/sm90 (Dao-AILab/flash-attention
/// csrc/flash_attn/src/flash_fwd_launch_template.h @ c1f0be2f run_mha_fwd_hdim128:
/// Flash_fwd_kernel_traits<128, 128, 64, 4>, grid (ceil(seqlen_q / 128), b, h);
/// flash_bwd_launch_template.h @ 073afd59 run_mha_bwd_hdim128 with >= 144 KB of shared memory:
/// Flash_bwd_kernel_traits<128, 64, 128, 8, ...>, grid (ceil(seqlen_k / 128), b, h)). The forward
/// CTA holds a 128 x 128 query tile and two 64 x 128 K/V tiles, 64 KB of shared memory, so two run
/// on an A100 SM (164 KB); the backward's takes 144 KB or more, one per SM.
inline constexpr double kFlashForwardBlockQueries = 128, kFlashForwardCtasPerSm = 2;
inline constexpr double kFlashBackwardBlockKeys = 128, kFlashBackwardCtasPerSm = 1;
/// The share of `slots` a grid of `ctas` equal CTAs keeps busy over its waves:
/// ctas / (ceil(ctas / slots) x slots); 1 where slots is 0 (SM count unknown).
double wave_fill(double ctas, double slots);
/// A flash-attention call's forward and backward wave fill (the share of the kernel's rate it
/// keeps): batch x heads x ceil(queries / 128) forward CTAs over 2 per SM, batch x heads x
/// ceil(keys / 128) backward CTAs over 1 per SM. `forward_calls` concurrent calls share the
/// forward's waves (Transformer Engine runs consecutive ring steps on two streams).
struct FlashFill {
  double forward = 1, backward = 1;
};
FlashFill flash_call_fill(double batch, double heads, double queries, double keys, double sms,
                          double forward_calls = 1);
/// The fill of a context-parallel ring's cp kernel calls on a rank holding `local` positions of
/// each sequence, time-weighted (every step carries the same FLOPs): causal and load-balanced,
/// the first step runs the local block causally (taken unquantized: its CTAs carry unequal work,
/// as a whole-sequence causal call's do), the later ones a half-block, queries local x keys
/// local / 2 where the K/V chunk comes from an earlier rank and local / 2 x local from a later
/// one, half of the later steps each over the ring's ranks; non-causal, every step local x local. `two_streams`: Transformer Engine's forward (flash_attn_streams, "to resolve
/// wave quantization issue of Flash Attn in each step"), whose later steps overlap in pairs.
FlashFill ring_flash_fill(double batch, double heads, double local, std::int64_t cp, bool causal, double sms,
                          bool two_streams);

/// Ulysses' all-to-alls per pass, forward or backward alike: q, k and v scattered over heads
/// and the output gathered back (their gradients the other way), each sending (cp - 1) / cp of
/// the rank's tensor; UlyssesSPAttentionHF waits on every one (deepspeedai/DeepSpeed @ edaa7221
/// deepspeed/runtime/sequence_parallel/ulysses_sp.py, _DimZeroAllToAll), so none is hidden.
/// `s.kv_width` counts the K/V heads after their repetition up to one per rank.
double ulysses_all_to_all_s(const RingAttentionShape& s, double link_bytes_per_s, double link_latency_s);

/// 0.90 of the MAMF table above for the GPU's architecture (of 0.80 where it has no measurement).
double matmul_efficiency_for(const GpuSpec& gpu);
/// An FP8 GEMM's achievable share of the FP8 peak over a bf16 GEMM's of the bf16 peak on the same
/// GPU: the FP8 MAMF over the bf16 MAMF (perf_model.cpp; 1 where unmeasured). gemm_kernel_for's FP8
/// mainloop runs at the FP8 peak x the bf16 share x this.
double fp8_matmul_share_of_bf16(const GpuSpec& gpu);
/// FlashAttention-2's fraction of the 16-bit peak: 0.35 on Hopper, 0.5 elsewhere (see above).
double attention_efficiency_for(const GpuSpec& gpu);
/// `k` with its by-GPU fields (0: matmul and attention efficiency) resolved for `gpu`.
PerfConstants resolved_for(const PerfConstants& k, const GpuSpec& gpu);

/// What the step-time model needs of one layer group, per token (built once per model + setup).
struct PerfLayer {
  std::int64_t count = 0;
  bool moe = false;
  double matmul_flops_fwd = 0;         // 2 x active linear weights (+ LoRA adapters), per token
  double matmul_trainable_flops_fwd = 0;  // part of the above whose weights train (wgrad in backward)
  double attention_flops_fwd_per_ctx = 0;  // 2 x heads x (qk + v head dims): times the context length
  double heads = 0;
  /// HBM traffic of the block's memory-bound kernels per token in the forward (norms, residual
  /// adds, activation function, rotary), eager and compiled; `wide` is the hidden-width part
  /// (split by tp only under sequence parallelism), `split` the part on heads and MLP width.
  double elementwise_wide_fwd = 0, elementwise_split_fwd = 0;
  double elementwise_wide_fwd_compiled = 0, elementwise_split_fwd_compiled = 0;
  double elementwise_wide_fwd_fused = 0, elementwise_split_fwd_fused = 0;  // TrainingSetup::fused_elementwise
  /// Widths a token passes through the layer's linears: sum of in-features and of out-features
  /// (MoE: top-k experts), for the fp8 cast traffic of dynamically scaled linears.
  double linear_in_width = 0, linear_out_width = 0;
  double linear_count = 0;             // linears a token passes through (MoE: top-k experts)
  /// Share of the block's matmul FLOPs that torchtitan's op-level policy recomputes (the 2nd,
  /// 4th, ... matmul in forward order: a fold over the group's BlockProgram).
  double mm_policy_recomputed_fraction = 0;
  std::int64_t first_layer = 0;
  double dense_params = 0;             // parameters of one layer outside the routed experts
  double expert_params = 0;            // routed experts of one layer (all experts)
  double trainable_params = 0;         // trainable parameters of one layer (adapters for LoRA)
  /// The layer's activations as the memory replay derives them (layer_activations of the group's
  /// last layer): T5 decoder cross-attention, and whether its base weights train.
  bool cross_attention = false;
  bool base_trains = false;
  /// Heads whose K/V the context-parallel ring passes on (kernel_kv_heads).
  double ring_kv_heads = 0;
  double qk_dim = 0, v_dim = 0;        // head dims of queries/keys and of values
  /// The MoE dispatch (the group's BlockProgram kDispatch step): copies of each token sent to
  /// experts (top_k), the elements each copy carries (the hidden width) and the expert-parallel
  /// all-to-alls per forward (dispatch and combine); 0 outside MoE layers.
  double routed_tokens = 0, dispatch_elems = 0, all_to_alls_fwd = 0;
  /// The block's matmuls per rank as (in, out) widths for each tensor-parallel degree that
  /// divides the heads (block_matmuls of the group's BlockProgram as the framework runs it:
  /// Megatron column/row splits, GQA groups replicated below tp), for the HBM traffic of each one (roofline, Williams et al. 2009): a matmul whose
  /// activations and weight take longer to move than its FLOPs take to run is memory-bound.
  std::vector<std::pair<std::int64_t, std::vector<BlockMatmul>>> matmuls_by_tp;
  double adapter_flops_fwd = 0;        // part of matmul_flops_fwd in LoRA adapters (trained, not shaped)
  double base_train_share = 0;         // share of the base linears whose weights train (wgrad)
  /// Kernels the layer's forward launches per micro-batch: eager PyTorch, torch.compile, or
  /// Megatron's fused kernels (counted from the modules, docs/performance_model.md).
  double kernels_fwd_eager = 0, kernels_fwd_compiled = 0, kernels_fwd_fused = 0;
};

struct PerfBasis {
  ModelArchitecture arch;              // what the layers' activations derive from (activation offload)
  std::vector<PerfLayer> layers;       // decoder groups in order (encoder groups first)
  std::int64_t num_layers = 0;
  std::int64_t hidden = 0, vocab = 0;
  bool causal = true;
  std::int64_t sliding_window = 0;
  double head_flops_fwd = 0;           // 2 x vocab x hidden (the output layer), per token
  bool head_trains = true;
  double embedding_params = 0;         // token + position tables
  double head_params = 0;              // untied output layer + final norm
  double embedding_trainable_params = 0;  // of embedding_params, or PEFT's embedding copy
  double head_trainable_params = 0;       // of head_params, or PEFT's output-layer copy
  double trainable_params = 0;         // all trainable parameters
  /// Model FLOPs per token by the usual convention, for MFU: 6 x active parameters (matmul
  /// weights, output layer included) + 12 x layers x heads x head dim x sequence
  /// (torchtitan utils get_num_flop_per_token; Chowdhery et al. 2022 App. B).
  double model_flops_per_token_base = 0;   // 6 x N part
  double model_flops_attention_per_ctx = 0;  // x sequence length
};

PerfBasis build_perf_basis(const ModelArchitecture& arch, const TensorInventory& inv, const TrainingSetup& t);

/// Exposed communication by parallelism (seconds per step, not hidden behind compute).
struct ExposedCommunication {
  double dp_s = 0, tp_s = 0, pp_s = 0, cp_s = 0, ep_s = 0;
  double total() const { return dp_s + tp_s + pp_s + cp_s + ep_s; }
};

struct StepTime {
  double step_s = 0;
  double compute_s = 0;          // fwd + bwd + recompute of every micro-batch on the slowest stage
  double recompute_s = 0;        // part of compute_s spent recomputing checkpointed activations
  double bubble_s = 0;           // pipeline fill and drain
  double optimizer_s = 0;        // optimizer step (GPU or host)
  double offload_s = 0;          // host transfers not hidden behind compute
  double launch_wait_s = 0;      // time the GPU waits for the host to issue kernels (launch-bound micro-batches, blocking launches)
  /// Activation offload: what one micro-batch keeps on the slowest stage, moved to the host in
  /// forward and back in backward (the memory replay's kept set, layer_keep).
  double activation_offload_bytes_per_micro_batch = 0;
  /// Element bytes of the gradients as the data-parallel collective moves them.
  double gradient_reduce_element_bytes = 0;
  /// Part of comm.pp_s: a tied word embedding's gradient all-reduced between the first and the
  /// last pipeline stage once a step.
  double tied_embedding_sync_s = 0;
  /// One micro-batch on the slowest stage: its compute plus the tensor, context and expert
  /// parallel collectives not hidden behind it (compute_s + tp + cp + ep = grad_accum x this).
  double per_micro_batch_s = 0;
  /// Data-parallel time every micro-batch adds whatever the accumulation: ZeRO-3's gathers (and
  /// its reductions when they run per micro-batch) and ZeRO-2's reductions slow the compute
  /// beside them by at least PerfConstants::overlap_compute_slowdown of their time, and ZeRO-3
  /// waits for each micro-batch's first gather. Independent of the micro-batch size.
  double dp_per_micro_batch_floor_s = 0;
  ExposedCommunication comm;
  /// Communication per step before overlap (seconds), for the report.
  double communication_total_s = 0;
  std::int64_t global_batch = 0;     // sequences per step: dp x micro_batch x grad_accum
  std::int64_t tokens_per_step = 0;
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;   // model FLOPs (convention above) per second per GPU
  double mfu = 0;                    // over the GPU's dense 16-bit peak
};

/// One micro-batch through one pipeline stage: compute (forward, backward, recompute), the
/// tensor, context and expert parallel collectives not hidden behind it, and the stage's
/// trainable and held parameters (per tp rank).
struct StageCost {
  double compute_s = 0, recompute_s = 0, bwd_s = 0, tp_s = 0, cp_s = 0, ep_s = 0, trainable = 0, params = 0;
  double tp_total_s = 0;    // the tensor-parallel collectives before overlap (tp_s: exposed)
  double block_params = 0;  // part of `params` in transformer blocks (a QLoRA base's NF4 weights)
  double sp_gather_copy_s = 0;  // part of compute_s: copies after sequence-parallel all-gathers
  double wave_excess_s = 0;     // part of compute_s: GEMM time above FLOPs at the mainloop rate (tiles, waves, roofline), and a ring's flash time above whole waves
  double launch_s = 0;          // host time to issue the micro-batch's kernels (PerfConstants::host_launch_s)
  double launch_gap_s = 0;      // GPU idle between synchronous launches (TrainingSetup::cuda_launch_blocking)
};
/// The first and last stages' costs (one stage: `last` holds the whole model): the part of a step
/// time that depends on neither dp, the sharding stage, the offload nor the accumulation, so the
/// search computes it once for the layouts that differ only in those.
struct StageCosts {
  StageCost first, last;
};
/// One micro-batch's work on a rank, part by part (seconds), to place the memory timeline's events
/// in the step: each layer group's forward and backward of one layer (recomputation and the
/// exposed tensor, context and expert parallel collectives included), the embedding's, output
/// layer's and loss's passes. Stretched evenly where the host's kernel launches set the pace.
struct LayerPassTimes {
  std::int64_t first_layer = 0, count = 0;
  double forward_s = 0, backward_s = 0;  // one layer of the group
};
struct MicroBatchTimes {
  std::vector<LayerPassTimes> layers;  // PerfBasis::layers order
  double embedding_forward_s = 0;      // the embedding's collectives (row-split tensor parallelism)
  double head_forward_s = 0, loss_forward_s = 0, loss_backward_s = 0, head_backward_s = 0;
  double embedding_backward_s = 0;     // the embedding's gradient add
};
/// The parts of one micro-batch on layout `l`; their sum over a stage's layers (and its head) is
/// StepTime::per_micro_batch_s for the stage that sets the pace.
MicroBatchTimes micro_batch_times(const PerfBasis& basis, const TrainingSetup& t, const ParallelLayout& l,
                                  const ClusterSpec& c, const PerfConstants& k = {}, const RankPlan* plan = nullptr);

/// `plan`: plan_rank(l, t) when the caller has it (the same result).
StageCosts stage_costs(const PerfBasis& basis, const TrainingSetup& t, const ParallelLayout& l, const ClusterSpec& c,
                       const PerfConstants& k = {}, const RankPlan* plan = nullptr);

/// Step time of `t` on layout `l` (degrees, sharding, schedule, behaviours) over cluster `c`.
/// `known`: stage_costs(basis, t, l, c, k) when the caller has them; `plan`: plan_rank(l, t) (the same result).
StepTime estimate_step_time(const PerfBasis& basis, const TrainingSetup& t, const ParallelLayout& l,
                            const ClusterSpec& c, const PerfConstants& k = {}, const StageCosts* known = nullptr,
                            const RankPlan* plan = nullptr);

/// The assumptions behind every step time, in words, for the result.
std::vector<std::string> perf_assumptions(const PerfConstants& k, const ClusterSpec& c);

}  // namespace memfit
