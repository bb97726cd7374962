// GaLore, APOLLO and Adam-mini: their state layouts (src/training/parameters.cpp) and their
// optimizer-state bytes in an estimate, with the request's projection settings and their errors.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <iterator>

#include "api/api.h"
#include "training/parameters.h"

using nlohmann::json;
using namespace memfit;

namespace {

json estimate(const json& request) { return json::parse(api::estimate(request.dump())); }

// A small Llama whose every tensor is known: 2 layers, h 256, MLP 688, 4 heads (2 KV), vocab 1024.
json request(const char* optimizer, const char* precision = "bf16") {
  const json config = {{"model_type", "llama"}, {"hidden_size", 256}, {"intermediate_size", 688}, {"num_hidden_layers", 2},
                       {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"vocab_size", 1024},
                       {"max_position_embeddings", 512}, {"tie_word_embeddings", false}};
  return json{{"model", {{"config", config}}},
              {"training", {{"framework", "other"}, {"method", "full"}, {"optimizer", optimizer}, {"precision", precision}, {"seq_len", 64}}},
              {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}}},
              {"options", {{"timeline", false}, {"max_micro_batch", false}}}};
}

std::int64_t optimizer_states(const json& req) {
  const json r = estimate(req);
  INFO(r.dump().substr(0, 400));
  REQUIRE(r["ok"] == true);
  return r["result"]["states"]["optimizer_states_bytes"].get<std::int64_t>();
}

// The small Llama's matrices (rows x cols) per layer and its other parameters.
constexpr std::int64_t kLayers = 2, kH = 256, kI = 688, kKv = 128, kVocab = 1024;
const std::pair<std::int64_t, std::int64_t> kMatrices[] = {{kH, kH}, {kKv, kH}, {kKv, kH}, {kH, kH}, {kI, kH}, {kI, kH}, {kH, kI}};
constexpr std::int64_t kOther = 2 * kVocab * kH + (2 * kLayers + 1) * kH;  // embeddings, lm_head, norms

}  // namespace

TEST_CASE("GaLore keeps rank x longer side moments and a rank x shorter side projector", "[training][optimizers]") {
  // Zhao et al. 2024 §4.2: an m x n weight (m <= n) keeps mr + 2nr.
  CHECK(projected_state_elems(128, 4096, 14336) == 128 * (2 * 14336 + 4096));
  CHECK(projected_state_elems(128, 14336, 4096) == 128 * (2 * 14336 + 4096));
  // svd(full_matrices=False) gives at most the shorter side's vectors: the rank is capped there.
  CHECK(projected_state_elems(512, 128, 256) == 128 * (2 * 256 + 128));
  CHECK(projected_state_elems(1, 4096, 4096) == 3 * 4096);
}

TEST_CASE("projected optimizers in an estimate: AdamW on the rest, projected states on the block matrices", "[training][optimizers]") {
  for (const char* precision : {"bf16", "fp32"}) {
    const std::int64_t e = std::string(precision) == "bf16" ? 2 : 4;
    for (std::int64_t rank : {8, 32, 512}) {
      json req = request("galore_adamw", precision);
      req["training"]["projection"] = {{"rank", rank}};
      std::int64_t low = 0;
      for (const auto& [rows, cols] : kMatrices) low += projected_state_elems(rank, rows, cols);
      INFO(precision << " rank " << rank);
      CHECK(optimizer_states(req) == (2 * kOther + kLayers * low) * e);
      // APOLLO also keeps each matrix's scaled-gradient norm, one element.
      req["training"]["optimizer"] = "apollo_adamw";
      CHECK(optimizer_states(req) == (2 * kOther + kLayers * (low + 7)) * e);
    }
  }
  std::int64_t mini = 0;
  for (const auto& [rows, cols] : kMatrices) mini += projected_state_elems(1, rows, cols) + 1;
  CHECK(optimizer_states(request("apollo_mini", "fp32")) == (2 * kOther + kLayers * mini) * 4);
}

TEST_CASE("Adam-mini keeps one first moment per parameter and one second moment per row or head", "[training][optimizers]") {
  // Embedding and head rows, one per norm; q and k one per head (4 query, 2 key-value heads), the
  // other matrices one per row.
  std::int64_t params = kOther, rows = 2 * kVocab + 2 * kLayers + 1 + kLayers * (4 + 2);
  for (const auto& [r, c] : kMatrices) params += kLayers * r * c;
  for (std::size_t i = 2; i < std::size(kMatrices); ++i) rows += kLayers * kMatrices[i].first;
  CHECK(optimizer_states(request("adam_mini", "fp32")) == (params + rows) * 4);
  CHECK(optimizer_states(request("adam_mini", "bf16")) == (params + rows) * 2);
}

TEST_CASE("projection settings: validated with their field's pointer", "[training][optimizers][errors]") {
  auto error = [](const json& req) {
    const json r = estimate(req);
    REQUIRE(r["ok"] == false);
    return std::make_pair(r["error"]["code"].get<std::string>(), r["error"]["path"].get<std::string>());
  };
  json req = request("adamw");
  req["training"]["projection"] = {{"rank", 8}};
  CHECK(error(req) == std::make_pair(std::string("invalid_value"), std::string("/training/projection")));
  req["training"]["optimizer"] = "galore_adamw";
  req["training"]["projection"] = {{"rank", 0}};
  CHECK(error(req).second == "/training/projection/rank");
  req["training"]["projection"] = {{"update_gap", 0}};
  CHECK(error(req).second == "/training/projection/update_gap");
  req["training"]["projection"] = {{"rnk", 8}};
  CHECK(error(req).second == "/training/projection/rnk");
  req["training"]["projection"] = 8;
  CHECK(error(req) == std::make_pair(std::string("invalid_type"), std::string("/training/projection")));
  req["training"]["optimizer"] = "apollo_mini";
  req["training"]["projection"] = {{"rank", 4}};
  CHECK(error(req).second == "/training/projection/rank");
  json lora = request("galore_adamw");
  lora["training"]["method"] = "lora";
  CHECK(error(lora) == std::make_pair(std::string("invalid_value"), std::string("/training/optimizer")));
  json ok = request("galore_adamw");
  ok["training"]["projection"] = {{"rank", 64}, {"update_gap", 50}};
  const json r = estimate(ok);
  REQUIRE(r["ok"] == true);
  CHECK(r["result"]["training"]["projection"] == json({{"rank", 64}, {"update_gap", 50}}));
}
