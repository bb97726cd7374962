// LitGPT's single-device fine-tuning loops (litgpt v0.5.13 finetune/full.py, lora.py) through
// Fabric's bf16-true plugin: an output layer of its own, fp32 logits handed to the loss and held
// by the loop until the next forward returns, the whole shifted logits copied at micro-batch > 1
// by full.py (memory/timeline.cpp; docs/oracle.md, mechanisms of the litgpt runner).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "api/api.h"

using nlohmann::json;

namespace {

constexpr std::int64_t kVocab = 128256, kHidden = 2048;  // Llama 3.2 1B, tied in its config

json request(const char* framework, const char* method, int micro_batch, int seq_len) {
  return {{"schema_version", 1},
          {"model", {{"preset", "meta-llama/Llama-3.2-1B-Instruct"}}},
          {"training", {{"framework", framework}, {"method", method}, {"precision", "bf16"},
                        {"micro_batch", micro_batch}, {"seq_len", seq_len}}},
          {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 1}}}};
}

json result_of(const json& req) {
  json out = json::parse(memfit::api::estimate(req.dump()));
  REQUIRE(out["ok"] == true);
  return out["result"];
}

const json& event(const json& result, const std::string& label) {
  for (const json& e : result["timeline"]) {
    if (e["label"] == label) return e;
  }
  FAIL("no timeline event " << label);
  static const json none;
  return none;
}

std::int64_t bytes(const json& e, const char* field) { return e[field].get<std::int64_t>(); }

}  // namespace

TEST_CASE("LitGPT: the output layer is a weight of its own even where the config ties it", "[litgpt]") {
  const json litgpt = result_of(request("litgpt", "full", 1, 512));
  const json loop = result_of(request("transformers_loop", "full", 1, 512));
  // model.py GPT builds lm_head beside transformer.wte: one more [vocabulary, hidden] bf16 table.
  CHECK(bytes(litgpt["states"], "weights_bytes") - bytes(loop["states"], "weights_bytes") == kVocab * kHidden * 2);
}

TEST_CASE("LitGPT: Fabric's bf16-true cast gives the loss fp32 logits, held until the next forward returns",
          "[litgpt]") {
  const std::int64_t tokens = 512, logits_bf16 = tokens * kVocab * 2, logits_fp32 = tokens * kVocab * 4;
  const json lora = result_of(request("litgpt", "lora", 1, 512));
  // convert_output: the bf16 chunks beside their fp32 copies, and the previous step's fp32 logits.
  CHECK(bytes(event(lora, "output cast to fp32"), "logits_loss_bytes") == logits_fp32 + logits_bf16 + logits_fp32);
  // The loss after the loop rebinds `logits`: the fp32 logits and each chunk's saved log-probs.
  CHECK(bytes(event(lora, "logits and cross-entropy"), "logits_loss_bytes") == 2 * logits_fp32);
  const json full = result_of(request("litgpt", "full", 1, 512));
  CHECK(bytes(event(full, "optimizer step"), "logits_loss_bytes") == logits_fp32);
}

TEST_CASE("LitGPT: full.py copies the whole shifted logits at micro-batch 2, lora.py shifts one chunk", "[litgpt]") {
  const std::int64_t tokens = 2 * 512, logits_fp32 = tokens * kVocab * 4;
  const json full = result_of(request("litgpt", "full", 2, 512));
  CHECK(bytes(event(full, "logits and cross-entropy"), "logits_loss_bytes") == 3 * logits_fp32);
  const json lora = result_of(request("litgpt", "lora", 2, 512));
  CHECK(bytes(event(lora, "logits and cross-entropy"), "logits_loss_bytes") == 2 * logits_fp32);
}

TEST_CASE("LitGPT adapter v2: the head's AdapterV2Linear keeps its 16-bit output until the head's backward",
          "[litgpt]") {
  const std::int64_t logits_bf16 = 512 * kVocab * 2;
  const json v1 = result_of(request("litgpt", "adapter", 1, 512));
  const json v2 = result_of(request("litgpt", "adapter_v2", 1, 512));
  for (const char* label : {"output cast to fp32", "logits and cross-entropy", "loss backward", "output layer backward"}) {
    CHECK(bytes(event(v2, label), "logits_loss_bytes") - bytes(event(v1, label), "logits_loss_bytes") == logits_bf16);
  }
  CHECK(bytes(event(v2, "optimizer step"), "logits_loss_bytes") == bytes(event(v1, "optimizer step"), "logits_loss_bytes"));
}
