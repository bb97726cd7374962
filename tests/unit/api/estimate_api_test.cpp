// The estimate request: envelope and result shape, framework defaults with overrides, the fit
// verdict and the largest micro-batch, and every kind of bad request with its code and pointer.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <set>

#include "api/api.h"
#include "memory/fit.h"
#include "frameworks/profile.h"

using nlohmann::json;
using namespace memfit;

namespace {

json estimate(const json& request) { return json::parse(api::estimate(request.dump())); }

json base_request() {
  return json{{"model", {{"preset", "meta-llama/Llama-3.2-1B-Instruct"}}},
              {"training", {{"seq_len", 1024}, {"micro_batch", 2}}},
              {"cluster", {{"gpu", {{"preset", "A100-80GB"}}}}}};
}

void expect_error(const json& request, const std::string& code, const std::string& path) {
  const json r = estimate(request);
  INFO(request.dump());
  REQUIRE(r["ok"] == false);
  CHECK(r["error"]["code"] == code);
  CHECK(r["error"]["path"] == path);
  CHECK_FALSE(r["error"]["message"].get<std::string>().empty());
}

}  // namespace

TEST_CASE("estimate returns peaks in order, a breakdown that sums, and a timeline", "[api][estimate]") {
  const json r = estimate(base_request());
  REQUIRE(r["ok"] == true);
  const json& e = r["result"];
  const long long allocated = e["peak_allocated_bytes"], reserved = e["peak_reserved_bytes"],
                  total = e["device_total_bytes"];
  CHECK(allocated > 0);
  CHECK(allocated <= reserved);
  CHECK(reserved < total);
  long long sum = 0;
  for (auto& [k, v] : e["breakdown"].items()) sum += v.get<long long>();
  CHECK(sum == total);  // every byte of the device total sits in one category
  REQUIRE(e["timeline"].is_array());
  long long timeline_max = 0;
  for (const json& ev : e["timeline"]) timeline_max = std::max(timeline_max, ev["live_bytes"].get<long long>());
  CHECK(timeline_max <= allocated);
  CHECK(e["framework"]["id"] == "hf_trainer");
  CHECK(e["training"]["micro_batch"] == 2);
}

TEST_CASE("NVML's v1 used memory is the device total with the driver's reservation", "[api][estimate]") {
  // pynvml / trackio's nvmlDeviceGetMemoryInfo counts 615 MiB on the idle H200 that
  // cudaMemGetInfo and nvidia-smi leave out (docs/gpu_check.md item 5).
  json req = base_request();
  req["cluster"]["gpu"]["preset"] = "H200";
  const json r = estimate(req);
  REQUIRE(r["ok"] == true);
  const long long total = r["result"]["device_total_bytes"], nvml = r["result"]["nvml_used_bytes"];
  CHECK(nvml - total == 615LL << 20);
}

TEST_CASE("framework defaults apply and request fields override them", "[api][estimate]") {
  json req = base_request();
  req["training"]["framework"] = "torchtune";
  json r = estimate(req);
  REQUIRE(r["ok"] == true);
  CHECK(r["result"]["training"]["loss"] == "chunked");
  CHECK(r["result"]["training"]["activation_checkpointing"] == "full");
  CHECK(r["result"]["training"]["optimizer_impl"] == "fused");
  CHECK(r["result"]["framework"]["logged_counter"] == "peak_active");
  req["training"]["activation_checkpointing"] = "none";
  r = estimate(req);
  CHECK(r["result"]["training"]["activation_checkpointing"] == "none");
}

TEST_CASE("every framework profile cites its sources", "[estimate][frameworks]") {
  std::set<std::string> keys;
  for (const FrameworkProfile& p : framework_profiles()) {
    INFO(p.key);
    CHECK(keys.insert(p.key).second);
    CHECK_FALSE(p.sources.empty());
    CHECK(find_framework(p.key) == &p);
  }
  CHECK(find_framework("no_such_framework") == nullptr);
}

