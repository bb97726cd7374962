// Distributed estimates: relations the mechanisms imply (ZeRO-3 shards shrink with more ranks,
// sequence parallelism divides activations by tp, interleaving raises the first stage's
// in-flight micro-batches by 1 + (p - 1) / (p v), shards of every rank add up to the whole),
// the layout rules, and Fujii et al.'s published accounting reproduced through the api.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "api/api.h"
#include "hf_config/parse_hf_config.h"
#include "block/activations.h"
#include "memory/timeline.h"
#include "parallel/layout.h"
#include "presets/registry.h"
#include "../test_support.h"
#include "frameworks/profile.h"

using nlohmann::json;
using namespace memfit;
using memfit_test::preset;
using memfit_test::sequence_parallel_tp;

namespace {

TrainingSetup full_bf16(std::int64_t micro_batch = 1, std::int64_t seq_len = 2048) {
  TrainingSetup t;
  t.precision = Precision::kBf16;
  t.micro_batch = micro_batch;
  t.seq_len = seq_len;
  return t;
}

DistributedEstimate run(const ModelArchitecture& a, const TrainingSetup& t, const ParallelLayout& l) {
  return estimate_distributed(a, build_tensor_inventory(a), t, l);
}

json estimate(const json& request) { return json::parse(api::estimate(request.dump())); }

}  // namespace

TEST_CASE("more GPUs never increase ZeRO-3 weights, gradients or states per rank", "[distributed][zero]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TensorInventory inv = build_tensor_inventory(a);
  const TrainingSetup t = full_bf16();
  std::int64_t last_weights = std::numeric_limits<std::int64_t>::max(), last_states = last_weights;
  for (std::int64_t dp : {1, 2, 4, 8, 16, 64, 512}) {
    ParallelLayout l;
    l.dp = dp;
    l.sharding = Sharding::kZero3;
    const ModelStates s = estimate_distributed(a, inv, t, l).peak().states;
    INFO("dp " << dp);
    CHECK(s.weights_bytes <= last_weights);
    CHECK(s.optimizer_states_bytes + s.gradients_bytes <= last_states);
    last_weights = s.weights_bytes;
    last_states = s.optimizer_states_bytes + s.gradients_bytes;
  }
}

TEST_CASE("the shards of all data-parallel ranks add up to the unsharded states", "[distributed][zero]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TensorInventory inv = build_tensor_inventory(a);
  const TrainingSetup t = full_bf16();
  const ModelStates whole = compute_model_states(a, inv, t);
  for (Sharding z : {Sharding::kZero1, Sharding::kZero2, Sharding::kZero3}) {
    RankShard shard;
    shard.sharding = z;
    shard.dense_shard = shard.expert_shard = 8;
    const ModelStates part = compute_model_states(a, inv, t, shard);
    // Sharded components: ceiling division leaves at most one byte per rank of slack;
    // the others stay whole on every rank.
    auto adds_up = [](std::int64_t part_bytes, std::int64_t whole_bytes, bool sharded) {
      return sharded ? std::abs(8 * part_bytes - whole_bytes) < 8 : part_bytes == whole_bytes;
    };
    CHECK(adds_up(part.optimizer_states_bytes, whole.optimizer_states_bytes, true));
    CHECK(adds_up(part.gradients_bytes, whole.gradients_bytes, z != Sharding::kZero1));
    CHECK(adds_up(part.weights_bytes, whole.weights_bytes, z == Sharding::kZero3));
  }
}

