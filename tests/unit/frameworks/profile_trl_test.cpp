// The TRL and Unsloth profiles (src/frameworks/trl/profile.cpp, unsloth/profile.cpp): their
// defaults as a request resolves them, one test per dated behaviour, and Liger's kernels as the
// estimate applies them.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "api/api.h"
#include "frameworks/profile.h"

using nlohmann::json;
using namespace memfit;

namespace {

json estimate(const json& request) { return json::parse(api::estimate(request.dump())); }

json request(const char* framework, const char* model = "Qwen/Qwen3-4B") {
  return json{{"model", {{"preset", model}}},
              {"training", {{"framework", framework}}},
              {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}}},
              {"options", {{"timeline", false}, {"max_micro_batch", false}}}};
}

json training_of(const json& req) {
  const json r = estimate(req);
  INFO(r.dump().substr(0, 400));
  REQUIRE(r["ok"] == true);
  return r["result"]["training"];
}

}  // namespace

TEST_CASE("trl: SFTConfig's defaults", "[frameworks][trl]") {
  const json t = training_of(request("trl"));
  CHECK(t["loss"] == "trl_fused_head");
  CHECK(t["activation_checkpointing"] == "full");
  CHECK(t["precision"] == "amp_bf16");
  CHECK(t["seq_len"] == 1024);
  CHECK(t["packed"] == false);
  CHECK(t["optimizer_impl"] == "fused");
  CHECK_FALSE(t.contains("liger_kernels"));
}

TEST_CASE("trl: each dated default applies before its month only", "[frameworks][trl]") {
  json req = request("trl");
  req["training"]["framework_version"] = "2026-10";
  CHECK(training_of(req)["loss"] == "trl_fused_head");
  req["training"]["framework_version"] = "2026-09";  // before trl 1.15: chunked_nll
  CHECK(training_of(req)["loss"] == "chunked_nll");
  req["training"]["framework_version"] = "2026-06";
  CHECK(training_of(req)["loss"] == "chunked_nll");
  req["training"]["framework_version"] = "2026-05";  // before #5846: nll
  CHECK(training_of(req)["loss"] == "standard");
  req["training"]["framework_version"] = "2025-08";
  CHECK(training_of(req)["activation_checkpointing"] == "full");
  req["training"]["framework_version"] = "2025-07";  // before #3510
  CHECK(training_of(req)["activation_checkpointing"] == "none");
  CHECK(training_of(req)["precision"] == "amp_bf16");
  req["training"]["framework_version"] = "2025-05";  // before #3515: bf16 off, the fp32 model
  CHECK(training_of(req)["precision"] == "fp32");
  // A loss the request names is kept whatever the month.
  req["training"]["loss"] = "chunked_nll";
  CHECK(training_of(req)["loss"] == "chunked_nll");
}

TEST_CASE("trl: use_liger_kernel switches the loss to Liger's before the fused head and refuses chunked_nll", "[frameworks][trl]") {
  json req = request("trl");
  req["training"]["liger_kernels"] = true;
  // trl >= 1.15 turns Liger's fused_linear_cross_entropy off and keeps its own fused head.
  CHECK(training_of(req)["loss"] == "trl_fused_head");
  req["training"]["framework_version"] = "2026-09";
  const json t = training_of(req);
  CHECK(t["loss"] == "liger_flce");
  CHECK(t["liger_kernels"] == true);
  req["training"]["loss"] = "chunked_nll";
  const json r = estimate(req);
  REQUIRE(r["ok"] == false);
  CHECK(r["error"]["code"] == "invalid_value");
  CHECK(r["error"]["path"] == "/training/loss");
  req["training"]["liger_kernels"] = "yes";
  const json bad = estimate(req);
  REQUIRE(bad["ok"] == false);
  CHECK(bad["error"]["path"] == "/training/liger_kernels");
}

TEST_CASE("trl runs on the DeepSpeed engine like the HF Trainer it is", "[frameworks][trl]") {
  json req = request("trl");
  req["cluster"]["gpus"] = 8;
  req["parallel"] = {{"dp", 8}, {"sharding", "zero2"}, {"backend", "deepspeed"}};
  const json r = estimate(req);
  INFO(r.dump().substr(0, 300));
  REQUIRE(r["ok"] == true);
  CHECK(r["result"]["training"]["amp_weights"] == "master_in_optimizer");
  CHECK(runs_deepspeed_engine(Framework::kTrl));
  CHECK_FALSE(runs_deepspeed_engine(Framework::kUnsloth));
}