TEST_CASE("the verdict follows the 80 % line and the largest micro-batch is the boundary", "[api][estimate][fit]") {
  CHECK(verdict_for(80, 100) == Verdict::kFits);
  CHECK(verdict_for(81, 100) == Verdict::kTight);
  CHECK(verdict_for(100, 100) == Verdict::kTight);
  CHECK(verdict_for(101, 100) == Verdict::kOom);

  json req = base_request();
  req["cluster"]["gpu"]["preset"] = "RTX-4090";
  const json r = estimate(req);
  REQUIRE(r["ok"] == true);
  const long long best = r["result"]["fit"]["max_micro_batch"];
  REQUIRE(best >= 1);
  req["options"] = {{"timeline", false}, {"max_micro_batch", false}};
  req["training"]["micro_batch"] = best;
  CHECK(estimate(req)["result"]["fit"]["verdict"] != "oom");
  req["training"]["micro_batch"] = best + 1;
  CHECK(estimate(req)["result"]["fit"]["verdict"] == "oom");
}

TEST_CASE("a model that cannot fit reports oom and a largest micro-batch of 0", "[api][estimate][fit]") {
  json req = base_request();
  req["model"]["preset"] = "meta-llama/Llama-3.1-70B-Instruct";
  req["cluster"]["gpu"]["preset"] = "T4";
  const json r = estimate(req);
  REQUIRE(r["ok"] == true);
  CHECK(r["result"]["fit"]["verdict"] == "oom");
  CHECK(r["result"]["fit"]["max_micro_batch"] == 0);
}

TEST_CASE("a custom memory size keeps the GPU's compute and moves the verdict", "[api][estimate][fit]") {
  json req = base_request();
  const json full = estimate(req);
  REQUIRE(full["ok"] == true);
  const long long peak = full["result"]["device_total_bytes"];
  // Just below and just above this estimate's own device total: oom, then tight.
  req["cluster"]["gpu"]["memory_gib"] = static_cast<double>(peak - (1LL << 20)) / (1LL << 30);
  const json small = estimate(req);
  REQUIRE(small["ok"] == true);
  CHECK(small["result"]["fit"]["verdict"] == "oom");
  CHECK(small["result"]["device_total_bytes"] == peak);
  req["cluster"]["gpu"]["memory_gib"] = static_cast<double>(peak + (1LL << 20)) / (1LL << 30);
  CHECK(estimate(req)["result"]["fit"]["verdict"] == "tight");
  req["cluster"]["gpu"]["memory_gib"] = 24;
  CHECK(estimate(req)["result"]["fit"]["gpu_memory_bytes"] == 24LL << 30);
  CHECK(estimate(req)["result"]["perf"] == full["result"]["perf"]);  // same compute and links
  req["cluster"]["gpu"]["memory_gib"] = 0;
  expect_error(req, "out_of_range", "/cluster/gpu/memory_gib");
  req["cluster"]["gpu"]["memory_gib"] = "80";
  expect_error(req, "invalid_type", "/cluster/gpu/memory_gib");
}

