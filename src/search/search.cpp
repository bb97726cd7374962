// Layout search (see search.h).
#include "search/search.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <string_view>

#include "common/error.h"
#include "parallel/rank_plan.h"
#include "pipeline/evaluate.h"
#include "search/bounds.h"
#include "search/group_keys.h"

namespace memfit {

const char* objective_name(Objective o) {
  switch (o) {
    case Objective::kFastest: return "fastest";
    case Objective::kLeastMemory: return "least_memory";
    case Objective::kLargestBatch: return "largest_batch";
  }
  return "fastest";
}

std::string method_name(const ParallelLayout& l, Offload offload) {
  std::vector<std::string> parts;
  switch (l.sharding) {
    case Sharding::kNone:
      if (l.dp * l.cp > 1 && l.tp == 1 && l.pp == 1 && l.cp == 1) parts.emplace_back("DDP");
      else if (l.dp > 1) parts.emplace_back("DP");
      break;
    case Sharding::kZero1: parts.emplace_back("ZeRO-1"); break;
    case Sharding::kZero2: parts.emplace_back("ZeRO-2"); break;
    case Sharding::kZero3: parts.emplace_back(l.shard_degree > 0 && l.shard_degree < l.dp * l.cp ? "HSDP" : "ZeRO-3/FSDP"); break;
  }
  if (l.tp > 1) parts.emplace_back(l.sequence_parallel ? "TP+SP" : "TP");
  if (l.pp > 1) parts.emplace_back("PP");
  if (l.cp > 1) parts.emplace_back(l.cp_kind == ContextParallelKind::kUlysses ? "Ulysses SP" : "CP");
  if (l.ep > 1) parts.emplace_back("EP");
  if (offload == Offload::kOptimizer) parts.emplace_back("optimizer offload");
  if (offload == Offload::kParamsOptimizer) parts.emplace_back("parameter offload");
  if (offload == Offload::kActivations) parts.emplace_back("activation offload");
  if (parts.empty()) return "single GPU";
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : " + ") + p;
  return s;
}

namespace {

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> lo, hi;
  for (std::int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    lo.push_back(d);
    if (d != n / d) hi.push_back(n / d);
  }
  lo.insert(lo.end(), hi.rbegin(), hi.rend());
  return lo;
}

template <typename T>
std::vector<T> allowed(const std::vector<T>& natural, const std::vector<T>& space) {
  if (space.empty()) return natural;
  std::vector<T> out;
  for (const T& v : natural) {
    if (std::find(space.begin(), space.end(), v) != space.end()) out.push_back(v);
  }
  return out;
}

std::string gib_text(std::int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", to_gib(bytes));
  return text;
}

std::string candidate_bound_message(std::int64_t bound) {
  return "the search space holds more than " + std::to_string(bound) + " candidates; fix some dimensions under search.space";
}

// One structural layout: everything but the micro-batch (and the accumulation it implies).
struct Structure {
  ParallelLayout layout;
  Checkpointing checkpointing;
  Offload offload;
  std::size_t family;
  std::uint32_t first = 0, count = 0;  // its candidates: [first, first + count), micro-batch order
  // Every micro-batch >= oom_from is out of memory, every one >= tight_from above the 80 % line
  // (memory is monotone in the micro-batch).
  std::int64_t oom_from = std::numeric_limits<std::int64_t>::max();
  std::int64_t tight_from = std::numeric_limits<std::int64_t>::max();
  std::uint32_t floor_group = 0;      // structures that differ only in sequence parallelism and checkpointing
  std::uint32_t speed_group = 0;      // structures that differ only in sharding and offload (stage costs)
  std::uint32_t activation_group = 0; // ... and keep the same activations (not across ZeRO-3 or activation offload)
  bool probed = false;
  std::int32_t plan_slot = -1;        // its full rank plan in plans_ (plan_of); -1: not planned yet
  double bound = 0;                   // upper bound of its candidates' tokens/s (fastest objective)
  std::int64_t least_bytes = -1;      // device total at its smallest micro-batch, once estimated
};

// A candidate as the walk needs it (the full step time is recomputed for those reported).
struct Timed {
  std::uint32_t structure;
  std::int32_t micro_batch;
  std::int64_t grad_accum;
};

// An entry of the fastest-first walk: a candidate with its tokens/s, or a structure whose
// candidates are not timed yet, keyed by the upper bound of their tokens/s and its first
// candidate's index. Every candidate of a structure ranks at or after the structure's entry, so
// popping in key order visits candidates exactly in (tokens/s descending, index) order.
struct WalkEntry {
  double tokens_per_s;
  std::uint32_t index;                // candidate index, or the structure's first candidate
  std::uint32_t structure : 31;       // its structure
  std::uint32_t whole : 1;            // a structure not yet timed
  bool operator<(const WalkEntry& o) const {  // lower priority
    if (tokens_per_s != o.tokens_per_s) return tokens_per_s < o.tokens_per_s;
    return index > o.index;
  }
};

class Searcher {
 public:
  explicit Searcher(const SearchInput& in)
      : in_(in),
        basis_(build_perf_basis(*in.arch, *in.inv, in.training)),
        clusters_(clusters_by_gpu_kind(in.cluster, in.gpu_mix)),
        scratch_(in.training) {
    // One view of the cluster per GPU kind (a single one unless the cluster mixes kinds), each
    // with its matmul efficiency looked up once rather than in every step time.
    for (const ClusterSpec& c : clusters_) perfs_.push_back(resolved_for(in.perf, c.gpu));
  }

