// Native benchmark: time per call for representative requests. Prints numbers; asserts nothing.
// Usage: build-native/memfit_bench [iterations]
//   estimate core : one timeline replay (the estimator itself) for a parsed model
//   api estimate  : the whole request -> JSON call, with the largest-micro-batch search
//   distributed   : every rank kind of a tp x pp x cp (x ep) layout (estimator core only)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "api/api.h"
#include "hf_config/parse_hf_config.h"
#include "memory/timeline.h"
#include "presets/registry.h"

namespace {

template <typename F>
double micros_per_call(int iters, F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) f();
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / iters;
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 2000;
  const char* models[] = {"meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-405B-Instruct",
                          "deepseek-ai/DeepSeek-V3"};
  for (const char* id : models) {
    const memfit::ModelArchitecture arch = memfit::parse_hf_config_text(memfit::presets::find_model(id)->config_text);
    const memfit::TensorInventory inv = memfit::build_tensor_inventory(arch);
    memfit::TrainingSetup t;
    t.seq_len = 4096;
    t.checkpointing = memfit::Checkpointing::kFull;
    std::int64_t sink = 0;
    const double core = micros_per_call(iters, [&] { sink += memfit::estimate_single_gpu(arch, inv, t).peak_allocated_bytes; });
    std::printf("estimate core  %-36s %8.2f us/call (layers %lld, sink %lld)\n", id, core,
                static_cast<long long>(arch.num_layers), static_cast<long long>(sink % 7));
    const std::string request = std::string(R"({"model":{"preset":")") + id +
                                R"("},"training":{"seq_len":4096,"activation_checkpointing":"full"},)"
                                R"("cluster":{"gpu":{"preset":"H100-80GB"}}})";
    std::string out;
    const double api_us = micros_per_call(std::max(1, iters / 10), [&] { out = memfit::api::estimate(request); });
    std::printf("api estimate   %-36s %8.2f us/call (%zu bytes out)\n", id, api_us, out.size());
    const std::string inspect = std::string(R"({"model":{"preset":")") + id + R"("}})";
    const double insp = micros_per_call(std::max(1, iters / 10), [&] { out = memfit::api::inspect(inspect); });
    std::printf("api inspect    %-36s %8.2f us/call\n", id, insp);
  }
  // Distributed layouts: 405B dense over tp 8 x pp 8 x cp 2 x dp 4 (512 GPUs, 1F1B with 16
  // micro-batches) and DeepSeek-V3 over tp 8 x pp 8 x ep 8 x dp 8.
  struct Layout { const char* id; memfit::ParallelLayout l; };
  const Layout layouts[] = {
      {"meta-llama/Llama-3.1-405B-Instruct", {.dp = 4, .tp = 8, .pp = 8, .cp = 2, .sequence_parallel = true, .sharding = memfit::Sharding::kZero1}},
      {"deepseek-ai/DeepSeek-V3", {.dp = 8, .tp = 8, .pp = 8, .ep = 8, .sequence_parallel = true, .sharding = memfit::Sharding::kZero1}}};
  for (const Layout& lay : layouts) {
    const memfit::ModelArchitecture arch = memfit::parse_hf_config_text(memfit::presets::find_model(lay.id)->config_text);
    const memfit::TensorInventory inv = memfit::build_tensor_inventory(arch);
    memfit::TrainingSetup t;
    t.seq_len = 8192;
    t.grad_accum = 16;
    t.checkpointing = memfit::Checkpointing::kFull;
    const memfit::ParallelLayout& l = lay.l;
    std::int64_t sink = 0;
    std::size_t kinds = 0;
    const double us = micros_per_call(iters, [&] {
      const memfit::DistributedEstimate d = memfit::estimate_distributed(arch, inv, t, l);
      sink += d.peak().peak_allocated_bytes;
      kinds = d.ranks.size();
    });
    std::printf("distributed    %-36s %8.2f us/call (dp %lld tp %lld pp %lld cp %lld ep %lld, %zu rank kinds, sink %lld)\n",
                lay.id, us, static_cast<long long>(l.dp), static_cast<long long>(l.tp), static_cast<long long>(l.pp),
                static_cast<long long>(l.cp), static_cast<long long>(l.ep), kinds, static_cast<long long>(sink % 7));
  }
  // The layout search of docs/api.md "search": Llama-3.1-70B, sequence 8192, 1024 H100, global
  // batch 1024 sequences, every layout, micro-batch 1-8, checkpointing none/selective/full; the
  // version named (the current code alone: unnamed, every layout is also judged on its dated ones).
  const std::string search_request =
      R"({"model": {"preset": "meta-llama/Llama-3.1-70B-Instruct"},
          "training": {"framework": "megatron", "framework_version": "2026-01", "seq_len": 8192},
          "cluster": {"gpu": {"preset": "H100-80GB"}, "gpus": 1024},
          "search": {"global_batch": 1024, "top": 10, "space": {"max_micro_batch": 8}}})";
  std::string search_out;
  const int search_iters = std::max(3, iters / 200);
  const double search_us = micros_per_call(search_iters, [&] { search_out = memfit::api::search(search_request); });
  const auto counts = search_out.find("\"counts\"");
  std::printf("api search     %-36s %8.2f ms/call (%s)\n", "Llama-3.1-70B, 1024 x H100, seq 8192", search_us / 1000,
              search_out.substr(counts, search_out.find('}', search_out.find('}', counts) + 1) - counts + 1).c_str());
  return 0;
}
