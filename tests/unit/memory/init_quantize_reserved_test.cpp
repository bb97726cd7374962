// A QLoRA base quantised on the GPU while the model is built (torchtune 2024-03 to 2024-06 with
// torchao 0.1): the quantisation transient's segments stay cached, a floor under the reserved
// counter of the training step (ModelStates::init_quantize_workspace_bytes, timeline.cpp).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "api/api.h"
#include "frameworks/profile.h"

using nlohmann::json;
using namespace memfit;

namespace {

json qlora(const char* version) {
  // llama2/7B_qlora_single_device.yaml @fef3ed10d: r8 on q, k, v, output_proj and the MLP, short batches.
  json r = {{"schema_version", 1},
            {"model", {{"preset", "meta-llama/Llama-2-7b-hf"}}},
            {"training", {{"framework", "torchtune"}, {"framework_version", version}, {"method", "qlora"},
                          {"lora", {{"rank", 8}, {"targets", {"q", "k", "v", "o", "gate", "up", "down"}}}},
                          {"micro_batch", 2}, {"seq_len", 256}}},
            {"cluster", {{"gpu", {{"preset", "A100-80GB"}}}, {"gpus", 1}}}};
  const json out = json::parse(api::estimate(r.dump()));
  REQUIRE(out["ok"] == true);
  return out["result"];
}

std::int64_t bytes(const json& j, const char* key) { return j[key].get<std::int64_t>(); }

}  // namespace

TEST_CASE("torchtune's QLoRA with torchao 0.1 quantises on the GPU: 68 bytes per parameter, dated", "[framework][torchtune]") {
  const FrameworkProfile& tt = framework_profile(Framework::kTorchtune);
  CHECK(framework_defaults(tt, 202403).nf4_quantize_at_init_bytes_per_param == 68);
  CHECK(framework_defaults(tt, 202405).nf4_quantize_at_init_bytes_per_param == 68);
  CHECK(framework_defaults(tt, 202406).nf4_quantize_at_init_bytes_per_param == 0);  // torchao 0.3: chunks
  CHECK(framework_defaults(tt, 202402).nf4_quantize_at_init_bytes_per_param == 0);  // before QLoRA (#478)
  CHECK(framework_defaults(tt, 0).nf4_quantize_at_init_bytes_per_param == 0);
}

TEST_CASE("the initialisation's quantisation transient stays reserved, not allocated", "[memory][torchtune]") {
  const json old = qlora("2024-05"), later = qlora("2024-06");
  // The step itself is the same code: the allocated peak (reset after initialisation) does not move.
  CHECK(bytes(old, "peak_allocated_bytes") == bytes(later, "peak_allocated_bytes"));
  // The reserved peak is at least the built weights and the largest base weight's transient:
  // 68 bytes per parameter of an 11008 x 4096 projection, beside the model.
  const std::int64_t transient = 68LL * 11008 * 4096;
  const std::int64_t weights = bytes(old["breakdown"], "weights_bytes");
  CHECK(bytes(old, "peak_reserved_bytes") >= weights + transient);
  CHECK(bytes(old, "peak_reserved_bytes") > bytes(later, "peak_reserved_bytes"));
  // A full fine-tune of that date quantises nothing.
  json full = {{"schema_version", 1},
               {"model", {{"preset", "meta-llama/Llama-2-7b-hf"}}},
               {"training", {{"framework", "torchtune"}, {"method", "full"}, {"micro_batch", 1}, {"seq_len", 256}}},
               {"cluster", {{"gpu", {{"preset", "A100-80GB"}}}, {"gpus", 1}}}};
  full["training"]["framework_version"] = "2024-05";
  const json a = json::parse(api::estimate(full.dump()))["result"];
  full["training"]["framework_version"] = "2024-06";
  const json b = json::parse(api::estimate(full.dump()))["result"];
  CHECK(bytes(a, "peak_reserved_bytes") == bytes(b, "peak_reserved_bytes"));
}