  // nullopt: the space holds more than max_candidates candidates (no exception: see run_search).
  std::optional<SearchResult> run() {
    enumerate();
    if (beyond_candidate_bound_) return std::nullopt;
    switch (in_.objective) {
      case Objective::kFastest: walk_fastest(); break;
      case Objective::kLeastMemory: walk_per_structure(false); break;
      case Objective::kLargestBatch: walk_per_structure(true); break;
    }
    settle_closest();
    finish_methods();
    if (!r_.recommended && !r_.top.empty()) r_.recommended = r_.top.front();
    r_.rejected.assign(rejected_.begin(), rejected_.end());
    r_.assumptions = perf_assumptions(perfs_[0], in_.cluster);
    if (!in_.gpu_mix.empty()) {
      std::string kinds;
      for (const GpuGroup& g : in_.gpu_mix) kinds += (kinds.empty() ? "" : " + ") + std::to_string(g.count) + " x " + g.gpu.id;
      r_.assumptions.push_back(
          "mixed cluster (" + kinds + "): pipeline stages take blocks of gpus / pp consecutive ranks with the memory of the smallest "
          "GPU in the block, placed by memory (the largest demand on the most memory); every stage must fit its own GPUs; the "
          "slowest kind sets the pace (step time on each kind, the longest kept); link and matmul figures above are the first kind's");
    }
    r_.assumptions.emplace_back("memory per rank grows with the micro-batch: a layout out of memory at micro-batch b is out of memory above b");
    r_.assumptions.push_back(
        in_.cluster.host_memory_bytes_per_node > 0
            ? "host memory per node: " + gib_text(in_.cluster.host_memory_bytes_per_node) +
                  "; a layout whose offloaded states (optimizer states, the CPU optimizer's fp32 gradient partition, parameter "
                  "shards) of the node's ranks exceed it is out of memory on the host"
            : std::string("host memory per node unknown: offloaded states are reported, not checked"));
    r_.complete = r_.unexplored == 0;
    if (!r_.complete) {
      r_.assumptions.emplace_back(
          "the walk stopped at the bound of " + std::to_string(in_.max_estimates) + " memory estimates: " +
          std::to_string(r_.unexplored) + " valid candidates were not checked" +
          (in_.objective == Objective::kFastest ? " (each slower than every candidate checked)" : ""));
    }
    return std::move(r_);
  }

 private:
  const SearchInput& in_;
  const bool runs_everything_ = runs_everything(in_.capabilities);  // no capability rule to check
  PerfBasis basis_;
  std::vector<ClusterSpec> clusters_;  // the cluster as each of its GPU kinds (one unless mixed)
  std::vector<PerfConstants> perfs_;   // in_.perf with the matmul and attention efficiencies of each kind
  TrainingSetup scratch_;  // see scratch_setup
  std::vector<RankPlan> plans_;  // the structures' planned so far, see plan_of
  SearchResult r_;
  std::map<std::string, std::int64_t, std::less<>> rejected_;  // looked up without building a key
  // The rules reject() has counted, by the address of their code's literal, with their counters
  // in rejected_ (map nodes stay put).
  std::vector<std::pair<const char*, std::int64_t*>> reject_counters_;
  std::vector<Structure> structures_;
  std::vector<std::uint32_t> structure_family_;  // structures_[i].family, packed
  std::vector<Timed> timed_;
  std::vector<std::string> families_;
  std::vector<std::optional<Candidate>> family_best_;
  std::vector<std::uint32_t> family_best_structure_;      // the structure of each family's best
  std::vector<std::optional<Candidate>> family_closest_;  // least memory among its OOM estimates
  std::vector<std::int64_t> family_valid_;
  std::vector<std::int64_t> micro_batches_;

  std::map<std::int64_t, std::size_t> family_codes_;
  // The groups below are those of one (tp, pp, cp, vpp, ep), by their keys (group_keys.h).
  // Speed bounds (negative: not computed yet).
  GroupSlots<BoundKey, double> bounds_{};
  // By speed group: the stage costs its speed bounds rest on (the group's largest micro-batch,
  // shared by the sharding stages), GPU-kind entries from bound_costs_[slot] (slot -1: none
  // yet), and that micro-batch's index; the walk's step times at it read them too.
  std::vector<std::int32_t> bound_slot_;
  std::vector<std::uint32_t> bound_micro_batch_;
  std::vector<StageCosts> bound_costs_;
  // Speed groups, and the stage costs of each group's micro-batches on each GPU kind, computed on
  // first use (the step times of its structures share them; kept only for up to
  // kMaxCachedStageCosts values).
  GroupSlots<SpeedKey, std::int64_t> speed_groups_{};  // -1: not opened yet
  // Activation groups. By group and micro-batch, the first rank kind's forward-floor activations
  // once one of its structures was estimated (-1: none yet).
  GroupSlots<ActivationKey, std::int64_t> activation_groups_{};
  std::size_t activation_group_count_ = 0;
  std::vector<std::int64_t> activation_bytes_;
  static constexpr std::size_t kMaxCachedStageCosts = 16;
  std::size_t speed_group_count_ = 0;
  std::vector<std::int64_t> stage_slot_;       // by speed group: its first cache entry, or -1 (or absent)
  std::vector<StageCosts> stage_cache_;        // n_mb x GPU kinds entries per slot
  std::vector<std::uint8_t> stage_known_;
  // Device-total floors by floor group (-1: not computed yet); the group of the structures
  // enumerated last and the key it was opened for.
  std::vector<std::int64_t> floors_;
  // Model states of each rank kind by floor group, as (computed yet, the states or nullopt past
  // the 2^53 bound): the floor and every replay of the group's structures read them.
  std::vector<std::pair<bool, std::optional<std::vector<ModelStates>>>> group_states_;
  bool beyond_candidate_bound_ = false;
  ModelStatesMemo states_memo_;  // floor groups whose ranks hold the same shards share their states
  LayerActivationsMemo layers_;  // the layer activations and their block programs, shared by every candidate's replay
  GroupSlots<FloorKey, std::int64_t> floor_groups_{};  // -1: none
  // Per-micro-batch rejections, counted apart from rejected_ while enumerating.
  std::int64_t global_batch_rejects_ = 0, interleaving_rejects_ = 0;

  // Family of a layout, looked up by the few facts its name depends on: the sharding stage in bits
  // 0-1 and the offload in bits 8-10 (a value added to either enum must widen its field).
  static_assert(kShardingStages <= 4 && kOffloadModes <= 8, "family_of's bit fields alias");
  std::size_t family_of(const ParallelLayout& l, Offload off) {
    const std::int64_t code = static_cast<std::int64_t>(l.sharding) | (l.dp * l.cp > 1) << 2 | (l.tp > 1) << 3 |
                              l.sequence_parallel << 4 | (l.pp > 1) << 5 | (l.cp > 1) << 6 | (l.ep > 1) << 7 |
                              static_cast<std::int64_t>(off) << 8 | (l.dp > 1) << 11 |
                              (l.shard_degree > 0 && l.shard_degree < l.dp * l.cp) << 12;
    auto it = family_codes_.find(code);
    if (it != family_codes_.end()) return it->second;
    const std::size_t f = family_of(method_name(l, off));
    family_codes_.emplace(code, f);
    return f;
  }

