// The framework capability matrix: the search offers only what a framework runs, and every ★
// layout's launch files (the formats of its framework) express every knob of the layout. The
// launch texts are read back here with small per-format readers, independent of the exporter.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>

#include "api/api.h"
#include "search/search.h"
#include "../test_support.h"
#include "frameworks/capabilities.h"
#include "frameworks/registry.h"
#include "training/setup_names.h"

using nlohmann::json;
using namespace memfit;
using namespace memfit_test;

namespace {

using Knobs = std::map<std::string, std::string>;

// The value after the first match of `pattern`'s group 1, if any.
std::optional<std::string> find(const std::string& text, const std::string& pattern) {
  std::smatch m;
  if (std::regex_search(text, m, std::regex(pattern))) return m[1].str();
  return std::nullopt;
}
std::int64_t num(const std::optional<std::string>& v, std::int64_t fallback = -1) { return v ? std::stoll(*v) : fallback; }
std::string str(std::int64_t v) { return std::to_string(v); }
const char* stage_name(std::int64_t stage) {
  static const char* kNames[] = {"none", "zero1", "zero2", "zero3"};
  return kNames[stage];
}
Method find_method(const std::string& name) {
  for (const EnumName<Method>& e : kMethodNames) {
    if (name == e.name) return e.value;
  }
  FAIL("unknown method " << name);
  return Method::kFull;
}
bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }
// A TrainingArguments optim name (transformers OptimizerNames) as memfit names the optimizer.
std::string hf_optimizer(const std::string& optim) {
  static const std::map<std::string, std::string> kNames = {
      {"adamw_torch", "adamw"}, {"adamw_torch_fused", "adamw"}, {"adamw_8bit", "adamw_8bit"},
      {"paged_adamw_8bit", "paged_adamw_8bit"}, {"paged_adamw_32bit", "paged_adamw_32bit"}, {"adamw_torch_4bit", "adamw_4bit"},
      {"sgd", "sgd"}, {"adafactor", "adafactor"}, {"lion_32bit", "lion"}, {"galore_adamw", "galore_adamw"}};
  auto it = kNames.find(optim);
  return it == kNames.end() ? "?" + optim : it->second;
}
void no_model_parallel(Knobs& k) {
  k["tp"] = k["pp"] = k["cp"] = k["ep"] = "1";
  k["sp"] = "false";
}

Knobs read_deepspeed(const std::string& text) {
  const json j = json::parse(text);
  Knobs k;
  k["micro_batch"] = str(j.at("train_micro_batch_size_per_gpu").get<std::int64_t>());
  k["grad_accum"] = str(j.at("gradient_accumulation_steps").get<std::int64_t>());
  const json& z = j.at("zero_optimization");
  k["sharding"] = stage_name(z.at("stage").get<std::int64_t>());
  k["offload"] = z.contains("offload_param") ? "params_optimizer" : z.contains("offload_optimizer") ? "optimizer" : "none";
  no_model_parallel(k);
  if (j.contains("tensor_parallel")) k["tp"] = str(j["tensor_parallel"].at("autotp_size").get<std::int64_t>());
  const std::string type = j.contains("optimizer") ? j["optimizer"].at("type").get<std::string>() : "none";
  k["optimizer"] = type == "AdamW" ? "adamw" : type == "Lion" ? "lion" : "?" + type;
  return k;
}

Knobs read_python(const std::string& text) {
  Knobs k;
  if (auto n = find(text, R"(--num_processes (\d+))")) k["gpus"] = *n;
  if (auto nodes = find(text, R"(--num_nodes (\d+))")) k["gpus"] = str(std::stoll(*nodes) * num(find(text, R"(--num_gpus (\d+))")));
  if (auto mb = find(text, R"(per_device_train_batch_size=(\d+))")) k["micro_batch"] = *mb;
  if (auto ga = find(text, R"(gradient_accumulation_steps=(\d+))")) k["grad_accum"] = *ga;
  k["checkpointing"] = has(text, "gradient_checkpointing=True") || has(text, "gradient_checkpointing_enable()") ? "full" : "none";
  k["method"] = has(text, "load_in_4bit=True")                      ? "qlora"
                : has(text, "use_dora=True")                        ? "dora"
                : has(text, "LoraConfig(")                          ? "lora"
                : has(text, "requires_grad_(False)")                ? "freeze"
                                                                    : "full";
  if (auto r = find(text, R"(LoraConfig\(r=(\d+))")) k["lora_rank"] = *r;
  if (auto o = find(text, R"re(optim="(\w+)")re")) k["optimizer"] = hf_optimizer(*o);
  return k;
}