TEST_CASE("pipeline stages hold every layer once and their states add up to the model", "[distributed][pp]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");  // untied: no shared copy
  const TensorInventory inv = build_tensor_inventory(a);
  const TrainingSetup t = full_bf16();
  ParallelLayout l;
  l.pp = 5;  // 32 layers: 7, 7, 6, 6, 6
  const std::vector<std::int64_t> sizes = chunk_layers(l, a.num_layers);
  CHECK(sizes == std::vector<std::int64_t>{7, 7, 6, 6, 6});
  std::int64_t weights = 0, first = 0;
  for (std::int64_t stage = 0; stage < l.pp; ++stage) {
    RankShard shard;
    shard.layers = {{first, sizes[static_cast<std::size_t>(stage)]}};
    shard.embedding = stage == 0;
    shard.head = stage == l.pp - 1;
    weights += compute_model_states(a, inv, t, shard).weights_bytes;
    first += sizes[static_cast<std::size_t>(stage)];
  }
  CHECK(weights == compute_model_states(a, inv, t).weights_bytes);
  const std::vector<RankKind> kinds = rank_kinds(l, a, 8);
  REQUIRE(kinds.size() == 3);
  CHECK(kinds[0].embedding);
  CHECK_FALSE(kinds[0].head);
  CHECK(kinds[2].head);
  CHECK(kinds[1].ranks == 3);  // the middle stage stands for stages 1-3
}

TEST_CASE("1F1B keeps p - r micro-batches in flight; interleaving raises the first stage by 1 + (p-1)/(p v)",
          "[distributed][pp]") {
  ParallelLayout l;
  l.pp = 4;
  for (std::int64_t r = 0; r < 4; ++r) CHECK(chunks_in_flight(l, r, 16) == 4 - r);
  CHECK(chunks_in_flight(l, 0, 2) == 2);  // fewer micro-batches than stages
  l.schedule = PipelineSchedule::kGpipe;
  CHECK(chunks_in_flight(l, 3, 16) == 16);
  l.schedule = PipelineSchedule::kInterleaved;
  l.vpp = 2;
  // (vpp p + p - 1) chunks of L/(p vpp) layers = p (1 + (p - 1)/(p vpp)) stage micro-batches.
  const double stage_micro_batches = static_cast<double>(chunks_in_flight(l, 0, 16)) / static_cast<double>(l.vpp);
  CHECK(stage_micro_batches == Approx(4.0 * (1.0 + 3.0 / 8.0)));

  // The timeline carries it: the first stage's activations grow with the in-flight count.
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup t = full_bf16();
  t.grad_accum = 16;
  ParallelLayout plain;
  plain.pp = 4;
  ParallelLayout inter = plain;
  inter.vpp = 2;
  inter.schedule = PipelineSchedule::kInterleaved;
  const double ratio = static_cast<double>(run(a, t, inter).ranks[0].estimate.activations_peak_bytes) /
                       static_cast<double>(run(a, t, plain).ranks[0].estimate.activations_peak_bytes);
  CHECK(ratio == Approx(1.0 + 3.0 / 8.0).epsilon(0.05));
}

TEST_CASE("sequence parallelism divides a layer's activations by tp", "[distributed][tp]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TrainingSetup t = full_bf16();
  const LayerActivations whole = layer_activations(a, t, false, false, true);
  for (std::int64_t tp : {2, 4, 8}) {
    const LayerActivations tp_only = layer_activations(a, t, false, false, true, {tp, false});
    const LayerActivations sp = layer_activations(a, t, false, false, true, {tp, true});
    INFO("tp " << tp);
    CHECK(sp.saved_per_token * tp == whole.saved_per_token);
    CHECK(sp.checkpoint_per_token * tp == whole.checkpoint_per_token);
    // Without SP the norms and block inputs stay whole on every rank (Korthikanti et al.'s 10sbh).
    CHECK(tp_only.saved_per_token > sp.saved_per_token);
    CHECK(tp_only.saved_per_token < whole.saved_per_token);
  }
}

TEST_CASE("tensor and expert parallelism split the weights they shard", "[distributed][tp][ep]") {
  const ModelArchitecture a = preset("Qwen/Qwen3-30B-A3B");
  const TensorInventory inv = build_tensor_inventory(a);
  const TrainingSetup t = full_bf16();
  const ModelStates whole = compute_model_states(a, inv, t);
  RankShard tp;
  tp.tp = 4;
  const ModelStates tp_states = compute_model_states(a, inv, t, tp);
  // Replicated norms keep tp x the split total slightly above the whole.
  CHECK(tp_states.weights_bytes * 4 >= whole.weights_bytes);
  CHECK(tp_states.weights_bytes * 4 < whole.weights_bytes * 101 / 100);
  RankShard ep;
  ep.ep = 8;
  const ModelStates ep_states = compute_model_states(a, inv, t, ep);
  const std::int64_t expert_bytes = 2 * inv.params_by_kind[static_cast<int>(ModuleKind::kExpert)];
  CHECK(ep_states.weights_bytes == whole.weights_bytes - expert_bytes + expert_bytes / 8);
}

