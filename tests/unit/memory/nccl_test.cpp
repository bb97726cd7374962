// NCCL's device memory outside the caching allocator (memory/rank_plan.cpp nccl_use,
// memory/timeline.cpp nccl_device_bytes, runtime_for): communicators, the world's among them,
// NVLS buffers per rank in a node, all-to-all peers.
#include <catch2/catch.hpp>

#include "frameworks/profile.h"
#include "hf_config/parse_hf_config.h"
#include "memory/timeline.h"
#include "presets/registry.h"

using namespace memfit;

namespace {

ParallelLayout layout(std::int64_t dp, std::int64_t tp, std::int64_t pp, std::int64_t cp) {
  ParallelLayout l;
  l.dp = dp;
  l.tp = tp;
  l.pp = pp;
  l.cp = cp;
  l.gpus_per_node = 8;
  return l;
}

}  // namespace

TEST_CASE("a communicator per group of several ranks, the world's when none spans every rank", "[nccl]") {
  // dp 16 over two nodes: the data-parallel group is the world; 8 of its ranks share a node.
  NcclUse n = nccl_use(layout(16, 1, 1, 1));
  CHECK(n.communicators == 1);
  CHECK(n.nvls_local_ranks == 8);
  CHECK(n.p2p_peers == 0);
  // dp 8 x cp 2: dp x cp is the world; the cp pair is adjacent (tp 1).
  n = nccl_use(layout(8, 1, 1, 2));
  CHECK(n.communicators == 2);
  CHECK(n.nvls_local_ranks == 8 + 2);
  // tp 8 x pp 2: neither group spans the 16 ranks, so the world's communicator comes on top;
  // the pp pair sits a node apart (stride 8), no NVLS for it.
  n = nccl_use(layout(1, 8, 2, 1));
  CHECK(n.communicators == 3);
  CHECK(n.nvls_local_ranks == 8 + 8);
  // One GPU: nothing.
  n = nccl_use(layout(1, 1, 1, 1));
  CHECK(n.communicators == 0);
  CHECK(n.nvls_local_ranks == 0);
  // Ulysses: every other cp rank is an all-to-all peer; the ring's are not.
  ParallelLayout u = layout(2, 1, 1, 8);
  CHECK(nccl_use(u).p2p_peers == 0);
  u.cp_kind = ContextParallelKind::kUlysses;
  CHECK(nccl_use(u).p2p_peers == 7);
}

TEST_CASE("NVLS buffers only where the node's NVSwitch multicasts (Hopper and later)", "[nccl]") {
  const GpuSpec h100 = *presets::find_gpu("H100-80GB");
  CHECK(nvls_capable(h100));
  CHECK(nvls_capable(*presets::find_gpu("B200")));
  CHECK_FALSE(nvls_capable(*presets::find_gpu("A100-80GB")));       // NVSwitch without multicast
  CHECK_FALSE(nvls_capable(*presets::find_gpu("H100-PCIe-80GB")));  // no NVSwitch
  // nvls.cc: 16 channels x 2 x 8 steps x 128 KiB per local rank = 32 MiB; 256 MiB for 8 ranks.
  CHECK(runtime_for(h100).nccl_nvls_bytes_per_local_rank == 32LL << 20);
  CHECK(runtime_for(*presets::find_gpu("A100-80GB")).nccl_nvls_bytes_per_local_rank == 0);

  const RuntimeProfile rt = runtime_for(h100);
  NcclUse n;
  n.communicators = 2;
  n.p2p_peers = 3;
  n.nvls_local_ranks = 10;
  CHECK(nccl_device_bytes(n, rt) ==
        2 * rt.nccl_communicator_bytes + 3 * rt.nccl_p2p_peer_bytes + 10 * (32LL << 20));
  CHECK(nccl_device_bytes(n, RuntimeProfile{}) == 2 * rt.nccl_communicator_bytes + 3 * rt.nccl_p2p_peer_bytes);
}