TEST_CASE("bad estimate requests name the field", "[api][estimate][errors]") {
  expect_error(json::array(), "invalid_type", "");
  json req = base_request();
  req.erase("cluster");
  expect_error(req, "missing_field", "/cluster");
  req = base_request();
  req["cluster"]["gpu"]["preset"] = "H900";
  expect_error(req, "unknown_preset", "/cluster/gpu/preset");
  req = base_request();
  req["training"]["framework"] = "keras";
  expect_error(req, "invalid_value", "/training/framework");
  req = base_request();
  req["training"]["lora"] = {{"rank", 8}};
  expect_error(req, "invalid_value", "/training/lora");
  req = base_request();
  req["training"]["method"] = "lora";
  req["training"]["lora"] = {{"targets", {"q", "attn"}}};
  expect_error(req, "invalid_value", "/training/lora/targets/1");
  req = base_request();
  req["training"]["micro_batch"] = 1LL << 40;
  expect_error(req, "out_of_range", "/training/micro_batch");
  req = base_request();
  req["training"]["seq_len"] = 0;
  expect_error(req, "out_of_range", "/training/seq_len");
  req = base_request();
  req["training"]["optimizer_in_backward"] = true;
  req["training"]["grad_accum"] = 4;
  expect_error(req, "invalid_value", "/training/optimizer_in_backward");
  req = base_request();
  req["training"]["base_quant"] = "nf4";
  expect_error(req, "invalid_value", "/training/base_quant");
  req = base_request();
  req["training"]["precision"] = "int3";
  expect_error(req, "invalid_value", "/training/precision");
  req = base_request();
  req["training"]["batch"] = 4;
  expect_error(req, "unknown_field", "/training/batch");
  req = base_request();
  req["cluster"]["gpus"] = 8;
  req["parallel"] = {{"tp", 3}};
  expect_error(req, "invalid_value", "/parallel");
  req["parallel"] = {{"dp", 2}, {"tp", 2}};
  expect_error(req, "invalid_value", "/parallel");
  // Layouts that break a rule name the field that breaks it.
  req["parallel"] = {{"tp", 2}, {"sequence_parallel", true}, {"dp", 4}};
  CHECK(estimate(req)["ok"] == true);
  req["parallel"] = {{"sequence_parallel", true}};
  expect_error(req, "invalid_value", "/parallel/sequence_parallel");
  req["parallel"] = {{"ep", 2}};
  expect_error(req, "invalid_value", "/parallel/ep");
  req["parallel"] = {{"pp", 8}, {"vpp", 4}};
  expect_error(req, "invalid_value", "/parallel/vpp");
  req["parallel"] = {{"pp", 2}, {"vpp", 2}, {"dp", 4}};
  req["training"]["grad_accum"] = 3;
  expect_error(req, "invalid_value", "/training/grad_accum");
  req["training"]["grad_accum"] = 1;
  req["parallel"] = {{"cp", 8}};
  req["training"]["seq_len"] = 1000;
  expect_error(req, "invalid_value", "/parallel/cp");
  req["training"]["seq_len"] = 1024;
  req["parallel"] = {{"pp", 2}, {"stage_layers", {10, 7}}};
  expect_error(req, "invalid_value", "/parallel/stage_layers");
  req["parallel"] = {{"pp", 2}, {"stage_layers", {10, 6}}};
  CHECK(estimate(req)["ok"] == true);
  req["parallel"] = {{"sharding", "zero4"}};
  expect_error(req, "invalid_value", "/parallel/sharding");
  req = base_request();
  req["training"]["offload"] = "params_optimizer";
  expect_error(req, "invalid_value", "/parallel/sharding");
  req["parallel"] = {{"sharding", "zero3"}};
  CHECK(estimate(req)["ok"] == true);
}

TEST_CASE("a huge model at a huge batch is an out_of_range error, not a wrong number", "[api][estimate][errors]") {
  json req = base_request();
  req["model"]["preset"] = "deepseek-ai/DeepSeek-V3";
  req["training"]["micro_batch"] = 65536;
  req["training"]["seq_len"] = 1 << 24;
  req["training"]["attention"] = "eager";
  const json r = estimate(req);
  REQUIRE(r["ok"] == false);
  CHECK(r["error"]["code"] == "out_of_range");
}

TEST_CASE("framework_version applies the framework's dated behaviour", "[api][estimate][frameworks]") {
  json req = base_request();
  req["training"]["framework"] = "torchtune";
  req["training"]["loss"] = "standard";
  req["training"]["framework_version"] = "2024-11";
  const json now = estimate(req);
  req["training"]["framework_version"] = "2024-04";  // logits kept alive through backward (before PR #1235)
  const json then = estimate(req);
  REQUIRE(now["ok"] == true);
  REQUIRE(then["ok"] == true);
  const long long tokens = 2 * 1024, vocab = 128256;
  // The held fp32 logits stay through backward: at least 4 bytes per token per vocabulary entry more.
  CHECK(then["result"]["peak_allocated_bytes"].get<long long>() - now["result"]["peak_allocated_bytes"].get<long long>() >=
        4 * tokens * vocab);
  for (const char* bad : {"2024-13", "24-04", "2024/04", "yesterday"}) {
    req["training"]["framework_version"] = bad;
    expect_error(req, "invalid_value", "/training/framework_version");
  }
  // A dated distributed behaviour reaches the layout (and its echo): Megatron's pipeline
  // scatter-gather of 2021-02 to 2023-03, and its backward all-reduce before 2021-09.
  json mg = base_request();
  mg["training"]["framework"] = "megatron";
  mg["cluster"]["gpus"] = 8;
  mg["parallel"] = {{"tp", 4}, {"pp", 2}};
  mg["training"]["framework_version"] = "2021-08";
  const json old = estimate(mg);
  mg["training"]["framework_version"] = "2024-08";
  const json later = estimate(mg);
  REQUIRE(old["ok"] == true);
  REQUIRE(later["ok"] == true);
  CHECK(old["result"]["parallel"]["behaviour"]["pp_scatter_gather"] == true);
  CHECK(old["result"]["parallel"]["behaviour"]["tp_backward_overlap"] == false);
  CHECK(later["result"]["parallel"]["behaviour"]["pp_scatter_gather"] == false);
  CHECK(later["result"]["parallel"]["behaviour"]["tp_backward_overlap"] == true);
}

