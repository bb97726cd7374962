// Host memory per node in the core: offloaded states against the node's CPU memory (the GPU
// preset's reference node, or cluster.host_memory_gib_per_node), in the estimate's verdict, in
// every search row and in the search's choice.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "api/api.h"
#include "memory/fit.h"
#include "presets/registry.h"

using nlohmann::json;
using namespace memfit;

namespace {

json estimate(const json& request) { return json::parse(api::estimate(request.dump())); }
json search(const json& request) { return json::parse(api::search(request.dump())); }

json offload_request(const char* model, const char* offload, std::int64_t gpus) {
  return {{"model", {{"preset", model}}},
          {"training", {{"framework", "deepspeed"}, {"seq_len", 2048}, {"activation_checkpointing", "full"}, {"offload", offload}}},
          {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", gpus}}},
          {"parallel", {{"sharding", "zero3"}}},
          {"options", {{"timeline", false}, {"max_micro_batch", false}}}};
}

}  // namespace

TEST_CASE("host memory per node: a rank's offloaded states times the node's ranks, against the node", "[memory][host]") {
  const HostFit h = host_fit(100, 16, 8, 1000);
  CHECK(h.bytes_per_node == 800);
  CHECK_FALSE(h.oom);
  CHECK(host_fit(100, 16, 8, 799).oom);
  CHECK(host_fit(100, 4, 8, 399).oom);          // a 4-GPU job fills 4 ranks of its node
  CHECK_FALSE(host_fit(100, 16, 8, 0).oom);     // unknown memory: reported, not checked
  CHECK(std::string(verdict_name(Verdict::kFits, true)) == "host_oom");
  // The presets' reference nodes: DGX H100 2 TB; a GPU without one has none.
  CHECK(presets::find_gpu("H100-80GB")->host_memory_bytes_per_node == std::int64_t{2048} << 30);
  CHECK(presets::find_gpu("RTX-4090")->host_memory_bytes_per_node == 0);
}

TEST_CASE("the estimate's verdict is host_oom when offload needs more than the node's memory", "[api][host]") {
  // Llama 3.1 405B, ZeRO-3 with parameter offload on 8 H100: every state on the host of one node.
  json request = offload_request("meta-llama/Llama-3.1-405B-Instruct", "params_optimizer", 8);
  const json r = estimate(request);
  REQUIRE(r["ok"] == true);
  const json& res = r["result"];
  const std::int64_t host = res["host_bytes_per_node"];
  CHECK(host > (std::int64_t{2048} << 30));                  // more than a DGX H100 has
  CHECK(res["fit"]["verdict"] == "host_oom");
  CHECK(res["fit"]["host_memory_bytes_per_node"] == (std::int64_t{2048} << 30));
  CHECK(res["fit"]["host_bytes_per_node"] == host);
  // A node with enough memory set by the request: the GPU's verdict stands.
  request["cluster"]["host_memory_gib_per_node"] = 8192;
  const json more = estimate(request)["result"];
  CHECK(more["fit"]["verdict"] == more["fit"]["gpu_verdict"]);
  CHECK(more["fit"]["verdict"] != "host_oom");
  // Bad input names its field.
  request["cluster"]["host_memory_gib_per_node"] = -1;
  const json bad = estimate(request);
  CHECK(bad["ok"] == false);
  CHECK(bad["error"]["path"] == "/cluster/host_memory_gib_per_node");
}

TEST_CASE("the search never recommends a layout out of host memory; rows carry host bytes per node", "[search][host]") {
  json request = {{"model", {{"preset", "meta-llama/Llama-3.1-70B-Instruct"}}},
                  {"training", {{"framework", "deepspeed"}, {"seq_len", 4096}}},
                  {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 8}}},
                  {"search", {{"top", 20}, {"global_batch", 64}}}};
  const json wide = search(request)["result"];
  REQUIRE(!wide["recommended"].is_null());
  const std::int64_t star_host = wide["recommended"]["memory"]["host_bytes_per_node"];
  REQUIRE(star_host > 0);  // the 70B full fine-tune on one node offloads
  // A node with less memory than the ★ needs: it is out of memory on the host now.
  const std::int64_t capacity_gib = star_host / (std::int64_t{1} << 30) / 2;
  request["cluster"]["host_memory_gib_per_node"] = capacity_gib;
  const json narrow = search(request)["result"];
  CHECK(narrow["counts"]["settled_by_host"] > 0);
  const std::int64_t capacity = capacity_gib << 30;
  for (const json& c : narrow["top"]) CHECK(c["memory"]["host_bytes_per_node"].get<std::int64_t>() <= capacity);
  if (!narrow["recommended"].is_null()) CHECK(narrow["recommended"]["memory"]["host_bytes_per_node"].get<std::int64_t>() <= capacity);
  for (const json& m : narrow["methods"]) {
    if (!m["closest"].is_null() && m["closest"]["memory"]["verdict"] == "host_oom") {
      CHECK(m["closest"]["memory"]["host_bytes_per_node"].get<std::int64_t>() > capacity);
    }
  }
}

TEST_CASE("DeepSpeed's ZeRO-3 offload holds the CPU optimizer's fp32 gradient buffers on the host", "[memory][host]") {
  // Per parameter of a rank's shard, on the host (DeepSpeed v0.16.4 stage3.py, bf16): the fp32 master
  // and Adam's two moments (12 B), the bf16 parameter partition (offload_param, 2 B), the partitions'
  // gradient buffer in the accumulation dtype (grad_partitions_flat_buffer, bf16 under ZeRO: 2 B) and
  // each sub-group's fp32 gradient (subgroup_gradient_buffer, 4 B): 20 B, the node's 8 ranks 20 B
  // per parameter of the model.
  const json r = estimate(offload_request("meta-llama/Llama-3.1-8B", "params_optimizer", 8));
  REQUIRE(r["ok"] == true);
  const double params = r["result"]["model"]["total_params"].get<double>();
  const double per_param = r["result"]["host_bytes_per_node"].get<double>() / params;
  CHECK(per_param == Approx(20.0).epsilon(0.01));
}
