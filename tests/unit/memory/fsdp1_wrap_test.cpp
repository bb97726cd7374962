// torch FSDP1 wrapping a model held in host memory (Answer.AI fsdp_qlora's low_memory loading):
// each unit's parameters, broadcast bucket and unsharded flat parameter are made on the GPU and
// freed, and their segments stay reserved into training on the compute stream
// (DistributedBehaviour::fsdp1_wrap_from_host, memory/caching_allocator.h fsdp1_wrap_cached_bytes);
// and the 4-bit quant states that FSDP neither shards nor offloads.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "api/api.h"
#include "memory/caching_allocator.h"
#include "memory/model_states.h"
#include "memory/timeline.h"
#include "../test_support.h"

using nlohmann::json;
using namespace memfit;
using memfit_test::preset;

namespace {


TrainingSetup fsdp_qlora_setup(Method method, std::int64_t mb, std::int64_t seq) {
  TrainingSetup t = memfit_test::bf16(mb, seq);
  t.method = method;
  if (method == Method::kQlora) t.base_quant = BaseQuant::kNf4;
  t.lora_rank = 64;
  t.lora_targets = {"all-linear"};
  t.checkpointing = Checkpointing::kFull;
  return t;
}

ParallelLayout fsdp1(std::int64_t dp, Sharding sharding, bool from_host) {
  ParallelLayout l;
  l.dp = dp;
  l.sharding = sharding;
  l.behaviour.ddp_bucket_copy = false;
  l.behaviour.reduce_in_fp32 = false;
  l.behaviour.sharded_grads_on_reduce_stream = true;
  l.behaviour.fsdp1_wrap_from_host = from_host;
  return l;
}

Estimate peak_of(const ModelArchitecture& a, const TrainingSetup& t, const ParallelLayout& l) {
  return estimate_distributed(a, build_tensor_inventory(a), t, l).peak();
}

}  // namespace

TEST_CASE("FSDP1's wrap leaves the root unit's and a block's copies and flat buffers cached", "[memory][fsdp1][allocator]") {
  // Llama-2-7B QLoRA: root 500 MiB (embedding, norm, head in bf16), a 4-bit block about 97 MiB.
  const std::int64_t root = 500 * kMiB + 8 * 1024, head = 250 * kMiB + 8 * 1024, layer = 97 * kMiB;
  const std::int64_t sharded = fsdp1_wrap_cached_bytes(root, head, layer, 2, true, false);
  // tools/oracle/fsdp1_wrap.py replays the same requests: 1.25 GiB cached (the quant states and adapters too).
  CHECK(sharded == 2 * (large_segment_bytes(root) + large_segment_bytes(layer)));
  CHECK(sharded > 1100 * kMiB);
  // NO_SHARD keeps the flat parameters: the copies and the head's flattened bucket stay cached.
  const std::int64_t whole = fsdp1_wrap_cached_bytes(root, head, layer, 2, false, false);
  CHECK(whole == large_segment_bytes(root) + large_segment_bytes(layer) + large_segment_bytes(head));
  CHECK(whole < sharded);
  // An embedding below one bucket shares it with the head: the root is one flattened bucket, reused.
  CHECK(fsdp1_wrap_cached_bytes(100 * kMiB, 50 * kMiB, 20 * kMiB, 2, false, false) ==
        large_segment_bytes(100 * kMiB) + large_segment_bytes(20 * kMiB));
  // CPU offload moves every shard to the host; the root's (made last, largest) leaves its block.
  CHECK(fsdp1_wrap_cached_bytes(root, head, layer, 2, true, true) == sharded + large_segment_bytes(ceil_div(root, 2)));
  CHECK(fsdp1_wrap_cached_bytes(0, 0, 0, 2, true, false) == 0);
}

TEST_CASE("fsdp_qlora: a short QLoRA step reserves the wrap's segments beside its other streams", "[memory][fsdp1][qlora]") {
  const ModelArchitecture a = preset("meta-llama/Llama-2-7b-hf");
  const TrainingSetup t = fsdp_qlora_setup(Method::kQlora, 1, 512);
  const Estimate plain = peak_of(a, t, fsdp1(2, Sharding::kZero3, false));
  const Estimate wrapped = peak_of(a, t, fsdp1(2, Sharding::kZero3, true));
  // Allocated bytes do not move: the wrap's blocks are free, only reserved.
  CHECK(wrapped.peak_allocated_bytes == plain.peak_allocated_bytes);
  const std::int64_t cached = fsdp1_wrap_cached_bytes(plain.states.unit_root_bytes, plain.states.unit_head_bytes,
                                                      plain.states.unit_layer_bytes, 2, true, false);
  REQUIRE(cached > 1000 * kMiB);
  // At 512 tokens the step's compute stream stays below the wrap's reserve: the reserved peak
  // rises by nearly all of it (benchmarks_03_2024.md: 3.72 GiB after the wrap, 4.98 peak).
  CHECK(wrapped.peak_reserved_bytes > plain.peak_reserved_bytes + cached / 2);
  CHECK(wrapped.peak_reserved_bytes >= plain.states.weights_bytes + cached);
}