TEST_CASE("context parallelism splits the tokens of every sequence", "[distributed][cp]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup t = full_bf16(1, 32768);
  ParallelLayout one;
  ParallelLayout cp = one;
  cp.cp = 4;
  const Estimate e1 = run(a, t, one).peak();
  const Estimate e4 = run(a, t, cp).peak();
  CHECK(e4.tokens_per_micro_batch * 4 == e1.tokens_per_micro_batch);
  CHECK(e4.activations_peak_bytes < e1.activations_peak_bytes / 3);
}

TEST_CASE("DDP's bucket copy and Megatron's grad buffer are live from the first forward", "[distributed][dp]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.2-1B-Instruct");
  const TrainingSetup t = full_bf16();
  ParallelLayout ddp;
  ddp.dp = 8;
  const Estimate e = run(a, t, ddp).peak();
  CHECK(e.states.ddp_bucket_bytes == e.states.gradients_bytes);
  CHECK(e.timeline.front().live.communication_bytes == e.states.gradients_bytes);
  ParallelLayout view = ddp;
  view.behaviour.ddp_bucket_copy = false;
  CHECK(run(a, t, view).peak().peak_allocated_bytes == e.peak_allocated_bytes - e.states.gradients_bytes);
  ParallelLayout megatron = view;
  megatron.behaviour.grad_buffer_at_init = true;
  const Estimate m = run(a, t, megatron).peak();
  CHECK(m.timeline.front().live.gradients_bytes == m.states.gradients_bytes);
}

TEST_CASE("ZeRO-3 gathers a block and its prefetched neighbour around each layer", "[distributed][zero]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TrainingSetup t = full_bf16();
  ParallelLayout l;
  l.dp = 8;
  l.sharding = Sharding::kZero3;
  l.behaviour.root_unit_gathered = false;
  const Estimate e = run(a, t, l).peak();
  REQUIRE(e.states.gather_layer_bytes > 0);
  std::int64_t most_weights = 0, embedding_weights = 0;
  for (const TimelineEvent& ev : e.timeline) {
    if (ev.layer >= 0) most_weights = std::max(most_weights, ev.live.weights_bytes);
    if (ev.label == "embedding") embedding_weights = ev.live.weights_bytes;
  }
  CHECK(most_weights == e.states.weights_bytes + 2 * e.states.gather_layer_bytes);
  // Embeddings as a unit of their own are gathered only around their compute.
  CHECK(embedding_weights == e.states.weights_bytes + e.states.gather_root_bytes - e.states.gather_head_bytes);
  // Without reshard-after-forward every block stays gathered until its backward.
  l.behaviour.reshard_after_forward = false;
  const Estimate kept = run(a, t, l).peak();
  most_weights = 0;
  for (const TimelineEvent& ev : kept.timeline) most_weights = std::max(most_weights, ev.live.weights_bytes);
  CHECK(most_weights >= kept.states.weights_bytes + a.num_layers * kept.states.gather_layer_bytes);
}

TEST_CASE("parameter offload leaves only gathered blocks on the GPU and reports host memory", "[distributed][offload]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup t = full_bf16();
  ParallelLayout l;
  l.dp = 4;
  l.sharding = Sharding::kZero3;
  const Estimate on_gpu = run(a, t, l).peak();
  t.offload = Offload::kParamsOptimizer;
  const Estimate off = run(a, t, l).peak();
  CHECK(off.states.weights_bytes == 0);
  CHECK(off.states.optimizer_states_bytes == 0);
  CHECK(off.states.host_bytes == on_gpu.states.weights_bytes + on_gpu.states.gradients_bytes +
                                     on_gpu.states.optimizer_states_bytes);
  CHECK(off.peak_allocated_bytes < on_gpu.peak_allocated_bytes);
}

