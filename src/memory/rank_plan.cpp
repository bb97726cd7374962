// The rank kinds of a layout and what each holds (see timeline.h). Compiled without exception
// cleanups in the WebAssembly build, like the layout rules it calls: nothing here throws but a
// fatal allocation failure (docs/toolchain.md).
#include <algorithm>

#include "common/units.h"
#include "memory/timeline.h"

namespace memfit {

// One NCCL communicator per parallel group of more than one rank (dp x cp for gradients and
// shards, tp, pp, cp for the ring, ep for the token exchange).
std::int64_t communicator_count(const ParallelLayout& l) {
  std::int64_t communicators = 0;
  for (std::int64_t degree : {l.dp * l.cp, l.tp, l.pp, l.cp, l.ep}) communicators += degree > 1 ? 1 : 0;
  return communicators;
}

std::vector<RankContext> plan_ranks(const ParallelLayout& l, const ModelArchitecture& arch, const TrainingSetup& t) {
  std::vector<RankContext> out;
  const std::int64_t vocab_multiple = std::max<std::int64_t>(1, l.behaviour.vocab_multiple) * l.tp;
  const std::int64_t communicators = communicator_count(l);
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
    c.split = activation_split(l);
    c.cp = l.cp;
    c.communicators = communicators;
    c.shard.behaviour = l.behaviour;
    c.shard.behaviour.reshard_after_forward =
        l.behaviour.reshard_after_forward && (l.pp == 1 || l.behaviour.reshard_after_forward_with_pp);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace memfit
