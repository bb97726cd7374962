// The rank kinds of a layout and what each holds and does (see timeline.h; the plan they share:
// parallel/rank_plan.h).
#include <algorithm>

#include "common/units.h"
#include "memory/timeline.h"

namespace memfit {

namespace {

// Ranks of a group of `degree` ranks `stride` apart that share a node of `per_node` GPUs.
std::int64_t ranks_in_node(std::int64_t degree, std::int64_t stride, std::int64_t per_node) {
  return stride >= per_node ? 1 : std::min(degree, std::max<std::int64_t>(1, per_node / stride));
}

}  // namespace

NcclUse nccl_use(const ParallelLayout& l) {
  NcclUse n;
  const std::int64_t per_node = std::max<std::int64_t>(1, l.gpus_per_node), world = l.gpus();
  // (degree, stride): gradients and shards (dp x cp), tp, pp, the cp ring, the ep exchange.
  const std::int64_t groups[][2] = {{l.dp * l.cp, l.tp}, {l.tp, 1}, {l.pp, l.tp * l.cp * l.dp}, {l.cp, l.tp}, {l.ep, l.tp}};
  bool spans_world = false;
  auto add = [&](std::int64_t degree, std::int64_t stride) {
    if (degree <= 1) return;
    ++n.communicators;
    const std::int64_t local = ranks_in_node(degree, stride, per_node);
    if (local > 1) n.nvls_local_ranks += local;
  };
  // A sharding group built apart from the default one leaves the world's communicator to come on top.
  const bool shard_apart = l.behaviour.shard_group_apart_from_world;
  for (const auto& g : groups) {
    add(g[0], g[1]);
    const bool apart = shard_apart && &g == &groups[0];
    spans_world = spans_world || (g[0] == world && !apart);
  }
  if (world > 1 && !spans_world) add(world, 1);
  // A sharded run on one GPU still runs its data-parallel collectives (FSDP2 fully_shard, DeepSpeed
  // ZeRO) on a one-rank NCCL communicator: NVML used beyond the reserved pool reads 1.89-1.90 GiB for
  // the accelerate FSDP2 runs on one H200 against 1.35 GiB for the same Trainers unsharded
  // (tests/validation/measured_h200_trainers: TG-13 vs TG-12, TG-04 and TG-10 vs TG-03), one
  // communicator's buffers (RuntimeProfile::nccl_communicator_bytes).
  if (world == 1 && l.sharding != Sharding::kNone) ++n.communicators;
  n.p2p_peers = l.cp_kind == ContextParallelKind::kUlysses ? l.cp - 1 : 0;
  return n;
}

std::vector<RankContext> plan_ranks(const ParallelLayout& l, const ModelArchitecture& arch, const TrainingSetup& t) {
  std::vector<RankContext> out;
  const std::int64_t vocab_multiple = std::max<std::int64_t>(1, l.behaviour.vocab_multiple) * l.tp;
  const NcclUse nccl = nccl_use(l);
  const bool reshard_after_forward = plan_rank(l, t).reshard_after_forward;
  std::vector<RankKind> kinds = rank_kinds(l, arch, t.grad_accum);
  out.reserve(kinds.size());
  for (RankKind& k : kinds) {
    RankContext c;
    c.shard.layers = k.layers;
    c.kind = std::move(k);
    c.shard.embedding = c.kind.embedding;
    c.shard.head = c.kind.head;
    c.shard.tp = l.tp;
    c.shard.ep = l.ep;
    c.shard.etp = l.expert_tp();
    c.shard.sharding = l.sharding;
    c.shard.dense_shard = l.dense_shard();
    c.shard.expert_shard = l.expert_shard();
    c.shard.data_parallel = l.dp * l.cp;
    c.shard.padded_vocab = vocab_multiple > 1 ? ceil_div(arch.vocab_size, vocab_multiple) * vocab_multiple : 0;
    c.nccl = nccl;
    c.shard.behaviour = l.behaviour;
    c.shard.behaviour.reshard_after_forward = reshard_after_forward;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace memfit
