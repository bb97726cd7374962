// The step-time model's relations: recomputation costs time, the bubble is the other stages' fill
// and drain, collectives crossing nodes are slower, each framework's kernels and collectives as
// cited, and stage costs independent of what the search reuses them across.
#include <catch2/catch.hpp>

#include <algorithm>

#include "block/activations.h"
#include "perf/perf_model.h"
#include "search/bounds.h"
#include "../test_support.h"
#include "frameworks/profile.h"
#include "training/parameters.h"

using namespace memfit;
using namespace memfit_test;

namespace {

/// The step-time basis of a model under a setup (its tensor inventory built on the way).
PerfBasis basis_of(const ModelArchitecture& a, const TrainingSetup& t) {
  return build_perf_basis(a, build_tensor_inventory(a), t);
}

}  // namespace

TEST_CASE("model FLOPs per token follow 6N + 12 L H Q T", "[perf]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TensorInventory inv = build_tensor_inventory(a);
  const PerfBasis b = build_perf_basis(a, inv, bf16(1, 8192));
  // Matmul weights = all parameters but the token embedding and the norms (untied head).
  const double norms = static_cast<double>(inv.params_by_kind[static_cast<int>(ModuleKind::kNorm)]);
  const double embed = static_cast<double>(inv.params_by_kind[static_cast<int>(ModuleKind::kEmbedding)]);
  const double expected = 6.0 * (static_cast<double>(inv.total_params) - embed - norms);
  CHECK(b.model_flops_per_token_base == Approx(expected).epsilon(1e-9));
  CHECK(b.model_flops_attention_per_ctx == Approx(12.0 * 32 * 32 * 128));
}

TEST_CASE("recomputation costs time: none < selective < full", "[perf]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const PerfBasis b = basis_of(a, bf16(1, 4096));
  ParallelLayout l;
  const ClusterSpec c = cluster("H100-80GB", 1);
  TrainingSetup t = bf16(1, 4096);
  const double none = estimate_step_time(b, t, l, c).step_s;
  t.checkpointing = Checkpointing::kSelective;
  const double selective = estimate_step_time(b, t, l, c).step_s;
  t.checkpointing = Checkpointing::kFull;
  const StepTime full = estimate_step_time(b, t, l, c);
  CHECK(none < selective);
  CHECK(selective < full.step_s);
  CHECK(full.recompute_s > 0);
  CHECK(full.mfu > 0.2);
  CHECK(full.mfu < 1.0);
}

TEST_CASE("a compile of the blocks alone leaves the cross-entropy eager", "[perf]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup t = bf16(1, 8192);
  t.compile = true;
  const PerfBasis b = basis_of(a, t);
  const ParallelLayout l;
  const ClusterSpec c = cluster("H100-80GB", 1);
  const double whole = stage_costs(b, t, l, c).last.compute_s;
  t.compile_loss = false;
  const double blocks = stage_costs(b, t, l, c).last.compute_s;
  // Eager: upcast, log-softmax, nll, softmax - one-hot and the cast back pass every logit
  // through HBM (34 bytes with the matmul's write); the compiled loss reads and writes 16 bits
  // (6 bytes). 8192 x 128256 logits at 85 % of 3.35 TB/s.
  const double logits = 8192.0 * 128256;
  CHECK(blocks - whole == Approx(logits * (34 - 6) / (3350e9 * 0.85)).epsilon(1e-9));
  // torchtitan compiled the blocks only until build_loss_fn (2025-04).
  const FrameworkProfile& titan = framework_profile(Framework::kTorchtitan);
  CHECK_FALSE(framework_defaults(titan, 202412).compile_loss);
  CHECK(framework_defaults(titan, 202506).compile_loss);
}

TEST_CASE("torchtitan's op-level policy recomputes the even matmuls and every memory-bound op", "[perf]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup t = bf16(1, 8192);
  const PerfBasis b = basis_of(a, t);
  REQUIRE(b.layers.size() == 1);
  // Block order q k v o gate up down: the 2nd, 4th and 6th (k, o, up) are recomputed.
  const double h = 4096, kv = 1024, f = 14336;
  const double recomputed = h * kv + h * h + h * f;
  const double all = 2 * h * h + 2 * h * kv + 3 * h * f;
  CHECK(b.layers[0].mm_policy_recomputed_fraction == Approx(recomputed / all).epsilon(1e-12));
  // Against the attention-only policy (which recomputes the kernel only), the op policy's extra
  // time is that matmul share of the forward matmuls plus the eager forward memory traffic
  // minus the attention forward.
  const ClusterSpec c = cluster("H100-80GB", 1);
  const ParallelLayout l;
  t.checkpointing = Checkpointing::kSelective;
  t.selective_every_other_mm = true;
  const StepTime op = estimate_step_time(b, t, l, c);
  t.selective_every_other_mm = false;
  const StepTime attention = estimate_step_time(b, t, l, c);
  const double tokens = 8192;
  // The block's forward GEMMs at their shapes (gemm_time_s), HF's separate q, k, v, gate, up.
  const GemmKernel gemm = gemm_kernel_for(c.gpu, Precision::kBf16, {});
  double mm_fwd = 0;
  for (const BlockMatmul& mm : block_matmuls(a, false, 1)) mm_fwd += gemm_time_s(tokens, static_cast<double>(mm.out), static_cast<double>(mm.in), gemm);
  const double hbm = c.gpu.memory_bandwidth_gb_per_s * 1e9 * PerfConstants{}.memory_efficiency;
  const double elem_fwd = tokens * (b.layers[0].elementwise_wide_fwd + b.layers[0].elementwise_split_fwd) / hbm;
  const double attn_fwd = tokens * b.layers[0].attention_flops_fwd_per_ctx * 4096 /
                          (c.gpu.dense_tflops_bf16 * 1e12 * attention_efficiency_for(c.gpu) * flash_length_factor(4096));
  CHECK(op.recompute_s - attention.recompute_s ==
        Approx(32 * (recomputed / all * mm_fwd + elem_fwd - attn_fwd)).epsilon(1e-9));
}

TEST_CASE("Megatron's hand-fused kernels move each elementwise op's operands once", "[perf]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup t = bf16(1, 8192);
  const PerfBasis b = basis_of(a, t);
  const PerfLayer& pl = b.layers[0];
  const double h = 4096, f = 14336, rotated = (32 + 8) * 128.0;
  // Eager: two RMSNorms of 36 B and two residual adds of 6 B per hidden element; SwiGLU 10 B
  // per MLP element, rotary 24 B per rotated element. Fused: norms 4 B, residual adds 6 B,
  // SwiGLU 6 B, rotary 4 B.
  CHECK(pl.elementwise_wide_fwd == Approx((2 * 36 + 2 * 6) * h).epsilon(1e-12));
  CHECK(pl.elementwise_split_fwd == Approx(10 * f + 24 * rotated).epsilon(1e-12));
  CHECK(pl.elementwise_wide_fwd_fused == Approx((2 * 4 + 2 * 6) * h).epsilon(1e-12));
  CHECK(pl.elementwise_split_fwd_fused == Approx(6 * f + 4 * rotated).epsilon(1e-12));
  // The step saves exactly the difference, forward and backward (twice the forward), on every layer.
  const ClusterSpec c = cluster("H100-80GB", 1);
  const ParallelLayout l;
  const StepTime eager = estimate_step_time(b, t, l, c);
  t.fused_elementwise = true;
  const StepTime fused = estimate_step_time(b, t, l, c);
  const double hbm = c.gpu.memory_bandwidth_gb_per_s * 1e9 * PerfConstants{}.memory_efficiency;
  const double saved = 8192 * ((2 * 32 * h) + (4 * f + 20 * rotated)) / hbm;
  CHECK(eager.compute_s - fused.compute_s == Approx(32 * 3 * saved).epsilon(1e-9));
  // torch.compile's whole-chain fusion wins over it; Megatron's profile sets it.
  t.compile = true;
  CHECK(estimate_step_time(b, t, l, c).compute_s < fused.compute_s);
  CHECK(framework_profile(Framework::kMegatron).defaults.fused_elementwise);
  CHECK_FALSE(framework_profile(Framework::kTorchtitan).defaults.fused_elementwise);
}

TEST_CASE("the pipeline bubble is the fill and drain through the other stages, each at its own time", "[perf][pp]") {
  // Llama 3.1 8B: the last stage adds the 128256-wide output layer and the loss, so it sets the
  // pace; the fill and drain pass the p - 1 stages before it, each at the first stage's time.
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const PerfBasis b = basis_of(a, bf16(1, 4096));
  const ClusterSpec c = cluster("H100-80GB", 8);
  const auto gpu_s = [](const StageCost& s) { return s.compute_s + s.tp_s + s.cp_s + s.ep_s; };
  for (std::int64_t m : {4, 8, 16}) {
    for (std::int64_t v : {1, 2}) {
      ParallelLayout l;
      l.pp = 4;
      l.dp = 2;
      l.vpp = v;
      l.schedule = v > 1 ? PipelineSchedule::kInterleaved : PipelineSchedule::k1F1B;
      const TrainingSetup t = bf16(1, 4096, m);
      const StageCosts sc = stage_costs(b, t, l, c);
      const double first = gpu_s(sc.first), last = gpu_s(sc.last);
      REQUIRE(sc.first.launch_s < first);  // GPU-bound: a stage's time is its GPU time
      REQUIRE(last > first);
      const StepTime s = estimate_step_time(b, t, l, c);
      CHECK(s.per_micro_batch_s == Approx(last).epsilon(1e-12));
      CHECK(s.bubble_s == Approx(3.0 * first / static_cast<double>(v)).epsilon(1e-12));
      // Shorter than (p - 1) / v slots of the pacing stage, which equal stages would give.
      CHECK(s.bubble_s < 3.0 / static_cast<double>(v) * s.per_micro_batch_s);
      CHECK(s.compute_s == Approx(static_cast<double>(m) * sc.last.compute_s).epsilon(1e-12));
    }
  }
}

TEST_CASE("Megatron before 2023-09 reduced its gradients after the backward and waited for its parameter gather", "[perf][dp]") {
  const FrameworkProfile& megatron = framework_profile(Framework::kMegatron);
  const DistributedBehaviour aug2023 = framework_behaviour(megatron, 202308);
  const DistributedBehaviour sep2023 = framework_behaviour(megatron, 202309);
  CHECK_FALSE(aug2023.dp_reduce_overlaps_backward);
  CHECK_FALSE(aug2023.param_gather_overlaps_forward);
  CHECK(sep2023.dp_reduce_overlaps_backward);
  // --overlap-param-gather came two months later (3b417268, 2023-11-17).
  CHECK_FALSE(framework_behaviour(megatron, 202310).param_gather_overlaps_forward);
  CHECK(framework_behaviour(megatron, 202311).param_gather_overlaps_forward);
  CHECK(framework_behaviour(framework_profile(Framework::kTorchtitan), 0).dp_reduce_overlaps_backward);

  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TrainingSetup t = bf16(1, 4096, 4);
  const PerfBasis b = basis_of(a, t);
  const ClusterSpec c = cluster("H100-80GB", 16, 1);
  ParallelLayout l;
  l.dp = 16;  // DDP: one all-reduce of the 16-bit gradients, one rank per node
  const StepTime beside = estimate_step_time(b, t, l, c);
  l.behaviour.dp_reduce_overlaps_backward = false;
  const StepTime after = estimate_step_time(b, t, l, c);
  const StageCosts sc = stage_costs(b, t, l, c);
  // Waited: the whole all-reduce; beside the backward: what sticks out past it.
  REQUIRE(after.comm.dp_s > 2 * sc.last.bwd_s);
  CHECK(after.comm.dp_s - beside.comm.dp_s == Approx(sc.last.bwd_s).epsilon(1e-6));
  CHECK(after.communication_total_s == Approx(beside.communication_total_s).epsilon(1e-12));
}

TEST_CASE("data-parallel reductions that cross nodes are slower; more data parallelism raises throughput", "[perf][dp]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const PerfBasis b = basis_of(a, bf16(1, 4096));
  ParallelLayout l;
  l.dp = 16;
  l.sharding = Sharding::kZero3;
  const StepTime intra = estimate_step_time(b, bf16(1, 4096), l, cluster("H100-80GB", 16, 16));
  const StepTime inter = estimate_step_time(b, bf16(1, 4096), l, cluster("H100-80GB", 16, 2));
  CHECK(inter.communication_total_s > intra.communication_total_s);
  CHECK(inter.step_s >= intra.step_s);
  // DDP repeats the single GPU's work and adds the all-reduce: never faster per GPU.
  ParallelLayout one, ddp;
  ddp.dp = 16;
  const StepTime single = estimate_step_time(b, bf16(1, 4096), one, cluster("H100-80GB", 1));
  const StepTime replicated = estimate_step_time(b, bf16(1, 4096), ddp, cluster("H100-80GB", 16, 2));
  CHECK(replicated.tokens_per_s > single.tokens_per_s);
  CHECK(replicated.tokens_per_s_per_gpu <= single.tokens_per_s_per_gpu);
}