TEST_CASE("layout rules name the field they break", "[distributed][rules]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");  // 32 heads, 8 kv heads, 32 layers
  const TrainingSetup t = full_bf16();
  auto broken = [&](ParallelLayout l) {
    const auto v = check_layout(l, a, t);
    return v ? v->field : std::string();
  };
  ParallelLayout l;
  CHECK(broken(l).empty());
  l.tp = 3;
  CHECK(broken(l) == "tp");
  l.tp = 16;  // 32 heads split, 8 kv heads replicated twice
  CHECK(broken(l).empty());
  l = {};
  l.ep = 2;
  CHECK(broken(l) == "ep");
  l = {};
  l.pp = 33;
  CHECK(broken(l) == "pp");
  l = {};
  l.sharding = Sharding::kZero3;
  l.shard_degree = 3;
  l.dp = 8;
  CHECK(broken(l) == "shard_degree");
}

TEST_CASE("Fujii et al.'s accounting is reproduced exactly when asked for", "[distributed][reference]") {
  // fujii4d worked example (the authors' unit test row t = 2, d = 2): Llama-3.1-8B, s 8192, b 1,
  // distributed optimizer, fp32 gradient accumulation, 4 GPUs.
  const json req = {{"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
                    {"training", {{"framework", "megatron"}, {"seq_len", 8192}, {"micro_batch", 1}}},
                    {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 4}}},
                    {"parallel", {{"tp", 2}, {"dp", 2}, {"sequence_parallel", true}, {"sharding", "zero1"}}},
                    {"options", {{"accounting", "fujii"}, {"max_micro_batch", false}, {"timeline", false}}}};
  const json r = estimate(req);
  REQUIRE(r["ok"] == true);
  const json& ref = r["result"]["reference"];
  CHECK(ref["model_states_bytes"] == 48181592064LL);
  CHECK(ref["activations_bytes"] == 24314380288LL);
  CHECK(ref["total_bytes"] == 48181592064LL + 24314380288LL);
  json bad = req;
  bad["options"]["accounting"] = "napkin";
  const json e = estimate(bad);
  REQUIRE(e["ok"] == false);
  CHECK(e["error"]["path"] == "/options/accounting");
}

TEST_CASE("a distributed estimate lists every rank kind and heads with the most loaded", "[distributed][api]") {
  const json req = {{"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
                    {"training", {{"framework", "megatron"}, {"seq_len", 4096}, {"micro_batch", 1}, {"grad_accum", 8}}},
                    {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 16}}},
                    {"parallel", {{"tp", 2}, {"pp", 4}, {"sequence_parallel", true}, {"sharding", "zero1"}}},
                    {"options", {{"max_micro_batch", false}, {"timeline", false}}}};
  const json r = estimate(req);
  REQUIRE(r["ok"] == true);
  const json& ranks = r["result"]["ranks"];
  REQUIRE(ranks.size() == 3);
  long long most = 0;
  for (const json& k : ranks) most = std::max(most, k["device_total_bytes"].get<long long>());
  CHECK(r["result"]["device_total_bytes"] == most);
  CHECK(ranks[0]["micro_batch_chunks_in_flight"] == 4);
  CHECK(ranks[2]["micro_batch_chunks_in_flight"] == 1);
  CHECK(r["result"]["parallel"]["dp"] == 2);
}

