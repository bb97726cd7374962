// The search's groups within one (tp, pp, cp, vpp, ep): which of a structure's other dimensions
// change its step time, its saved activations, its model states and memory floor, and its speed
// bound, asked of its rank plan (parallel/rank_plan.h), the decisions both engines read. Each key
// numbers its groups 0 ... kCount - 1, so an array sized by kCount holds one slot per group; the
// counts are the lengths of the request name tables (setup_names.h), which name every value a
// search can enumerate, so a value added there widens the keys instead of aliasing groups
// (checked below and by "the search's group keys give each combination its own slot"); that the
// engines answer alike within a group is tested over every named value (search/group_keys_test.cpp).
#pragma once
#include <array>
#include <cstddef>
#include <iterator>

#include "parallel/layout.h"
#include "parallel/rank_plan.h"
#include "training/setup_names.h"
#include "training/training_setup.h"

namespace memfit {

/// The table names the values 0 ... N-1 of its enum, each once.
template <typename E, std::size_t N>
constexpr bool names_values_densely(const EnumName<E> (&table)[N]) {
  std::array<bool, N> seen{};
  for (const EnumName<E>& entry : table) {
    const auto i = static_cast<std::size_t>(entry.value);
    if (i >= N || seen[i]) return false;
    seen[i] = true;
  }
  return true;
}
static_assert(names_values_densely(kCheckpointingNames) && names_values_densely(kOffloadNames) &&
              names_values_densely(kShardingNames));
inline constexpr std::size_t kCheckpointingModes = std::size(kCheckpointingNames);
inline constexpr std::size_t kOffloadModes = std::size(kOffloadNames);
inline constexpr std::size_t kShardingStages = std::size(kShardingNames);

/// What the step time reads of the plan besides (tp, pp, cp, vpp, ep): the activation split's
/// sequence parallelism and what the checkpointing policy recomputes. Stage costs read neither the
/// sharding nor the offload ("stage costs depend on neither dp, sharding, offload nor accumulation").
struct SpeedKey {
  bool sequence_parallel = false;
  Checkpointing checkpointing = Checkpointing::kNone;
  static constexpr std::size_t kCount = 2 * kCheckpointingModes;
  constexpr std::size_t index() const {
    return static_cast<std::size_t>(sequence_parallel) * kCheckpointingModes + static_cast<std::size_t>(checkpointing);
  }
};
inline SpeedKey speed_key(const RankPlan& p) { return {p.split.sequence_parallel, p.recompute.mode}; }

/// What the saved activations read besides the speed key: ZeRO-3 (it may change the setup as run:
/// parallel/as_run.h) and activation offload (the kept set leaves the device).
struct ActivationKey {
  SpeedKey speed;
  bool zero3 = false;
  bool offloads_activations = false;
  static constexpr std::size_t kCount = SpeedKey::kCount * 4;
  constexpr std::size_t index() const {
    return speed.index() * 4 + static_cast<std::size_t>(zero3) * 2 + static_cast<std::size_t>(offloads_activations);
  }
};
inline ActivationKey activation_key(const RankPlan& p) {
  return {speed_key(p), p.sharding == Sharding::kZero3, p.offloads_activations()};
}

/// What the model states and the memory floor read besides (tp, pp, cp, vpp, ep): the sharding
/// stage and the offload.
struct FloorKey {
  Sharding sharding = Sharding::kNone;
  Offload offload = Offload::kNone;
  static constexpr std::size_t kCount = kShardingStages * kOffloadModes;
  constexpr std::size_t index() const {
    return static_cast<std::size_t>(sharding) * kOffloadModes + static_cast<std::size_t>(offload);
  }
};
inline FloorKey floor_key(const RankPlan& p) { return {p.sharding, p.offload}; }

/// What the speed bound reads: the speed key and the per-micro-batch data-parallel floor of ZeRO-2
/// and ZeRO-3 (replication and ZeRO-1 pay none: they share the kNone slot). The offload changes
/// only the offload and optimizer terms, which the bound leaves out.
struct BoundKey {
  Sharding floor_kind = Sharding::kNone;
  SpeedKey speed;
  static constexpr std::size_t kCount = kShardingStages * SpeedKey::kCount;
  constexpr std::size_t index() const { return static_cast<std::size_t>(floor_kind) * SpeedKey::kCount + speed.index(); }
};
inline BoundKey bound_key(const RankPlan& p) {
  const bool pays_per_micro_batch = p.sharding == Sharding::kZero2 || p.sharding == Sharding::kZero3;
  return {pays_per_micro_batch ? p.sharding : Sharding::kNone, speed_key(p)};
}

/// One slot per group of Key.
template <typename Key, typename T>
struct GroupSlots {
  std::array<T, Key::kCount> slots{};
  T& operator[](const Key& k) { return slots[k.index()]; }
  void fill(const T& value) { slots.fill(value); }
  auto begin() { return slots.begin(); }
  auto end() { return slots.end(); }
};

}  // namespace memfit