  std::size_t family_of(const std::string& name) {
    for (std::size_t i = 0; i < families_.size(); ++i) {
      if (families_[i] == name) return i;
    }
    families_.push_back(name);
    family_best_.emplace_back();
    family_best_structure_.push_back(0);
    family_closest_.emplace_back();
    family_valid_.push_back(0);
    return families_.size() - 1;
  }

  // `code` is a rule's string literal: a rule counted before is found by its address.
  void reject(const char* code, std::int64_t n) {
    std::int64_t* counter = nullptr;
    for (const auto& [known, count] : reject_counters_) {
      if (known == code) {
        counter = count;
        break;
      }
    }
    if (!counter) {
      auto it = rejected_.find(std::string_view(code));
      if (it == rejected_.end()) it = rejected_.emplace(code, 0).first;
      counter = &it->second;
      reject_counters_.emplace_back(code, counter);
    }
    *counter += n;
    r_.enumerated += n;
  }

  void enumerate() {
    const ModelArchitecture& a = *in_.arch;
    const std::int64_t gpus = in_.cluster.gpus;
    const std::int64_t layers = a.num_layers + a.num_encoder_layers;
    if (!in_.space.micro_batch.empty()) {
      micro_batches_ = in_.space.micro_batch;
      std::sort(micro_batches_.begin(), micro_batches_.end());
      micro_batches_.erase(std::unique(micro_batches_.begin(), micro_batches_.end()), micro_batches_.end());
    } else {
      for (std::int64_t b = 1; b <= in_.space.max_micro_batch; ++b) micro_batches_.push_back(b);
    }
    const auto n_mb = static_cast<std::int64_t>(micro_batches_.size());
    const std::vector<Checkpointing> ckpts =
        allowed<Checkpointing>({Checkpointing::kNone, Checkpointing::kSelective, Checkpointing::kFull}, in_.space.checkpointing);
    const std::vector<Offload> offloads = allowed<Offload>({Offload::kNone, Offload::kOptimizer, Offload::kParamsOptimizer}, in_.space.offload);
    const std::vector<Sharding> shardings =
        allowed<Sharding>({Sharding::kNone, Sharding::kZero1, Sharding::kZero2, Sharding::kZero3}, in_.space.sharding);
    for (std::int64_t tp : allowed(divisors(gpus), in_.space.tp)) {
      for (std::int64_t pp : allowed(divisors(gpus / tp), in_.space.pp)) {
        for (std::int64_t cp : allowed(divisors(gpus / (tp * pp)), in_.space.cp)) {
          const std::int64_t dp = gpus / (tp * pp * cp);
          std::vector<std::int64_t> vpps = {1};
          if (pp > 1 && layers % pp == 0) {
            for (std::int64_t v : divisors(layers / pp)) {
              if (v > 1) vpps.push_back(v);
            }
          }
          vpps = allowed(vpps, in_.space.vpp);
          // MoE parallel folding: experts at tp, or at etp 1 (Megatron's MoE README: "Use ETP=1 for
          // MoE"), with ep drawn from the tp x dp x cp ranks etp leaves.
          const bool folding = a.is_moe() && in_.behaviour.moe_parallel_folding;
          std::vector<std::int64_t> etps = {tp};
          if (folding && tp > 1) etps.push_back(1);
          std::vector<bool> sps = tp > 1 ? std::vector<bool>{false, true} : std::vector<bool>{false};
          if (!in_.space.sequence_parallel.empty()) sps = allowed<bool>(sps, in_.space.sequence_parallel);
          for (std::int64_t vpp : vpps) {
           for (std::int64_t etp : etps) {
            const std::int64_t expert_ranks = folding ? tp * dp * cp / etp : dp * cp;
            const std::vector<std::int64_t> eps = allowed(a.is_moe() ? divisors(expert_ranks) : std::vector<std::int64_t>{1}, in_.space.ep);
            for (std::int64_t ep : eps) {
              bounds_.fill(-1);  // the speed bounds of this (tp, pp, cp, vpp, ep)
              speed_groups_.fill(-1);
              activation_groups_.fill(-1);
              floor_groups_.fill(-1);
              for (Sharding sh : shardings) {
                if (dp * cp == 1 && sh != Sharding::kNone && in_.space.sharding.empty()) continue;  // nothing to shard over
                for (bool sp : sps) {
                  for (Checkpointing ck : ckpts) {
                    for (Offload off : offloads) {
                      add_structure(tp, pp, cp, dp, vpp, ep, etp == tp ? 0 : etp, sh, sp, ck, off, n_mb);
                      if (r_.enumerated > in_.max_candidates) {
                        beyond_candidate_bound_ = true;
                        return;
                      }
                    }
                  }
                }
              }
            }
           }
          }
        }
      }
    }
    if (global_batch_rejects_ > 0) rejected_["global_batch_divisible"] += global_batch_rejects_;
    if (interleaving_rejects_ > 0) rejected_["interleaved_grad_accum"] += interleaving_rejects_;
  }