TEST_CASE("a collective across nodes runs over the NICs of all its ranks in a node; a pipeline send over one", "[perf][dp]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TrainingSetup t = bf16(1, 4096);
  const PerfBasis b = basis_of(a, t);
  const PerfConstants k;
  // NCCL's latency of a collective: its time for a message of (almost) nothing.
  const auto latency = [&](std::int64_t n, const CollectiveLink& l) { return nccl_all_reduce_s(1e-9, n, l, k); };
  ParallelLayout ddp;
  ddp.dp = 16;
  // The all-reduce's bandwidth term: 16 ranks, 8 in each node (8 NICs of 50 GB/s, under NVLink's
  // 450) against 16 nodes of one GPU (one NIC); each pays its ring's latency.
  const double eight = estimate_step_time(b, t, ddp, cluster("H100-80GB", 16, 8)).communication_total_s;
  const double one = estimate_step_time(b, t, ddp, cluster("H100-80GB", 16, 1)).communication_total_s;
  REQUIRE(one > 0);
  const double lat_eight = latency(16, {400e9 * k.collective_efficiency, 2, true});
  const double lat_one = latency(16, {50e9 * k.collective_efficiency, 16, true});
  CHECK(lat_eight == Approx(k.nccl_base_latency_s + 28 * k.nccl_ring_hop_nvlink_s + 2 * k.nccl_ring_hop_net_s).epsilon(1e-9));
  CHECK(lat_one == Approx(k.nccl_base_latency_s + 30 * k.nccl_ring_hop_net_s).epsilon(1e-9));
  CHECK((one - lat_one) / (eight - lat_eight) == Approx(8).epsilon(1e-9));
  // Four ranks per node (tp 2 inside them): four NICs.
  ParallelLayout tp2 = ddp;
  tp2.dp = 8;
  tp2.tp = 2;
  ClusterSpec two_nodes = cluster("H100-80GB", 16, 8);
  const StepTime four_nics = estimate_step_time(b, t, tp2, two_nodes);
  two_nodes.gpus_per_node = 2;  // one dp rank per node
  const StepTime one_nic = estimate_step_time(b, t, tp2, two_nodes);
  CHECK((one_nic.communication_total_s - one_nic.comm.tp_s - latency(8, {50e9 * k.collective_efficiency, 8, true})) /
            (four_nics.communication_total_s - four_nics.comm.tp_s - latency(8, {200e9 * k.collective_efficiency, 2, true})) ==
        Approx(4).epsilon(1e-9));
  // No faster than the node's own links: 8 NICs of 100 GB/s give NVLink's 450 GB/s.
  ClusterSpec fast = cluster("H100-80GB", 16, 8);
  fast.inter_node_bandwidth_gb_per_s = 100;
  const double capped = estimate_step_time(b, t, ddp, fast).communication_total_s;
  const double in_node = estimate_step_time(b, t, ddp, cluster("H100-80GB", 16, 16)).communication_total_s;
  CHECK(capped - lat_eight == Approx(in_node - latency(16, {450e9 * k.collective_efficiency, 1, true})).epsilon(1e-9));
  // A pipeline send crosses one NIC, however many ranks of the stage share the node.
  ParallelLayout pp;
  pp.dp = 4;
  pp.pp = 4;
  TrainingSetup ga = bf16(1, 4096, 8);
  const PerfBasis bg = basis_of(a, ga);
  const StepTime piped = estimate_step_time(bg, ga, pp, cluster("H100-80GB", 16, 8));
  const double msg = 4096.0 * 4096 * 2;  // tokens x hidden x 2 bytes, per micro-batch
  const double send_latency = k.nccl_base_latency_s + k.nccl_ring_hop_net_s;
  CHECK(piped.comm.pp_s == Approx(2 * 8 * (msg / (50e9 * k.collective_efficiency) + send_latency)).epsilon(1e-9));
}

TEST_CASE("NCCL's cost model: a hop per ring step, a tree across many nodes for small messages", "[perf][dp]") {
  const PerfConstants k;
  const CollectiveLink nvlink{450e9 * 0.8, 1, true}, pcie{32e9 * 0.8, 1, false};
  // Inside a node: base + (n - 1) hops for an all-gather, 2 (n - 1) for an all-reduce.
  CHECK(nccl_ring_gather_s(1e-9, 8, nvlink, k) == Approx(k.nccl_base_latency_s + 7 * k.nccl_ring_hop_nvlink_s).epsilon(1e-6));
  CHECK(nccl_all_reduce_s(1e-9, 8, nvlink, k) == Approx(k.nccl_base_latency_s + 14 * k.nccl_ring_hop_nvlink_s).epsilon(1e-6));
  CHECK(nccl_all_reduce_s(1e-9, 8, pcie, k) == Approx(k.nccl_base_latency_s + 14 * k.nccl_ring_hop_pcie_s).epsilon(1e-6));
  CHECK(nccl_all_reduce_s(0, 8, nvlink, k) == 0);
  CHECK(nccl_all_reduce_s(1e6, 1, nvlink, k) == 0);
  // 1024 nodes of 8: the ring's 2 x 1023 network hops outweigh the tree's log2 steps for a small
  // message; a large one goes by ring, whose bandwidth term is 2 (n - 1) / n, not 1 / 0.45.
  const CollectiveLink wide{400e9 * 0.8, 1024, true};
  const double ring_latency = k.nccl_base_latency_s + (2 * 8191 - 2046) * k.nccl_ring_hop_nvlink_s + 2046 * k.nccl_ring_hop_net_s;
  const double tree_latency = 2 * (7 * k.nccl_tree_hop_intra_s + 10 * k.nccl_tree_hop_net_s);
  CHECK(tree_latency < ring_latency);
  CHECK(nccl_all_reduce_s(1e3, 8192, wide, k) == Approx(tree_latency + 1e3 / (0.45 * wide.bytes_per_s)).epsilon(1e-9));
  // Without NCCL's tree bandwidth cap its model sends even 4 GB by tree over 1024 nodes; over 4
  // nodes the ring's 2 (n - 1) / n beats the tree's 1 / 0.45.
  const double big = 4e9;
  CHECK(nccl_all_reduce_s(big, 8192, wide, k) == Approx(tree_latency + big / (0.45 * wide.bytes_per_s)).epsilon(1e-9));
  const CollectiveLink four{400e9 * 0.8, 4, true};
  const double four_ring = k.nccl_base_latency_s + (62 - 6) * k.nccl_ring_hop_nvlink_s + 6 * k.nccl_ring_hop_net_s;
  CHECK(nccl_all_reduce_s(big, 32, four, k) == Approx(four_ring + 2.0 * 31 / 32 * big / four.bytes_per_s).epsilon(1e-9));
  // A point-to-point transfer: one hop.
  CHECK(nccl_p2p_latency_s(nvlink, k) == Approx(k.nccl_base_latency_s + k.nccl_ring_hop_nvlink_s).epsilon(1e-12));
  CHECK(nccl_p2p_latency_s({50e9, 2, true}, k) == Approx(k.nccl_base_latency_s + k.nccl_ring_hop_net_s).epsilon(1e-12));
}

namespace {

/// NCCL 2.10.3's own tuning model of a one-node ring all-reduce (src/graph/tuning.cc @v2.10.3-1,
/// the NCCL BigScience's A100 logs print): latency baseLat + 2 (n - 1) hwLat[NVLink], bus
/// bandwidth nChannels x 22 GB/s (SM70/SM80_NVLINK_WIDTH, topo.h), capped at 235 GB/s on sm80;
/// LL at a quarter of it (at most llMaxBws: 87.7 Ampere, 39.0 Volta), LL128 at 0.92 of it (at
/// most 20 GB/s a channel). NCCL runs the protocol its model times fastest.
struct NcclRingTime {
  double simple_s, ll128_s, ll_s;
  double best_s() const { return std::min({simple_s, ll128_s, ll_s}); }
};
NcclRingTime nccl_2_10_ring_all_reduce(double bytes, int ranks, int channels, bool sm80) {
  double bus_gb = channels * 22.0;
  if (sm80) bus_gb = std::min(bus_gb, 235.0);
  const double steps = 2.0 * (ranks - 1), alg = ranks / steps;
  const auto t = [&](double base_us, double hop_us, double gb) { return (base_us + steps * hop_us) * 1e-6 + bytes / (gb * alg * 1e9); };
  return {t(8.4, 3.4, bus_gb), t(10.0, 1.9, std::min(bus_gb * 0.92, 20.0 * channels)),
          t(3.6, 0.47, std::min(sm80 ? 87.7 : 39.0, bus_gb / 4))};
}

}  // namespace

TEST_CASE("tensor-parallel all-reduces inside a node take NCCL 2.10's own modelled time", "[perf][tp]") {
  const PerfConstants k;
  // The messages of the Megatron tensor-parallel rows that run slower than modelled: BLOOM-shaped
  // activations (2048 tokens x 14336 x 2 bytes a micro-batch) over an A100 board's 12 NVLinks to
  // NVSwitch (12 channels after NCCL's sm80 channel doubling); GPT-2 345M's (1024 x 1024 x 2
  // bytes a sample, micro-batch 6 and 8) over a DGX-1's V100 quad (4 links) and its 8 GPUs (6).
  struct Case {
    double bytes;
    int ranks, channels;
    bool sm80;
    double link_gb;
  };
  const double bloom = 2048.0 * 14336 * 2, gpt2 = 1024.0 * 1024 * 2;
  for (const Case& c : {Case{bloom, 8, 12, true, 300}, Case{2 * bloom, 8, 12, true, 300}, Case{bloom, 4, 12, true, 300},
                        Case{bloom, 2, 12, true, 300}, Case{6 * gpt2, 4, 4, false, 100}, Case{8 * gpt2, 8, 6, false, 150}}) {
    const NcclRingTime nccl = nccl_2_10_ring_all_reduce(c.bytes, c.ranks, c.channels, c.sm80);
    // NCCL's model runs these sizes by Simple: the LL and LL128 caps do not pay at tens of MB.
    CHECK(nccl.best_s() == nccl.simple_s);
    // memfit's collective model agrees within 10 %: no per-protocol or per-size term of NCCL's
    // own model makes these all-reduces slower than memfit charges them.
    const CollectiveLink link{c.link_gb * 1e9 * k.collective_efficiency, 1, true};
    const double memfit_s = nccl_all_reduce_s(c.bytes, c.ranks, link, k);
    CHECK(memfit_s == Approx(nccl.simple_s).epsilon(0.10));
    CHECK(memfit_s >= 0.97 * nccl.simple_s);
  }
}