Knobs read_accelerate(const std::string& text) {
  Knobs k;
  k["gpus"] = *find(text, R"(num_processes: (\d+))");
  const std::string type = *find(text, R"(distributed_type: (\w+))");
  no_model_parallel(k);
  if (type == "DEEPSPEED") {
    k["sharding"] = stage_name(num(find(text, R"(zero_stage: (\d))")));
    k["offload"] = has(text, "offload_param_device: cpu") ? "params_optimizer" : has(text, "offload_optimizer_device: cpu") ? "optimizer" : "none";
  } else if (type == "FSDP") {
    const std::string strategy = *find(text, R"(fsdp_sharding_strategy: (\w+))");
    k["sharding"] = strategy == "FULL_SHARD" || strategy == "HYBRID_SHARD" ? "zero3" : "zero2";
    k["offload"] = has(text, "fsdp_offload_params: true") ? "params_optimizer" : "none";
  } else {
    k["sharding"] = "none";
    k["offload"] = "none";
  }
  return k;
}

Knobs read_megatron(const std::string& text, std::int64_t layers) {
  Knobs k;
  const std::int64_t gpus = num(find(text, R"(--nnodes (\d+))")) * num(find(text, R"(--nproc-per-node (\d+))"));
  const std::int64_t tp = num(find(text, R"(--tensor-model-parallel-size (\d+))"));
  const std::int64_t pp = num(find(text, R"(--pipeline-model-parallel-size (\d+))"));
  const std::int64_t cp = num(find(text, R"(--context-parallel-size (\d+))"), 1);
  const std::int64_t micro = num(find(text, R"(--micro-batch-size (\d+))"));
  const std::int64_t global = num(find(text, R"(--global-batch-size (\d+))"));
  const std::int64_t dp = gpus / (tp * pp * cp);
  k["gpus"] = str(gpus);
  k["tp"] = str(tp);
  k["pp"] = str(pp);
  k["cp"] = str(cp);
  k["ep"] = str(num(find(text, R"(--expert-model-parallel-size (\d+))"), 1));
  k["etp"] = str(num(find(text, R"(--expert-tensor-parallel-size (\d+))"), tp));
  k["vpp"] = str(has(text, "--num-layers-per-virtual-pipeline-stage") ? layers / (pp * num(find(text, R"(--num-layers-per-virtual-pipeline-stage (\d+))"))) : 1);
  k["sp"] = has(text, "--sequence-parallel") ? "true" : "false";
  k["micro_batch"] = str(micro);
  k["grad_accum"] = str(global / (micro * dp));
  const auto fsdp = find(text, R"(--data-parallel-sharding-strategy (\w+))");
  k["sharding"] = fsdp ? (*fsdp == "optim_grads" ? "zero2" : "zero3") : has(text, "--use-distributed-optimizer") ? "zero1" : "none";
  k["offload"] = has(text, "--optimizer-cpu-offload") ? "optimizer" : "none";
  k["checkpointing"] = has(text, "--recompute-granularity full") ? "full" : has(text, "--recompute-activations") ? "selective" : "none";
  k["method"] = "full";
  const std::string optimizer = find(text, R"(--optimizer (\w+))").value_or("none");
  k["optimizer"] = optimizer == "adam" ? "adamw" : optimizer != "sgd" ? "?" + optimizer : has(text, "--sgd-momentum 0 ") ? "sgd" : "sgd_momentum";
  return k;
}

Knobs read_torchtitan(const std::string& text, std::int64_t layers) {
  Knobs k;
  auto degree = [&](const char* key) { return num(find(text, std::string(key) + R"( = (\d+))")); };
  const std::int64_t replicate = degree("data_parallel_replicate_degree"), shard = degree("data_parallel_shard_degree");
  const std::int64_t tp = degree("tensor_parallel_degree"), pp = degree("pipeline_parallel_degree"), cp = degree("context_parallel_degree");
  const std::int64_t dp = replicate * shard * cp / cp;
  k["gpus"] = str(replicate * shard * tp * pp * cp);
  k["tp"] = str(tp);
  k["pp"] = str(pp);
  k["cp"] = str(cp);
  k["ep"] = str(degree("expert_parallel_degree"));
  k["sp"] = tp > 1 ? "true" : "false";
  const std::int64_t per_stage = num(find(text, R"(pipeline_parallel_layers_per_stage = (\d+))"), 0);
  k["vpp"] = str(per_stage > 0 ? layers / (pp * per_stage) : 1);
  const std::int64_t local = degree("local_batch_size"), global = degree("global_batch_size");
  const std::int64_t micro = pp > 1 ? degree("pipeline_parallel_microbatch_size") : local;
  k["micro_batch"] = str(micro);
  k["grad_accum"] = str(pp > 1 ? local / micro : global / (local * dp));
  // FSDP2 shards over dp_shard x cp whenever either is > 1 (torchtitan ParallelDims.fsdp_enabled).
  k["sharding"] = shard > 1 || cp > 1 ? "zero3" : "none";
  k["offload"] = has(text, "enable_cpu_offload = true") ? "params_optimizer" : "none";
  k["checkpointing"] = *find(text, R"re(mode = "(\w+)")re");
  k["method"] = "full";
  const std::string optimizer = find(text, R"re(\[optimizer\]\nname = "(\w+)")re").value_or("none");
  k["optimizer"] = optimizer == "AdamW" ? "adamw" : "?" + optimizer;
  return k;
}