  void add_structure(std::int64_t tp, std::int64_t pp, std::int64_t cp, std::int64_t dp, std::int64_t vpp, std::int64_t ep,
                     std::int64_t etp, Sharding sh, bool sp, Checkpointing ck, Offload off, std::int64_t n_mb) {
    if (in_.space.tp_within_node && tp > in_.cluster.gpus_per_node) return reject("tp_within_node", n_mb);
    if (tp > 1 && !sp && in_.behaviour.tp_sequence_parallel_only) return reject("framework_tp_needs_sequence_parallel", n_mb);
    ParallelLayout l;
    l.tp = tp;
    l.pp = pp;
    l.cp = cp;
    l.cp_kind = in_.space.cp_kind;
    l.dp = dp;
    l.vpp = vpp;
    l.ep = ep;
    l.etp = etp;
    l.sharding = sh;
    l.sequence_parallel = sp;
    l.schedule = vpp > 1 ? PipelineSchedule::kInterleaved : PipelineSchedule::k1F1B;
    l.gpus_per_node = in_.cluster.gpus_per_node;
    l.behaviour = in_.behaviour;
    // The scratch setup (no copy of the LoRA target list per structure).
    TrainingSetup& t = scratch_;
    t.checkpointing = ck;
    t.offload = off;
    t.micro_batch = in_.training.micro_batch;
    t.grad_accum = pp;  // the interleaving rule is checked per micro-batch below
    if (const char* code = broken_layout_rule(l, *in_.arch, t)) return reject(code, n_mb);
    if (!runs_everything_) {
      if (const char* code = capability_rule(in_.capabilities, l, t, in_.cluster.gpus_per_node, in_.arch->is_moe())) return reject(code, n_mb);
    }
    const std::size_t family = family_of(l, off);
    Structure s{std::move(l), ck, off, family};
    const auto index = static_cast<std::uint32_t>(structures_.size());
    s.first = static_cast<std::uint32_t>(timed_.size());
    for (std::int64_t mb : micro_batches_) {
      std::int64_t ga = in_.training.grad_accum;
      if (in_.global_batch > 0) {
        if (in_.global_batch % (dp * mb) != 0) {
          ++global_batch_rejects_;
          ++r_.enumerated;
          continue;
        }
        ga = in_.global_batch / (dp * mb);
      }
      if (vpp > 1 && ga % pp != 0) {
        ++interleaving_rejects_;
        ++r_.enumerated;
        continue;
      }
      ++r_.enumerated;
      ++r_.valid;
      ++family_valid_[s.family];
      timed_.push_back(Timed{index, static_cast<std::int32_t>(mb), ga});
    }
    s.count = static_cast<std::uint32_t>(timed_.size()) - s.first;
    const RankPlan plan = plan_rank(s.layout, t);  // what the groups are asked of (only their fields computed: inline)
    std::int64_t& group = floor_groups_[floor_key(plan)];
    if (group < 0) {
      group = static_cast<std::int64_t>(floors_.size());
      floors_.push_back(-1);
      group_states_.emplace_back();
    }
    s.floor_group = static_cast<std::uint32_t>(group);
    std::int64_t& speed = speed_groups_[speed_key(plan)];
    if (speed < 0) speed = static_cast<std::int64_t>(speed_group_count_++);
    s.speed_group = static_cast<std::uint32_t>(speed);
    std::int64_t& acts = activation_groups_[activation_key(plan)];
    if (acts < 0) acts = static_cast<std::int64_t>(activation_group_count_++);
    s.activation_group = static_cast<std::uint32_t>(acts);
    if (s.count > 0 && in_.objective == Objective::kFastest) {
      double& bound = bounds_[bound_key(plan)];
      if (bound < 0) {
        t.micro_batch = timed_.back().micro_batch;
        t.grad_accum = timed_.back().grad_accum;
        const RankPlan& largest = plan_of(s, t);
        const StageCosts* costs = bound_costs_of(s, t, largest);
        // The slowest kind sets the pace: the least of the kinds' bounds bounds it.
        bound = tokens_per_s_upper_bound(basis_, t, s.layout, clusters_[0], perfs_[0], &costs[0], &largest);
        for (std::size_t i = 1; i < clusters_.size(); ++i) {
          bound = std::min(bound, tokens_per_s_upper_bound(basis_, t, s.layout, clusters_[i], perfs_[i], &costs[i], &largest));
        }
        ++r_.bounded;
      }
      s.bound = bound;
    }
    structures_.push_back(std::move(s));
    structure_family_.push_back(static_cast<std::uint32_t>(family));
  }

  TrainingSetup setup_of(const Timed& c) const {
    const Structure& s = structures_[c.structure];
    TrainingSetup t = in_.training;
    t.checkpointing = s.checkpointing;
    t.offload = s.offload;
    t.micro_batch = c.micro_batch;
    t.grad_accum = c.grad_accum;
    return t;
  }

  // The candidate's micro-batch as an index into micro_batches_.
  std::size_t micro_batch_index(const Timed& c) const {
    return static_cast<std::size_t>(
        std::lower_bound(micro_batches_.begin(), micro_batches_.end(), static_cast<std::int64_t>(c.micro_batch)) - micro_batches_.begin());
  }

  // The first rank kind's forward-floor activations of the candidate's activation group at its
  // micro-batch (-1: not known yet), or null where they are not kept (sizes wanted:
  // settle_closest; more micro-batch values than the stage-cost cache keeps).
  std::int64_t* known_activations(const Structure& s, const Timed& c) {
    if (!cut_at_floor_ || micro_batches_.size() > kMaxCachedStageCosts) return nullptr;
    if (activation_bytes_.empty()) activation_bytes_.assign(activation_group_count_ * micro_batches_.size(), -1);
    return &activation_bytes_[static_cast<std::size_t>(s.activation_group) * micro_batches_.size() + micro_batch_index(c)];
  }

  // Memory verdict of a candidate (a counted estimate, or the activation bound), nullopt when it
  // does not fit. The candidate (setup copy, step time) is built only for a layout that fits, or
  // for the family's least-memory layout so far.
  std::optional<Candidate> evaluate(const Timed& c) {
    Structure& s = structures_[c.structure];
    // Out of memory by its model states and the activations another sharding or offload of the
    // layout keeps at this micro-batch, with no replay (forward_floor_lower_bound): the verdict
    // the estimate would reach, with no size, as its cut at the forward floor gives.
    std::int64_t* acts = known_activations(s, c);
    const std::vector<ModelStates>* states = acts && *acts >= 0 ? states_of(s) : nullptr;
    std::optional<PeakVerdict> a;
    if (states && forward_floor_lower_bound(states->front(), *acts, s.layout, in_.runtime) > largest_memory(s)) {
      ++r_.settled_by_activations;
    } else {
      ++r_.memory_estimated;
      a = assess(s, scratch_setup(c), acts);
    }
    const HostFit host = host_of(s);
    const Verdict verdict = a && !host.oom ? a->verdict : Verdict::kOom;
    if (a && c.micro_batch == timed_[s.first].micro_batch) s.least_bytes = a->peak.device_total_bytes;
    if (verdict != Verdict::kFits) s.tight_from = std::min<std::int64_t>(s.tight_from, c.micro_batch);
    auto& closest = family_closest_[s.family];
    const bool closer = verdict == Verdict::kOom && a && (!closest || a->peak.device_total_bytes < closest->device_total_bytes);
    if (verdict == Verdict::kOom) s.oom_from = std::min<std::int64_t>(s.oom_from, c.micro_batch);
    if (verdict == Verdict::kOom && !closer) return std::nullopt;
    Candidate cand;
    cand.layout = s.layout;
    cand.setup = setup_of(c);
    cand.perf = step_time(c);
    cand.method = families_[s.family];
    cand.memory_known = true;
    cand.device_total_bytes = a->peak.device_total_bytes;
    cand.device_total_low_bytes = a->low_device_total_bytes;
    cand.peak_allocated_bytes = a->peak.peak_allocated_bytes;
    cand.peak_reserved_bytes = a->peak.peak_reserved_bytes;
    cand.rank_kind = a->peak.rank_kind;
    cand.verdict = verdict;
    cand.usage_fraction = a->usage_fraction;
    cand.placement = a->placement;
    cand.host_bytes_per_node = host.bytes_per_node;
    cand.host_oom = host.oom;
    if (verdict == Verdict::kOom) {
      closest = std::move(cand);
      return std::nullopt;
    }
    return cand;
  }