TEST_CASE("tensor parallelism under torchtitan or torchtune shards the sequence unless the request says not", "[api][estimate][frameworks]") {
  json req = base_request();
  req["cluster"]["gpus"] = 2;
  req["parallel"] = {{"tp", 2}};
  auto sequence_parallel = [&](const char* framework) {
    req["training"]["framework"] = framework;
    const json r = estimate(req);
    REQUIRE(r["ok"] == true);
    return r["result"]["parallel"]["sequence_parallel"].get<bool>();
  };
  CHECK(sequence_parallel("torchtitan"));
  CHECK(sequence_parallel("torchtune"));
  CHECK_FALSE(sequence_parallel("megatron"));
  req["parallel"]["sequence_parallel"] = false;
  CHECK_FALSE(sequence_parallel("torchtitan"));
  // Without tensor parallelism there is nothing to shard.
  req["parallel"] = {{"dp", 2}};
  CHECK_FALSE(sequence_parallel("torchtitan"));
}

// torchtune's recipes since PR #1512 (2024-09-07): only lora_finetune_single_device keeps the
// compiled loss (the others discard training.compile_loss's result), and a chunked loss is
// compiled in place everywhere.
TEST_CASE("torchtune compiles a standard loss only in its single-device LoRA recipe since 2024-09", "[api][estimate][frameworks]") {
  // The logits and loss bytes at the loss backward, from the timeline.
  auto loss_backward = [](const char* method, const char* version, const char* loss, int gpus = 1) {
    json req = base_request();
    req["cluster"]["gpus"] = gpus;
    req["training"]["framework"] = "torchtune";
    req["training"]["method"] = method;
    req["training"]["loss"] = loss;
    req["training"]["compile"] = true;
    req["training"]["framework_version"] = version;
    const json r = estimate(req);
    REQUIRE(r["ok"] == true);
    for (const json& e : r["result"]["timeline"]) {
      if (e["label"] == "loss backward") return e["logits_loss_bytes"].get<long long>();
    }
    FAIL("no loss backward event");
    return 0LL;
  };
  const long long logits = 2 * 1024 * 128256;
  // Full fine-tuning: compiled in 2024-08 (saved fp32 input + its gradient), eager since (saved
  // log-probabilities, the nll gradient and the log-softmax gradient, fp32).
  CHECK(loss_backward("full", "2024-08", "standard") == 8 * logits);
  CHECK(loss_backward("full", "2024-11", "standard") == 12 * logits);
  // LoRA on one GPU keeps its compiled loss; a chunked loss is compiled in place either way.
  CHECK(loss_backward("lora", "2024-11", "standard") == 8 * logits);
  CHECK(loss_backward("lora", "2024-11", "standard", 2) == 12 * logits);  // the distributed LoRA recipe
  CHECK(loss_backward("full", "2024-11", "chunked") == loss_backward("full", "2024-08", "chunked"));
}

TEST_CASE("layer model states: the blocks a rank holds, without embeddings and head", "[api][estimate]") {
  // Korthikanti et al. 2022's 22B GPT (h 6144, 48 layers, ffn 4h, vocab 51200, 2048 learned
  // positions, tied) on tp 8 under Megatron --fp16: 16 bytes per parameter (fp16 weight, the fp16
  // main_grad buffer --fp16 keeps without --accumulate-allreduce-grads-in-fp32, fp32 master, Adam m
  // and v; parallel/as_run.h main_grad_bytes_as_run).
  const json cfg = {{"model_type", "gpt2"}, {"vocab_size", 51200}, {"n_positions", 2048}, {"n_embd", 6144},
                    {"n_layer", 48}, {"n_head", 64}, {"tie_word_embeddings", true}};
  const json req = {{"model", {{"config", cfg}}},
                    {"training", {{"framework", "megatron"}, {"precision", "amp_fp16"}, {"seq_len", 2048}, {"micro_batch", 1}}},
                    {"parallel", {{"tp", 8}}},
                    {"cluster", {{"gpu", {{"preset", "A100-80GB"}}}, {"gpus", 8}}}};
  const json r = estimate(req);
  REQUIRE(r["ok"] == true);
  const long long h = 6144;
  // Per layer on one tp rank: qkv and fc1 split with their biases, o and fc2 split with
  // replicated biases, two LayerNorms replicated.
  const long long layer = (3 * h * h + 3 * h + h * h + 4 * h * h + 4 * h + 4 * h * h) / 8 + h + h + 4 * h;
  const long long blocks = 16 * 48 * layer;
  CHECK(r["result"]["layer_model_states_bytes"].get<long long>() == blocks);
  // Fig. 1's bar counts the 12h^2 matrices alone at 18 bytes (fp32 gradients): 45.5625 GiB; biases
  // and norms add 0.06 %.
  CHECK(static_cast<double>(blocks) * 18 / 16 / (45.5625 * 1073741824.0) == Approx(1.0).epsilon(0.001));
  // The full states add the vocab-split embedding, the replicated position table and final norm.
  const long long globals = 16 * (51200 * h / 8 + 2048 * h + 2 * h);
  CHECK(r["result"]["model_states_bytes"].get<long long>() == blocks + globals);
  // --accumulate-allreduce-grads-in-fp32 keeps an fp32 main_grad: 18 bytes, Fig. 1's accounting.
  json fp32_grads = req;
  fp32_grads["parallel"]["accumulate_allreduce_grads_in_fp32"] = true;
  const json r32 = estimate(fp32_grads);
  REQUIRE(r32["ok"] == true);
  CHECK(r32["result"]["layer_model_states_bytes"].get<long long>() == blocks / 16 * 18);
}