TEST_CASE("op-level selective checkpointing keeps every other matmul output and recomputes the rest",
          "[distributed][checkpointing]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");  // h 4096, kv 1024, f 14336, 32 heads
  const TrainingSetup t = full_bf16();
  const LayerActivations acts = layer_activations(a, t, false, false, true);
  // Matmuls q k v o gate up down: q, v, gate and down kept, plus the attention output, its fp32
  // logsumexp per head and the block input.
  const std::int64_t h = 4096, kv = 1024, f = 14336;
  CHECK(acts.mm_policy_kept_per_token == 2 * (h + kv + f + h) + 2 * h + 4 * 32 + 2 * h);
  TrainingSetup sac = t;
  sac.checkpointing = Checkpointing::kSelective;
  sac.selective_every_other_mm = true;
  TrainingSetup none = t;
  TrainingSetup full = t;
  full.checkpointing = Checkpointing::kFull;
  ParallelLayout one;
  const std::int64_t kept_sac = run(a, sac, one).peak().activations_peak_bytes;
  CHECK(kept_sac < run(a, none, one).peak().activations_peak_bytes);
  CHECK(kept_sac > run(a, full, one).peak().activations_peak_bytes);
}

TEST_CASE("dropout keeps a 1-byte mask per element", "[distributed][dropout]") {
  ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup t = full_bf16();
  t.attention = AttentionKernel::kEager;
  const LayerActivations off = layer_activations(a, t, false, false, true);
  a.hidden_dropout = 0.1;
  a.attention_dropout = 0.1;
  const LayerActivations on = layer_activations(a, t, false, false, true);
  CHECK(on.saved_per_token - off.saved_per_token == 2 * a.hidden_size);  // after attention and after the MLP
  // Per score: the mask and the dropped probabilities replace the 16-bit cast (1 + 2 vs 2 bytes).
  CHECK(on.saved_per_token_per_position - off.saved_per_token_per_position == a.attention.num_heads);
}

TEST_CASE("logits freed before backward leave a cached block that reserved memory carries", "[distributed][allocator]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup t = full_bf16(2, 4096);
  t.checkpointing = Checkpointing::kFull;
  t.method = Method::kLora;  // few gradients: the loss backward is the peak
  ParallelLayout one;
  const Estimate kept = run(a, t, one).peak();
  REQUIRE(kept.peak_label == "loss backward");
  t.logits_freed_before_backward = true;
  const Estimate freed = run(a, t, one).peak();
  CHECK(freed.peak_allocated_bytes == kept.peak_allocated_bytes);
  // The 16-bit logits (2 bytes x tokens x vocabulary) stay cached next to the fp32 gradients.
  CHECK(freed.peak_reserved_bytes - freed.peak_allocated_bytes >= 2 * 8192LL * 128256 - (64LL << 20));
}

namespace {
// The live bytes of the named event in a distributed estimate's headline timeline.
const TimelineEvent& event(const Estimate& e, const char* label) {
  for (const TimelineEvent& ev : e.timeline)
    if (ev.label == label) return ev;
  FAIL("no event " << label);
  return e.timeline.front();
}
// One 4096-token sequence, fully checkpointed, bf16.
TrainingSetup checkpointed_4k() {
  TrainingSetup t = full_bf16(1, 4096);
  t.checkpointing = Checkpointing::kFull;
  return t;
}
}  // namespace

TEST_CASE("DTensor loss parallelism runs the log-softmax decomposed: 14 bytes per logit forward, 16 backward",
          "[distributed][tp][loss]") {
  // Llama-3.1-8B, tp 4 with sequence parallelism, bf16 logits upcast: each rank holds
  // tokens x 128256 / 4 logits. torch loss_parallel: the bf16 logits, their fp32 copy, the shifted
  // copy and exp(shifted) (then the result) forward; backward the saved result, zeros_like, exp,
  // their sum and the product (torch/distributed/tensor/parallel/loss.py).
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup t = checkpointed_4k();
  t.logits_upcast = true;
  ParallelLayout l = sequence_parallel_tp(4);
  const std::int64_t logits = 4096LL * 128256 / 4;
  const Estimate kernel = run(a, t, l).peak();
  CHECK(event(kernel, "logits and cross-entropy").live.logits_loss_bytes == 10 * logits);
  CHECK(event(kernel, "loss backward").live.logits_loss_bytes == 12 * logits);
  l.behaviour.loss_parallel_decomposed = true;
  const Estimate decomposed = run(a, t, l).peak();
  CHECK(event(decomposed, "logits and cross-entropy").live.logits_loss_bytes == 14 * logits);
  CHECK(event(decomposed, "loss backward").live.logits_loss_bytes == 16 * logits);
  // Only the vocabulary-parallel loss is decomposed: on one rank the loss is one kernel.
  ParallelLayout one;
  one.behaviour.loss_parallel_decomposed = true;
  CHECK(event(run(a, t, one).peak(), "loss backward").live.logits_loss_bytes == 12 * 4 * logits);
}

