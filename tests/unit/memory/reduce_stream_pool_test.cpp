// torch FSDP allocates each block's reduce-scatter output, which the sharded gradients are views or
// casts of, on the reduce-scatter stream, and the caching allocator serves a stream only from its
// own blocks: the gradients reserve a pool beside the compute stream's (memory/timeline.cpp note();
// measured on an H200: tests/validation/measured_h200_trainers, TG-01 and TG-05).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "api/api.h"

using nlohmann::json;

namespace {

json request(const char* backend, int gpus) {
  return {{"schema_version", 1},
          {"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
          {"training", {{"framework", "hf_trainer"}, {"method", "full"}, {"precision", "amp_bf16"}, {"micro_batch", 1},
                        {"seq_len", 4096}, {"activation_checkpointing", "full"}, {"expandable_segments", true}}},
          {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", gpus}}},
          {"parallel", {{"sharding", "zero3"}, {"backend", backend}}}};
}

json result_of(const json& req) {
  json out = json::parse(memfit::api::estimate(req.dump()));
  REQUIRE(out["ok"] == true);
  return out["result"];
}

std::int64_t above_allocated(const json& r) {
  return r["peak_reserved_bytes"].get<std::int64_t>() - r["peak_allocated_bytes"].get<std::int64_t>();
}

}  // namespace

TEST_CASE("torch FSDP: the sharded gradients reserve the reduce-scatter stream's pool", "[fsdp][allocator]") {
  for (const int gpus : {8, 16}) {
    const json fsdp = result_of(request("framework", gpus));
    REQUIRE(fsdp["parallel"]["behaviour"]["sharded_grads_on_reduce_stream"] == true);
    // The loss is the step's peak, after zero_grad freed the gradients: the compute stream's pool
    // holds that peak and the gradients' pool comes on top (expandable segments: nothing remapped).
    CHECK(fsdp["peak"]["label"].get<std::string>().rfind("loss", 0) == 0);
    const std::int64_t grads = fsdp["states"]["gradients_bytes"].get<std::int64_t>();
    CHECK(above_allocated(fsdp) >= grads);

    // DeepSpeed reduces into buffers of its own: no pool beside the compute stream's.
    const json ds = result_of(request("deepspeed", gpus));
    REQUIRE(ds["parallel"]["behaviour"]["sharded_grads_on_reduce_stream"] == false);
    CHECK(above_allocated(ds) < above_allocated(fsdp) - grads / 2);
  }
}

TEST_CASE("torch FSDP: the gradients' cached segments fill the GPU but never make it OOM", "[fsdp][allocator]") {
  // Llama 3.1 70B in pure bf16 on 8 x H100: the compute stream's peak fits, the gradients' free
  // segments beside it would not; the allocator releases them and retries before it fails.
  const json r = result_of({{"schema_version", 1},
                            {"model", {{"preset", "meta-llama/Llama-3.1-70B-Instruct"}}},
                            {"training", {{"framework", "hf_trainer"}, {"framework_version", "2026-01"}, {"method", "full"},
                                          {"precision", "bf16"}, {"micro_batch", 1}, {"seq_len", 1024},
                                          {"activation_checkpointing", "full"}}},
                            {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 8}}},
                            {"parallel", {{"sharding", "zero3"}}}});
  const std::int64_t memory = r["fit"]["gpu_memory_bytes"].get<std::int64_t>();
  const std::int64_t grads = r["states"]["gradients_bytes"].get<std::int64_t>();
  REQUIRE(r["peak_allocated_bytes"].get<std::int64_t>() + grads > memory);  // the pools apart would not fit
  CHECK(r["device_total_bytes"].get<std::int64_t>() == memory);
  CHECK(r["fit"]["verdict"] == "tight");
}