TEST_CASE("the device total carries NCCL's bytes; allocated and reserved do not", "[nccl]") {
  const ModelArchitecture a = parse_hf_config_text(presets::find_model("Qwen/Qwen3-4B")->config_text);
  TrainingSetup t;
  t.precision = Precision::kBf16;
  t.seq_len = 4096;
  t.checkpointing = Checkpointing::kFull;
  ParallelLayout l = layout(8, 1, 1, 2);
  l.sharding = Sharding::kZero3;
  const TensorInventory inv = build_tensor_inventory(a);
  const RuntimeProfile h100 = runtime_for(*presets::find_gpu("H100-80GB"));
  const Estimate with = estimate_distributed(a, inv, t, l, h100).peak();
  const Estimate without = estimate_distributed(a, inv, t, l, RuntimeProfile{}).peak();
  CHECK(with.peak_allocated_bytes == without.peak_allocated_bytes);
  CHECK(with.peak_reserved_bytes == without.peak_reserved_bytes);
  CHECK(with.nccl_bytes - without.nccl_bytes == 10 * (32LL << 20));
  CHECK(with.device_total_bytes - without.device_total_bytes == 10 * (32LL << 20));
}

TEST_CASE("a sharded run on one GPU keeps a one-rank communicator; an unsharded one none", "[nccl]") {
  ParallelLayout one = layout(1, 1, 1, 1);
  CHECK(nccl_use(one).communicators == 0);
  one.sharding = Sharding::kZero3;
  const NcclUse sharded = nccl_use(one);
  CHECK(sharded.communicators == 1);
  CHECK(sharded.nvls_local_ranks == 0);  // no peer in the node to share NVLS buffers with
  one.sharding = Sharding::kZero2;
  CHECK(nccl_use(one).communicators == 1);
}

TEST_CASE("a sharding group apart from the default one leaves the world's communicator on top", "[nccl]") {
  // DeepSpeed (utils/groups.py _clone_world_group): dp 16 reduces over a clone of the world while
  // zero.Init's parameters gather over the default group: two communicators spanning the 16 ranks.
  ParallelLayout ds = layout(16, 1, 1, 1);
  ds.behaviour.shard_group_apart_from_world = true;
  NcclUse n = nccl_use(ds);
  CHECK(n.communicators == 2);
  CHECK(n.nvls_local_ranks == 8 + 8);
  // Ulysses under DeepSpeed: the sequence-data-parallel group, the sp group and the world.
  ParallelLayout sp = layout(4, 1, 1, 2);
  sp.cp_kind = ContextParallelKind::kUlysses;
  sp.behaviour.shard_group_apart_from_world = true;
  n = nccl_use(sp);
  CHECK(n.communicators == 3);
  CHECK(n.p2p_peers == 1);
  // Where no group spans the world the world's communicator is counted once either way.
  ParallelLayout tp = layout(1, 8, 2, 1);
  tp.behaviour.shard_group_apart_from_world = true;
  CHECK(nccl_use(tp).communicators == 3);
  // Without the behaviour (torch FSDP, DDP, a device mesh whose flattened dp x cp spans the world and so
  // takes the default group) the dp x cp group is the world's communicator.
  CHECK(nccl_use(layout(8, 1, 1, 2)).communicators == 2);
  // One GPU: nothing, whatever the framework.
  ParallelLayout one = layout(1, 1, 1, 1);
  one.behaviour.shard_group_apart_from_world = true;
  CHECK(nccl_use(one).communicators == 0);
}

TEST_CASE("DeepSpeed keeps its sharding group apart from the world's; the HF Trainer's FSDP does not", "[nccl][frameworks]") {
  CHECK(framework_profile(Framework::kDeepspeed).dist.shard_group_apart_from_world);
  CHECK_FALSE(framework_profile(Framework::kHfTrainer).dist.shard_group_apart_from_world);
  CHECK_FALSE(framework_profile(Framework::kTrl).dist.shard_group_apart_from_world);
  CHECK_FALSE(framework_profile(Framework::kTorchtitan).dist.shard_group_apart_from_world);
}