Knobs read_torchtune(const std::string& text) {
  Knobs k;
  const bool distributed = has(text, "_distributed");
  const std::int64_t tp = num(find(text, R"(tensor_parallel_dim=(\d+))"), 1);
  k["gpus"] = distributed ? str(num(find(text, R"(--nnodes (\d+))")) * num(find(text, R"(--nproc_per_node (\d+))"))) : "1";
  k["tp"] = str(tp);
  k["pp"] = k["cp"] = k["ep"] = "1";
  k["sp"] = tp > 1 ? "true" : "false";
  k["micro_batch"] = *find(text, R"( batch_size=(\d+))");
  k["grad_accum"] = *find(text, R"(gradient_accumulation_steps=(\d+))");
  k["checkpointing"] = has(text, "enable_activation_checkpointing=True") ? "full" : "none";
  k["sharding"] = distributed ? "zero3" : "none";
  k["offload"] = has(text, "fsdp_cpu_offload=True") ? "params_optimizer" : has(text, "CPUOffloadOptimizer") ? "optimizer" : "none";
  const bool lora = has(text, "tune run lora_") || has(text, " lora_finetune_");
  k["method"] = !lora ? "full" : has(text, "model.quantize_base=True") ? "qlora" : has(text, "model.use_dora=True") ? "dora" : "lora";
  if (auto r = find(text, R"(model\.lora_rank=(\d+))")) k["lora_rank"] = *r;
  static const std::map<std::string, std::string> kClasses = {
      {"torchao.prototype.low_bit_optim.CPUOffloadOptimizer", "adamw"}, {"torch.optim.AdamW", "adamw"},
      {"bitsandbytes.optim.AdamW8bit", "adamw_8bit"}, {"bitsandbytes.optim.PagedAdamW8bit", "paged_adamw_8bit"},
      {"bitsandbytes.optim.PagedAdamW32bit", "paged_adamw_32bit"}};
  const std::string component = find(text, R"(optimizer\._component_=(\S+))").value_or("none");
  if (component == "torch.optim.SGD") k["optimizer"] = has(text, "optimizer.momentum=0.9") ? "sgd_momentum" : "sgd";
  else k["optimizer"] = kClasses.count(component) ? kClasses.at(component) : "?" + component;
  return k;
}

Knobs read_fsdp_qlora(const std::string& text) {
  Knobs k;
  no_model_parallel(k);
  k["gpus"] = *find(text, R"(--world_size (\d+))");
  k["micro_batch"] = *find(text, R"(--batch_size (\d+))");
  k["grad_accum"] = *find(text, R"(--gradient_accumulation_steps (\d+))");
  const std::string strategy = *find(text, R"(--sharding_strategy (\w+))");
  k["sharding"] = strategy == "full_shard" ? "zero3" : strategy == "shard_grad_op" ? "zero2" : "none";
  k["offload"] = has(text, "--use_cpu_offload true") ? "params_optimizer" : "none";
  k["checkpointing"] = has(text, "--use_gradient_checkpointing true") ? "full" : "none";
  k["method"] = *find(text, R"(--train_type (\w+))");
  if (auto r = find(text, R"(--lora_rank (\d+))")) k["lora_rank"] = *r;
  k["optimizer"] = find(text, R"(--optimizer (\w+))").value_or("none");
  return k;
}

// TRL's `trl sft --config` file: the training knobs (accelerate's file carries gpus and sharding).
Knobs read_trl_sft(const std::string& text) {
  Knobs k;
  k["micro_batch"] = *find(text, R"(per_device_train_batch_size: (\d+))");
  k["grad_accum"] = *find(text, R"(gradient_accumulation_steps: (\d+))");
  k["checkpointing"] = has(text, "gradient_checkpointing: true") ? "full" : "none";
  if (has(text, "activation_offloading: true")) k["offload"] = "activations";
  const bool peft = has(text, "use_peft: true");
  k["method"] = !peft ? "full" : has(text, "load_in_4bit: true") ? "qlora" : has(text, "use_dora: true") ? "dora" : "lora";
  if (auto r = find(text, R"(lora_r: (\d+))")) k["lora_rank"] = *r;
  k["optimizer"] = hf_optimizer(find(text, R"(optim: (\w+))").value_or("none"));
  return k;
}