TEST_CASE("the GEMM tile model reproduces the H200 sweep it was fitted to", "[perf][tp]") {
  // Points of tests/validation/kernels_h200/kernel_sweep.csv (bf16, torch 2.11, median of 10
  // event-timed single calls): (m, n, k) as the output's rows and columns and the reduction, the
  // measured seconds. Each time includes the single-call launch latency (kSweepSingleCallLatencyS).
  // Over the whole 384-row table the model's median |error| is 7.0 %, p90 14.4 %, worst 40 %
  // (docs/performance_model.md); these points, from 26 to 720 TFLOP/s, are held within 20 %.
  const GemmKernel h200 = gemm_kernel_for(*presets::find_gpu("H200"), Precision::kBf16, {});
  CHECK(h200.mainloop_flops == Approx(0.75 * 989.5e12).epsilon(1e-9));
  struct Point {
    double m, n, k, seconds;
  };
  const Point points[] = {
      {8192, 6144, 4096, 0.000571392},   // 8B qkv forward at 8192 tokens: 722 TFLOP/s
      {256, 4096, 4096, 5.0352e-05},     // 8B o forward at 256 tokens: 171
      {1024, 768, 4096, 4.3024e-05},     // 8B qkv / TP 8 forward at 1024 tokens: 150
      {4096, 4096, 512, 5.6656e-05},     // 8B o / TP 8 forward at 4096 tokens: 303
      {512, 4096, 3584, 4.1744e-05},     // 8B gate_up / TP 8 input gradient at 512 tokens: 360
      {1792, 4096, 2048, 7.2112e-05},    // 8B down / TP 8 weight gradient over 2048 tokens: 417
      {8192, 57344, 32768, 0.0458513},   // 70B gate_up weight gradient over 32768 tokens: 671
      {1024, 8192, 28672, 0.000698432},  // 70B down forward at 1024 tokens: 689
      {256, 1280, 8192, 3.7296e-05},     // 70B qkv / TP 8 forward at 256 tokens: 144
      {2048, 1024, 8192, 6.2432e-05},    // 70B o / TP 8 input gradient at 2048 tokens: 550
  };
  for (const Point& p : points) {
    const double modelled = kSweepSingleCallLatencyS + gemm_time_s(p.m, p.n, p.k, h200);
    INFO("m " << p.m << " n " << p.n << " k " << p.k);
    CHECK(std::abs(modelled / p.seconds - 1) < 0.20);
  }
  // The mechanisms one at a time. A full wave at long k runs near the mainloop rate; no shape is faster.
  const double full = 2.0 * 8192 * 8192 * 8192 / gemm_time_s(8192, 8192, 8192, h200);
  CHECK(full > 0.93 * h200.mainloop_flops);
  CHECK(full <= h200.mainloop_flops);
  // 133 tiles of 256 x 128 on 132 SMs need a second, nearly empty wave; the best is then 266
  // tiles of 128 x 128 in 3 waves of half the work each, 1.5 x one full wave (split-K off: k short).
  GemmKernel no_fixed = h200;
  GemmKernel compute_bound = h200;  // the waves alone, without the roofline
  compute_bound.hbm_bytes_per_s = 1e18;
  CHECK(gemm_time_s(256 * 133, 128, 1024, compute_bound) == Approx(1.5 * gemm_time_s(256 * 132, 128, 1024, compute_bound)).epsilon(1e-9));
  // A short reduction pays each tile's fixed K-steps: k 512 runs at 512 / (512 + 192) of k 8192's rate.
  const double short_k = gemm_time_s(8192, 8192, 512, h200) / 512, long_k = gemm_time_s(8192, 8192, 8192, h200) / 8192;
  CHECK(short_k / long_k == Approx((512 + kGemmTileFixedK) / 512 / ((8192 + kGemmTileFixedK) / 8192)).epsilon(1e-9));
  // Few tiles and a deep k: split-K fills the SMs (70B qkv / TP 8 at 256 tokens: 20 tiles).
  const double one_wave_unsplit = std::ceil(20.0 / 132) * 2 * 256 * 128 * (8192 + kGemmTileFixedK) / (h200.mainloop_flops / 132);
  CHECK(gemm_time_s(256, 1280, 8192, h200) < 0.5 * one_wave_unsplit);
  // Thin and memory-bound: Llama-3.1-8B's k projection at TP 8 (4096 -> 128) over 98,304 rows
  // moves its input for 1/32 of the FLOPs; its time is the traffic's.
  const double rows = 98304, bytes = (rows * 4096 + 4096.0 * 128) * 2 + rows * 128 * 2;
  CHECK(gemm_time_s(rows, 128, 4096, h200) == Approx(bytes / h200.hbm_bytes_per_s).epsilon(1e-12));
  // No SM count: FLOPs at the mainloop rate, or the traffic.
  no_fixed.sms = 0;
  CHECK(gemm_time_s(4096, 4096, 4096, no_fixed) == Approx(2.0 * 4096 * 4096 * 4096 / h200.mainloop_flops).epsilon(1e-12));
  // Other GPUs scale by their peak, MAMF and SMs: the A100's mainloop is 0.934 of its MAMF (86.9 %).
  const GpuSpec& a100 = *presets::find_gpu("A100-80GB");
  CHECK(gemm_kernel_for(a100, Precision::kBf16, {}).mainloop_flops ==
        Approx(a100.dense_tflops_bf16 * 1e12 * 0.869 * kGemmMainloopShareOfSweepMax).epsilon(1e-9));
  CHECK(gemm_kernel_for(a100, Precision::kBf16, {}).sms == a100.sm_count);
  // FP8 GEMMs reach a smaller share of their peak than bf16 ones: the MAMF tables' FP8 / bf16
  // (H100 SXM 70.9 / 80.3 %), so an H100's FP8 mainloop is 1.77x its bf16 one, not 2x.
  const GpuSpec& h100 = *presets::find_gpu("H100-80GB");
  CHECK(gemm_kernel_for(h100, Precision::kFp8, {}).mainloop_flops ==
        Approx(h100.dense_tflops_fp8 * 1e12 * 0.709 * kGemmMainloopShareOfSweepMax).epsilon(1e-9));
  CHECK(gemm_kernel_for(h100, Precision::kFp8, {}).mainloop_flops / gemm_kernel_for(h100, Precision::kBf16, {}).mainloop_flops ==
        Approx(2 * 0.709 / 0.803).epsilon(1e-9));
  // Blackwell's bf16 MAMF is measured (B200 77.6 %, GB200 72.9 %), not the 80 % default; an
  // unmeasured GPU's FP8 share is its bf16 one.
  CHECK(matmul_efficiency_for(*presets::find_gpu("B200")) == Approx(0.776 * 0.90));
  CHECK(matmul_efficiency_for(*presets::find_gpu("GB200")) == Approx(0.729 * 0.90));
  CHECK(fp8_matmul_share_of_bf16(*presets::find_gpu("MI300X")) == 1.0);

  // In a step: Llama 3.1 8B split over TP 8 at micro-batch 1 (8192 tokens) and 2 on an H100;
  // GEMM time above the mainloop rate is charged, and per token micro-batch 2 loses less of it.
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  ParallelLayout l;
  l.tp = 8;
  const ClusterSpec c = cluster("H100-80GB", 8);
  ClusterSpec no_sms = c;
  no_sms.gpu.sm_count = 0;
  const TrainingSetup t1 = bf16(1, 8192), t2 = bf16(2, 8192);
  const PerfBasis b1 = basis_of(a, t1), b2 = basis_of(a, t2);
  const StageCosts s1 = stage_costs(b1, t1, l, c), s2 = stage_costs(b2, t2, l, c);
  REQUIRE(s1.last.wave_excess_s > 0);
  CHECK(s1.last.compute_s > stage_costs(b1, t1, l, no_sms).last.compute_s);
  CHECK(s2.last.wave_excess_s / 2 <= s1.last.wave_excess_s);
  // The speed bound leaves the quantization out, so it stays a bound at every micro-batch.
  CHECK(tokens_per_s_upper_bound(b2, t2, l, c) >= estimate_step_time(b1, t1, l, c).tokens_per_s);
  CHECK(tokens_per_s_upper_bound(b2, t2, l, c) >= estimate_step_time(b2, t2, l, c).tokens_per_s);
}

TEST_CASE("a GEMM whose leading dimension is not a multiple of 16 bytes runs at the unaligned share", "[perf]") {
  // tests/validation/kernels_h200/eager_attention.csv (fp16, torch 2.11, H200, median of
  // event-timed single calls): Megatron's eager attention GEMMs over 16 heads at s = 2048,
  // scores (s x s over the head dim d) and context (s x d over s), measured seconds.
  const GemmKernel h200 = gemm_kernel_for(*presets::find_gpu("H200"), Precision::kFp16, {});
  struct Row {
    double head_dim, scores_s, context_s;
  };
  const Row rows[] = {
      {64, 7.0992e-05, 6.0256e-05},  {96, 7.0720e-05, 6.6336e-05},  {108, 1.41632e-04, 8.8832e-05},
      {128, 7.0256e-05, 6.6000e-05}, {150, 1.85312e-04, 1.50656e-04}, {224, 9.1904e-05, 7.0864e-05},
  };
  const double s = 2048;
  for (const Row& r : rows) {
    const bool aligned = std::fmod(r.head_dim, 8) == 0;
    const GemmKernel g = gemm_kernel_for_leading_dims(h200, {s, r.head_dim});
    CHECK(g.mainloop_flops == Approx(h200.mainloop_flops * (aligned ? 1 : kGemmUnalignedMainloopShare)).epsilon(1e-12));
    const double scores = kSweepSingleCallLatencyS + batched_gemm_time_s(16, s, s, r.head_dim, g);
    const double context = kSweepSingleCallLatencyS + batched_gemm_time_s(16, s, r.head_dim, s, g);
    INFO("head dim " << r.head_dim);
    // Every row within 20 % with the share (the aligned rows are off by up to 19 %) ...
    CHECK(std::abs(scores / r.scores_s - 1) < 0.20);
    CHECK(std::abs(context / r.context_s - 1) < 0.20);
    if (aligned) continue;
    // ... where the unaligned rows took 1.5-2.1 x the aligned model's time.
    CHECK(r.scores_s > 1.4 * (kSweepSingleCallLatencyS + batched_gemm_time_s(16, s, s, r.head_dim, h200)));
    CHECK(r.context_s > 1.4 * (kSweepSingleCallLatencyS + batched_gemm_time_s(16, s, r.head_dim, s, h200)));
  }
  // 16 bytes: 8 16-bit elements, 16 fp8 ones; any one leading dimension decides.
  GemmKernel fp8 = h200;
  fp8.in_bytes = 1;
  CHECK(gemm_kernel_for_leading_dims(fp8, {4096, 8}).mainloop_flops == Approx(h200.mainloop_flops * kGemmUnalignedMainloopShare));
  CHECK(gemm_kernel_for_leading_dims(fp8, {4096, 16}).mainloop_flops == h200.mainloop_flops);
  CHECK(gemm_kernel_for_leading_dims(h200, {4096, 4096, 50257}).mainloop_flops < h200.mainloop_flops);

  // GPT-2's unpadded vocabulary (50257) as an output layer at 8192 tokens: its GEMMs run slower
  // than the 47 more columns of nanoGPT's padded 50304.
  const auto head_s = [&](double vocab) {
    const GemmKernel g = gemm_kernel_for_leading_dims(h200, {768, vocab});
    return gemm_time_s(8192, vocab, 768, g) + gemm_time_s(8192, 768, vocab, g) + gemm_time_s(768, vocab, 8192, g);
  };
  CHECK(head_s(50257) > 1.5 * head_s(50304));

  // In a step: eager attention at a head dim of 108 (BLOOM-shape 13824 / 128 heads) runs its six
  // batched GEMMs at the share; 112 runs them aligned. Llama 3.1 8B's 32 x 32 heads, A100, seq 4096.
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup t = bf16(1, 4096);
  t.attention = AttentionKernel::kEager;
  const ClusterSpec c = cluster("A100-80GB", 1);
  const GemmKernel a100 = gemm_kernel_for(c.gpu, t.precision, PerfConstants{});
  const auto with_head_dim = [&](double d) {
    PerfBasis b = basis_of(a, t);
    for (PerfLayer& pl : b.layers) pl.qk_dim = pl.v_dim = d;
    return estimate_step_time(b, t, ParallelLayout{}, c).compute_s;
  };
  const auto attention_gemms_s = [&](double d, const GemmKernel& g) {
    return 2 * batched_gemm_time_s(32, 4096, 4096, d, g) + 4 * batched_gemm_time_s(32, 4096, d, 4096, g);
  };
  const double expected = 32 * (attention_gemms_s(108, gemm_kernel_for_leading_dims(a100, {108})) - attention_gemms_s(112, a100));
  CHECK(with_head_dim(108) - with_head_dim(112) == Approx(expected).epsilon(1e-9));
  CHECK(expected > 0.5 * 32 * attention_gemms_s(112, a100));
  // Megatron pads a vocabulary to a multiple of 128 x tp (make-vocab-size-divisible-by): GPT-2's
  // 50257 as 50304, whose output layer runs aligned and faster than the unpadded one.
  PerfBasis gpt_vocab = basis_of(a, t);
  gpt_vocab.vocab = 50257;
  gpt_vocab.head_flops_fwd = 2.0 * static_cast<double>(gpt_vocab.hidden) * 50257;
  ParallelLayout megatron;
  megatron.behaviour.vocab_multiple = 128;
  CHECK(estimate_step_time(gpt_vocab, t, megatron, c).compute_s < estimate_step_time(gpt_vocab, t, ParallelLayout{}, c).compute_s);
}

TEST_CASE("overlapped collectives slow the compute beside them; longer ones stick out", "[perf][dp]") {
  constexpr double s = 0.189;
  CHECK(overlapped_exposed_s(0, 1, s) == 0);
  // Shorter than the stretched window: the compute beside it runs s slower for its duration.
  CHECK(overlapped_exposed_s(0.5, 1, s) == Approx(0.5 * s / (1 + s)).epsilon(1e-12));
  // Longer: the step waits for the collective.
  CHECK(overlapped_exposed_s(3, 1, s) == Approx(2).epsilon(1e-12));
  // Continuous where the two meet (comm = window x (1 + s)), never below comm - window.
  CHECK(overlapped_exposed_s(1 + s, 1, s) == Approx(s).epsilon(1e-12));
  for (double comm : {0.1, 0.9, 1.1, 1.2, 5.0}) CHECK(overlapped_exposed_s(comm, 1, s) >= comm - 1);
  CHECK(overlapped_exposed_s(0.5, 1, 0) == 0);

  // ZeRO-3's gathers hide behind compute but charge that compute the slowdown: the exposed
  // data-parallel time grows with the slowdown, and with none it is only the first block's gather.
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const PerfBasis b = basis_of(a, bf16(2, 8192));
  ParallelLayout l;
  l.dp = 64;
  l.sharding = Sharding::kZero3;
  const ClusterSpec c = cluster("A100-80GB", 64);
  PerfConstants none;
  none.overlap_compute_slowdown = 0;
  const StepTime free = estimate_step_time(b, bf16(2, 8192), l, c, none);
  const StepTime charged = estimate_step_time(b, bf16(2, 8192), l, c);
  REQUIRE(free.communication_total_s < free.compute_s);  // fully hidden without contention
  CHECK(charged.comm.dp_s - free.comm.dp_s ==
        Approx(free.communication_total_s * s / (1 + s)).epsilon(1e-9));
  CHECK(charged.step_s > free.step_s);
}