  // `first_activations`: receives the first rank kind's forward-floor activations. The fastest-first
  // walk needs no size of a layout that does not fit: a rank kind whose forward floor passes the
  // most memory a rank can have ends the estimate there (the verdict is the same).
  std::optional<PeakVerdict> assess(const Structure& s, const TrainingSetup& t, std::int64_t* first_activations = nullptr) {
    const std::vector<ModelStates>* states = states_of(s);
    if (!states) return std::nullopt;
    const std::int64_t limit = cut_at_floor_ ? largest_memory(s) : kNoMemoryLimit;
    std::optional<PeakVerdict> a =
        judge_peaks(*in_.arch, *in_.inv, t, s.layout, in_.runtime, in_.cluster, in_.gpu_mix,
                    ReplayHints{states, limit, first_activations, &layers_});
    if (!a || in_.dated.empty()) return a;
    return highest_over_dated(s, t, std::move(*a), limit);
  }

  // The candidate under each dated version of the framework (its searched fields on that
  // version's setup): the highest device total decides; nullopt when one is cut at `limit`. The
  // current code's shortcuts (shared model states, floors) stay valid: they bound it from below.
  std::optional<PeakVerdict> highest_over_dated(const Structure& s, const TrainingSetup& t, PeakVerdict current, std::int64_t limit) {
    PeakVerdict highest = std::move(current);
    std::int64_t low = highest.peak.device_total_bytes;
    for (const DatedSetup& d : in_.dated) {
      TrainingSetup dated = d.training;
      dated.checkpointing = t.checkpointing;
      dated.offload = t.offload;
      dated.micro_batch = t.micro_batch;
      dated.grad_accum = t.grad_accum;
      ParallelLayout l = s.layout;
      l.behaviour = d.behaviour;
      std::optional<PeakVerdict> v =
          judge_peaks(*in_.arch, *in_.inv, dated, l, in_.runtime, in_.cluster, in_.gpu_mix,
                      ReplayHints{nullptr, limit, nullptr, &layers_});
      if (!v) return std::nullopt;
      low = std::min(low, v->peak.device_total_bytes);
      if (v->peak.device_total_bytes > highest.peak.device_total_bytes) highest = std::move(*v);
    }
    highest.low_device_total_bytes = low;
    return highest;
  }

  // Memory estimates of the fastest-first walk stop at a rank kind's forward floor past the
  // GPU (estimate_peak_within's limit): such a candidate is out of memory with no size, so it
  // neither records the structure's least bytes nor stands as its family's closest layout;
  // settle_closest, which needs sizes, estimates in full.
  bool cut_at_floor_ = false;
  std::map<std::int64_t, std::int64_t> largest_block_;  // mixed clusters: by pp
  // The most memory any rank of the structure can have: its GPU's, or on a mixed cluster the
  // largest of its stage blocks (a floor past it is out of memory wherever the stages go).
  std::int64_t largest_memory(const Structure& s) {
    if (in_.gpu_mix.empty()) return in_.cluster.gpu.memory_total_bytes;
    auto [it, fresh] = largest_block_.try_emplace(s.layout.pp, 0);
    if (fresh) it->second = largest_stage_block_bytes(s.layout.pp, in_.cluster.gpus, in_.gpu_mix);
    return it->second;
  }

  // The step time on the slowest of the cluster's GPU kinds (every rank waits for it).
  StepTime step_time(const Timed& c) {
    Structure& s = structures_[c.structure];
    const TrainingSetup& t = scratch_setup(c);
    const RankPlan& plan = plan_of(s, t);
    return slowest_step_time(clusters_.size(), [&](std::size_t i) {
      return estimate_step_time(basis_, t, s.layout, clusters_[i], perfs_[i], stage_costs_of(s, c, i, plan), &plan);
    }).first;
  }

  // The full rank plan of structure `s` for its setup `t`: planned on first use (the walk times
  // a fraction of the structures), then only the tokens follow t's micro-batch. Valid until the
  // next call, as scratch_setup.
  const RankPlan& plan_of(Structure& s, const TrainingSetup& t) {
    if (s.plan_slot < 0) {
      s.plan_slot = static_cast<std::int32_t>(plans_.size());
      return plans_.emplace_back(plan_rank(s.layout, t));
    }
    RankPlan& p = plans_[static_cast<std::size_t>(s.plan_slot)];
    p.set_micro_batch(t.micro_batch);
    return p;
  }

  // The stage costs of a candidate (its rank plan `plan`) on GPU kind `kind`, shared by its speed
  // group (null: not cached, when the space has too many micro-batch values).
  const StageCosts* stage_costs_of(const Structure& s, const Timed& c, std::size_t kind, const RankPlan& plan) {
    const std::size_t mb = micro_batch_index(c);
    const auto [costs, known] = stage_entry(s.speed_group, mb, kind);
    if (costs && !*known) {
      const std::int32_t bounded = s.speed_group < bound_slot_.size() ? bound_slot_[s.speed_group] : -1;
      *costs = bounded >= 0 && bound_micro_batch_[s.speed_group] == mb
                   ? bound_costs_[static_cast<std::size_t>(bounded) * clusters_.size() + kind]
                   : stage_costs(basis_, scratch_setup(c), s.layout, clusters_[kind], perfs_[kind], &plan);
      *known = 1;
    }
    return costs;
  }