TEST_CASE("parallel.accumulate_allreduce_grads_in_fp32 is Megatron-LM's flag", "[api][estimate]") {
  json request = base_request();
  request["parallel"]["accumulate_allreduce_grads_in_fp32"] = true;
  const json r = estimate(request);
  REQUIRE(r["ok"] == false);
  CHECK(r["error"]["code"] == "invalid_value");
  CHECK(r["error"]["path"] == "/parallel/accumulate_allreduce_grads_in_fp32");
}

TEST_CASE("an HF Trainer run on the DeepSpeed engine takes DeepSpeed's precision and the launch's buckets",
          "[api][estimate][frameworks]") {
  json request = base_request();
  request["training"]["precision"] = "amp_bf16";
  request["cluster"]["gpus"] = 8;
  request["parallel"] = {{"sharding", "zero2"}};
  const json fsdp = estimate(request);
  request["parallel"]["backend"] = "deepspeed";
  const json engine = estimate(request);
  REQUIRE(fsdp["ok"] == true);
  REQUIRE(engine["ok"] == true);
  // No autocast: a 16-bit model with fp32 masters in the optimizer (accelerate's native_amp off).
  CHECK(fsdp["result"]["training"]["amp_weights"] == "autocast");
  CHECK(engine["result"]["training"]["amp_weights"] == "master_in_optimizer");
  // An accelerate config without a DeepSpeed file: DeepSpeed's default buckets, 16-bit.
  const json& b = engine["result"]["parallel"]["behaviour"];
  CHECK(b["reduce_bucket_bytes"] == 500000000LL * 2);
  CHECK(b["prefetch_bytes"] == 50000000LL * 2);
  CHECK(b["reduce_in_fp32"] == false);
  // Axolotl's shipped JSONs say "auto": from Llama-3.2-1B's hidden size 2048, reduce hidden²,
  // prefetch 0.9 hidden².
  request["training"]["framework"] = "axolotl";
  const json axolotl = estimate(request);
  REQUIRE(axolotl["ok"] == true);
  const json& a = axolotl["result"]["parallel"]["behaviour"];
  CHECK(a["reduce_bucket_bytes"] == 2048 * 2048 * 2);
  CHECK(a["prefetch_bytes"] == 2048 * 2048 * 9 / 10 * 2);
  // A 16-bit residual stream and no autocast copies: fewer saved bytes than under autocast.
  CHECK(engine["result"]["breakdown"]["activations_bytes"].get<std::int64_t>() <
        fsdp["result"]["breakdown"]["activations_bytes"].get<std::int64_t>());
}

TEST_CASE("parallel.backend is checked: a known value, on a framework that can hand its model to DeepSpeed",
          "[api][estimate][errors]") {
  json request = base_request();
  request["cluster"]["gpus"] = 2;
  request["parallel"] = {{"backend", "megatron-deepspeed"}};
  expect_error(request, "invalid_value", "/parallel/backend");
  request["parallel"]["backend"] = "deepspeed";
  request["training"]["framework"] = "torchtitan";
  expect_error(request, "invalid_value", "/parallel/backend");
  request["parallel"]["backend"] = 3;
  expect_error(request, "invalid_type", "/parallel/backend");
}