TEST_CASE("context-parallel rings: what each implementation leaves exposed and what its merges cost", "[perf][cp]") {
  constexpr double s = 0.189, share = s / (1 + s), bw = 40e9, lat = 25e-6, hbm = 2.04e12;
  RingAttentionShape r;
  r.tokens = 32768;
  r.kv_width = 16 * 256;  // 16 heads of K and V (128 + 128) on the rank
  r.q_width = 16 * 128;
  r.out_width = 16 * 128;
  r.cp = 8;
  const double local_kv_bytes = r.tokens * r.kv_width * 2, dkv_fp32 = r.tokens * r.kv_width * 4;
  const double gather = 7 * local_kv_bytes / bw + lat, dkv = dkv_fp32 / bw + lat;

  // PyTorch's all-gather rotation: only the first of cp steps hides the gather.
  r.gather_rotation = true;
  const double fwd = 0.1, bwd = 0.25;  // the rank's attention kernels, forward and backward
  const RingAttentionCost pt = ring_attention_cost(r, fwd, bwd, bw, lat, hbm, s);
  REQUIRE(gather > fwd / 8);
  CHECK(pt.forward_exposed_s == Approx(gather - fwd / 8).epsilon(1e-12));
  // The backward gathers again, then waits for the last fp32 dK/dV send with nothing beside it.
  CHECK(pt.backward_exposed_s >= dkv + std::max(gather - bwd / 8, gather * share));
  // Hidden behind long enough kernels, a transfer still charges the contention share.
  const RingAttentionCost hidden = ring_attention_cost(r, 100, 250, bw, lat, hbm, s);
  CHECK(hidden.forward_exposed_s == Approx(gather * share).epsilon(1e-12));
  CHECK(hidden.backward_exposed_s == Approx(gather * share + 7 * dkv * share + dkv).epsilon(1e-12));

  // Transformer Engine's p2p ring: each step's chunk hides behind that step's kernel.
  r.gather_rotation = false;
  const RingAttentionCost te = ring_attention_cost(r, 100, 250, bw, lat, hbm, s);
  const double chunk = local_kv_bytes / bw + lat;
  CHECK(te.forward_exposed_s == Approx(7 * chunk * share).epsilon(1e-12));
  CHECK(te.backward_exposed_s == Approx(7 * 2 * chunk * share).epsilon(1e-12));
  // Its fused corrections: 2e per element on the first step, 3e on each of the 7 later ones.
  const double te_step_bytes = 2 * 2 + 7 * 3 * 2;
  CHECK(te.forward_merge_s == Approx(r.tokens * r.out_width * te_step_bytes / hbm).epsilon(1e-12));
  CHECK(te.backward_merge_s == Approx(r.tokens * (r.q_width + r.kv_width) * te_step_bytes / hbm).epsilon(1e-12));

  // PyTorch's eager merges grow by the same amount with every step added to the ring.
  r.gather_rotation = true;
  auto merges = [&](std::int64_t cp) {
    RingAttentionShape x = r;
    x.cp = cp;
    const RingAttentionCost c = ring_attention_cost(x, 1, 1, bw, lat, hbm, s);
    return c.forward_merge_s + c.backward_merge_s;
  };
  CHECK(merges(4) > merges(2));
  CHECK(merges(8) - merges(4) == Approx(2 * (merges(4) - merges(2))).epsilon(1e-9));
  CHECK(ring_attention_cost(r, 1, 1, bw, lat, hbm, s).forward_merge_s ==
        Approx(r.tokens * r.out_width * (8 * 6 + 7 * 32 + 6) / hbm + r.tokens * r.kv_width * 7 * 4 / hbm).epsilon(1e-12));
  r.cp = 1;
  const RingAttentionCost none = ring_attention_cost(r, fwd, bwd, bw, lat, hbm, s);
  CHECK(none.forward_exposed_s + none.backward_exposed_s + none.forward_merge_s + none.backward_merge_s == 0);
}

TEST_CASE("a flash kernel's grid fills the SMs in whole waves: small ring blocks leave SMs idle", "[perf][cp]") {
  // 132 SMs (H100 SXM): two forward CTAs per SM, one backward CTA.
  CHECK(wave_fill(264, 264) == 1);
  CHECK(wave_fill(265, 264) == Approx(265.0 / 528).epsilon(1e-12));
  CHECK(wave_fill(64, 0) == 1);  // SM count unknown: no quantization
  // 8k tokens, 32 heads, batch 1: 64 query tiles x 32 heads, 7.76 forward waves.
  const FlashFill whole = flash_call_fill(1, 32, 8192, 8192, 132);
  CHECK(whole.forward == Approx(2048.0 / (8 * 264)).epsilon(1e-12));
  CHECK(whole.backward == Approx(2048.0 / (16 * 132)).epsilon(1e-12));
  // A ring step of TP 8 x CP 8 at 8k: 1024 local positions of 4 heads, 32 forward CTAs.
  const FlashFill step = flash_call_fill(1, 4, 1024, 1024, 132);
  CHECK(step.forward == Approx(32.0 / 264).epsilon(1e-12));
  CHECK(step.backward == Approx(32.0 / 132).epsilon(1e-12));
  // The load-balanced ring's half-blocks fill less than its first, whole block, and the fill
  // falls with the ring's degree at a fixed sequence (each step's block shrinks).
  const FlashFill ring2 = ring_flash_fill(1, 8, 4096, 2, true, 132, false);
  const FlashFill ring8 = ring_flash_fill(1, 8, 1024, 8, true, 132, false);
  CHECK(ring8.forward < ring2.forward);
  CHECK(ring8.backward < ring2.backward);
  // Harmonic mean over the steps, cp / sum(1 / fill); the first, causal step unquantized.
  const FlashFill hk = flash_call_fill(1, 8, 1024, 512, 132), hq = flash_call_fill(1, 8, 512, 1024, 132);
  CHECK(hk.backward == Approx(32.0 / 132).epsilon(1e-12));
  CHECK(ring8.forward == Approx(8 / (1 + 3.5 / hk.forward + 3.5 / hq.forward)).epsilon(1e-12));
  CHECK(ring8.backward == Approx(8 / (1 + 3.5 / hk.backward + 3.5 / hq.backward)).epsilon(1e-12));
  // Non-causal: every step a whole local block.
  const FlashFill whole_block = flash_call_fill(1, 8, 1024, 1024, 132);
  CHECK(ring_flash_fill(1, 8, 1024, 8, false, 132, false).forward == Approx(whole_block.forward).epsilon(1e-12));
  CHECK(ring_flash_fill(1, 8, 1024, 1, true, 132, false).forward == 1);  // no ring
  // Transformer Engine's two streams let a step's forward fill the waves its neighbour leaves.
  CHECK(ring_flash_fill(1, 8, 1024, 8, true, 132, true).forward > ring8.forward);
  CHECK(ring_flash_fill(1, 8, 1024, 8, true, 132, true).backward == Approx(ring8.backward).epsilon(1e-12));
}

TEST_CASE("context parallelism costs more per step at short sequences: grid fill and the ring's kernels", "[perf][cp]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup t = bf16(1, 8192);
  t.checkpointing = Checkpointing::kNone;
  t.attention = AttentionKernel::kFlash;
  const PerfBasis b = basis_of(a, t);
  const ClusterSpec c = cluster("H100-80GB", 32);
  auto layout = [](std::int64_t tp, std::int64_t cp, bool gather) {
    ParallelLayout l;
    l.tp = tp;
    l.cp = cp;
    l.dp = 32 / (tp * cp);
    l.sequence_parallel = tp > 1;
    l.behaviour.cp_gather_kv = gather;
    return l;
  };
  // TP 4 x CP 4 (Transformer Engine's ring): the attention of a rank costs more than its FLOPs
  // at the kernel's rate say, because 8 heads x 2k positions leave SMs idle in the half-block
  // steps. Two attention efficiencies differ in compute by the attention's time alone.
  PerfConstants slow, fast;
  slow.overlap_compute_slowdown = fast.overlap_compute_slowdown = 0;
  slow.flash_attention_efficiency = 0.35;
  fast.flash_attention_efficiency = 0.7;
  auto attention_part = [&](const ParallelLayout& l) {
    return stage_costs(b, t, l, c, slow).last.compute_s - stage_costs(b, t, l, c, fast).last.compute_s;
  };
  const double seconds_per_flop = (1 / 0.35 - 1 / 0.7) / (c.gpu.dense_tflops_bf16 * 1e12);
  // 32 layers, forward + backward (2.5x), the rank's queries over the causal context s/2.
  const double ring_flops = 32 * 3.5 * 2048.0 * (2.0 * 8 * 256) * 4096;
  const FlashFill fill = ring_flash_fill(1, 8, 2048, 4, true, 132, true);
  const double over_fill = (1 / fill.forward + 2.5 / fill.backward) / 3.5;
  CHECK(over_fill > 1.3);
  CHECK(attention_part(layout(4, 4, false)) ==
        Approx(ring_flops * seconds_per_flop / flash_length_factor(1024) * over_fill).epsilon(1e-9));
  // Without CP the attention is one causal call over the whole sequence, at the kernel's rate.
  const double whole_flops = 32 * 3.5 * 8192.0 * (2.0 * 8 * 256) * 4096;
  CHECK(attention_part(layout(4, 1, false)) == Approx(whole_flops * seconds_per_flop / flash_length_factor(4096)).epsilon(1e-9));

  // A larger micro-batch fills the waves better, so the search's speed bound at micro-batch 1
  // leaves the fill's excess out (as the GEMMs' wave excess) and still bounds micro-batch 2.
  TrainingSetup t2 = t;
  t2.micro_batch = 2;
  const ParallelLayout l44 = layout(4, 4, false);
  CHECK(tokens_per_s_upper_bound(b, t, l44, c, {}, nullptr, nullptr) >= estimate_step_time(basis_of(a, t2), t2, l44, c).tokens_per_s);

  // Each ring step launches its kernels: the host's launch time grows with cp, PyTorch's ring
  // (12 + 11 a step, eager merges) more than Transformer Engine's (6 + 9).
  const double k = PerfConstants{}.host_launch_s;
  const double te2 = stage_costs(b, t, layout(1, 2, false), c).last.launch_s;
  const double te8 = stage_costs(b, t, layout(1, 8, false), c).last.launch_s;
  CHECK(te8 - te2 == Approx(32 * 6 * (kTeRingForwardKernelsPerStep + kTeRingBackwardKernelsPerStep) * k).epsilon(1e-9));
  const double pt2 = stage_costs(b, t, layout(1, 2, true), c).last.launch_s;
  const double pt8 = stage_costs(b, t, layout(1, 8, true), c).last.launch_s;
  CHECK(pt8 - pt2 == Approx(32 * 6 * (kTorchRingForwardKernelsPerStep + kTorchRingBackwardKernelsPerStep) * k).epsilon(1e-9));
  CHECK(pt8 > te8);
  const double none = stage_costs(b, t, layout(1, 1, false), c).last.launch_s;
  CHECK(te2 > none);
}

TEST_CASE("torchtitan before 2026-01 repeats K/V for every query head: saved, and passed around the ring", "[perf][cp]") {
  const FrameworkProfile& titan = framework_profile(Framework::kTorchtitan);
  CHECK(framework_defaults(titan, 202412).attention_repeats_kv);
  CHECK_FALSE(framework_defaults(titan, 0).attention_repeats_kv);
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");  // 32 heads, 8 kv heads of 128
  TrainingSetup t = bf16(1, 65536);
  t.attention = AttentionKernel::kFlash;
  const LayerActivations plain = layer_activations(a, t, false, false, true);
  t.attention_repeats_kv = true;
  const LayerActivations repeated = layer_activations(a, t, false, false, true);
  CHECK(repeated.saved_per_token - plain.saved_per_token == 2 * (32 - 8) * (128 + 128));

  // Under CP the ring carries four times the K/V: more exposed time at cp 8 across nodes.
  ParallelLayout l;
  l.cp = 8;
  l.tp = 8;
  l.sequence_parallel = true;
  l.behaviour.cp_gather_kv = true;
  const ClusterSpec c = cluster("H100-80GB", 64);
  t.attention_repeats_kv = false;
  const double narrow = stage_costs(basis_of(a, t), t, l, c).last.cp_s;
  t.attention_repeats_kv = true;
  const double wide = stage_costs(basis_of(a, t), t, l, c).last.cp_s;
  CHECK(wide > narrow);
}