TEST_CASE("DTensor sequence parallelism keeps the output projection's gathered input", "[distributed][tp][sp]") {
  // The final norm's saved tensors (6h per token) stay split by tp; the output projection's
  // input (2h) is all-gathered before the matmul, which saves it whole.
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TrainingSetup t = checkpointed_4k();
  ParallelLayout l = sequence_parallel_tp(4);
  const std::int64_t local = event(run(a, t, l).peak(), "logits and cross-entropy").live.activations_bytes;
  l.behaviour.sp_saves_gathered_inputs = true;
  const std::int64_t gathered = event(run(a, t, l).peak(), "logits and cross-entropy").live.activations_bytes;
  CHECK(gathered - local == 4096LL * 2 * 4096 * 3 / 4);
}

TEST_CASE("a head unit of its own is gathered for the output projection, not through the loss", "[distributed][zero]") {
  // FSDP2 reshards a unit after its forward: the head's weight (v x h, bf16) is gathered while
  // the output projection writes the logits and again in its backward; a fused loss computes the
  // projection inside the loss, so there it stays gathered through the loss.
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup t = checkpointed_4k();
  ParallelLayout l;
  l.dp = 8;
  l.sharding = Sharding::kZero3;
  l.behaviour.root_unit_gathered = false;
  const Estimate e = run(a, t, l).peak();
  REQUIRE(e.states.gather_head_bytes > 0);
  const TimelineEvent& projection = event(e, "output layer");
  const TimelineEvent& loss = event(e, "logits and cross-entropy");
  CHECK(projection.live.weights_bytes - loss.live.weights_bytes == e.states.gather_head_bytes);
  CHECK(projection.live.logits_loss_bytes == 2 * 4096LL * 128256);
  CHECK(event(e, "loss backward").live.weights_bytes == loss.live.weights_bytes);
  CHECK(event(e, "output layer backward").live.weights_bytes == projection.live.weights_bytes);
  t.loss = LossKernel::kFused;
  const Estimate fused = run(a, t, l).peak();
  for (const TimelineEvent& ev : fused.timeline) CHECK(ev.label != "output layer");
  CHECK(event(fused, "logits and cross-entropy").live.weights_bytes == projection.live.weights_bytes);
}

TEST_CASE("a reference accounting's rule points at the request field", "[distributed][reference]") {
  const json req = {{"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
                    {"training", {{"framework", "megatron"}, {"seq_len", 8192}}},
                    {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 3}}},
                    {"parallel", {{"pp", 3}}},
                    {"options", {{"accounting", "megatron"}, {"max_micro_batch", false}}}};
  const json r = estimate(req);  // 32 layers do not split into 3 equal Megatron stages
  if (r["ok"] == false) {
    CHECK(r["error"]["path"].get<std::string>().rfind("/", 0) == 0);
  } else {
    CHECK(r["result"]["reference"]["total_bytes"].get<long long>() > 0);
  }
}

TEST_CASE("pipeline parallelism of an encoder-decoder model is reported as unsupported", "[distributed][rules]") {
  const json req = {{"model", {{"preset", "google-t5/t5-base"}}},
                    {"cluster", {{"gpu", {{"preset", "A100-80GB"}}}, {"gpus", 2}}},
                    {"parallel", {{"pp", 2}}}};
  const json r = estimate(req);
  REQUIRE(r["ok"] == false);
  CHECK(r["error"]["code"] == "unsupported");
  CHECK(r["error"]["path"] == "/parallel/pp");
}