TEST_CASE("cluster.network names a fabric preset: its bandwidth per GPU unless the request gives one", "[api][estimate]") {
  json request = base_request();
  request["cluster"]["gpus"] = 32;
  request["parallel"] = {{"dp", 32}};
  const auto speed = [](const json& req) {
    const json r = estimate(req);
    REQUIRE(r["ok"] == true);
    return r["result"]["perf"]["tokens_per_s_per_gpu"].get<double>();
  };
  // DGX A100: eight 200 Gb/s HDR adapters, 25 GB/s per GPU; AWS p4d: 400 Gb/s for 8 GPUs.
  request["cluster"]["network"] = "dgx-a100";
  const double dgx = speed(request);
  request["cluster"]["network"] = "aws-p4d";
  const double p4d = speed(request);
  CHECK(p4d < dgx);
  request["cluster"]["inter_node_bandwidth_gb_per_s"] = 25;  // the request's own figure wins
  CHECK(speed(request) == dgx);
  request["cluster"].erase("network");
  CHECK(speed(request) == dgx);
  request["cluster"]["network"] = "infiniband";
  expect_error(request, "invalid_value", "/cluster/network");
  request["cluster"]["network"] = 400;
  expect_error(request, "invalid_type", "/cluster/network");
  // The presets list the fabrics with their per-GPU figure.
  const json presets = json::parse(api::presets());
  bool found = false;
  for (const json& n : presets["result"]["networks"]) {
    if (n["id"] == "aws-p5") {
      found = true;
      CHECK(n["inter_node_bandwidth_gb_per_s"].get<double>() == Approx(50));
    }
  }
  CHECK(found);
}

TEST_CASE("without a network the GPU preset's reference node's fabric carries the inter-node traffic", "[api][estimate]") {
  json request = base_request();
  request["cluster"] = {{"gpu", {{"preset", "A100-80GB"}}}, {"gpus", 32}};
  request["parallel"] = {{"dp", 32}};
  const auto speed = [](const json& req) {
    const json r = estimate(req);
    REQUIRE(r["ok"] == true);
    return r["result"]["perf"]["tokens_per_s_per_gpu"].get<double>();
  };
  // The A100 preset's reference node is a DGX A100 (reference_network dgx-a100: 25 GB/s per GPU).
  const double by_default = speed(request);
  request["cluster"]["network"] = "dgx-a100";
  CHECK(speed(request) == by_default);
  request["cluster"].erase("network");
  request["cluster"]["inter_node_bandwidth_gb_per_s"] = 50;
  CHECK(speed(request) > by_default);
  // The presets name it; a GPU document naming a fabric that is no preset is refused at its pointer.
  const json presets = json::parse(api::presets());
  for (const json& g : presets["result"]["gpus"]) {
    if (g["id"] == "A100-80GB") CHECK(g["reference_network"] == "dgx-a100");
    if (g["id"] == "RTX-4090") CHECK(g["reference_network"].is_null());
  }
  request["cluster"] = {{"gpu", {{"spec", {{"id", "X"}, {"memory_total_bytes", 1LL << 36}, {"reference_network", "myrinet"}}}}}, {"gpus", 1}};
  expect_error(request, "invalid_value", "/cluster/gpu/spec/reference_network");
}

TEST_CASE("cuda_launch_blocking slows the step and leaves every memory figure as it was", "[api][estimate]") {
  json queued = base_request();
  json blocking = queued;
  blocking["training"]["cuda_launch_blocking"] = true;
  const json q = estimate(queued), b = estimate(blocking);
  REQUIRE(q["ok"] == true);
  REQUIRE(b["ok"] == true);
  CHECK(b["result"]["perf"]["step_time_s"].get<double>() > q["result"]["perf"]["step_time_s"].get<double>());
  CHECK(b["result"]["training"]["cuda_launch_blocking"] == true);
  CHECK_FALSE(q["result"]["training"].contains("cuda_launch_blocking"));  // echoed only when set
  for (const char* field : {"peak_allocated_bytes", "peak_reserved_bytes", "breakdown"}) CHECK(b["result"][field] == q["result"][field]);
  blocking["training"]["cuda_launch_blocking"] = "yes";
  expect_error(blocking, "invalid_type", "/training/cuda_launch_blocking");
}