TEST_CASE("fused projections run as one wider GEMM: Megatron's linear_qkv is not memory-bound at TP 8", "[perf][tp]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup t = bf16(12, 8192);
  t.checkpointing = Checkpointing::kNone;
  const PerfBasis b = basis_of(a, t);
  const ParallelLayout l = sequence_parallel_tp(8);
  const ClusterSpec c = cluster("H100-80GB", 8);
  const GemmKernel gemm = gemm_kernel_for(c.gpu, Precision::kBf16, {});
  const std::vector<BlockMatmul> mms = block_matmuls(a, false, 8);
  REQUIRE(mms.size() == 7);
  CHECK(mms[1].out == 128);  // 8 key/value heads over 8 ranks: one 128-wide head each
  // Each GEMM's forward, dgrad and wgrad at its shape, against FLOPs alone at the mainloop rate.
  const double tokens = 12 * 8192;
  auto layer_gemms = [&](const std::vector<BlockMatmul>& shapes) {
    double s = 0, flops = 0;
    for (const BlockMatmul& mm : shapes) {
      const double in = static_cast<double>(mm.in), out = static_cast<double>(mm.out);
      s += gemm_time_s(tokens, out, in, gemm) + gemm_time_s(tokens, in, out, gemm) + gemm_time_s(in, out, tokens, gemm);
      flops += 6 * tokens * in * out;
    }
    return s - flops / gemm.mainloop_flops;
  };
  const double separate = layer_gemms(mms);
  CHECK(separate > 0);
  const StageCosts sc = stage_costs(b, t, l, c);
  // The layer's GEMM excess over 32 layers, plus the output layer's.
  const double head = 128256.0 / 8, h = 4096;
  const double head_excess = gemm_time_s(tokens, head, h, gemm) + gemm_time_s(tokens, h, head, gemm) +
                             gemm_time_s(h, head, tokens, gemm) - 6 * tokens * h * head / gemm.mainloop_flops;
  CHECK(sc.last.wave_excess_s == Approx(32 * separate + head_excess).epsilon(1e-9));
  // Megatron-Core runs q, k, v as one linear_qkv and gate, up as one linear_fc1: 4 GEMMs, the
  // fused qkv (4096 -> 768 per rank) no longer memory-bound, the same FLOPs.
  t.fused_qkv_linear = t.fused_gate_up_linear = true;
  ModelArchitecture as_run = a;
  as_run.attention.layout = QkvLayout::kFused;
  as_run.mlp.fused_gate_up = true;
  const std::vector<BlockMatmul> fused_mms = block_matmuls(as_run, false, 8);
  REQUIRE(fused_mms.size() == 4);
  CHECK(fused_mms[0].out == 768);
  const double fused = layer_gemms(fused_mms);
  CHECK(fused < separate);
  CHECK(stage_costs(basis_of(a, t), t, l, c).last.wave_excess_s == Approx(32 * fused + head_excess).epsilon(1e-9));
}

TEST_CASE("torchtitan's op-level checkpointing gathers the tensor-parallel inputs again", "[perf][tp]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup t = bf16(2, 8192);
  t.checkpointing = Checkpointing::kSelective;
  const PerfBasis b = basis_of(a, t);
  const ParallelLayout l = sequence_parallel_tp(8);
  const ClusterSpec c = cluster("H100-80GB", 8);
  const double attention_only = stage_costs(b, t, l, c).last.tp_s;
  t.selective_every_other_mm = true;
  const double op_policy = stage_costs(b, t, l, c).last.tp_s;
  // Two all-gathers of the block's input per layer: (tp - 1) / tp of the message each, plus
  // NCCL's latency (a base and 7 NVLink hops).
  const PerfConstants k;
  const double msg = 2.0 * 8192 * 4096 * 2, link = 450e9 * 0.8;
  const double latency = k.nccl_base_latency_s + 7 * k.nccl_ring_hop_nvlink_s;
  CHECK(op_policy - attention_only == Approx(32 * 2 * (7.0 / 8.0 * msg / link + latency)).epsilon(1e-9));
}

TEST_CASE("tensor parallelism pays per-layer collectives", "[perf][tp]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const PerfBasis b = basis_of(a, bf16(1, 4096));
  ParallelLayout l;
  l.tp = 8;
  const StepTime s = estimate_step_time(b, bf16(1, 4096), l, cluster("H100-80GB", 8));
  CHECK(s.comm.tp_s > 0);
  l.tp = 1;
  l.dp = 8;
  CHECK(estimate_step_time(b, bf16(1, 4096), l, cluster("H100-80GB", 8)).comm.tp_s == 0);
}

TEST_CASE("Megatron runs the backward's tensor-parallel collectives beside the column-parallel GEMMs", "[perf][tp]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TrainingSetup t = bf16(1, 8192);
  const PerfBasis b = basis_of(a, t);
  const ClusterSpec c = cluster("H100-80GB", 8);
  ParallelLayout l = sequence_parallel_tp(8);
  // One layer's 8192 x 4096 bf16 activations over 8 NVLink ranks (450 GB/s at 80 %; NCCL's base
  // latency and a hop per ring step: 7 for a gather, 14 for an all-reduce).
  const PerfConstants k;
  const double msg = 8192.0 * 4096 * 2, link = 450e9 * 0.8;
  const double ag = 7.0 / 8.0 * msg / link + k.nccl_base_latency_s + 7 * k.nccl_ring_hop_nvlink_s;
  const double ar = 2 * 7.0 / 8.0 * msg / link + k.nccl_base_latency_s + 14 * k.nccl_ring_hop_nvlink_s;
  // DTensor keeps the gathered inputs: all-gather + reduce-scatter twice in the forward, and in
  // the backward the row outputs' gradients gathered and the column inputs' reduce-scattered.
  l.behaviour.sp_saves_gathered_inputs = true;
  CHECK(stage_costs(b, t, l, c).last.tp_s == Approx(32 * (2 * ar + 4 * ag)).epsilon(1e-9));
  // Megatron keeps the local shard: two more all-gathers rebuild it for the weight gradients.
  l.behaviour.sp_saves_gathered_inputs = false;
  const StageCosts blocking = stage_costs(b, t, l, c);
  CHECK(blocking.last.tp_s == Approx(32 * (2 * ar + 6 * ag)).epsilon(1e-9));
  // Launched asynchronously, each group's reduce-scatter runs beside its weight-gradient GEMMs
  // and its re-gather beside its input-gradient GEMMs, each at its shape (gemm_time_s): q, k, v
  // (4096 -> 512, 128, 128 per rank) are shorter than a gather and leave the rest exposed; gate
  // and up (4096 -> 1792 each) are longer and cost the overlap price.
  l.behaviour.tp_backward_overlap = true;
  const StageCosts async = stage_costs(b, t, l, c);
  const GemmKernel gemm = gemm_kernel_for(c.gpu, Precision::kBf16, {});
  double wgrad[2] = {0, 0}, dgrad[2] = {0, 0};
  std::size_t group = 0;
  for (const BlockMatmul& mm : block_matmuls(a, false, 8)) {
    if (!mm.column) {
      group = 1;
      continue;
    }
    wgrad[group] += gemm_time_s(4096, static_cast<double>(mm.out), 8192, gemm);
    dgrad[group] += gemm_time_s(8192, 4096, static_cast<double>(mm.out), gemm);
  }
  const double qkv_wgrad = wgrad[0], qkv_dgrad = dgrad[0], fc1_wgrad = wgrad[1], fc1_dgrad = dgrad[1];
  REQUIRE(qkv_wgrad < ag);
  REQUIRE(qkv_dgrad < ag);
  REQUIRE(fc1_wgrad > ag);
  REQUIRE(fc1_dgrad > ag);
  const auto beside = [](double comm, double window) { return overlapped_exposed_s(comm, window, 0.189); };
  CHECK(async.last.tp_s == Approx(32 * (2 * ar + 2 * ag + beside(ag, qkv_wgrad) + beside(ag, qkv_dgrad) +
                                        beside(ag, fc1_wgrad) + beside(ag, fc1_dgrad))).epsilon(1e-9));
  CHECK(beside(ag, qkv_wgrad) == Approx(ag - qkv_wgrad).epsilon(1e-12));  // the thin GEMM leaves most exposed
  // The same collectives run, fewer of them exposed.
  CHECK(async.last.tp_total_s == Approx(blocking.last.tp_total_s).epsilon(1e-12));
  CHECK(blocking.last.tp_total_s == Approx(blocking.last.tp_s).epsilon(1e-12));
  // Without sequence parallelism only the column inputs' gradients are all-reduced, beside the
  // weight gradients.
  l.sequence_parallel = false;
  CHECK(stage_costs(b, t, l, c).last.tp_s == Approx(32 * (2 * ar + beside(ar, qkv_wgrad) + beside(ar, fc1_wgrad))).epsilon(1e-9));
  CHECK(framework_profile(Framework::kMegatron).dist.tp_backward_overlap);
  CHECK_FALSE(framework_profile(Framework::kTorchtitan).dist.tp_backward_overlap);
}

TEST_CASE("DTensor sequence parallelism copies every gathered and scattered activation whole", "[perf][tp]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  ClusterSpec c = cluster("H100-80GB", 8);
  c.gpu.sm_count = 0;  // the copies alone (tile and wave quantization favours micro-batch 2 here)
  const double hbm = c.gpu.memory_bandwidth_gb_per_s * 1e9 * PerfConstants{}.memory_efficiency;
  ParallelLayout l = sequence_parallel_tp(8);
  l.behaviour.sp_saves_gathered_inputs = true;
  // Compute of 32 blocks with and without the copies; each copy reads and writes one whole
  // micro-batch x 8192 x 4096 bf16 activation.
  auto extra_s = [&](const TrainingSetup& t, bool view_at_1) {
    const PerfBasis b = basis_of(a, t);
    ParallelLayout with = l;
    with.behaviour.sp_collective_copies = true;
    with.behaviour.sp_gather_view_at_batch_1 = view_at_1;
    return stage_costs(b, t, with, c).last.compute_s - stage_costs(b, t, l, c).last.compute_s;
  };
  const double copy2 = 2.0 * (2 * 8192.0) * 4096 * 2 / hbm, copy1 = copy2 / 2;
  // No recomputation: the forward's 2 all-gathers + 2 reduce-scatters, the backward's 2 + 2.
  CHECK(extra_s(bf16(2, 8192), true) == Approx(32 * 8 * copy2).epsilon(1e-9));
  // Micro-batch 1 gathers into a view: only the four reduce-scatters copy.
  CHECK(extra_s(bf16(1, 8192), true) == Approx(32 * 4 * copy1).epsilon(1e-9));
  CHECK(extra_s(bf16(1, 8192), false) == Approx(32 * 8 * copy1).epsilon(1e-9));
  // Full recomputation repeats the forward's four; the op-level policy its two all-gathers.
  TrainingSetup full = bf16(2, 8192);
  full.checkpointing = Checkpointing::kFull;
  CHECK(extra_s(full, true) == Approx(32 * 12 * copy2).epsilon(1e-9));
  TrainingSetup op = bf16(2, 8192);
  op.checkpointing = Checkpointing::kSelective;
  op.selective_every_other_mm = true;
  CHECK(extra_s(op, true) == Approx(32 * 10 * copy2).epsilon(1e-9));
  // Megatron's [sequence, batch, hidden] gathers in place; DTensor frameworks copy, torch before
  // the batch-1 view copied at every micro-batch, and torchtitan has folded the batch into the
  // tokens since 2026-08 (its activations gather on dim 0).
  CHECK_FALSE(framework_profile(Framework::kMegatron).dist.sp_collective_copies);
  const FrameworkProfile& titan = framework_profile(Framework::kTorchtitan);
  CHECK_FALSE(framework_behaviour(titan, 0).sp_collective_copies);
  CHECK_FALSE(framework_behaviour(titan, 202608).sp_collective_copies);
  CHECK(framework_behaviour(titan, 202607).sp_collective_copies);
  CHECK(framework_profile(Framework::kTorchtune).dist.sp_collective_copies);
  for (Framework f : {Framework::kTorchtitan, Framework::kTorchtune}) {
    const FrameworkProfile& p = framework_profile(f);
    CHECK(framework_behaviour(p, 0).sp_gather_view_at_batch_1);
    CHECK(framework_behaviour(p, 202604).sp_gather_view_at_batch_1);
    CHECK_FALSE(framework_behaviour(p, 202603).sp_gather_view_at_batch_1);
    CHECK(framework_behaviour(p, 202412).sp_collective_copies);
  }
  // Micro-batch 1 is then faster per token than 2, and the speed bound at 2 still covers it.
  l.behaviour.sp_collective_copies = true;
  l.behaviour.sp_gather_view_at_batch_1 = true;
  const TrainingSetup one = bf16(1, 8192), two = bf16(2, 8192);
  const PerfBasis b = basis_of(a, two);
  // (Without collective latency, which micro-batch 2 amortises over twice the tokens.)
  PerfConstants k;
  k.nccl_base_latency_s = k.nccl_ring_hop_nvlink_s = 0;
  const double tps1 = estimate_step_time(b, one, l, c, k).tokens_per_s;
  REQUIRE(tps1 > estimate_step_time(b, two, l, c, k).tokens_per_s);
  CHECK(tps1 <= tokens_per_s_upper_bound(b, two, l, c, k));
}

