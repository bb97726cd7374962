// The search's group keys (search/group_keys.h), asked of the rank plan: every combination of a
// key's dimensions has its own slot, and layouts of one group get the same answers from the
// engines, over every value the request names (a mode added there is tried here).
#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <tuple>
#include <vector>

#include "memory/timeline.h"
#include "parallel/rank_plan.h"
#include "perf/perf_model.h"
#include "search/bounds.h"
#include "search/group_keys.h"
#include "../test_support.h"
#include "frameworks/profile.h"

using namespace memfit;
using namespace memfit_test;

// The search's groups: every combination of a key's dimensions, over every value the request
// names, has its own slot below the key's count, so no two groups share a slot.
TEST_CASE("the search's group keys give each combination of their dimensions its own slot", "[search][keys]") {
  std::map<std::size_t, std::tuple<bool, Checkpointing>> speed;
  std::map<std::size_t, std::tuple<bool, Checkpointing, bool, bool>> activations;
  std::map<std::size_t, std::tuple<Sharding, Offload>> floors;
  std::map<std::size_t, std::tuple<bool, bool, Checkpointing, bool>> bounds;
  // Each slot must always hold the same combination.
  auto claim = [](auto& slots, std::size_t slot, std::size_t count, const auto& dims) {
    CHECK(slot < count);
    CHECK(slots.emplace(slot, dims).first->second == dims);
  };
  for (const bool sp : {false, true}) {
    for (const auto& ck : kCheckpointingNames) {
      for (const auto& sh : kShardingNames) {
        for (const auto& off : kOffloadNames) {
          ParallelLayout l;
          l.sequence_parallel = sp;
          l.sharding = sh.value;
          TrainingSetup t;
          t.checkpointing = ck.value;
          t.offload = off.value;
          const RankPlan p = plan_rank(l, t);
          const bool zero3 = sh.value == Sharding::kZero3, zero2 = sh.value == Sharding::kZero2;
          claim(speed, speed_key(p).index(), SpeedKey::kCount, std::tuple(sp, ck.value));
          claim(activations, activation_key(p).index(), ActivationKey::kCount,
                std::tuple(sp, ck.value, zero3, off.value == Offload::kActivations));
          claim(floors, floor_key(p).index(), FloorKey::kCount, std::tuple(sh.value, off.value));
          // ZeRO-2 and ZeRO-3 pay a per-micro-batch data-parallel floor; replication and ZeRO-1 share a bound.
          claim(bounds, bound_key(p).index(), BoundKey::kCount, std::tuple(zero2, zero3, ck.value, sp));
        }
      }
    }
  }
  CHECK(speed.size() == 2 * std::size(kCheckpointingNames));
  CHECK(activations.size() == 4 * speed.size());
  CHECK(floors.size() == std::size(kShardingNames) * std::size(kOffloadNames));
  CHECK(bounds.size() == 3 * speed.size());
}

namespace {

// What the engines answer for one layout, as far as each group key claims to decide it.
struct Answers {
  StageCosts stages;             // speed key
  std::int64_t first_activations = -1;  // activation key: the first rank kind's forward-floor activations
  std::vector<std::int64_t> states;     // floor key: each rank kind's model states and the floor
  double bound = 0;              // bound key
};

bool same_stages(const StageCosts& a, const StageCosts& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST_CASE("layouts of one search group get the same answers from the engines for every named mode", "[search][keys]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TensorInventory inv = build_tensor_inventory(a);
  const ClusterSpec c = cluster("H100-80GB", 8);
  for (const Framework fw : {Framework::kMegatron, Framework::kTorchtitan, Framework::kDeepspeed}) {
    const FrameworkProfile& profile = framework_profile(fw);
    TrainingSetup base = framework_defaults(profile, 0);
    base.micro_batch = 2;
    base.seq_len = 4096;
    base.grad_accum = 4;
    const PerfBasis basis = build_perf_basis(a, inv, base);
    std::map<std::size_t, Answers> speed, activations, floors, bounds;
    int layouts = 0, shared = 0;
    for (const bool sp : {false, true}) {
      for (const auto& ck : kCheckpointingNames) {
        for (const auto& sh : kShardingNames) {
          for (const auto& off : kOffloadNames) {
            ParallelLayout l;
            l.behaviour = framework_behaviour(profile, 0);
            l.tp = 2;
            l.pp = 2;
            l.dp = 2;
            l.sequence_parallel = sp;
            l.sharding = sh.value;
            TrainingSetup t = base;
            t.checkpointing = ck.value;
            t.offload = off.value;
            if (check_layout(l, a, t)) continue;
            ++layouts;
            INFO("framework " << profile.key << ", sp " << sp << ", " << ck.name << ", " << sh.name << ", " << off.name);
            const RankPlan p = plan_rank(l, t);
            Answers x;
            x.stages = stage_costs(basis, t, l, c);
            estimate_peak_within(a, inv, t, l, {}, nullptr, kNoMemoryLimit, &x.first_activations);
            const std::vector<ModelStates> states = rank_model_states(a, inv, t, l);
            for (const ModelStates& s : states) {
              x.states.insert(x.states.end(), {s.weights_bytes, s.gradients_bytes, s.optimizer_states_bytes, s.host_bytes});
            }
            x.states.push_back(device_total_floor_bytes(states, t, l));
            x.bound = tokens_per_s_upper_bound(basis, t, l, c);
            const auto [sg, new_speed] = speed.emplace(speed_key(p).index(), x);
            if (!new_speed) {
              ++shared;
              CHECK(same_stages(sg->second.stages, x.stages));
            }
            const auto [ag, new_acts] = activations.emplace(activation_key(p).index(), x);
            if (!new_acts) CHECK(ag->second.first_activations == x.first_activations);
            const auto [fg, new_floor] = floors.emplace(floor_key(p).index(), x);
            if (!new_floor) CHECK(fg->second.states == x.states);
            const auto [bg, new_bound] = bounds.emplace(bound_key(p).index(), x);
            if (!new_bound) CHECK(bg->second.bound == x.bound);
          }
        }
      }
    }
    // The keys group: several layouts share each speed group, and the groups differ.
    CHECK(layouts > 20);
    CHECK(shared > layouts / 2);
    CHECK(speed.size() > 2);
  }
}