  // The stage costs the speed bounds of structure `s` (its setup `t` and rank plan `plan` at its
  // largest micro-batch) rest on, one per GPU kind, computed once for its speed group.
  const StageCosts* bound_costs_of(const Structure& s, const TrainingSetup& t, const RankPlan& plan) {
    if (bound_slot_.size() <= s.speed_group) {
      bound_slot_.resize(s.speed_group + 1, -1);
      bound_micro_batch_.resize(s.speed_group + 1, 0);
    }
    std::int32_t& slot = bound_slot_[s.speed_group];
    if (slot < 0) {
      slot = static_cast<std::int32_t>(bound_costs_.size() / clusters_.size());
      bound_micro_batch_[s.speed_group] = static_cast<std::uint32_t>(micro_batch_index(timed_.back()));
      for (std::size_t i = 0; i < clusters_.size(); ++i) bound_costs_.push_back(stage_costs(basis_, t, s.layout, clusters_[i], perfs_[i], &plan));
    }
    return &bound_costs_[static_cast<std::size_t>(slot) * clusters_.size()];
  }

  // The cache entry of speed group `group` at micro-batch index `mb` on GPU kind `kind` and its
  // known flag; null when the space has more micro-batch values than the cache keeps.
  std::pair<StageCosts*, std::uint8_t*> stage_entry(std::uint32_t group, std::size_t mb, std::size_t kind) {
    const std::size_t per_slot = micro_batches_.size() * clusters_.size();
    if (per_slot > kMaxCachedStageCosts) return {nullptr, nullptr};
    if (stage_slot_.size() <= group) stage_slot_.resize(group + 1, -1);
    std::int64_t& slot = stage_slot_[group];
    if (slot < 0) {
      slot = static_cast<std::int64_t>(stage_cache_.size());
      stage_cache_.resize(stage_cache_.size() + per_slot);
      stage_known_.resize(stage_known_.size() + per_slot, 0);
    }
    const std::size_t at = static_cast<std::size_t>(slot) + mb * clusters_.size() + kind;
    return {&stage_cache_[at], &stage_known_[at]};
  }

  // The model states of the structure's floor group, computed on first use; null past the 2^53
  // bound.
  const std::vector<ModelStates>* states_of(const Structure& s) {
    auto& [known, states] = group_states_[s.floor_group];
    if (!known) {
      states = unless_beyond_exact(
          [&] { return rank_model_states(*in_.arch, *in_.inv, scratch_setup(timed_[s.first]), s.layout, &states_memo_); });
      known = true;
    }
    return states ? &*states : nullptr;
  }

  // The structure's floor on the device total (any micro-batch), shared by its floor group
  // (model states depend on neither sequence parallelism nor checkpointing); the 2^53 bound
  // reads as "does not fit".
  std::int64_t floor_of(const Structure& s) {
    std::int64_t& floor = floors_[s.floor_group];
    if (floor < 0) {
      const std::vector<ModelStates>* states = states_of(s);
      const std::optional<std::int64_t> f =
          states ? unless_beyond_exact([&] { return device_total_floor_bytes(*states, scratch_setup(timed_[s.first]), s.layout, in_.runtime); })
                 : std::nullopt;
      floor = f ? *f : std::numeric_limits<std::int64_t>::max();
    }
    return floor;
  }

  // The structure's offloaded states on one node's host (any micro-batch), from its model
  // states: the most-loaded rank kind's times the node's ranks.
  HostFit host_of(const Structure& s) {
    std::int64_t per_rank = 0;
    if (s.offload == Offload::kOptimizer || s.offload == Offload::kParamsOptimizer) {
      if (const std::vector<ModelStates>* states = states_of(s)) {
        for (const ModelStates& m : *states) per_rank = std::max(per_rank, m.host_bytes);
      }
    }
    if (per_rank == 0) return HostFit{0, in_.cluster.host_memory_bytes_per_node, false};
    return node_host_fit(per_rank, in_.cluster);
  }

  // Persistent state alone past the GPU's memory, or offloaded states past the host's, settles
  // every micro-batch of the structure at once (its probe included); the caller counts its
  // candidates.
  bool settle_by_floor(Structure& s) {
    const bool host_oom = host_of(s).oom;
    if (!host_oom && floor_of(s) <= largest_memory(s)) return false;
    s.probed = true;
    s.oom_from = timed_[s.first].micro_batch;
    ++(host_oom ? r_.settled_by_host : r_.settled_by_floor);
    return true;
  }

  bool budget_spent() const { return r_.memory_estimated >= in_.max_estimates; }

  // Whether a candidate fits, from what is known or by estimating. With `comfortable_only` only
  // a layout under the 80 % line is of use: one known to be above it is not estimated and counts
  // as not needed.
  std::optional<Candidate> fits(const Timed& c, bool comfortable_only = false) {
    Structure& s = structures_[c.structure];
    if (c.micro_batch >= s.oom_from) {
      ++r_.oom;
      return std::nullopt;
    }
    if (!s.probed) {
      s.probed = true;
      if (settle_by_floor(s)) {
        ++r_.oom;
        return std::nullopt;
      }
      // One estimate at the smallest micro-batch settles layouts that never fit.
      const Timed& smallest = timed_[s.first];
      if (smallest.micro_batch < c.micro_batch && !evaluate(smallest)) {
        ++r_.oom;
        return std::nullopt;
      }
    }
    if (comfortable_only && c.micro_batch >= s.tight_from) {
      ++r_.not_needed;
      return std::nullopt;
    }
    auto cand = evaluate(c);
    ++(cand ? r_.fit : r_.oom);
    return cand;
  }

  double tokens_per_s(const Timed& c) {
    ++r_.timed;
    return step_time(c).tokens_per_s;
  }

  // setup_of without the copy (the LoRA target list): valid until the next call.
  const TrainingSetup& scratch_setup(const Timed& c) {
    const Structure& s = structures_[c.structure];
    scratch_.checkpointing = s.checkpointing;
    scratch_.offload = s.offload;
    scratch_.micro_batch = c.micro_batch;
    scratch_.grad_accum = c.grad_accum;
    return scratch_;
  }