TEST_CASE("Megatron of 2021 waited for its backward all-reduce and split pipeline sends over the tp ranks", "[perf][pp]") {
  const FrameworkProfile& megatron = framework_profile(Framework::kMegatron);
  const DistributedBehaviour now = framework_behaviour(megatron, 0);
  const DistributedBehaviour aug2021 = framework_behaviour(megatron, 202108);
  const DistributedBehaviour sep2021 = framework_behaviour(megatron, 202109);
  const DistributedBehaviour jan2021 = framework_behaviour(megatron, 202101);
  const DistributedBehaviour mar2023 = framework_behaviour(megatron, 202303);
  const DistributedBehaviour apr2023 = framework_behaviour(megatron, 202304);
  CHECK(now.tp_backward_overlap);
  CHECK_FALSE(now.pp_scatter_gather);
  CHECK_FALSE(aug2021.tp_backward_overlap);
  CHECK(aug2021.pp_scatter_gather);
  CHECK(sep2021.tp_backward_overlap);
  CHECK(sep2021.pp_scatter_gather);
  CHECK_FALSE(jan2021.pp_scatter_gather);  // before 72e4230b turned it on
  CHECK(mar2023.pp_scatter_gather);
  CHECK_FALSE(apr2023.pp_scatter_gather);
  // Behaviours of the distributed code alone leave the dated setup as it is (no setup change to apply).
  const TrainingSetup dated = framework_defaults(megatron, 202108);
  CHECK(dated.checkpointing == megatron.defaults.checkpointing);
  CHECK(dated.precision == megatron.defaults.precision);
  CHECK(dated.attention == megatron.defaults.attention);

  // Scatter-gather: each of the tp ranks sends 1/tp of the activation across the node boundary
  // (one NIC), and the receiving stage all-gathers the pieces over NVLink.
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TrainingSetup t = bf16(1, 4096, 8);
  const PerfBasis b = basis_of(a, t);
  const ClusterSpec c = cluster("H100-80GB", 32, 8);
  const PerfConstants k;
  ParallelLayout l;
  l.tp = 8;
  l.pp = 4;
  const StepTime whole = estimate_step_time(b, t, l, c);
  l.behaviour.pp_scatter_gather = true;
  const StepTime split = estimate_step_time(b, t, l, c);
  const double msg = 4096.0 * 4096 * 2;
  const double inter = 50e9 * k.collective_efficiency, nvlink = 450e9 * k.collective_efficiency;
  const double send_latency = k.nccl_base_latency_s + k.nccl_ring_hop_net_s;
  const double gather_latency = k.nccl_base_latency_s + 7 * k.nccl_ring_hop_nvlink_s;
  CHECK(whole.comm.pp_s == Approx(2 * 8 * (msg / inter + send_latency)).epsilon(1e-9));
  CHECK(split.comm.pp_s == Approx(2 * 8 * (msg / 8 / inter + send_latency + 7.0 / 8 * msg / nvlink + gather_latency)).epsilon(1e-9));
  // Sequence parallelism already sends the 1/tp shard: nothing to split.
  l.sequence_parallel = true;
  const StepTime sp_split = estimate_step_time(b, t, l, c);
  l.behaviour.pp_scatter_gather = false;
  CHECK(sp_split.comm.pp_s == Approx(estimate_step_time(b, t, l, c).comm.pp_s).epsilon(1e-12));
}

TEST_CASE("Megatron's distributed optimizer gathers the parameters beside the next forward", "[perf][dp]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TrainingSetup t = bf16(1, 8192);
  const PerfBasis b = basis_of(a, t);
  const ClusterSpec c = cluster("H100-80GB", 64, 2);  // one data-parallel rank per node: one NIC
  ParallelLayout l;
  l.tp = 2;
  l.dp = 32;
  l.sequence_parallel = true;
  l.sharding = Sharding::kZero1;
  const StepTime waited = estimate_step_time(b, t, l, c);
  l.behaviour.param_gather_overlaps_forward = true;
  const StepTime beside = estimate_step_time(b, t, l, c);
  // 8.03 B bf16 parameters over tp 2, gathered over 32 ranks across nodes (50 GB/s at 80 %).
  const double params = static_cast<double>(build_tensor_inventory(a).total_params) / 2;
  const double gather = 31.0 / 32.0 * params * 2 / (50e9 * 0.8) + 25e-6;
  const StageCosts sc = stage_costs(b, t, l, c);
  const double forward = sc.last.compute_s - sc.last.bwd_s - sc.last.recompute_s;
  REQUIRE(forward < gather);
  CHECK(waited.comm.dp_s - beside.comm.dp_s == Approx(forward).epsilon(1e-6));
  CHECK(beside.communication_total_s == Approx(waited.communication_total_s).epsilon(1e-12));
}

TEST_CASE("row-split linears (Colossal-AI 1D TP) pay a collective per linear and split only the matmuls", "[perf][tp]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TrainingSetup t = bf16(1, 8192);
  const PerfBasis b = basis_of(a, t);
  const ClusterSpec c = cluster("H100-80GB", 8);
  ParallelLayout l;
  l.tp = 4;
  // Bandwidth terms alone: no collective latency.
  PerfConstants k;
  k.nccl_base_latency_s = k.nccl_ring_hop_nvlink_s = k.nccl_ring_hop_pcie_s = k.nccl_ring_hop_net_s = 0;
  const StepTime megatron = estimate_step_time(b, t, l, c, k);
  l.behaviour.tp_row_linears = true;
  const StepTime row = estimate_step_time(b, t, l, c, k);
  l.tp = 1;
  const StepTime one = estimate_step_time(b, t, l, c, k);
  // Attention and elementwise kernels run whole on every rank: slower than Megatron's split,
  // faster than one GPU (the matmuls still split).
  CHECK(row.compute_s > megatron.compute_s);
  CHECK(row.compute_s < one.compute_s);
  // Bandwidth terms per layer: forward all-reduce of every linear's output (2 x out widths), backward
  // all-gather of every input gradient (in widths); the head adds the all-reduced logits (2v) and
  // its input gradient (h), the embedding two all-gathers (2h). Megatron: 4 all-reduces of h.
  const double out_w = 4096 + 2 * 1024 + 4096 + 2 * 14336 + 4096, in_w = 6 * 4096 + 14336;
  const double ratio = (32 * (2 * out_w + in_w) + 2 * 128256.0 + 3 * 4096) / (32 * 8 * 4096.0);
  CHECK(row.comm.tp_s / megatron.comm.tp_s == Approx(ratio).epsilon(0.01));
}

TEST_CASE("activation offloading moves what the checkpointing mode keeps, beside the compute", "[perf]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup t = bf16(2, 4096);
  t.offload = Offload::kActivations;
  const PerfBasis b = basis_of(a, t);
  const ParallelLayout l;
  ClusterSpec c = cluster("A100-80GB", 1);
  const PerfConstants k;
  const double pcie = c.gpu.pcie_bandwidth_gb_per_s * 1e9 * k.host_link_efficiency;
  const double tokens = 2.0 * 4096;
  // No checkpointing: every saved tensor of all 32 layers goes down and comes back.
  TrainingSetup none = t;
  none.checkpointing = Checkpointing::kNone;
  const LayerActivations acts = layer_activations(a, none, false, false, true);
  REQUIRE(acts.saved_per_token_per_position == 0);  // sdpa keeps no scores
  const StepTime kept_all = estimate_step_time(b, none, l, c);
  const double all_bytes = tokens * 32.0 * static_cast<double>(acts.saved_per_token);
  CHECK(kept_all.offload_s == Approx(2 * all_bytes / pcie - kept_all.compute_s).epsilon(1e-9));
  // Full checkpointing keeps each block's input only (2 x 4096 bytes a token): its copies hide
  // behind the compute.
  TrainingSetup full = t;
  full.checkpointing = Checkpointing::kFull;
  CHECK(acts.checkpoint_per_token == 2 * 4096);
  const StepTime inputs_only = estimate_step_time(b, full, l, c);
  CHECK(2 * tokens * 32.0 * static_cast<double>(acts.checkpoint_per_token) / pcie < inputs_only.compute_s);
  CHECK(inputs_only.offload_s == 0);
  // On a link slow enough the block inputs stick out too, by their own bytes.
  c.gpu.pcie_bandwidth_gb_per_s = 0.05;
  const double slow = c.gpu.pcie_bandwidth_gb_per_s * 1e9 * k.host_link_efficiency;
  const StepTime exposed = estimate_step_time(b, full, l, c);
  CHECK(exposed.offload_s == Approx(2 * tokens * 32.0 * 2 * 4096 / slow - exposed.compute_s).epsilon(1e-9));
  // torchtitan's op-level policy keeps what the memory model keeps for it (mm_policy_kept_per_token,
  // the block input once).
  TrainingSetup op = t;
  op.checkpointing = Checkpointing::kSelective;
  op.selective_every_other_mm = true;
  const StepTime policy = estimate_step_time(b, op, l, c);
  CHECK(policy.offload_s ==
        Approx(2 * tokens * 32.0 * static_cast<double>(acts.mm_policy_kept_per_token) / slow - policy.compute_s).epsilon(1e-9));
}

TEST_CASE("QLoRA dequantizes each NF4 weight for the forward, its recomputation and the input gradient", "[perf]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup lora = bf16(2, 2048);
  lora.method = Method::kLora;
  lora.lora_rank = 8;
  lora.checkpointing = Checkpointing::kFull;
  TrainingSetup qlora = lora;
  qlora.method = Method::kQlora;
  qlora.base_quant = BaseQuant::kNf4;
  const ParallelLayout l;
  const ClusterSpec c = cluster("A100-80GB", 1);
  const PerfConstants k;
  const StepTime plain = estimate_step_time(basis_of(a, lora), lora, l, c, k);
  const PerfBasis qb = basis_of(a, qlora);
  const StepTime quantized = estimate_step_time(qb, qlora, l, c, k);
  double block_params = 0;
  for (const PerfLayer& pl : qb.layers) block_params += pl.dense_params * static_cast<double>(pl.count);
  const double hbm = c.gpu.memory_bandwidth_gb_per_s * 1e9 * k.memory_efficiency;
  // Three passes over every block weight: 0.516 bytes read (4 bits + absmax), 2 written.
  const double per_pass = block_params * (kNf4MicroBytesPerParam / 1e6 + 2) / hbm;
  CHECK(quantized.step_s - plain.step_s == Approx(3 * per_pass).epsilon(1e-6));
  CHECK(quantized.recompute_s - plain.recompute_s == Approx(per_pass).epsilon(1e-6));
}

TEST_CASE("FSDP2 copies every gathered unit out of the all-gather buffer on the compute stream", "[perf][dp]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup t = bf16(2, 2048, 3);
  t.checkpointing = Checkpointing::kFull;
  const PerfBasis b = basis_of(a, t);
  const ClusterSpec c = cluster("A100-80GB", 8);
  const PerfConstants k;
  ParallelLayout views;
  views.dp = 8;
  views.sharding = Sharding::kZero3;
  ParallelLayout copies = views;
  copies.behaviour.gather_copy_out = true;
  const StepTime plain = estimate_step_time(b, t, views, c, k);
  const StepTime copied = estimate_step_time(b, t, copies, c, k);
  double params = b.embedding_params + b.head_params;
  for (const PerfLayer& pl : b.layers) params += pl.dense_params * static_cast<double>(pl.count);
  const double hbm = c.gpu.memory_bandwidth_gb_per_s * 1e9 * k.memory_efficiency;
  // 3 micro-batches x 2 gathers (forward, backward: resharded after forward) x bf16 read + write.
  const double expected = 3 * 2 * 2 * (2 * params) / hbm;
  CHECK(copied.step_s - plain.step_s == Approx(expected).epsilon(1e-6));
  CHECK(copied.comm.dp_s - plain.comm.dp_s == Approx(expected).epsilon(1e-6));
  CHECK(copied.dp_per_micro_batch_floor_s - plain.dp_per_micro_batch_floor_s == Approx(expected / 3).epsilon(1e-6));
  // A QLoRA base is gathered and copied packed: NF4 block weights, 16-bit embeddings and head.
  TrainingSetup q = t;
  q.method = Method::kQlora;
  q.base_quant = BaseQuant::kNf4;
  const PerfBasis qb = basis_of(a, q);
  double blocks = 0;
  for (const PerfLayer& pl : qb.layers) blocks += pl.dense_params * static_cast<double>(pl.count);
  const double packed = blocks * (kNf4MicroBytesPerParam / 1e6) + 2 * (qb.embedding_params + qb.head_params);
  CHECK(estimate_step_time(qb, q, copies, c, k).step_s - estimate_step_time(qb, q, views, c, k).step_s ==
        Approx(3 * 2 * 2 * packed / hbm).epsilon(1e-6));
  // The torchtune and torchtitan profiles run FSDP2; DeepSpeed gathers into views.
  CHECK(framework_profile(Framework::kTorchtune).dist.gather_copy_out);
  CHECK(framework_profile(Framework::kTorchtitan).dist.gather_copy_out);
  CHECK_FALSE(framework_profile(Framework::kDeepspeed).dist.gather_copy_out);
}