// Unsloth's one-GPU script: FastLanguageModel's load and adapter calls, SFTConfig.
Knobs read_unsloth(const std::string& text) {
  Knobs k;
  no_model_parallel(k);
  k["gpus"] = "1";
  k["micro_batch"] = *find(text, R"(per_device_train_batch_size=(\d+))");
  k["grad_accum"] = *find(text, R"(gradient_accumulation_steps=(\d+))");
  const std::string gc = find(text, R"(use_gradient_checkpointing=("unsloth"|True|False))").value_or("False");
  k["checkpointing"] = gc == "False" ? "none" : "full";
  k["offload"] = gc == "\"unsloth\"" ? "activations" : "none";
  const bool adapters = has(text, "get_peft_model(");
  k["method"] = has(text, "full_finetuning=True") ? "full" : !adapters ? "?" : has(text, "load_in_4bit=True") ? "qlora" : "lora";
  if (auto r = find(text, R"(\br=(\d+))")) k["lora_rank"] = *r;
  k["optimizer"] = hf_optimizer(find(text, R"re(optim="(\w+)")re").value_or("none"));
  return k;
}

// The sharding an HF-Trainer YAML carries: an inline DeepSpeed `zero_optimization` stage, or
// FSDP (Axolotl's fsdp_config reshard_after_forward, TrainingArguments' `fsdp` words); the GPU
// count from the launch comment.
void read_hf_yaml_sharding(const std::string& text, Knobs& k) {
  no_model_parallel(k);
  k["gpus"] = *find(text, R"(--num_processes (\d+))");
  const bool ds = has(text, "zero_optimization:");
  if (ds) {
    k["sharding"] = stage_name(num(find(text, R"(stage: (\d))")));
  } else if (has(text, "fsdp_config:") || has(text, "fsdp: ")) {
    k["sharding"] = has(text, "reshard_after_forward: false") || has(text, "shard_grad_op") ? "zero2" : "zero3";
  } else {
    k["sharding"] = "none";
  }
  const bool params_off = has(text, "offload_param:") || has(text, "offload_params: true") || has(text, " offload\"");
  k["offload"] = params_off ? "params_optimizer" : has(text, "offload_optimizer:") ? "optimizer" : "none";
}

// Axolotl's YAML (adapter, load_in_4bit, peft_use_dora, lora_r, micro_batch_size, ...).
Knobs read_axolotl(const std::string& text) {
  Knobs k;
  read_hf_yaml_sharding(text, k);
  k["micro_batch"] = *find(text, R"(micro_batch_size: (\d+))");
  k["grad_accum"] = *find(text, R"(gradient_accumulation_steps: (\d+))");
  k["checkpointing"] = has(text, "gradient_checkpointing: true") ? "full" : "none";
  if (has(text, "activation_offloading: true")) k["offload"] = "activations";
  const auto adapter = find(text, R"(adapter: (\w+))");
  k["method"] = !adapter ? "full" : *adapter == "qlora" ? "qlora" : has(text, "peft_use_dora: true") ? "dora" : "lora";
  if (auto r = find(text, R"(lora_r: (\d+))")) k["lora_rank"] = *r;
  k["optimizer"] = hf_optimizer(find(text, R"(optimizer: (\w+))").value_or("none"));
  return k;
}

// LLaMA-Factory's YAML (finetuning_type, quantization_bit, use_dora, lora_rank, ...).
Knobs read_llamafactory(const std::string& text) {
  Knobs k;
  read_hf_yaml_sharding(text, k);
  k["micro_batch"] = *find(text, R"(per_device_train_batch_size: (\d+))");
  k["grad_accum"] = *find(text, R"(gradient_accumulation_steps: (\d+))");
  k["checkpointing"] = has(text, "disable_gradient_checkpointing: true") ? "none" : "full";
  const std::string type = *find(text, R"(finetuning_type: (\w+))");
  k["method"] = type != "lora" ? type : has(text, "quantization_bit: 4") ? "qlora" : has(text, "use_dora: true") ? "dora" : "lora";
  if (auto r = find(text, R"(lora_rank: (\d+))")) k["lora_rank"] = *r;
  k["optimizer"] = has(text, "use_adam_mini: true") ? "adam_mini" : hf_optimizer(find(text, R"(optim: (\w+))").value_or("none"));
  return k;
}