  void walk_fastest() {
    // Structures enter the walk by the upper bound of their tokens/s and are timed candidate by
    // candidate only when that bound comes first, so the walk visits candidates in (tokens/s
    // descending, enumeration index) order. A structure that comes up when nothing it could give
    // is wanted (its family is settled and the top N are known), or whose persistent state does
    // not fit, leaves the walk untimed.
    std::vector<WalkEntry> heap;
    heap.reserve(structures_.size());
    for (std::uint32_t i = 0; i < structures_.size(); ++i) {
      const Structure& s = structures_[i];
      if (s.count > 0) heap.push_back({s.bound, s.first, i, 1});
    }
    std::make_heap(heap.begin(), heap.end());
    comfortable_.assign(families_.size(), false);
    cut_at_floor_ = true;
    // Until the top N are known, one walk over every family.
    while (!heap.empty() && r_.top.size() < static_cast<std::size_t>(in_.top) && !budget_spent()) step_walk(heap);
    // Then each family that still waits for a layout under the 80 % line walks on alone: with the
    // top N known, a family's walk depends on its own candidates only.
    std::vector<std::vector<WalkEntry>> by_family(families_.size());
    const bool top_known = r_.top.size() >= static_cast<std::size_t>(in_.top);
    for (const WalkEntry& e : heap) {
      const std::size_t fam = structure_family_[e.structure];  // packed: the walk's entries are in no order
      if (top_known && comfortable_[fam]) {
        r_.not_needed += size_of(e);
      } else {
        by_family[fam].push_back(e);
      }
    }
    for (std::size_t fam = 0; fam < families_.size(); ++fam) {
      std::vector<WalkEntry>& family_heap = by_family[fam];
      std::make_heap(family_heap.begin(), family_heap.end());
      while (top_known && !family_heap.empty() && !budget_spent() && !comfortable_[fam]) step_walk(family_heap);
      // Left: not needed once the family is settled, else unexplored (the estimate bound).
      for (const WalkEntry& e : family_heap) (top_known && comfortable_[fam] ? r_.not_needed : r_.unexplored) += size_of(e);
    }
  }

  std::vector<bool> comfortable_;     // families settled by a layout under the 80 % line
  double recommended_speed_ = 0;      // the recommended candidate's tokens/s and index
  std::uint32_t recommended_index_ = 0;

  std::int64_t size_of(const WalkEntry& e) const { return e.whole ? structures_[e.structure].count : 1; }

  // One entry of the fastest-first walk: a structure is timed (or settled whole), a candidate
  // checked when it is wanted.
  void step_walk(std::vector<WalkEntry>& heap) {
    std::pop_heap(heap.begin(), heap.end());
    const WalkEntry entry = heap.back();
    heap.pop_back();
    Structure& s = structures_[entry.structure];
    const std::size_t fam = s.family;
    const auto top_n = static_cast<std::size_t>(in_.top);
    const auto tight_bytes = static_cast<std::int64_t>(kTightFraction * static_cast<double>(largest_memory(s)));
    const bool want_top = r_.top.size() < top_n;
    const bool want_family = !comfortable_[fam];
    // A family that has a tight layout waits for one under the 80 % line: a layout whose
    // persistent state is already above the line cannot be it.
    const bool wanted = want_top || (want_family && !(family_best_[fam] && floor_of(s) > tight_bytes));
    if (entry.whole) {
      if (!wanted) {
        r_.not_needed += s.count;
      } else if (settle_by_floor(s)) {
        r_.oom += s.count;
      } else {
        for (std::uint32_t i = s.first; i < s.first + s.count; ++i) {
          heap.push_back({tokens_per_s(timed_[i]), i, entry.structure, 0});
          std::push_heap(heap.begin(), heap.end());
        }
      }
      return;
    }
    if (!wanted) {
      ++r_.not_needed;
      return;
    }
    auto cand = fits(timed_[entry.index], !want_top && family_best_[fam].has_value());
    if (!cand) return;
    if (want_top) r_.top.push_back(*cand);
    if (!want_family) return;
    if (cand->verdict == Verdict::kFits) {
      family_best_[fam] = *cand;
      family_best_structure_[fam] = entry.structure;
      comfortable_[fam] = true;
      // The fastest layout under the line (ties: enumeration order), whichever walk found it.
      if (!r_.recommended || entry.tokens_per_s > recommended_speed_ ||
          (entry.tokens_per_s == recommended_speed_ && entry.index < recommended_index_)) {
        r_.recommended = *cand;
        recommended_speed_ = entry.tokens_per_s;
        recommended_index_ = entry.index;
      }
    } else if (!family_best_[fam]) {
      family_best_[fam] = *cand;
      family_best_structure_[fam] = entry.structure;
    }
  }

  // A family with no layout that fits reports its least-memory layout: every structure at its
  // smallest micro-batch, in the order of its floor, until the floor passes the least found.
  void settle_closest() {
    cut_at_floor_ = false;
    std::vector<std::vector<std::uint32_t>> open(families_.size());
    for (std::uint32_t i = 0; i < structures_.size(); ++i) {
      const Structure& s = structures_[i];
      if (s.count > 0 && !family_best_[s.family]) open[s.family].push_back(i);
    }
    for (std::size_t f = 0; f < families_.size(); ++f) {
      if (open[f].empty()) continue;
      std::vector<std::pair<std::int64_t, std::uint32_t>> by_floor;
      for (std::uint32_t i : open[f]) by_floor.emplace_back(floor_of(structures_[i]), i);
      std::sort(by_floor.begin(), by_floor.end());
      for (const auto& [floor, i] : by_floor) {
        const auto& closest = family_closest_[f];
        if (closest && floor >= closest->device_total_bytes) break;
        if (structures_[i].least_bytes >= 0) continue;  // estimated: already considered
        if (budget_spent()) return;
        evaluate(timed_[structures_[i].first]);
      }
    }
  }
  // least_memory: each structure at its smallest micro-batch; largest_batch: its largest
  // micro-batch that fits (bisection over the structure's micro-batches).
  void walk_per_structure(bool largest) {
    std::vector<std::pair<Candidate, std::uint32_t>> found;  // with its structure
    std::size_t begin = 0;
    while (begin < timed_.size()) {
      std::size_t end = begin;
      while (end < timed_.size() && timed_[end].structure == timed_[begin].structure) ++end;
      std::optional<Candidate> pick;
      if (budget_spent()) {
        r_.unexplored += static_cast<std::int64_t>(end - begin);
      } else if (!largest) {
        pick = fits(timed_[begin]);
        r_.not_needed += static_cast<std::int64_t>(end - begin - 1);
      } else {
        const std::int64_t checked = r_.fit + r_.oom;
        std::size_t lo = begin, hi = end;  // find the last index that fits in [begin, end)
        std::optional<Candidate> best;
        while (lo < hi) {
          const std::size_t mid = lo + (hi - lo) / 2;
          auto c = fits(timed_[mid]);
          if (c) {
            best = c;
            lo = mid + 1;
          } else {
            hi = mid;
          }
        }
        pick = best;
        r_.not_needed += static_cast<std::int64_t>(end - begin) - (r_.fit + r_.oom - checked);  // left by the bisection
      }
      if (pick) found.emplace_back(std::move(*pick), timed_[begin].structure);
      begin = end;
    }
    auto key_less = [&](const std::pair<Candidate, std::uint32_t>& xs, const std::pair<Candidate, std::uint32_t>& ys) {
      const Candidate& x = xs.first;
      const Candidate& y = ys.first;
      if (largest) {
        const std::int64_t bx = x.layout.dp * x.setup.micro_batch, by = y.layout.dp * y.setup.micro_batch;
        if (bx != by) return bx > by;
      } else if (x.device_total_bytes != y.device_total_bytes) {
        return x.device_total_bytes < y.device_total_bytes;
      }
      return x.perf.tokens_per_s > y.perf.tokens_per_s;
    };
    std::stable_sort(found.begin(), found.end(), key_less);
    for (const auto& [c, structure] : found) {
      if (r_.top.size() < static_cast<std::size_t>(in_.top)) r_.top.push_back(c);
      const std::size_t fam = family_of(c.method);
      if (!family_best_[fam]) {
        family_best_[fam] = c;
        family_best_structure_[fam] = structure;
      }
    }
  }