TEST_CASE("layer-wise selective checkpointing recomputes every k-th block", "[distributed][checkpointing]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup none = full_bf16();
  TrainingSetup every2 = none;
  every2.checkpointing = Checkpointing::kSelective;
  every2.selective_layer_period = 2;
  TrainingSetup full = none;
  full.checkpointing = Checkpointing::kFull;
  ParallelLayout one;
  const std::int64_t kept_none = run(a, none, one).peak().activations_peak_bytes;
  const std::int64_t kept_half = run(a, every2, one).peak().activations_peak_bytes;
  const std::int64_t kept_full = run(a, full, one).peak().activations_peak_bytes;
  // Half the blocks keep everything, half only their input: about the mean of the two.
  CHECK(static_cast<double>(kept_half) == Approx(0.5 * static_cast<double>(kept_none + kept_full)).epsilon(0.05));
  const json req = {{"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
                    {"training", {{"activation_checkpointing", "full"}, {"selective_layer_period", 2}}},
                    {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}}}};
  const json r = estimate(req);
  REQUIRE(r["ok"] == false);
  CHECK(r["error"]["path"] == "/training/selective_layer_period");
}

TEST_CASE("generated layouts: valid ones estimate, every peak covers its breakdown, memory grows with the batch",
          "[distributed][property]") {
  // A fixed pseudo-random sweep (deterministic): dense and MoE models, every parallel degree,
  // sharding stage, schedule and checkpointing mode.
  const char* models[] = {"meta-llama/Llama-3.2-1B-Instruct", "Qwen/Qwen3-30B-A3B", "meta-llama/Llama-3.1-8B"};
  std::uint64_t state = 0x9E3779B97F4A7C15ULL;
  auto next = [&](std::uint64_t n) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<std::int64_t>(state % n);
  };
  const std::int64_t degrees[] = {1, 2, 4, 8};
  int estimated = 0, rejected = 0;
  for (const char* id : models) {
    const ModelArchitecture a = preset(id);
    const TensorInventory inv = build_tensor_inventory(a);
    for (int i = 0; i < 150; ++i) {
      ParallelLayout l;
      l.tp = degrees[next(4)];
      l.pp = degrees[next(4)];
      l.cp = degrees[next(3)];
      l.dp = degrees[next(4)];
      l.ep = a.is_moe() ? degrees[next(4)] : 1;
      l.sequence_parallel = l.tp > 1 && next(2) == 1;
      l.sharding = static_cast<Sharding>(next(4));
      if (l.pp > 1 && next(3) == 0) {
        l.vpp = 2;
        l.schedule = PipelineSchedule::kInterleaved;
      }
      TrainingSetup t = full_bf16(1 + next(4), 1024 << next(3));
      t.grad_accum = l.pp * (1 + next(3));
      t.checkpointing = static_cast<Checkpointing>(next(3));
      const auto violation = check_layout(l, a, t);
      // The search's code-only path breaks the same rule.
      const char* code = broken_layout_rule(l, a, t);
      REQUIRE((code != nullptr) == violation.has_value());
      if (violation) {
        CHECK(violation->code == code);
        CHECK_FALSE(violation->rule.empty());
        ++rejected;
        continue;
      }
      ++estimated;
      const DistributedEstimate d = estimate_distributed(a, inv, t, l);
      REQUIRE(!d.ranks.empty());
      for (const RankEstimate& r : d.ranks) {
        const Estimate& e = r.estimate;
        CHECK(e.peak_tensor_bytes == e.at_peak.total());
        CHECK(e.peak_reserved_bytes >= e.peak_allocated_bytes);
        CHECK(e.device_total_bytes >= e.peak_reserved_bytes);
        CHECK(d.peak().device_total_bytes >= e.device_total_bytes);
      }
      // A larger micro-batch never needs less memory on the most-loaded rank.
      TrainingSetup bigger = t;
      bigger.micro_batch *= 2;
      CHECK(estimate_distributed(a, inv, bigger, l).peak().peak_allocated_bytes >= d.peak().peak_allocated_bytes);
      // Deterministic.
      CHECK(estimate_distributed(a, inv, t, l).peak().device_total_bytes == d.peak().device_total_bytes);
    }
  }
  CHECK(estimated > 100);
  CHECK(rejected > 10);
}

