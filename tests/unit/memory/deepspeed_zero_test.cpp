// DeepSpeed's ZeRO optimizers as v0.19.8 runs them (runtime/zero/stage3.py, stage_1_and_2.py;
// measured on an H200 under TRL: tests/validation/measured_h200_trainers, TG-14..18, TD-16):
// ZeRO-3 allocates its 16-bit gradient partition and reduce bucket with the engine, and both
// ZeRO stages step on fp32 copies of the gradient partition.
#include <algorithm>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "api/api.h"

using nlohmann::json;

namespace {

constexpr std::int64_t kParamsLlama8B = 8'030'261'248;  // Llama-3.1-8B, untied

json request(const char* sharding, const char* framework, int gpus) {
  return {{"schema_version", 1},
          {"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
          {"training", {{"framework", framework}, {"method", "full"}, {"precision", "amp_bf16"}, {"micro_batch", 1},
                        {"seq_len", 4096}, {"activation_checkpointing", "full"}}},
          {"cluster", {{"gpu", {{"preset", "H200"}}}, {"gpus", gpus}}},
          {"parallel", {{"sharding", sharding}, {"backend", "deepspeed"}}}};
}

json result_of(const json& req) {
  json out = json::parse(memfit::api::estimate(req.dump()));
  REQUIRE(out["ok"] == true);
  return out["result"];
}

std::int64_t bytes(const json& j, const char* key) { return j[key].get<std::int64_t>(); }

}  // namespace

TEST_CASE("DeepSpeed ZeRO-3: the gradient partition and the reduce bucket live from engine init",
          "[deepspeed][zero]") {
  for (const int gpus : {1, 8}) {
    const json r = result_of(request("zero3", "trl", gpus));
    const json& b = r["parallel"]["behaviour"];
    CHECK(b["zero3_grad_partition_at_init"] == true);
    // accelerate's config without a DeepSpeed file: DeepSpeed's default 5e8-element bucket, 16-bit.
    CHECK(bytes(b, "reduce_bucket_bytes") == 1'000'000'000);
    // The peak is the loss, before any gradient is computed, yet the whole 16-bit partition is there.
    const json& at_peak = r["breakdown"];
    const std::int64_t partition = bytes(r["states"], "gradients_bytes");
    CHECK(partition == Approx(2.0 * kParamsLlama8B / gpus).epsilon(0.01));
    CHECK(bytes(at_peak, "gradients_bytes") >= partition);
  }
}

TEST_CASE("DeepSpeed ZeRO-2 steps on fp32 gradient copies made from a flattened 16-bit copy",
          "[deepspeed][zero]") {
  // One GPU: the partition is the model. At the step: the 16-bit gradients, a flattened 16-bit copy of
  // the decay group and every group's fp32 copy (TD-16: 7.49 + 7.49 + 14.98 GiB for Qwen3-4B).
  const json r = result_of(request("zero2", "trl", 1));
  const std::int64_t params = kParamsLlama8B;
  const json* step = nullptr;
  for (const json& e : r["timeline"]) {
    if (e["phase"] == "optimizer") step = &e;
  }
  REQUIRE(step != nullptr);
  const std::int64_t temp = bytes(*step, "temporaries_bytes");
  CHECK(temp == Approx(6.0 * params).epsilon(0.01));
  // ZeRO-3 copies one sub-group of 1e9 elements at a time.
  const json z3 = result_of(request("zero3", "trl", 1));
  const json* step3 = nullptr;
  for (const json& e : z3["timeline"]) {
    if (e["phase"] == "optimizer") step3 = &e;
  }
  REQUIRE(step3 != nullptr);
  CHECK(bytes(*step3, "temporaries_bytes") == 4'000'000'000LL);
}

TEST_CASE("Axolotl and LLaMA-Factory's DeepSpeed JSONs size the buckets from the hidden size", "[deepspeed][zero]") {
  const json r = result_of(request("zero3", "axolotl", 8));
  CHECK(bytes(r["parallel"]["behaviour"], "reduce_bucket_bytes") == 4096LL * 4096 * 2);
}

TEST_CASE("accelerate's FSDP2 plugin checkpointed every child of a block from v1.8 to v1.14", "[fsdp][checkpointing]") {
  json req = request("zero3", "trl", 2);
  req["parallel"] = {{"sharding", "zero3"}, {"fsdp_version", 2}, {"fsdp_activation_checkpointing", true}};
  req["training"].erase("activation_checkpointing");  // the plugin checkpoints whatever the Trainer says
  req["training"]["framework_version"] = "2026-03";  // accelerate 1.13
  const json per_child = result_of(req);
  req["training"]["framework_version"] = "2026-10";  // accelerate 1.15: the block is the region
  const json per_block = result_of(req);
  req["parallel"].erase("fsdp_activation_checkpointing");
  req["training"]["activation_checkpointing"] = "full";
  const json trainer = result_of(req);
  // Llama: two norms, attention and MLP each keep their hidden-size input: 3 more per layer, over
  // the 31 layers below the one in backward at the activations' peak.
  const std::int64_t per_layer = 3LL * 4096 * 4096 * 2;  // tokens x hidden x bf16
  const std::int64_t extra = bytes(per_child, "activations_peak_bytes") - bytes(per_block, "activations_peak_bytes");
  CHECK(extra >= 31 * per_layer);
  CHECK(extra <= 32 * per_layer);
  CHECK(bytes(per_block, "activations_peak_bytes") == bytes(trainer, "activations_peak_bytes"));
}

TEST_CASE("fsdp_activation_checkpointing is accelerate's option", "[fsdp][checkpointing][errors]") {
  json req = request("zero3", "torchtune", 2);
  req["parallel"] = {{"sharding", "zero3"}, {"fsdp_activation_checkpointing", true}};
  const json out = json::parse(memfit::api::estimate(req.dump()));
  REQUIRE(out["ok"] == false);
  CHECK(out["error"]["code"] == "invalid_value");
  CHECK(out["error"]["path"] == "/parallel/fsdp_activation_checkpointing");
}

TEST_CASE("DeepSpeed's ZeRO leaves AdamW's states to the first step, where they break the loss's segments",
          "[deepspeed][zero][allocator]") {
  // TD-14: adam.py _init_group allocates exp_avg and exp_avg_sq in step 1, into the cached segments of
  // step 1's loss, so step 2 maps its loss buffers again.
  for (const char* sharding : {"zero2", "zero3"}) {
    json req = request(sharding, "trl", 1);
    req["training"]["framework_version"] = "2026-04";  // TRL 1.4: the full logits' loss (nll)
    req["training"]["loss"] = "standard";
    const json r = result_of(req);
    CHECK(bytes(r, "loss_segments_remapped_bytes") > 0);
    req["training"]["expandable_segments"] = true;  // one segment per stream: nothing to map again
    CHECK(bytes(result_of(req), "loss_segments_remapped_bytes") == 0);
  }
}

namespace {

// Qwen3-4B (tied): one block is 100,930,816 elements, the output layer 151,936 x 2,560.
constexpr std::int64_t kQwen3_4BLayerBytes = 100'930'816LL * 2;
constexpr std::int64_t kQwen3_4BTableBytes = 151'936LL * 2'560 * 2;

// Gathered bytes (weights beyond the rank's shards) at a timeline event of Qwen3-4B on 8 GPUs.
std::int64_t gathered_at(const char* framework, const char* label) {
  json req = request("zero3", framework, 8);
  req["model"]["preset"] = "Qwen/Qwen3-4B";
  const json r = result_of(req);
  for (const json& e : r["timeline"]) {
    if (e["label"] == label) return bytes(e, "weights_bytes") - bytes(r["states"], "weights_bytes");
  }
  FAIL("no event " << label);
  return 0;
}

}  // namespace

TEST_CASE("DeepSpeed ZeRO-3 keeps the top blocks within max_live_parameters gathered through the loss backward",
          "[deepspeed][zero]") {
  // stage3_max_live_parameters 1e9 (DeepSpeed's default, kept by TRL's accelerate configs): beside
  // the output layer, (1e9 - 389 M) / 100.9 M = 6 blocks (executed: tools/oracle/zero3_gathered_probe.py).
  const json r = result_of(request("zero3", "trl", 8));
  CHECK(bytes(r["parallel"]["behaviour"], "zero3_max_live_elements") == 1'000'000'000);
  const std::int64_t final_norm_bytes = 2'560 * 2;
  CHECK(gathered_at("trl", "loss backward") == kQwen3_4BTableBytes + final_norm_bytes + 6 * kQwen3_4BLayerBytes);
  // Released after their backward: by the embedding's backward only the root is gathered.
  CHECK(gathered_at("trl", "embedding backward") == kQwen3_4BTableBytes + final_norm_bytes);
  // Axolotl's zero3 JSONs set stage3_max_live_parameters 0: nothing beyond the root at the loss either.
  CHECK(gathered_at("axolotl", "loss backward") == gathered_at("axolotl", "embedding backward"));
}

namespace {

// HF Trainer handing the model to the DeepSpeed engine, ZeRO-3, no activation checkpointing.
json unpatched_linear_request(int gpus, const char* checkpointing, bool zero3_init) {
  json req = request("zero3", "hf_trainer", gpus);
  req["training"]["precision"] = "amp_fp16";
  req["training"]["seq_len"] = 512;
  req["training"]["activation_checkpointing"] = checkpointing;
  req["parallel"]["zero3_init"] = zero3_init;
  return req;
}

std::int64_t forward_end_weights(const json& r) {
  std::int64_t most = 0;
  for (const json& e : r["timeline"]) {
    if (e["phase"] == "forward") most = std::max(most, bytes(e, "weights_bytes"));
  }
  return most;
}

}  // namespace

TEST_CASE("DeepSpeed ZeRO-3 on a model built outside zero.Init holds every block's gathered weights until its backward",
          "[deepspeed][zero]") {
  // Llama-3.1-8B blocks: 32 x 218.1 M parameters, gathered in fp16 on 8 ranks.
  constexpr double kBlockParams = 218'112'000.0;
  const json held = result_of(unpatched_linear_request(8, "none", false));
  const json patched = result_of(unpatched_linear_request(8, "none", true));
  CHECK(held["parallel"]["behaviour"]["zero3_autograd_holds_gathered"] == true);
  CHECK(patched["parallel"]["behaviour"]["zero3_autograd_holds_gathered"] == false);
  // At the top block's forward all 32 blocks are gathered, not the computing one and its prefetch.
  const double extra = static_cast<double>(forward_end_weights(held) - forward_end_weights(patched));
  CHECK(extra > 30 * 2 * kBlockParams);
  CHECK(extra < 33 * 2 * kBlockParams);
  CHECK(bytes(held, "peak_active_bytes") > bytes(patched, "peak_active_bytes") + 10'000'000'000LL);
  // One rank: the gathered parameter is the partition itself; full checkpointing: the forward saves
  // no weight views. Neither changes.
  CHECK(bytes(result_of(unpatched_linear_request(1, "none", false)), "peak_active_bytes") ==
        bytes(result_of(unpatched_linear_request(1, "none", true)), "peak_active_bytes"));
  CHECK(bytes(result_of(unpatched_linear_request(8, "full", false)), "peak_active_bytes") ==
        bytes(result_of(unpatched_linear_request(8, "full", true)), "peak_active_bytes"));
}

TEST_CASE("parallel.zero3_init is DeepSpeed's", "[deepspeed][zero]") {
  json req = unpatched_linear_request(8, "none", false);
  req["training"]["framework"] = "torchtune";
  req["parallel"].erase("backend");
  const json out = json::parse(memfit::api::estimate(req.dump()));
  REQUIRE(out["ok"] == false);
  CHECK(out["error"]["code"] == "invalid_value");
  CHECK(out["error"]["path"] == "/parallel/zero3_init");
}

TEST_CASE("DeepSpeed ZeRO-3 on a model built outside zero.Init: the held blocks stay in the allgather stream's pool",
          "[deepspeed][zero][reserved]") {
  // Llama-3.1-8B blocks: 218.1 M parameters, gathered in fp16 on the allgather stream (v0.14.2
  // partitioned_param_coordinator.py). The compute stream cannot reuse them once they are released,
  // so what it allocates in the step (its peak over 16 tokens) adds to them in reserved.
  constexpr std::int64_t kBlockBytes = 218'112'000LL * 2;
  json held_req = unpatched_linear_request(8, "none", false), patched_req = unpatched_linear_request(8, "none", true);
  held_req["training"]["seq_len"] = patched_req["training"]["seq_len"] = 16;
  const json held = result_of(held_req), patched = result_of(patched_req);
  CHECK(bytes(held, "peak_reserved_bytes") > bytes(held, "peak_allocated_bytes") + 8 * kBlockBytes);
  CHECK(bytes(patched, "peak_reserved_bytes") < bytes(patched, "peak_allocated_bytes") + 5 * kBlockBytes);
}

namespace {

// Llama-3.1-8B as the gpjt/fine-tune-2024-04 ZeRO-2 runs train it: HF Trainer on the DeepSpeed
// engine, fp16, the optimizer offloaded to the CPU, full checkpointing, one short sequence.
json offload_request(const char* framework_version, int gpus) {
  json req = request("zero2", "hf_trainer", gpus);
  req["training"]["precision"] = "amp_fp16";
  req["training"]["offload"] = "optimizer";
  req["training"]["seq_len"] = 16;
  if (framework_version[0] != '\0') req["training"]["framework_version"] = framework_version;
  return req;
}

const json& event(const json& r, const char* label) {
  for (const json& e : r["timeline"]) {
    if (e["label"] == label) return e;
  }
  FAIL("no timeline event " << label);
  return r;
}

constexpr std::int64_t kVocabTimesHidden = 128'256LL * 4096;  // Llama-3.1-8B's embedding and output layer

}  // namespace

TEST_CASE("DeepSpeed ZeRO-2 with the optimizer offloaded keeps no gradient partition on the device",
          "[deepspeed][zero][offload]") {
  for (const int gpus : {1, 8}) {
    const json r = result_of(offload_request("", gpus));
    CHECK(r["parallel"]["behaviour"]["zero_offload_grads_on_host"] == true);
    // temp_grad_buffer_for_gpu_offload: the largest parameter (the embedding table) in fp16, from engine
    // init, whatever the partition's size.
    CHECK(bytes(r["states"], "gradients_bytes") == 2 * kVocabTimesHidden);
    CHECK(bytes(event(r, "embedding"), "gradients_bytes") == 2 * kVocabTimesHidden);
  }
}

TEST_CASE("DeepSpeed ZeRO-2 offload checks each gradient as it is offloaded, by version",
          "[deepspeed][zero][offload]") {
  // 2024-01 .. 2026-07 (v0.13.5 .. v0.19.5): an fp32 copy, three masks and an fp32 cast, 11 bytes an
  // element of the whole gradient; before and after, the fp64 copy the norm is taken of, 8.
  struct Case { const char* version; std::int64_t per_element; };
  for (const Case c : {Case{"2023-12", 8}, Case{"2024-04", 11}, Case{"2026-07", 11}, Case{"2026-08", 8}, Case{"", 8}}) {
    const json r = result_of(offload_request(c.version, 8));
    CHECK(r["parallel"]["behaviour"]["zero_offload_grad_check_bytes_per_element"] == c.per_element);
    // The output layer's fp16 gradient (larger than the 5e8-element bucket: a tensor of its own) and its check.
    CHECK(bytes(event(r, "output layer backward"), "temporaries_bytes") == (2 + c.per_element) * kVocabTimesHidden);
    // The embedding's gradient and its check, beside the reduce bucket still allocated.
    const json& embedding = event(r, "embedding backward");
    CHECK(bytes(embedding, "temporaries_bytes") == (2 + c.per_element) * kVocabTimesHidden);
    CHECK(bytes(embedding, "communication_bytes") >= 1'000'000'000LL);
  }
}

TEST_CASE("DeepSpeed ZeRO-1/2's reduce bucket is allocated before the loss backward", "[deepspeed][zero]") {
  const json r = result_of(request("zero2", "hf_trainer", 8));
  CHECK(bytes(event(r, "loss backward"), "communication_bytes") -
            bytes(event(r, "logits and cross-entropy"), "communication_bytes") ==
        1'000'000'000LL);
  // ZeRO-3's bucket lives from engine init: no step at the loss backward.
  const json z3 = result_of(request("zero3", "hf_trainer", 8));
  CHECK(bytes(event(z3, "loss backward"), "communication_bytes") ==
        bytes(event(z3, "logits and cross-entropy"), "communication_bytes"));
}