TEST_CASE("matmuls run at 0.90 of the sweep maximum, the share training shapes reach", "[perf]") {
  // MAMF (A100 86.9 %, H100 80.3 %, 80 % unmeasured) x 0.90 (SemiAnalysis H100 720 / 794.5;
  // EleutherAI cookbook layer GEMMs 244.5 / 271.2).
  CHECK(matmul_efficiency_for(*presets::find_gpu("A100-80GB")) == Approx(0.869 * 0.90).epsilon(1e-12));
  CHECK(matmul_efficiency_for(*presets::find_gpu("H100-80GB")) == Approx(0.803 * 0.90).epsilon(1e-12));
  CHECK(matmul_efficiency_for(*presets::find_gpu("H200")) == Approx(0.803 * 0.90).epsilon(1e-12));
  CHECK(matmul_efficiency_for(*presets::find_gpu("RTX-4090")) == Approx(0.80 * 0.90).epsilon(1e-12));
  // CDNA3 from the same table of means (with TunableOp): MI300X 668.4 / 1300, MI325X 784.9 / 1300.
  CHECK(matmul_efficiency_for(*presets::find_gpu("MI300X")) == Approx(0.514 * 0.90).epsilon(1e-12));
  CHECK(matmul_efficiency_for(*presets::find_gpu("MI325X")) == Approx(0.604 * 0.90).epsilon(1e-12));
  // The step reads it: a run given the sweep maximum itself is faster by the matmul time's 10 %.
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TrainingSetup t = bf16(1, 8192);
  const PerfBasis b = basis_of(a, t);
  const ParallelLayout l;
  const ClusterSpec c = cluster("H100-80GB", 1);
  PerfConstants sweep_max;
  sweep_max.matmul_efficiency = 0.803;
  const double at_shapes = estimate_step_time(b, t, l, c, {}).compute_s;
  const double at_max = estimate_step_time(b, t, l, c, sweep_max).compute_s;
  CHECK(at_shapes > at_max * 1.05);
  CHECK(at_shapes < at_max / 0.90);
  // The listed assumption names the share only where the model chose the rate.
  // The listed assumption gives the mainloop rate and where it came from.
  CHECK(perf_assumptions({}, c).front().rfind("GEMMs by shape: a full wave of tiles at 75.0 % of the dense peak (the GPU's maximum", 0) == 0);
  CHECK(perf_assumptions(sweep_max, c).front().rfind("GEMMs by shape: a full wave of tiles at 83.3 % of the dense peak (from the given", 0) == 0);
}

TEST_CASE("fused attention: FlashAttention-2 at 35 % / 50 %, AOTriton at 23.8 %; PyTorch SDPA on Hopper as measured on an H200", "[perf]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TrainingSetup t = bf16(1, 8192);
  const PerfBasis b = basis_of(a, t);
  const ParallelLayout l;
  CHECK(attention_efficiency_for(*presets::find_gpu("H100-80GB")) == 0.35);
  CHECK(attention_efficiency_for(*presets::find_gpu("H200")) == 0.35);
  CHECK(attention_efficiency_for(*presets::find_gpu("A100-80GB")) == 0.5);
  // 306.5 TFLOP/s at 16k causal tokens (8k keys on average) on an MI300X, over its long-key share.
  const GpuSpec& mi300x = *presets::find_gpu("MI300X");
  CHECK(attention_efficiency_for(mi300x) == Approx(306.5 / flash_length_factor(8192) / mi300x.dense_tflops_bf16).epsilon(2e-3));
  CHECK(attention_efficiency_for(*presets::find_gpu("MI325X")) == attention_efficiency_for(mi300x));
  for (const char* gpu : {"A100-80GB", "MI300X"}) {
    const ClusterSpec c = cluster(gpu, 1);
    PerfConstants k;
    const double by_gpu = estimate_step_time(b, t, l, c, k).compute_s;
    k.flash_attention_efficiency = attention_efficiency_for(c.gpu);
    CHECK(estimate_step_time(b, t, l, c, k).compute_s == by_gpu);
    // Forward + backward (2.5x) attention FLOPs: causal context s/2, 32 heads x (128 + 128).
    const double attn_flops = 3.5 * 8192.0 * 32 * (2.0 * 32 * 256) * (8192 / 2.0);
    k.flash_attention_efficiency = 0.7;
    const double faster = estimate_step_time(b, t, l, c, k).compute_s;
    const double peak = c.gpu.dense_tflops_bf16 * 1e12 * flash_length_factor(8192 / 2.0);
    CHECK(by_gpu - faster == Approx(attn_flops / peak * (1 / attention_efficiency_for(c.gpu) - 1 / 0.7)).epsilon(1e-9));
  }
  // PyTorch's SDPA on Hopper as the H200 sweep measured it: forward 0.67 x L / (L + 672), backward
  // 0.54, against the sweep's forward at 4k and 16k tokens (2k and 8k keys per query on average;
  // each call included 24 us of single-call latency) within 10 %.
  const GpuSpec& h200 = *presets::find_gpu("H200");
  const AttentionRates sdpa = attention_rates_for(h200, AttentionKernel::kSdpa, {}, true);
  CHECK(sdpa.fwd_efficiency == 0.67);
  CHECK(sdpa.bwd_efficiency == 0.54);
  for (const auto& [tokens, measured_s] : std::vector<std::pair<double, double>>{{4096, 0.000283104}, {16384, 0.00356128}}) {
    const double fwd_flops = 4 * 32 * tokens * tokens * 128 / 2;
    const double modelled = kSweepSingleCallLatencyS + fwd_flops / (h200.dense_tflops_bf16 * 1e12 * sdpa.fwd_efficiency * sdpa.forward_share(tokens / 2));
    CHECK(std::abs(modelled / measured_s - 1) < 0.10);
  }
  // The forward + backward call at 32k tokens (538.7 TFLOP/s over 3.5x the forward FLOPs), less
  // the 252 us of host latency of the autograd call, within 10 %.
  const double flops32 = 4 * 32 * 32768.0 * 32768 * 128 / 2, peak = h200.dense_tflops_bf16 * 1e12;
  const double both = 252e-6 + flops32 / (peak * 0.67 * sdpa.forward_share(16384)) + 2.5 * flops32 / (peak * 0.54);
  CHECK(std::abs(both / 0.057145 - 1) < 0.10);
  // By default (the backend behind the sweep unrecorded), given an efficiency, or another kernel:
  // the published rates.
  CHECK(attention_rates_for(h200, AttentionKernel::kSdpa, {}).fwd_efficiency == 0.35);
  CHECK(attention_rates_for(h200, AttentionKernel::kFlash, {}, true).fwd_efficiency == 0.35);
  PerfConstants fa2;
  fa2.flash_attention_efficiency = 0.35;
  CHECK(attention_rates_for(h200, AttentionKernel::kSdpa, fa2, true).normalised);
  // FlashAttention's Triton kernel: FlashAttention-2 is 1.3-1.5x faster forward and 2x faster
  // backward (Dao 2023 §4.1), on every GPU and whatever efficiency is given.
  for (const char* gpu : {"A100-80GB", "H100-80GB"}) {
    const GpuSpec& g = *presets::find_gpu(gpu);
    const AttentionRates flash = attention_rates_for(g, AttentionKernel::kFlash, {});
    const AttentionRates triton = attention_rates_for(g, AttentionKernel::kFlashTriton, {});
    CHECK(triton.fwd_efficiency == Approx(flash.fwd_efficiency / 1.4));
    CHECK(triton.bwd_efficiency == Approx(flash.bwd_efficiency / 2.0));
    CHECK(triton.half_rate_keys == flash.half_rate_keys);
  }
  CHECK(attention_rates_for(h200, AttentionKernel::kFlashTriton, fa2).bwd_efficiency == Approx(0.175));
}

TEST_CASE("FlashAttention's Triton kernel costs more time, the more so at long sequences", "[perf]") {
  // An MPT-7B-shaped decoder (llm-foundry's benchmark model) at 2k and 32k tokens on one A100.
  const ModelArchitecture a = parse_hf_config_text(R"({"model_type":"mpt","d_model":4096,"n_heads":32,"n_layers":32,
    "expansion_ratio":4,"max_seq_len":32768,"vocab_size":50368,"no_bias":false,"attn_config":{"alibi":false}})");
  const ClusterSpec c = cluster("A100-80GB", 1);
  double extra_short = 0, extra_long = 0;
  for (const std::int64_t seq : {2048, 32768}) {
    TrainingSetup t = bf16(1, seq);
    t.attention = AttentionKernel::kFlash;
    const ParallelLayout l;
    const double flash_s = estimate_step_time(basis_of(a, t), t, l, c).compute_s;
    t.attention = AttentionKernel::kFlashTriton;
    const double triton_s = estimate_step_time(basis_of(a, t), t, l, c).compute_s;
    CHECK(triton_s > flash_s);
    (seq == 2048 ? extra_short : extra_long) = triton_s / flash_s - 1;
  }
  // Attention's share of the step grows with the sequence: so does the Triton kernel's cost.
  CHECK(extra_long > 5 * extra_short);
}

TEST_CASE("a flash-attention kernel amortises its per-tile cost over the keys each query sees", "[perf][cp]") {
  // L / (L + 240), normalised at 16k keys: the measured H100 rates of FlashAttention-3 and the
  // Triton FlashAttention-2 at 512 ... 8k keys are 0.69, 0.82, 0.91, 0.95-0.96, 0.99 of their 16k rate.
  const double norm = 16384.0 / (16384 + 240);
  CHECK(flash_length_factor(512) == Approx(512.0 / 752 / norm).epsilon(1e-12));
  for (const auto& [keys, measured] : std::vector<std::pair<double, double>>{{512, 0.69}, {1024, 0.82}, {2048, 0.91}, {4096, 0.955}, {8192, 0.99}}) {
    CHECK(std::abs(flash_length_factor(keys) - measured) < 0.01);
  }
  CHECK(flash_length_factor(16384) == Approx(1).epsilon(1e-12));
  CHECK(flash_length_factor(131072) == 1);  // long-sequence efficiencies are not exceeded
  // A context-parallel ring's kernels see one step's keys: the 8B at seq 8192 over cp 4 runs its
  // attention at flash_length_factor(8192 / 2 / 4). Two attention efficiencies differ in step
  // time by exactly the attention FLOPs over the rate (the ring's transfers stay hidden and its
  // merges do not depend on the kernel's rate).
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TrainingSetup t = bf16(1, 8192);
  const PerfBasis b = basis_of(a, t);
  const ClusterSpec c = cluster("H100-80GB", 4);
  ParallelLayout ring;
  ring.cp = 4;
  PerfConstants slow, fast;
  slow.overlap_compute_slowdown = fast.overlap_compute_slowdown = 0;
  slow.flash_attention_efficiency = 0.35;
  fast.flash_attention_efficiency = 0.7;
  const double diff = estimate_step_time(b, t, ring, c, slow).compute_s - estimate_step_time(b, t, ring, c, fast).compute_s;
  // Forward + backward (2.5x), 32 layers, the rank's 2048 queries over the causal context s/2.
  const double flops = 32 * 3.5 * 2048.0 * (2.0 * 32 * 256) * 4096;
  const double rate = c.gpu.dense_tflops_bf16 * 1e12 * flash_length_factor(1024);
  // Over the ring's wave fill, forward (1 part in 3.5) and backward (2.5).
  const FlashFill fill = ring_flash_fill(1, 32, 2048, 4, true, static_cast<double>(c.gpu.sm_count), false);
  REQUIRE(fill.forward < 1);
  const double over_fill = (1 / fill.forward + 2.5 / fill.backward) / 3.5;
  CHECK(diff == Approx(flops / rate * over_fill * (1 / 0.35 - 1 / 0.7)).epsilon(1e-9));
}

TEST_CASE("eager attention computes every score, as batched GEMMs at the head dim's shape", "[perf]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup t = bf16(1, 4096);
  t.attention = AttentionKernel::kEager;
  const PerfBasis b = basis_of(a, t);
  const ClusterSpec c = cluster("A100-80GB", 1);
  const ParallelLayout l;
  const double causal = estimate_step_time(b, t, l, c).compute_s;
  // Eager attention computes the masked half of the scores too: the causal model costs what the
  // same model without the mask does; FlashAttention skips the masked blocks.
  PerfBasis unmasked = b;
  unmasked.causal = false;
  CHECK(estimate_step_time(unmasked, t, l, c).compute_s == Approx(causal).epsilon(1e-12));
  TrainingSetup flash = t;
  flash.attention = AttentionKernel::kFlash;
  CHECK(estimate_step_time(unmasked, flash, l, c).compute_s > estimate_step_time(b, flash, l, c).compute_s);
  // The same attention FLOPs over 64 heads of 64: the heads' GEMMs at their shapes, forward
  // Q K^T (s x s over d) and P V (s x d over s), backward dP (s x s over d) and dV, dQ, dK (s x d
  // over s), here as one GEMM over the stacked heads (the same tiles; its roofline reads the
  // shared operand once, 1e-4 of the difference on the A100); the scores' 12 bytes a score
  // written and read in the forward, twice that in the backward.
  PerfBasis narrow = b;
  for (PerfLayer& pl : narrow.layers) {
    pl.heads *= 2;
    pl.qk_dim /= 2;
    pl.v_dim /= 2;
  }
  const GemmKernel g = gemm_kernel_for(c.gpu, t.precision, PerfConstants{});
  const double s = 4096;
  const auto gemms = [&](double heads, double d) {
    return 2 * gemm_time_s(heads * s, s, d, g) + 4 * gemm_time_s(heads * s, d, s, g);
  };
  const double hbm = c.gpu.memory_bandwidth_gb_per_s * 1e9 * PerfConstants{}.memory_efficiency;
  const double score_bytes_s = 3 * 12 * s * s * 32 / hbm;  // 32 heads more
  const double diff = estimate_step_time(narrow, t, l, c).compute_s - causal;
  CHECK(diff == Approx(32 * (gemms(64, 64) - gemms(32, 128) + score_bytes_s)).epsilon(1e-3));
  CHECK(diff > 1.3 * 32 * score_bytes_s);  // at a flat rate the FLOPs would cost the same
  // A K of 64 leaves the tiles' fixed 192 K-steps over fewer: the scores' GEMMs run 1.6 x longer.
  CHECK(gemm_time_s(64 * s, s, 64, g) > 1.5 * gemm_time_s(32 * s, s, 128, g));
}