TEST_CASE("unsloth: 4-bit QLoRA, offloaded checkpointing, its fused CE, its TRL config defaults", "[frameworks][unsloth]") {
  const json t = training_of(request("unsloth"));
  CHECK(t["method"] == "qlora");
  CHECK(t["base_quant"] == "nf4");
  CHECK(t["lora"]["rank"] == 16);
  CHECK(t["lora"]["targets"] == json::array({"q", "k", "v", "o", "gate", "up", "down"}));
  CHECK(t["lora"]["dropout"] == 0.0);
  CHECK(t["activation_checkpointing"] == "full");
  CHECK(t["offload"] == "activations");
  CHECK(t["loss"] == "unsloth_fused_ce");
  CHECK(t["optimizer"] == "adamw_8bit");
  CHECK(t["micro_batch"] == 4);
  CHECK(t["grad_accum"] == 2);
  CHECK(t["seq_len"] == 2048);
  json req = request("unsloth");
  // full_finetuning=True: the 4-bit default does not stand in the way.
  json full = request("unsloth");
  full["training"]["method"] = "full";
  CHECK(training_of(full)["base_quant"] == "none");
  req["training"]["framework_version"] = "2025-07";  // before unsloth_fused_ce_loss
  CHECK(training_of(req)["loss"] == "standard");
  CHECK(estimate(req)["result"]["framework"]["logits_upcast"] == false);
  req["training"]["framework_version"] = "2025-08";
  CHECK(training_of(req)["loss"] == "unsloth_fused_ce");
  CHECK(training_of(req)["activation_checkpointing"] == "full");  // TRL's dated defaults do not reach it
}

TEST_CASE("a logits-free loss sits far below torchtune's chunked loss at long sequences", "[frameworks][loss]") {
  json req = request("hf_trainer");
  req["training"]["seq_len"] = 16384;
  req["training"]["activation_checkpointing"] = "full";
  auto logits_loss_at = [&](const char* loss) {
    req["training"]["loss"] = loss;
    req["options"]["timeline"] = true;
    const json r = estimate(req);
    REQUIRE(r["ok"] == true);
    long long most = 0;
    for (const json& ev : r["result"]["timeline"]) most = std::max(most, ev["logits_loss_bytes"].get<long long>());
    return most;
  };
  const long long chunked = logits_loss_at("chunked"), standard = logits_loss_at("standard");
  // torchtune keeps every chunk's logits (bf16) and log-probs (fp32): at least T x V x 6.
  const long long logits_bf16 = 16384LL * 151936 * 2;
  CHECK(chunked >= 3 * logits_bf16);
  CHECK(standard > chunked);
  for (const char* k : {"chunked_nll", "trl_fused_head", "liger_flce", "cut_ce", "unsloth_fused_ce"}) {
    INFO(k);
    const long long b = logits_loss_at(k);
    CHECK(b > 0);
    CHECK(b < chunked);
  }
  // With the head frozen (LoRA) no V x H gradient is built: Liger and CCE stay under one bf16 logits tensor.
  req["training"]["method"] = "lora";
  for (const char* k : {"liger_flce", "cut_ce"}) {
    INFO(k);
    CHECK(logits_loss_at(k) < logits_bf16 / 2);
  }
}

TEST_CASE("Liger's RMSNorm and SwiGLU save less, by exactly the dropped tensors", "[frameworks][liger]") {
  // Llama-3.1-8B, bf16, no checkpointing: per layer and token Liger drops HF RMSNorm's fp32 copy
  // (4h, two norms) and SwiGLU's activation output (2f); no q/k norms.
  json req = request("hf_trainer", "meta-llama/Llama-3.1-8B");
  req["training"]["seq_len"] = 2048;
  req["training"]["loss"] = "standard";
  const json off = estimate(req);
  req["training"]["liger_kernels"] = true;
  req["training"]["loss"] = "standard";
  const json on = estimate(req);
  REQUIRE(off["ok"] == true);
  REQUIRE(on["ok"] == true);
  const long long h = 4096, f = 14336, layers = 32, tokens = 2048;
  CHECK(off["result"]["activations_peak_bytes"].get<long long>() - on["result"]["activations_peak_bytes"].get<long long>() ==
        layers * tokens * (2 * 4 * h + 2 * f));
}
