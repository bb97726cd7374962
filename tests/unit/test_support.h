// Helpers the unit tests share: a preset model parsed, a cluster of one GPU kind, a bf16 setup,
// tensor parallelism with sequence parallelism.
#pragma once
#include <cstdint>

#include <nlohmann/json.hpp>

#include "api/api.h"
#include "hf_config/parse_hf_config.h"
#include "model/tensor_inventory.h"
#include "parallel/layout.h"
#include "perf/perf_model.h"
#include "presets/registry.h"
#include "training/training_setup.h"

namespace memfit_test {

/// A two-layer Llama small enough to count every saved byte by hand: h 8, q 8, k and v 4, f 16.
inline memfit::ModelArchitecture toy_llama() {
  return memfit::parse_hf_config_text(R"({"model_type":"llama","vocab_size":32,"hidden_size":8,
    "num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":1,"intermediate_size":16})");
}

/// A setup of PEFT method `m` at rank `rank` (0: the method's own size), everything else default.
inline memfit::TrainingSetup peft_setup(memfit::Method m, std::int64_t rank = 0) {
  memfit::TrainingSetup t;
  t.method = m;
  t.lora_rank = rank;
  return t;
}

inline memfit::ModelArchitecture preset(const char* id) {
  return memfit::parse_hf_config_text(memfit::presets::find_model(id)->config_text);
}

/// A preset model and its tensor inventory (what a pipeline Problem points at).
struct Model {
  memfit::ModelArchitecture arch;
  memfit::TensorInventory inv;
  explicit Model(const char* id) : arch(preset(id)), inv(memfit::build_tensor_inventory(arch)) {}
};

/// An estimate request for `framework` on one H100 (no timeline, no micro-batch search), and its answer.
inline nlohmann::json framework_request(const char* framework, const char* model = "Qwen/Qwen3-4B") {
  return nlohmann::json{{"model", {{"preset", model}}},
                        {"training", {{"framework", framework}}},
                        {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}}},
                        {"options", {{"timeline", false}, {"max_micro_batch", false}}}};
}
inline nlohmann::json estimate_json(const nlohmann::json& request) {
  return nlohmann::json::parse(memfit::api::estimate(request.dump()));
}

inline memfit::ClusterSpec cluster(const char* gpu, std::int64_t gpus, std::int64_t per_node = 8) {
  memfit::ClusterSpec c;
  c.gpu = *memfit::presets::find_gpu(gpu);
  c.gpus = gpus;
  c.gpus_per_node = per_node;
  return c;
}

/// Pure bf16 training of `mb` sequences of `seq` tokens, `ga` micro-batches per step.
inline memfit::TrainingSetup bf16(std::int64_t mb, std::int64_t seq, std::int64_t ga = 1) {
  memfit::TrainingSetup t;
  t.precision = memfit::Precision::kBf16;
  t.micro_batch = mb;
  t.seq_len = seq;
  t.grad_accum = ga;
  return t;
}

/// Tensor parallelism of degree `tp` with sequence parallelism, nothing else split.
inline memfit::ParallelLayout sequence_parallel_tp(std::int64_t tp) {
  memfit::ParallelLayout l;
  l.tp = tp;
  l.sequence_parallel = true;
  return l;
}

}  // namespace memfit_test