  void finish_methods() {
    for (std::size_t f = 0; f < families_.size(); ++f) {
      MethodBest m;
      m.method = families_[f];
      m.valid = family_valid_[f];
      if (family_best_[f]) {
        const Candidate& c = *family_best_[f];
        m.best = c;
        // Its largest micro-batch at its accumulation: every one up to its own fits (memory grows
        // with the micro-batch); above it, estimates that share the layout's model states.
        const Structure& s = structures_[family_best_structure_[f]];
        TrainingSetup probe = c.setup;
        m.max_micro_batch = largest_fitting_micro_batch(
            [&](std::int64_t mb) {
              if (mb <= c.setup.micro_batch) return true;
              probe.micro_batch = mb;
              const std::optional<PeakVerdict> a = assess(s, probe);
              return a && a->verdict != Verdict::kOom;
            },
            m.max_micro_batch_capped);
      } else {
        m.closest = family_closest_[f];
      }
      r_.methods.push_back(std::move(m));
    }
    // Methods that fit first, fastest first; then the rest by name.
    std::stable_sort(r_.methods.begin(), r_.methods.end(), [](const MethodBest& x, const MethodBest& y) {
      if (x.best.has_value() != y.best.has_value()) return x.best.has_value();
      if (x.best && y.best) return x.best->perf.tokens_per_s > y.best->perf.tokens_per_s;
      return x.method < y.method;
    });
  }
};

void add_suggestions(const SearchInput& in, SearchResult& r) {
  // One budget for all the suggestions' searches: when it is spent the rest are not tried.
  std::int64_t candidates_left = kMaxSuggestionCandidates, estimates_left = kMaxSearchEstimates;
  auto try_with = [&](SearchInput variant, const std::string& change, const std::string& description) {
    if (candidates_left <= 0 || estimates_left <= 0) {
      r.suggestions_complete = false;
      return false;
    }
    variant.suggest = false;
    variant.top = 1;
    variant.max_candidates = candidates_left;
    variant.max_estimates = estimates_left;
    const std::optional<SearchResult> s = Searcher(variant).run();
    if (!s) {  // past the candidate bound: no budget is left for the rest
      candidates_left = 0;
      r.suggestions_complete = false;
      return false;
    }
    candidates_left -= s->enumerated;
    estimates_left -= s->memory_estimated;
    if (!s->complete) r.suggestions_complete = false;
    if (!s->top.empty()) {
      r.suggestions.push_back(Suggestion{change, description, s->top.front()});
      return true;
    }
    return false;
  };
  if (!in.space.offload.empty()) {
    SearchInput v = in;
    v.space.offload = {Offload::kOptimizer, Offload::kParamsOptimizer};
    try_with(v, "offload", "offload the optimizer (and parameter shards) to CPU memory");
  }
  if (in.training.method != Method::kQlora) {
    SearchInput v = in;
    v.training.method = Method::kQlora;
    v.dated.clear();  // the dated setups were resolved for the request's method: judged on the current code
    try_with(v, "method", "train LoRA adapters over a 4-bit (NF4) base: QLoRA");
  }
  for (std::int64_t factor = 2; factor <= 8 && in.training.seq_len / factor >= 256; factor *= 2) {
    SearchInput v = in;
    v.training.seq_len = in.training.seq_len / factor;
    for (DatedSetup& d : v.dated) d.training.seq_len = v.training.seq_len;
    if (try_with(v, "seq_len", "shorten the sequence to " + std::to_string(v.training.seq_len) + " tokens")) break;
  }
  for (std::int64_t factor = 2; factor <= 64; factor *= 2) {
    SearchInput v = in;
    v.cluster.gpus = in.cluster.gpus * factor;
    for (GpuGroup& g : v.gpu_mix) g.count *= factor;  // each kind scaled alike
    if (v.cluster.gpus > (1 << 20)) break;
    if (in.global_batch > 0 && in.global_batch % v.cluster.gpus != 0) v.global_batch = 0;
    if (try_with(v, "gpus", "use " + std::to_string(v.cluster.gpus) + " GPUs")) break;
  }
}

}  // namespace

SearchResult run_search(const SearchInput& in) {
  if (in.arch == nullptr || in.inv == nullptr) throw Error(ErrorCode::kInvalidValue, "/model", "search needs a model");
  if (in.top < 1 || in.top > kMaxSearchTop) {
    throw Error(ErrorCode::kOutOfRange, "/search/top", "top must be 1 … " + std::to_string(kMaxSearchTop));
  }
  // The engines hold no exception cleanups in WebAssembly builds (docs/toolchain.md): the
  // candidate bound is a status of the search, thrown here with nothing left to destroy.
  std::optional<SearchResult> r = Searcher(in).run();
  if (!r) throw Error(ErrorCode::kOutOfRange, "/search", candidate_bound_message(in.max_candidates));
  if (r->top.empty() && in.suggest) add_suggestions(in, *r);
  return std::move(*r);
}

}  // namespace memfit