Knobs read_back(const std::string& format, const std::string& text, std::int64_t layers) {
  if (format == "trl_sft_yaml") return read_trl_sft(text);
  if (format == "unsloth_python") return read_unsloth(text);
  if (format == "axolotl_yaml") return read_axolotl(text);
  if (format == "llamafactory_yaml") return read_llamafactory(text);
  if (format == "deepspeed_json") return read_deepspeed(text);
  if (format == "python_script") return read_python(text);
  if (format == "accelerate_yaml") return read_accelerate(text);
  if (format == "megatron_args") return read_megatron(text, layers);
  if (format == "torchtitan_toml") return read_torchtitan(text, layers);
  if (format == "torchtune_command") return read_torchtune(text);
  if (format == "fsdp_qlora_command") return read_fsdp_qlora(text);
  FAIL("no reader for launch format " << format);
  return {};
}

// The knobs of a ★ as the search reports it.
Knobs star_knobs(const json& star, std::int64_t gpus, const std::string& method, std::int64_t lora_rank, const std::string& optimizer) {
  const json& p = star.at("parallel");
  const json& t = star.at("training");
  Knobs k;
  k["gpus"] = str(gpus);
  for (const char* d : {"tp", "pp", "cp", "ep"}) k[d] = str(p.at(d).get<std::int64_t>());
  if (p.at("pp").get<std::int64_t>() > 1) k["vpp"] = str(p.at("vpp").get<std::int64_t>());
  if (p.at("tp").get<std::int64_t>() > 1) k["sp"] = p.at("sequence_parallel").get<bool>() ? "true" : "false";
  // MoE parallel folding: experts at a tensor-parallel degree of their own.
  if (p.at("etp") != p.at("tp")) k["etp"] = str(p.at("etp").get<std::int64_t>());
  // Sharding over one data-parallel rank shards nothing: any stage is the same run.
  if (p.at("dp").get<std::int64_t>() * p.at("cp").get<std::int64_t>() > 1) k["sharding"] = p.at("sharding").get<std::string>();
  k["offload"] = t.at("offload").get<std::string>();
  k["micro_batch"] = str(t.at("micro_batch").get<std::int64_t>());
  k["grad_accum"] = str(t.at("grad_accum").get<std::int64_t>());
  k["checkpointing"] = t.at("activation_checkpointing").get<std::string>();
  k["method"] = method;
  if (method != "full") k["lora_rank"] = str(lora_rank);
  k["optimizer"] = optimizer;
  return k;
}

constexpr std::int64_t kLoraRank = 16;

struct Case {
  const char* framework;
  const char* model;
  std::int64_t layers;
  const char* method;
  std::int64_t gpus;
  const char* optimizer = "adamw";
};

json search(const Case& c, std::int64_t seq_len) {
  json training = {{"framework", c.framework}, {"method", c.method}, {"seq_len", seq_len}, {"optimizer", c.optimizer}};
  if (std::string(c.method) != "full") training["lora"] = {{"rank", kLoraRank}};
  const json request = {{"model", {{"preset", c.model}}},
                        {"training", training},
                        {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", c.gpus}}},
                        {"search", {{"top", 3}, {"global_batch", 64 * c.gpus / std::min<std::int64_t>(c.gpus, 8)}}}};
  const json out = json::parse(api::search(request.dump()));
  REQUIRE(out.at("ok").get<bool>());
  return out.at("result");
}

}  // namespace