TEST_CASE("Colossal-AI Gemini: gradients live in the parameter chunks and a gathered chunk replaces its shard",
          "[distributed][zero]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TensorInventory inv = build_tensor_inventory(a);
  const FrameworkProfile& gemini = framework_profile(Framework::kColossalai);
  TrainingSetup t = framework_defaults(gemini, 0);
  t.seq_len = 512;
  RankShard shard;
  shard.sharding = Sharding::kZero3;
  shard.dense_shard = shard.expert_shard = shard.data_parallel = 4;
  shard.behaviour = gemini.dist;
  const ModelStates m = compute_model_states(a, inv, t, shard);
  CHECK(m.gradients_bytes == 0);
  CHECK(m.layer_gradient_bytes == 0);
  CHECK(m.reduce_layer_bytes == 0);
  // fp16 chunks sharded 1/4; fp32 master copy and both Adam moments in the optimizer, 1/4.
  const std::int64_t params = inv.total_params;
  CHECK(m.weights_bytes == Approx(2.0 * static_cast<double>(params) / 4).epsilon(1e-6));
  CHECK(m.optimizer_states_bytes == Approx(12.0 * static_cast<double>(params) / 4).epsilon(1e-6));
  // One block gathered for compute adds the other three quarters of its fp16 bytes.
  const double block_fp16 = 2.0 * static_cast<double>(inv.groups[0].params_per_layer());
  CHECK(static_cast<double>(m.gather_layer_bytes) == Approx(block_fp16 * 3 / 4).epsilon(1e-6));
  // Chunks stay gathered from their forward to their backward (placement policy "cuda").
  CHECK_FALSE(gemini.dist.reshard_after_forward);
  shard.behaviour = DistributedBehaviour{};  // FSDP: the shard stays beside the gathered unit
  CHECK(static_cast<double>(compute_model_states(a, inv, t, shard).gather_layer_bytes) ==
        Approx(block_fp16).epsilon(1e-6));
}

TEST_CASE("Colossal-AI 1D TP: row-split linears split weights only, every rank keeps whole activations",
          "[distributed][tp]") {
  // A BioGPT-Large-like shape: 25 heads do not split over tp 4, the hidden size 1600 does.
  const ModelArchitecture a = parse_hf_config_text(R"({"model_type":"biogpt","vocab_size":1000,"hidden_size":1600,
    "num_hidden_layers":2,"num_attention_heads":25,"intermediate_size":6400})");
  const FrameworkProfile& gemini = framework_profile(Framework::kColossalai);
  TrainingSetup t = framework_defaults(gemini, 0);
  t.seq_len = 512;
  ParallelLayout l;
  l.tp = 4;
  CHECK(check_layout(l, a, t)->code == "tp_divides_heads");  // Megatron splits heads
  l.behaviour = gemini.dist;
  CHECK_FALSE(check_layout(l, a, t).has_value());
  l.tp = 3;  // 1600 is not a multiple of 3
  CHECK(check_layout(l, a, t)->code == "tp_divides_linear_inputs");
  l.tp = 2;
  l.sequence_parallel = true;
  REQUIRE(check_layout(l, a, t).has_value());
  CHECK(check_layout(l, a, t)->unsupported);
  l.sequence_parallel = false;
  l.tp = 4;
  const DistributedEstimate split = run(a, t, l);
  ParallelLayout one;
  one.behaviour = gemini.dist;
  const DistributedEstimate whole = run(a, t, one);
  // Activations (and the logits) are those of one GPU; weights are split four ways.
  CHECK(split.peak().activations_peak_bytes == whole.peak().activations_peak_bytes);
  CHECK(split.peak().states.weights_bytes < whole.peak().states.weights_bytes / 3);
}
