// FSDP2's root unit (embeddings, final norm, head) reduce-scatters its gradients together at the
// end of backward: the head's unsharded gradient waits until then, and the group's reduce-scatter
// input is allocated beside the unsharded gradients (memory/timeline.cpp, "root reduce-scatter").
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "api/api.h"

using nlohmann::json;

namespace {

constexpr std::int64_t kVocab = 128256, kHidden = 4096;  // Llama 3.1 8B, untied embedding and head

json request(int fsdp_version, const char* method) {
  return {{"schema_version", 1},
          {"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
          {"training", {{"framework", "transformers_loop"}, {"method", method}, {"precision", "bf16"},
                        {"micro_batch", 1}, {"seq_len", 1024}}},
          {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 8}}},
          {"parallel", {{"sharding", "zero3"}, {"fsdp_version", fsdp_version}}}};
}

json result_of(const json& req) {
  json out = json::parse(memfit::api::estimate(req.dump()));
  REQUIRE(out["ok"] == true);
  return out["result"];
}

const json* event(const json& result, const std::string& label) {
  for (const json& e : result["timeline"]) {
    if (e["label"] == label) return &e;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("FSDP2: the root's reduce-scatter input beside its unsharded gradients at the end of backward", "[fsdp2]") {
  const json v2 = result_of(request(2, "full"));
  const json* rs = event(v2, "root reduce-scatter");
  REQUIRE(rs != nullptr);
  const std::int64_t table_bf16 = kVocab * kHidden * 2;
  // The embedding's unsharded gradient and the group's input (embedding, head, final norm) in bf16.
  CHECK((*rs)["temporaries_bytes"].get<std::int64_t>() == table_bf16 + (2 * table_bf16 + kHidden * 2));
  // The head's unsharded gradient waits from the output layer's backward to the end.
  const json* head = event(v2, "output layer backward");
  REQUIRE(head != nullptr);
  CHECK((*head)["gradients_bytes"].get<std::int64_t>() >= table_bf16);

  // ... and at the embedding's backward, beside the last block's reduce-scatter input; the root
  // reshards (its gathered embedding and head) before its own reduce-scatter.
  const json* embedding = event(v2, "embedding backward");
  REQUIRE(embedding != nullptr);
  CHECK((*embedding)["gradients_bytes"].get<std::int64_t>() >= table_bf16);
  CHECK((*embedding)["communication_bytes"].get<std::int64_t>() > 0);
  CHECK((*embedding)["weights_bytes"].get<std::int64_t>() - (*rs)["weights_bytes"].get<std::int64_t>() ==
        2 * table_bf16 + kHidden * 2);

  const json v1 = result_of(request(1, "full"));
  CHECK(event(v1, "root reduce-scatter") == nullptr);
  CHECK(v2["peak_allocated_bytes"].get<std::int64_t>() > v1["peak_allocated_bytes"].get<std::int64_t>());
}

TEST_CASE("FSDP2 with a frozen root (LoRA): nothing waits and nothing is reduced there", "[fsdp2]") {
  const json lora = result_of(request(2, "lora"));
  const json* rs = event(lora, "root reduce-scatter");
  REQUIRE(rs != nullptr);
  CHECK((*rs)["temporaries_bytes"].get<std::int64_t>() == 0);
}

TEST_CASE("FSDP2: the root's pre-backward prefetches the top block from the loss backward on", "[fsdp2]") {
  // torch _fully_shard/_fsdp_param_group.py pre_backward -> _backward_prefetch; a transformers
  // model given labels returns the loss, so the hook fires when the backward starts.
  constexpr std::int64_t kMlp = 14336, kKv = 1024;
  const std::int64_t block_bf16 = 2 * (2 * kHidden * kHidden + 2 * kHidden * kKv + 3 * kHidden * kMlp + 2 * kHidden);
  const auto comm = [](const json& r, const char* label) {
    const json* e = event(r, label);
    REQUIRE(e != nullptr);
    return (*e)["communication_bytes"].get<std::int64_t>();
  };
  const json v2 = result_of(request(2, "full"));
  const std::int64_t prefetched = comm(v2, "loss backward") - comm(v2, "logits and cross-entropy");
  CHECK(prefetched >= block_bf16);
  CHECK(prefetched <= block_bf16 + 8 * 512);  // shards padded to the world size
  CHECK(comm(v2, "output layer backward") - comm(v2, "logits and cross-entropy") == prefetched);

  const json v1 = result_of(request(1, "full"));
  CHECK(comm(v1, "loss backward") == comm(v1, "logits and cross-entropy"));
}