TEST_CASE("every ★ exports launch files of its framework that express every knob of the layout", "[capabilities][launch]") {
  // Every framework of the registry; those without launch formats (harnesses, plain PyTorch,
  // LitGPT) must export no file of their own.
  std::vector<std::string> frameworks;
  for (const FrameworkEntry& e : kFrameworks) frameworks.push_back(e.profile().key);
  REQUIRE(frameworks.size() == std::size(kFrameworks));
  const char* methods[] = {"full", "lora", "qlora"};
  struct Model {
    const char* id;
    std::int64_t layers;
  };
  const Model models[] = {{"meta-llama/Llama-3.1-8B", 32}, {"meta-llama/Llama-3.1-70B-Instruct", 80}, {"Qwen/Qwen3-30B-A3B", 48}};
  const std::int64_t sizes[] = {1, 8, 64};
  std::map<std::string, int> stars;  // by framework / method
  std::int64_t offload_rejections = 0;
  for (const std::string& fw_name : frameworks) {
    const char* fw = fw_name.c_str();
    const Framework id = find_framework(fw)->id;
    const FrameworkCapabilities caps = framework_capabilities(id);
    for (const char* method : methods) {
      for (const Model& m : models) {
        for (std::int64_t gpus : sizes) {
         // An 8-bit optimizer beside AdamW (the 8B model): offered only where the framework sets it,
         // and never offloaded where its offload does not step it on the CPU.
         for (const char* optimizer : {"adamw", "adamw_8bit"}) {
          if (std::string(optimizer) != "adamw" && m.layers != 32) continue;
          const Case c{fw, m.id, m.layers, method, gpus, optimizer};
          INFO(fw << " " << method << " " << m.id << " on " << gpus << " GPUs, " << optimizer);
          const json r = search(c, 4096);
          const bool trains = caps.methods[static_cast<int>(find_method(method))];
          const Optimizer opt = std::string(optimizer) == "adamw" ? Optimizer::kAdamW : Optimizer::kAdamW8bit;
          offload_rejections += r.at("counts").at("rejected").value("framework_offload_optimizer_not_on_cpu", 0);
          if (!trains || !caps.optimizers[static_cast<int>(opt)]) {
            // Every layout is rejected for the method or the optimizer, counted by that reason.
            CHECK(r.at("recommended").is_null());
            CHECK(r.at("counts").at("valid") == 0);
            CHECK(r.at("counts").at("rejected").value(!trains ? "framework_method" : "framework_optimizer", 0) > 0);
            continue;
          }
          if (r.at("recommended").is_null()) continue;
          const json& star = r.at("recommended");
          INFO("★ " << star.dump());
          const std::string offload = star.at("training").at("offload").get<std::string>();
          if (offload == "optimizer") CHECK(caps.optimizer_offload_runs[static_cast<int>(opt)]);
          if (offload == "params_optimizer") CHECK(caps.params_offload_runs[static_cast<int>(opt)]);
          Knobs expressed;
          int own = 0;
          for (const json& f : r.at("launch")) {
            if (!f.at("for_framework").get<bool>()) continue;
            ++own;
            INFO(f.at("format").get<std::string>() << ": " << f.at("notes").dump() << "\n" << f.at("text").get<std::string>());
            REQUIRE(f.at("supported").get<bool>());
            REQUIRE(!f.at("text").get<std::string>().empty());
            for (const auto& [knob, value] : read_back(f.at("format"), f.at("text"), m.layers)) {
              auto [it, fresh] = expressed.emplace(knob, value);
              CHECK((fresh || it->second == value));  // two files of one launch agree
            }
          }
          REQUIRE(own == static_cast<int>(caps.launch_formats.size()));
          if (own == 0) continue;  // no launch file of its own: nothing to read back
          for (const auto& [knob, value] : star_knobs(star, gpus, method, kLoraRank, optimizer)) {
            INFO("knob " << knob);
            REQUIRE(expressed.count(knob) == 1);
            CHECK(expressed[knob] == value);
          }
          ++stars[fw_name + "/" + method];
         }
        }
      }
    }
  }
  // The sweep met the offload rule (ZeRO-Offload asked to step bitsandbytes' AdamW8bit).
  CHECK(offload_rejections > 0);
  // The sweep checked a ★ for every method each framework with launch files trains.
  for (const std::string& fw : frameworks) {
    const FrameworkCapabilities caps = framework_capabilities(find_framework(fw)->id);
    if (caps.launch_formats.empty()) continue;
    for (const char* method : methods) {
      INFO(fw << " " << method);
      // One GPU only (Unsloth): the 8B's ★; the others need more GPUs.
      if (caps.methods[static_cast<int>(find_method(method))]) CHECK(stars[fw + "/" + method] >= (caps.multi_gpu ? 2 : 1));
    }
  }
}

TEST_CASE("capabilities by version: a dated capability is missing before its month", "[capabilities]") {
  CHECK(framework_capabilities(Framework::kDeepspeed).tp);
  CHECK_FALSE(framework_capabilities(Framework::kDeepspeed, 202406).tp);  // AutoTP training from 0.16.4
  CHECK(framework_capabilities(Framework::kHfTrainer, 202406).qlora_with_zero3);
  CHECK_FALSE(framework_capabilities(Framework::kHfTrainer, 202401).qlora_with_zero3);
  // Plain PyTorch and the harnesses limit nothing; every launchable framework limits something.
  CHECK(runs_everything(framework_capabilities(Framework::kOther)));
  for (Framework f : {Framework::kHfTrainer, Framework::kDeepspeed, Framework::kMegatron, Framework::kTorchtitan,
                      Framework::kTorchtune, Framework::kFsdpQlora, Framework::kLitgpt}) {
    CHECK_FALSE(runs_everything(framework_capabilities(f)));
  }
  // A ZeRO-3 layout with tp 2 is what DeepSpeed's AutoTP rejects; plain DDP is what torchtune never runs.
  ParallelLayout l;
  l.dp = 4;
  l.tp = 2;
  l.sharding = Sharding::kZero3;
  TrainingSetup t;
  CHECK(std::string(capability_rule(framework_capabilities(Framework::kDeepspeed), l, t, 8, false)) == "framework_tp_not_with_zero3");
  l.tp = 1;
  l.sharding = Sharding::kNone;
  CHECK(std::string(capability_rule(framework_capabilities(Framework::kTorchtune), l, t, 8, false)) == "framework_no_ddp");
  CHECK(capability_rule(framework_capabilities(Framework::kHfTrainer), l, t, 8, false) == nullptr);
}

