// The Axolotl and LLaMA-Factory profiles (src/frameworks/axolotl/profile.cpp,
// llamafactory/profile.cpp): their defaults as a request resolves them, the method-dependent
// precision, the dated cutoff_len, and Axolotl's fp32 embeddings in the estimate (weights, and the
// fp32 residual stream they start).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "frameworks/capabilities.h"
#include "../test_support.h"
#include "frameworks/profile.h"

using nlohmann::json;
using namespace memfit;
using namespace memfit_test;

namespace {

json result_of(const json& req) {
  const json r = estimate_json(req);
  INFO(r.dump().substr(0, 400));
  REQUIRE(r["ok"] == true);
  return r["result"];
}

std::int64_t states(const json& r, const char* what) { return r["states"][what].get<std::int64_t>(); }

}  // namespace

TEST_CASE("axolotl: the schema's defaults", "[frameworks][axolotl]") {
  const json r = result_of(framework_request("axolotl"));
  const json& t = r["training"];
  CHECK(t["method"] == "full");
  CHECK(t["precision"] == "bf16");
  CHECK(t["optimizer_impl"] == "fused");
  CHECK(t["activation_checkpointing"] == "none");
  CHECK(t["seq_len"] == 512);
  CHECK(t["packed"] == false);
  CHECK(r["framework"]["embeddings_fp32"] == true);
}

TEST_CASE("axolotl: fp32 embeddings and lm_head cost their fp32 weights, gradients and AdamW states", "[frameworks][axolotl]") {
  // Qwen3-4B ties its embeddings; Llama-3.1-8B has both: 2 x 128256 x 4096 parameters.
  json ax = framework_request("axolotl", "meta-llama/Llama-3.1-8B");
  json hf = framework_request("hf_trainer", "meta-llama/Llama-3.1-8B");
  for (json* req : {&ax, &hf}) (*req)["training"].update({{"seq_len", 512}, {"activation_checkpointing", "none"}});
  const json a = result_of(ax), h = result_of(hf);
  const std::int64_t upcast = 2LL * 128256 * 4096;
  CHECK(states(a, "weights_bytes") - states(h, "weights_bytes") == 2 * upcast);
  CHECK(states(a, "gradients_bytes") - states(h, "gradients_bytes") == 2 * upcast);
  CHECK(states(a, "optimizer_states_bytes") - states(h, "optimizer_states_bytes") == 4 * upcast);
  // The residual stream leaving an fp32 embedding is fp32: more activation bytes than the bf16 run.
  CHECK(a["activations_peak_bytes"].get<std::int64_t>() > h["activations_peak_bytes"].get<std::int64_t>());
}

TEST_CASE("axolotl: FSDP keeps the embeddings 16-bit, the DeepSpeed engine does not", "[frameworks][axolotl]") {
  json req = framework_request("axolotl", "meta-llama/Llama-3.1-8B");
  req["cluster"]["gpus"] = 8;
  req["parallel"] = {{"sharding", "zero3"}};
  CHECK(result_of(req)["framework"]["embeddings_fp32"] == false);
  req["parallel"]["backend"] = "deepspeed";
  CHECK(result_of(req)["framework"]["embeddings_fp32"] == true);
  req["parallel"] = {{"sharding", "zero1"}};
  CHECK(result_of(req)["framework"]["embeddings_fp32"] == true);
}

TEST_CASE("llamafactory: LoRA r8 on all linears with checkpointing; full and freeze train fp32 weights", "[frameworks][llamafactory]") {
  const json t = result_of(framework_request("llamafactory"))["training"];
  CHECK(t["method"] == "lora");
  CHECK(t["lora"]["rank"] == 8);
  CHECK(t["lora"]["targets"] == json::array({"all-linear"}));
  CHECK(t["activation_checkpointing"] == "full");
  CHECK(t["seq_len"] == 2048);
  CHECK(t["precision"] == "bf16");
  for (const char* method : {"full", "freeze"}) {
    json req = framework_request("llamafactory");
    req["training"]["method"] = method;
    CHECK(result_of(req)["training"]["precision"] == "amp_bf16");
    req["training"]["precision"] = "bf16";  // pure_bf16: the request's precision wins
    CHECK(result_of(req)["training"]["precision"] == "bf16");
  }
}

TEST_CASE("llamafactory: cutoff_len was 1024 before 2024-11", "[frameworks][llamafactory]") {
  json req = framework_request("llamafactory");
  req["training"]["framework_version"] = "2024-11";
  CHECK(result_of(req)["training"]["seq_len"] == 2048);
  req["training"]["framework_version"] = "2024-10";
  CHECK(result_of(req)["training"]["seq_len"] == 1024);
}

TEST_CASE("axolotl and llamafactory run on the DeepSpeed engine and train the methods their loaders build", "[frameworks]") {
  for (const char* fw : {"axolotl", "llamafactory"}) {
    json req = framework_request(fw);
    req["training"]["method"] = "full";
    req["cluster"]["gpus"] = 8;
    req["parallel"] = {{"backend", "deepspeed"}, {"sharding", "zero2"}};
    CHECK(result_of(req)["training"]["precision"] != nullptr);
  }
  CHECK_FALSE(framework_capabilities(Framework::kAxolotl).methods[static_cast<int>(Method::kFreeze)]);
  CHECK(framework_capabilities(Framework::kLlamaFactory).methods[static_cast<int>(Method::kFreeze)]);
  CHECK_FALSE(framework_capabilities(Framework::kLlamaFactory).methods[static_cast<int>(Method::kIa3)]);
}

TEST_CASE("axolotl: the upcast goes back with an adapter, flash attention or CCE, and did not exist before #478", "[frameworks][axolotl]") {
  auto framework = [](json training) {
    json req = framework_request("axolotl", "meta-llama/Llama-3.1-8B");
    req["training"].update(training);
    return result_of(req)["framework"];
  };
  CHECK(framework({{"attention", "sdpa"}})["embeddings_fp32"] == true);
  CHECK(framework({{"attention", "flash"}})["embeddings_fp32"] == false);
  CHECK(framework({{"loss", "cut_ce"}})["embeddings_fp32"] == false);
  // QLoRA: prepare_model_for_kbit_training's fp32 norms and embeddings are converted back.
  const json qlora = framework({{"method", "qlora"}});
  CHECK(qlora["embeddings_fp32"] == false);
  CHECK(qlora["kbit_prep_fp32"] == false);
  // 2023-08 (before #478): no upcast for a full fine-tune; a k-bit base keeps fp32 params without flash attention.
  CHECK(framework({{"framework_version", "2023-08"}})["embeddings_fp32"] == false);
  CHECK(framework({{"framework_version", "2023-08"}, {"method", "qlora"}})["kbit_prep_fp32"] == true);
  CHECK(framework({{"framework_version", "2023-08"}, {"method", "qlora"}, {"attention", "flash"}})["kbit_prep_fp32"] == false);
}