TEST_CASE("fsdp_qlora: a step whose compute stream outgrows the wrap's segments reuses them", "[memory][fsdp1][qlora]") {
  const ModelArchitecture a = preset("meta-llama/Llama-2-7b-hf");
  const TrainingSetup t = fsdp_qlora_setup(Method::kQlora, 10, 2048);
  const Estimate plain = peak_of(a, t, fsdp1(2, Sharding::kZero3, false));
  const Estimate wrapped = peak_of(a, t, fsdp1(2, Sharding::kZero3, true));
  CHECK(wrapped.peak_reserved_bytes == plain.peak_reserved_bytes);
  // A bf16 LoRA (no quantised base) at the same short step: its blocks are larger, so is the wrap's reserve.
  const TrainingSetup lora = fsdp_qlora_setup(Method::kLora, 1, 512);
  const Estimate lora_plain = peak_of(a, lora, fsdp1(2, Sharding::kZero3, false));
  const Estimate lora_wrapped = peak_of(a, lora, fsdp1(2, Sharding::kZero3, true));
  CHECK(lora_wrapped.peak_reserved_bytes > lora_plain.peak_reserved_bytes);
  CHECK(lora_plain.states.unit_layer_bytes > 3 * plain.states.unit_layer_bytes);
}

TEST_CASE("fsdp_qlora's profile wraps from host memory; the HF Trainer's does not", "[api][fsdp1]") {
  json req = {{"schema_version", 1},
              {"model", {{"preset", "meta-llama/Llama-2-7b-hf"}}},
              {"training", {{"framework", "fsdp_qlora"}, {"framework_version", "2024-03"}, {"micro_batch", 1}, {"seq_len", 512}}},
              {"cluster", {{"gpu", {{"preset", "RTX-3090"}}}, {"gpus", 2}}},
              {"parallel", {{"sharding", "zero3"}}},
              {"options", {{"timeline", false}, {"max_micro_batch", false}}}};
  const json ours = memfit_test::estimate_json(req);
  REQUIRE(ours["ok"] == true);
  CHECK(ours["result"]["parallel"]["behaviour"]["fsdp1_wrap_from_host"] == true);
  // Reserved covers the weights and the wrap's segments (about 3.2 GiB for this model and layout).
  CHECK(ours["result"]["peak_reserved_bytes"].get<std::int64_t>() > 3400 * kMiB);
  req["training"]["framework"] = "hf_trainer";
  req["training"]["method"] = "qlora";
  const json theirs = memfit_test::estimate_json(req);
  REQUIRE(theirs["ok"] == true);
  CHECK(theirs["result"]["parallel"]["behaviour"]["fsdp1_wrap_from_host"] == false);
}

TEST_CASE("sharded and offloaded 4-bit bases keep every quant state whole on each GPU", "[memory][fsdp1][qlora]") {
  const ModelArchitecture a = preset("meta-llama/Llama-2-7b-hf");
  const TensorInventory inv = build_tensor_inventory(a);
  const TrainingSetup t = fsdp_qlora_setup(Method::kQlora, 1, 512);
  const ModelStates whole = compute_model_states(a, inv, t);
  RankShard sharded;
  sharded.sharding = Sharding::kZero3;
  sharded.dense_shard = sharded.data_parallel = 8;
  const ModelStates eighth = compute_model_states(a, inv, t, sharded);
  // The blocks' linears: 32 x (4 x 4096^2 + 3 x 4096 x 11008) weights; absmax 1/64 B and its fp32
  // scale 4/(64 x 256) B per weight stay whole (about 103 MB).
  const std::int64_t linear = 32LL * (4LL * 4096 * 4096 + 3LL * 4096 * 11008);
  const std::int64_t quant_states = linear / 64 + linear * 4 / (64 * 256);
  CHECK(eighth.weights_bytes >= (whole.weights_bytes - quant_states) / 8 + quant_states - 1000);
  CHECK(eighth.weights_bytes <= (whole.weights_bytes - quant_states) / 8 + quant_states + 1000 * 1000);
  // CPU offload of the parameters moves the packed weights, not the quant states.
  TrainingSetup off = t;
  off.offload = Offload::kParamsOptimizer;
  const ModelStates offloaded = compute_model_states(a, inv, off, sharded);
  CHECK(offloaded.weights_bytes > quant_states - 1000 * 1000);
  CHECK(offloaded.weights_bytes < quant_states + 1000 * 1000);
  // A bf16 base has no quant states: offloaded, nothing of its weights stays.
  TrainingSetup lora = off;
  lora.method = Method::kLora;
  lora.base_quant = BaseQuant::kNone;
  CHECK(compute_model_states(a, inv, lora, sharded).weights_bytes == 0);
}