TEST_CASE("Ulysses context parallelism is offered only where a launch expresses it", "[capabilities][cp]") {
  // Megatron-LM and torchtitan run a ring: asked for Ulysses (parallel.cp_kind ulysses), their
  // searches reject every cp > 1 layout by that rule, and no ★ exports an unsupported format.
  for (const char* fw : {"megatron", "torchtitan"}) {
    INFO(fw);
    CHECK_FALSE(framework_capabilities(find_framework(fw)->id).ulysses_cp);
    const json request = {{"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
                          {"training", {{"framework", fw}, {"method", "full"}, {"seq_len", 65536}}},
                          {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 8}}},
                          {"search", {{"top", 3}, {"global_batch", 8}, {"space", {{"cp_kind", "ulysses"}}}}}};
    const json r = json::parse(api::search(request.dump())).at("result");
    CHECK(r.at("counts").at("rejected").value("framework_no_ulysses", 0) > 0);
    if (!r.at("recommended").is_null()) {
      CHECK(r.at("recommended").at("parallel").at("cp") == 1);
      for (const json& f : r.at("launch")) {
        if (f.at("for_framework").get<bool>()) CHECK(f.at("supported").get<bool>());
      }
    }
  }
  // A framework memfit does not restrict keeps Ulysses in its space.
  CHECK(framework_capabilities(Framework::kOther).ulysses_cp);
  CHECK(runs_everything(framework_capabilities(Framework::kOther)));
  // Unsloth's script trains on one GPU: larger layouts are rejected by that rule.
  ParallelLayout l;
  l.dp = 2;
  TrainingSetup t;
  t.method = Method::kLora;
  CHECK(std::string(capability_rule(framework_capabilities(Framework::kUnsloth), l, t, 8, false)) == "framework_single_gpu");
}

TEST_CASE("an offloaded optimizer is offered only where the framework steps it on the CPU", "[capabilities][offload]") {
  ParallelLayout l;
  l.dp = 8;
  l.sharding = Sharding::kZero2;
  TrainingSetup t;
  t.offload = Offload::kOptimizer;
  auto rule = [&](Framework f, std::int64_t yyyymm = 0) {
    const char* code = capability_rule(framework_capabilities(f, yyyymm), l, t, 8, false);
    return std::string(code ? code : "");
  };
  // DeepSpeed's ZeRO-Offload: its CPU Adam and (from v0.11.0) CPU Lion; a client 8-bit optimizer is
  // refused by the engine, and accelerate (the HF Trainer's path) swaps it for DeepSpeedCPUAdam.
  for (Framework f : {Framework::kDeepspeed, Framework::kHfTrainer, Framework::kAxolotl, Framework::kLlamaFactory, Framework::kTrl}) {
    INFO(static_cast<int>(f));
    t.optimizer = Optimizer::kAdamW;
    CHECK(rule(f).empty());
    t.optimizer = Optimizer::kLion;
    CHECK(rule(f).empty());
    for (Optimizer o : {Optimizer::kAdamW8bit, Optimizer::kPagedAdamW8bit, Optimizer::kPagedAdamW32bit, Optimizer::kAdamW4bit,
                        Optimizer::kAdafactor, Optimizer::kSgd, Optimizer::kGaloreAdamW}) {
      t.optimizer = o;
      // The engine's own config names AdamW and Lion only: its launch files set no other optimizer.
      CHECK(rule(f) == (f == Framework::kDeepspeed ? "framework_optimizer" : "framework_offload_optimizer_not_on_cpu"));
      l.dp = 1;  // on one GPU too (ZeRO-Offload runs as stage 1 there)
      CHECK(rule(f) == (f == Framework::kDeepspeed ? "framework_optimizer" : "framework_offload_optimizer_not_on_cpu"));
      l.dp = 8;
    }
  }
  // Before DeepSpeed v0.11.0 (2023-10) no Lion: accelerate's swap gives DeepSpeedCPUAdam, the
  // engine's config has no Lion type at all.
  t.optimizer = Optimizer::kLion;
  CHECK(rule(Framework::kHfTrainer, 202306) == "framework_offload_optimizer_not_on_cpu");
  CHECK(rule(Framework::kDeepspeed, 202306) == "framework_optimizer");
  // DeepSpeed with parameter offload (ZeRO-3): the same CPU optimizers.
  l.sharding = Sharding::kZero3;
  t.offload = Offload::kParamsOptimizer;
  t.optimizer = Optimizer::kAdamW;
  CHECK(rule(Framework::kDeepspeed).empty());
  FrameworkCapabilities any_optimizer = framework_capabilities(Framework::kDeepspeed);
  for (bool& o : any_optimizer.optimizers) o = true;
  t.optimizer = Optimizer::kAdamW8bit;
  CHECK(std::string(capability_rule(any_optimizer, l, t, 8, false)) == "framework_offload_optimizer_not_on_cpu");
  // The HF Trainer's parameter offload is FSDP's offload_params: Trainer's optimizer on CPU tensors,
  // which bitsandbytes' 8-bit and paged optimizers step from 0.50.0 (2026-07) on.
  for (Optimizer o : {Optimizer::kAdamW8bit, Optimizer::kPagedAdamW8bit, Optimizer::kPagedAdamW32bit}) {
    t.optimizer = o;
    CHECK(rule(Framework::kHfTrainer).empty());
    CHECK(rule(Framework::kHfTrainer, 202506) == "framework_offload_optimizer_not_on_cpu");
    CHECK(rule(Framework::kTorchtune, 202506) == "framework_offload_optimizer_not_on_cpu");
  }
  t.optimizer = Optimizer::kAdafactor;
  CHECK(rule(Framework::kHfTrainer, 202506).empty());
  // torchtune's one-GPU CPUOffloadOptimizer takes its optimizer as a class, which no config value
  // names: AdamW only.
  l.dp = 1;
  l.sharding = Sharding::kNone;
  t.offload = Offload::kOptimizer;
  t.optimizer = Optimizer::kPagedAdamW8bit;
  CHECK(rule(Framework::kTorchtune) == "framework_offload_optimizer_not_on_cpu");
  t.optimizer = Optimizer::kAdamW;
  CHECK(rule(Framework::kTorchtune).empty());
  // Frameworks memfit does not restrict keep every optimizer with offload.
  CHECK(rule(Framework::kOther).empty());
  CHECK_FALSE(capability_message("framework_offload_optimizer_not_on_cpu") == "framework_offload_optimizer_not_on_cpu");
}

