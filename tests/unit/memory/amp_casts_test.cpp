// Autocast's 16-bit weight casts under amp_bf16 (memory/model_states.cpp, memory/timeline.cpp): a tied
// output layer casts the embedding table like an untied head, and under full checkpointing the decoder
// layers' casts leave with the forward's autocast cache; each recomputed layer casts its own again.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "api/api.h"

using nlohmann::json;

namespace {

json request(const char* model, const char* precision, const char* checkpointing, const char* method = "lora") {
  json training = {{"framework", "transformers_loop"}, {"method", method}, {"precision", precision},
                   {"activation_checkpointing", checkpointing}, {"micro_batch", 1}, {"seq_len", 512}};
  if (std::string(method) == "lora") training["lora"] = {{"rank", 16}, {"targets", "all-linear"}};
  return {{"schema_version", 1},
          {"model", {{"preset", model}}},
          {"training", training},
          {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 1}}}};
}

json timeline(const json& req) {
  json out = json::parse(memfit::api::estimate(req.dump()));
  REQUIRE(out["ok"] == true);
  return out["result"]["timeline"];
}

std::int64_t temporaries_at(const json& events, const std::string& label) {
  for (const json& e : events) {
    if (e["label"] == label) return e["temporaries_bytes"].get<std::int64_t>();
  }
  FAIL("no event " << label);
  return 0;
}

}  // namespace

TEST_CASE("amp: a tied output layer's F.linear casts the fp32 table to bf16 and saves the cast", "[amp]") {
  constexpr std::int64_t kTable = 128256LL * 2048;  // Llama 3.2 1B: tied embedding and head
  const json amp = timeline(request("meta-llama/Llama-3.2-1B-Instruct", "amp_bf16", "none"));
  const json bf16 = timeline(request("meta-llama/Llama-3.2-1B-Instruct", "bf16", "none"));
  CHECK(temporaries_at(bf16, "loss backward") < kTable);
  CHECK(temporaries_at(amp, "loss backward") - temporaries_at(bf16, "loss backward") >= kTable * 2);
}

TEST_CASE("amp: checkpointed layers' weight casts are freed with the forward's autocast cache", "[amp]") {
  constexpr std::int64_t kHead = 128256LL * 4096 * 2;  // Llama 3.1 8B: the untied head's bf16 cast
  // One decoder layer's linears (q, k, v, o, gate, up, down) in bf16.
  constexpr std::int64_t kLayer = (4096LL * 4096 * 2 + 2 * 4096LL * 1024 + 3 * 4096LL * 14336) * 2;
  const char* llama = "meta-llama/Llama-3.1-8B";
  SECTION("LoRA: frozen weights' casts are not cached, only saved") {
    const json none = timeline(request(llama, "amp_bf16", "none"));
    const json full = timeline(request(llama, "amp_bf16", "full"));
    const std::int64_t all = kHead + 32 * kLayer;
    CHECK(temporaries_at(none, "logits and cross-entropy") >= all);  // every layer's matmuls saved theirs
    CHECK(temporaries_at(none, "loss backward") >= all);
    // Checkpointed layers saved none; the head's (and the adapters', cached) remain.
    CHECK(temporaries_at(full, "logits and cross-entropy") >= kHead);
    CHECK(temporaries_at(full, "logits and cross-entropy") < kHead + kLayer / 10);
    CHECK(temporaries_at(full, "loss backward") == temporaries_at(full, "logits and cross-entropy"));
    CHECK(temporaries_at(full, "layer 31") >= kHead + kLayer);  // the recomputed layer casts again
    CHECK(temporaries_at(full, "layer 31") < kHead + 2 * kLayer);
  }
  SECTION("full fine-tuning: the cache holds every cast until the forward's autocast region exits") {
    const json none = timeline(request(llama, "amp_bf16", "none", "full"));
    const json full = timeline(request(llama, "amp_bf16", "full", "full"));
    CHECK(temporaries_at(full, "logits and cross-entropy") == temporaries_at(none, "logits and cross-entropy"));
    CHECK(temporaries_at(none, "loss backward") == kHead + 32 * kLayer);
    CHECK(temporaries_at(full, "loss backward") == kHead);
  }
}