TEST_CASE("fp8 casts cost HBM traffic: torchao's dynamic scaling, Transformer Engine's cast + transpose", "[perf]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup t = bf16(1, 8192);
  t.precision = Precision::kFp8;
  const PerfBasis b = basis_of(a, t);
  REQUIRE(b.layers.size() == 1);
  // Per token: in-features q k v o gate up down = 6 x 4096 + 14336; out-features
  // 4096 + 2 x 1024 + 4096 + 2 x 14336 + 4096.
  CHECK(b.layers[0].linear_in_width == 6 * 4096 + 14336);
  CHECK(b.layers[0].linear_out_width == 4096 + 2 * 1024 + 4096 + 2 * 14336 + 4096);
  const ClusterSpec c = cluster("H100-80GB", 1);
  const ParallelLayout l;
  const double hbm = c.gpu.memory_bandwidth_gb_per_s * 1e9 * PerfConstants{}.memory_efficiency;
  t.fp8_saves_fp8_inputs = true;  // Transformer Engine
  const double te = estimate_step_time(b, t, l, c).compute_s;
  t.fp8_saves_fp8_inputs = false;  // torchao Float8Linear
  const double dynamic = estimate_step_time(b, t, l, c).compute_s;
  t.precision = Precision::kBf16;
  const double plain = estimate_step_time(b, t, l, c).compute_s;  // no casts at all
  // Transformer Engine, the Hugging Face layout's linears in forward order q k v o gate up down:
  // the column-parallel inputs (q k v gate up, out of the fused norm) and down's (out of the fused
  // activation) transposed, 2 B per element; o's input cast and transposed, 4 B; every output
  // gradient cast and transposed, 4 B.
  const double te_fwd = 2.0 * (5 * 4096 + 14336) + 4.0 * 4096;
  const double te_bwd = 4.0 * (4096 + 2 * 1024 + 4096 + 2 * 14336 + 4096);
  CHECK(te > 0);
  CHECK(plain > 0);
  // torchao: 5 B per cast element (amax read, cast read + fp8 write): input forward; grad_output
  // twice, input again and weight again backward; 2 B per element to re-lay out the grad_weight
  // operands. Neither path casts in a bf16 run.
  const double in = b.layers[0].linear_in_width, out = b.layers[0].linear_out_width;
  const double per_layer = 8192.0 * (5 * in + 7 * in + 12 * out) + 10 * b.layers[0].dense_params;
  CHECK(dynamic - te == Approx(32 * (per_layer - 8192.0 * (te_fwd + te_bwd)) / hbm).epsilon(1e-9));
}

// The search reuses a speed group's stage costs across sharding stages, offloads, data-parallel
// degrees and accumulations: they must not depend on those, and a step time from known stage
// costs must equal one computed whole.
TEST_CASE("stage costs depend on neither dp, sharding, offload nor accumulation", "[perf]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-70B-Instruct");
  const TensorInventory inv = build_tensor_inventory(a);
  const ClusterSpec c = cluster("H100-80GB", 512);
  auto same = [](const StageCost& x, const StageCost& y) {
    return x.compute_s == y.compute_s && x.recompute_s == y.recompute_s && x.bwd_s == y.bwd_s && x.tp_s == y.tp_s &&
           x.cp_s == y.cp_s && x.ep_s == y.ep_s && x.trainable == y.trainable && x.params == y.params;
  };
  for (const Checkpointing ck : {Checkpointing::kNone, Checkpointing::kSelective, Checkpointing::kFull}) {
    for (const std::int64_t pp : {1, 4}) {
      for (const bool sp : {false, true}) {
        TrainingSetup t = bf16(2, 8192);
        t.checkpointing = ck;
        const PerfBasis basis = build_perf_basis(a, inv, t);
        ParallelLayout l;
        l.tp = 8;
        l.pp = pp;
        l.vpp = pp > 1 ? 2 : 1;
        l.schedule = pp > 1 ? PipelineSchedule::kInterleaved : PipelineSchedule::k1F1B;
        l.cp = 2;
        l.sequence_parallel = sp;
        l.dp = 512 / (8 * pp * 2);
        const StageCosts base = stage_costs(basis, t, l, c);
        for (const Sharding sh : {Sharding::kNone, Sharding::kZero1, Sharding::kZero3}) {
          for (const Offload off : {Offload::kNone, Offload::kOptimizer}) {
            for (const std::int64_t ga : {4, 16}) {
              ParallelLayout v = l;
              v.sharding = sh;
              v.dp = l.dp / 2;  // another data-parallel degree (the stage costs do not read it)
              TrainingSetup u = t;
              u.offload = off;
              u.grad_accum = ga;
              const StageCosts other = stage_costs(basis, u, v, c);
              CHECK(same(other.first, base.first));
              CHECK(same(other.last, base.last));
              const StepTime whole = estimate_step_time(basis, u, v, c);
              const StepTime reused = estimate_step_time(basis, u, v, c, {}, &base);
              CHECK(whole.step_s == reused.step_s);
              CHECK(whole.tokens_per_s == reused.tokens_per_s);
              CHECK(whole.communication_total_s == reused.communication_total_s);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("a tied embedding split over the pipeline all-reduces its gradient between the end stages once a step", "[perf][pp]") {
  const ModelArchitecture tied = preset("Qwen/Qwen2.5-3B");
  REQUIRE(tied.tie_word_embeddings);
  const TrainingSetup t = bf16(1, 4096, 8);
  const PerfBasis b = basis_of(tied, t);
  ParallelLayout l;
  l.tp = 2;
  l.pp = 2;
  l.dp = 4;  // the two stages on two nodes of 8
  const ClusterSpec c = cluster("H100-80GB", 16);
  const StepTime s = estimate_step_time(b, t, l, c);
  // One all-reduce of the vocabulary-parallel shard (vocab x hidden / tp gradients) over two
  // ranks on two nodes: the shard once over the NIC, plus NCCL's latency.
  const double shard_bytes = static_cast<double>(tied.vocab_size * tied.hidden_size) / 2 * s.gradient_reduce_element_bytes;
  const double nic_bytes_per_s = c.inter_node_bandwidth_gb_per_s * 1e9 * PerfConstants{}.collective_efficiency;
  CHECK(s.tied_embedding_sync_s == Approx(shard_bytes / nic_bytes_per_s).epsilon(0.01));
  // Not per micro-batch: the same at any accumulation.
  CHECK(estimate_step_time(b, bf16(1, 4096, 32), l, c).tied_embedding_sync_s == Approx(s.tied_embedding_sync_s));
  // Nothing to sync without a pipeline or with untied embeddings.
  l.pp = 1;
  l.dp = 8;
  CHECK(estimate_step_time(b, t, l, c).tied_embedding_sync_s == 0);
  const ModelArchitecture untied = preset("meta-llama/Llama-3.1-8B");
  l.pp = 2;
  l.dp = 4;
  CHECK(estimate_step_time(basis_of(untied, t), t, l, c).tied_embedding_sync_s == 0);
}

TEST_CASE("Megatron before 2022-03 added each micro-batch's weight gradients into their buffer with a kernel of their own", "[perf]") {
  const FrameworkProfile& megatron = framework_profile(Framework::kMegatron);
  CHECK(framework_behaviour(megatron, 202108).grad_add_per_micro_batch);
  CHECK(framework_behaviour(megatron, 202202).grad_add_per_micro_batch);
  CHECK_FALSE(framework_behaviour(megatron, 202203).grad_add_per_micro_batch);  // gradient accumulation fusion
  CHECK_FALSE(framework_behaviour(megatron, 0).grad_add_per_micro_batch);
  CHECK_FALSE(framework_behaviour(framework_profile(Framework::kTorchtitan), 0).grad_add_per_micro_batch);

  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const ClusterSpec c = cluster("H100-80GB", 8);
  const double hbm = c.gpu.memory_bandwidth_gb_per_s * 1e9 * PerfConstants{}.memory_efficiency;
  ParallelLayout l;
  l.tp = 8;
  double share[2] = {0, 0};
  for (std::int64_t mbs : {1, 4}) {
    const TrainingSetup t = bf16(mbs, 4096, 4);
    const PerfBasis b = basis_of(a, t);
    l.behaviour.grad_add_per_micro_batch = false;
    const StageCosts fused = stage_costs(b, t, l, c);
    l.behaviour.grad_add_per_micro_batch = true;
    const StageCosts added = stage_costs(b, t, l, c);
    // bf16 gradients and buffer: the new gradient read, the buffer read and written, 2 bytes each,
    // for every weight of the rank, once per micro-batch whatever its tokens.
    const double add_s = b.trainable_params / 8 * 6 / hbm;
    CHECK(added.last.compute_s - fused.last.compute_s == Approx(add_s).epsilon(1e-6));
    CHECK(added.last.bwd_s - fused.last.bwd_s == Approx(add_s).epsilon(1e-6));
    share[mbs == 1 ? 0 : 1] = add_s / fused.last.compute_s;
  }
  // The same time whatever the tokens: a share of the micro-batch that shrinks as it grows (2.2 % at
  // micro-batch 1 of 4096 tokens, 0.55 % at 4).
  CHECK(share[0] > 0.015);
  CHECK(share[0] / share[1] > 3.5);
}

TEST_CASE("CUDA_LAUNCH_BLOCKING=1 leaves the GPU idle before every kernel, paid on top of its time", "[perf]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const ClusterSpec c = cluster("A100-80GB", 8);
  ParallelLayout l;
  l.tp = 8;
  double share[2] = {0, 0};
  for (std::int64_t mbs : {1, 4}) {
    TrainingSetup t = bf16(mbs, 2048, 8);
    const PerfBasis b = basis_of(a, t);
    const StageCosts queued = stage_costs(b, t, l, c);
    const StepTime queued_step = estimate_step_time(b, t, l, c);
    t.cuda_launch_blocking = true;
    const StageCosts blocking = stage_costs(b, t, l, c);
    const StepTime blocking_step = estimate_step_time(b, t, l, c);
    // The GPU's own time does not change; a gap of the single-call latency per launched kernel
    // (the host's launch count over its time per launch) is added to every micro-batch.
    CHECK(blocking.last.compute_s == Approx(queued.last.compute_s).epsilon(1e-12));
    CHECK(blocking.last.launch_s == Approx(queued.last.launch_s).epsilon(1e-12));
    const double kernels = queued.last.launch_s / PerfConstants{}.host_launch_s;
    CHECK(blocking.last.launch_gap_s == Approx(kernels * kBlockingLaunchGapS).epsilon(1e-9));
    CHECK(queued.last.launch_gap_s == 0);
    CHECK(blocking_step.step_s - queued_step.step_s == Approx(8 * blocking.last.launch_gap_s).epsilon(1e-6));
    CHECK(blocking_step.launch_wait_s == Approx(8 * blocking.last.launch_gap_s).epsilon(1e-6));
    share[mbs == 1 ? 0 : 1] = blocking_step.step_s / queued_step.step_s - 1;
    // The search's speed bound stays above the step time it bounds.
    CHECK(tokens_per_s_upper_bound(b, t, l, c, {}) >= blocking_step.tokens_per_s * (1 - 1e-9));
  }
  // A fixed time per micro-batch: the smaller micro-batch loses the larger share.
  CHECK(share[0] > 0.01);
  CHECK(share[0] > 3 * share[1]);
}

TEST_CASE("the expert-parallel exchange reads the block program's dispatch: top-k copies, hidden wide, two per forward", "[perf]") {
  const ModelArchitecture moe = preset("mistralai/Mixtral-8x7B-Instruct-v0.1");
  const PerfBasis b = basis_of(moe, bf16(1, 4096));
  REQUIRE(!b.layers.empty());
  for (const PerfLayer& pl : b.layers) {
    CHECK(pl.moe);
    CHECK(pl.routed_tokens == 2);
    CHECK(pl.dispatch_elems == 4096);
    CHECK(pl.all_to_alls_fwd == 2);
  }
  const PerfBasis dense = basis_of(preset("meta-llama/Llama-3.1-8B"), bf16(1, 4096));
  for (const PerfLayer& pl : dense.layers) {
    CHECK(pl.routed_tokens == 0);
    CHECK(pl.all_to_alls_fwd == 0);
  }
}