TEST_CASE("the search rejects an 8-bit optimizer with ZeRO-Offload by that rule, and the estimate says why", "[capabilities][offload]") {
  for (const char* fw : {"hf_trainer", "llamafactory"}) {
    INFO(fw);
    const json training = {{"framework", fw}, {"method", "full"}, {"seq_len", 2048}, {"optimizer", "adamw_8bit"}};
    const json request = {{"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
                          {"training", training},
                          {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 8}}},
                          {"search", {{"top", 3}, {"global_batch", 64}, {"space", {{"offload", {"optimizer"}}, {"sharding", {"zero1", "zero2"}}}}}}};
    const json r = json::parse(api::search(request.dump())).at("result");
    CHECK(r.at("counts").at("rejected").value("framework_offload_optimizer_not_on_cpu", 0) > 0);
    CHECK(r.at("recommended").is_null());
    CHECK(r.at("counts").at("valid") == 0);
    // With AdamW the same space is offered.
    json adamw = request;
    adamw["training"]["optimizer"] = "adamw";
    const json ra = json::parse(api::search(adamw.dump())).at("result");
    CHECK(ra.at("counts").at("rejected").value("framework_offload_optimizer_not_on_cpu", 0) == 0);
    CHECK_FALSE(ra.at("recommended").is_null());
    // The estimate of that layout answers, with the rule's code and the field it turns down.
    json est = {{"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
                {"training", {{"framework", fw}, {"method", "full"}, {"seq_len", 2048}, {"optimizer", "adamw_8bit"}, {"offload", "optimizer"}}},
                {"parallel", {{"dp", 8}, {"sharding", "zero2"}}},
                {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 8}}}};
    const json e = json::parse(api::estimate(est.dump()));
    REQUIRE(e.at("ok").get<bool>());
    bool warned = false;
    for (const json& w : e.at("result").at("warnings")) {
      const std::string s = w.get<std::string>();
      if (has(s, "framework_offload_optimizer_not_on_cpu at /training/optimizer")) warned = true;
    }
    CHECK(warned);
  }
  // The DeepSpeed engine's launch files name AdamW or Lion only: an 8-bit optimizer is turned down
  // by that rule, at the same field.
  const json est = {{"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
                    {"training", {{"framework", "deepspeed"}, {"method", "full"}, {"seq_len", 2048}, {"optimizer", "adamw_8bit"}}},
                    {"parallel", {{"dp", 8}, {"sharding", "zero2"}}},
                    {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}, {"gpus", 8}}}};
  const json e = json::parse(api::estimate(est.dump()));
  REQUIRE(e.at("ok").get<bool>());
  CHECK(has(e.at("result").at("warnings").dump(), "framework_optimizer at /training/optimizer"));
}
