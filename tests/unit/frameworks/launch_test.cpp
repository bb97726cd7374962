// The launch configurations: each framework's documented option names and the batch identities
// they must satisfy.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <sstream>

#include "frameworks/launch.h"
#include "frameworks/capabilities.h"
#include "training/setup_names.h"
#include "../test_support.h"

using nlohmann::json;
using namespace memfit;
using namespace memfit_test;

TEST_CASE("launch configurations use the frameworks' documented option names", "[launch]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  LaunchInput in;
  in.arch = &a;
  in.model_id = "meta-llama/Llama-3.1-8B";
  in.layout.dp = 8;
  in.layout.sharding = Sharding::kZero3;
  in.layout.behaviour.param_gather_overlaps_forward = true;  // Megatron's since 2023-11 (frameworks/megatron/launch_test.cpp)
  in.setup = bf16(2, 8192, 4);
  in.setup.checkpointing = Checkpointing::kFull;
  const std::vector<LaunchFormat> f = launch_configs(in);
  REQUIRE(f.size() == 11);
  // DeepSpeed (deepspeed.ai/docs/config-json): batch identity train = micro x accumulation x dp.
  const json ds = json::parse(f[0].text);
  CHECK(ds["train_batch_size"] == 2 * 4 * 8);
  CHECK(ds["train_micro_batch_size_per_gpu"] == 2);
  CHECK(ds["gradient_accumulation_steps"] == 4);
  CHECK(ds["zero_optimization"]["stage"] == 3);
  const std::set<std::string> ds_keys = {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
                                         "bf16", "fp16", "zero_optimization", "optimizer", "gradient_clipping", "tensor_parallel"};
  for (auto it = ds.begin(); it != ds.end(); ++it) CHECK(ds_keys.count(it.key()) == 1);
  // The engine builds its optimizer from the config (deepspeed.initialize is given none).
  CHECK(ds["optimizer"]["type"] == "AdamW");
  // accelerate: every top-level and fsdp_config key is one `accelerate config` writes.
  const std::set<std::string> acc_keys = {"compute_environment", "distributed_type", "mixed_precision", "num_machines",
                                          "num_processes", "machine_rank", "main_training_function", "fsdp_config",
                                          "deepspeed_config", "fsdp_sharding_strategy", "fsdp_auto_wrap_policy",
                                          "fsdp_backward_prefetch", "fsdp_offload_params", "fsdp_state_dict_type",
                                          "fsdp_cpu_ram_efficient_loading", "fsdp_sync_module_states", "fsdp_use_orig_params",
                                          "fsdp_activation_checkpointing"};
  std::istringstream yaml(f[1].text);
  std::string line;
  while (std::getline(yaml, line)) {
    const auto colon = line.find(':');
    REQUIRE(colon != std::string::npos);
    std::string key = line.substr(0, colon);
    key.erase(0, key.find_first_not_of(' '));
    CHECK(acc_keys.count(key) == 1);
  }
  CHECK(f[1].text.find("fsdp_sharding_strategy: FULL_SHARD") != std::string::npos);
  // Megatron-LM arguments.py flags.
  const std::set<std::string> mlm = {"num-layers", "hidden-size", "num-attention-heads", "group-query-attention",
                                     "num-query-groups", "ffn-hidden-size", "swiglu", "normalization",
                                     "position-embedding-type", "untie-embeddings-and-output-weights", "seq-length",
                                     "max-position-embeddings", "micro-batch-size", "global-batch-size",
                                     "tensor-model-parallel-size", "pipeline-model-parallel-size", "use-distributed-optimizer",
                                     "use-megatron-fsdp", "data-parallel-sharding-strategy", "bf16", "recompute-granularity",
                                     "recompute-method", "recompute-num-layers", "ckpt-format", "train-iters",
                                     "overlap-grad-reduce", "overlap-param-gather", "context-parallel-size", "optimizer",
                                     "sgd-momentum"};
  std::istringstream args(f[2].text);
  std::string tok;
  std::int64_t flags = 0;
  while (args >> tok) {
    if (tok.rfind("--", 0) != 0 || tok == "--nnodes" || tok == "--nproc-per-node") continue;
    ++flags;
    CHECK(mlm.count(tok.substr(2)) == 1);
  }
  CHECK(flags > 15);
  CHECK(f[2].text.find("--global-batch-size 64") != std::string::npos);
  CHECK(f[2].text.find("--optimizer adam") != std::string::npos);
  // Megatron FSDP asserts the fsdp_dtensor checkpoint format (arguments.py @ core_v0.14.0).
  CHECK(f[2].text.find("--use-megatron-fsdp") != std::string::npos);
  CHECK(f[2].text.find("--ckpt-format fsdp_dtensor") != std::string::npos);
  // The overlaps the step-time model assumes (off by default; param gather needs grad reduce).
  CHECK(f[2].text.find("--overlap-grad-reduce") != std::string::npos);
  CHECK(f[2].text.find("--overlap-param-gather") != std::string::npos);
  // Megatron FSDP asserts CUDA_DEVICE_MAX_CONNECTIONS is not 1; tp or cp > 1 without it assert 1.
  CHECK(f[2].text.find("CUDA_DEVICE_MAX_CONNECTIONS") == std::string::npos);
  {
    LaunchInput mp = in;
    mp.layout.sharding = Sharding::kZero1;
    mp.layout.dp = 2;
    mp.layout.tp = 2;
    mp.layout.cp = 2;
    const std::string text = launch_configs(mp)[2].text;
    CHECK(text.rfind("CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun ", 0) == 0);
    CHECK(text.find("--use-distributed-optimizer") != std::string::npos);
    CHECK(text.find("--overlap-param-gather") != std::string::npos);
    mp.layout.sharding = Sharding::kNone;
    mp.layout.dp = 1;
    mp.layout.cp = 1;
    mp.layout.pp = 2;
    const std::string no_dp = launch_configs(mp)[2].text;
    CHECK(no_dp.find("--overlap-grad-reduce") == std::string::npos);  // nothing to reduce across
    CHECK(no_dp.find("--overlap-param-gather") == std::string::npos);
  }
  // torchtitan: FSDP over all 8 ranks, full AC.
  CHECK(f[3].text.find("data_parallel_shard_degree = 8") != std::string::npos);
  CHECK(f[3].text.find("mode = \"full\"") != std::string::npos);
  CHECK(f[4].text.find("full_finetune_distributed") != std::string::npos);
  CHECK(f[4].text.find("batch_size=2") != std::string::npos);
  // Optimizer offload: DeepSpeed and accelerate offload from ZeRO stage 1 only; Megatron's offload
  // runs on the precision-aware distributed optimizer (both asserted by arguments.py).
  {
    LaunchInput off = in;
    off.layout.sharding = Sharding::kNone;
    off.setup.offload = Offload::kOptimizer;
    const std::vector<LaunchFormat> o = launch_configs(off);
    CHECK_FALSE(o[0].supported);
    CHECK_FALSE(o[1].supported);
    for (const char* flag : {"--use-distributed-optimizer", "--use-precision-aware-optimizer", "--optimizer-cpu-offload"}) {
      CHECK(o[2].text.find(flag) != std::string::npos);
    }
    CHECK_FALSE(o[4].supported);  // torchtune's distributed recipes always shard
    // AutoTP: no train_batch_size (DeepSpeed would check it against every rank); not with ZeRO-3.
    off.setup.offload = Offload::kNone;
    off.layout.sharding = Sharding::kZero2;
    off.layout.dp = 4;
    off.layout.tp = 2;
    const json autotp = json::parse(launch_configs(off)[0].text);
    CHECK_FALSE(autotp.contains("train_batch_size"));
    CHECK(autotp["tensor_parallel"]["autotp_size"] == 2);
    off.layout.sharding = Sharding::kZero3;
    CHECK_FALSE(launch_configs(off)[0].supported);
    // accelerate's hybrid sharding shards within a node only.
    off.layout.tp = 1;
    off.layout.dp = 16;
    off.layout.shard_degree = 8;
    CHECK(launch_configs(off)[1].text.find("fsdp_sharding_strategy: HYBRID_SHARD\n") != std::string::npos);
    off.layout.shard_degree = 4;
    CHECK_FALSE(launch_configs(off)[1].supported);
  }
  // Formats that cannot express a layout say so.
  in.layout.dp = 2;
  in.layout.pp = 4;
  const std::vector<LaunchFormat> g = launch_configs(in);
  CHECK_FALSE(g[0].supported);
  CHECK_FALSE(g[1].supported);
  CHECK(g[2].supported);
  CHECK(g[2].text.find("--pipeline-model-parallel-size 4") != std::string::npos);
  // torchtitan (job_config.py @ c854924): every key is an option of its section; under pipeline
  // parallelism the local batch holds the step's microbatches (microbatches = local / microbatch
  // size) and nothing accumulates (global = local x dp); interleaving sets equal stages.
  in.layout.vpp = 2;
  in.layout.schedule = PipelineSchedule::kInterleaved;
  in.setup.precision = Precision::kFp8;
  in.layout.cp = 2;
  const LaunchFormat titan = launch_configs(in)[3];
  REQUIRE(titan.supported);
  const std::map<std::string, std::set<std::string>> titan_keys = {
      {"job", {"dump_folder"}},
      {"model", {"name", "hf_assets_path", "converters"}},
      {"training", {"local_batch_size", "global_batch_size", "seq_len", "mixed_precision_param", "mixed_precision_reduce"}},
      {"parallelism", {"data_parallel_replicate_degree", "data_parallel_shard_degree", "tensor_parallel_degree",
                       "pipeline_parallel_degree", "pipeline_parallel_schedule", "pipeline_parallel_microbatch_size",
                       "pipeline_parallel_layers_per_stage", "pipeline_parallel_first_stage_less_layers",
                       "pipeline_parallel_last_stage_less_layers", "context_parallel_degree", "context_parallel_rotate_method", "expert_parallel_degree",
                       "fsdp_reshard_after_forward"}},
      {"optimizer", {"name"}},  // job_config.py Optimizer.name
      {"activation_checkpoint", {"mode", "selective_ac_option"}},
      {"compile", {"enable"}}};
  std::istringstream toml(titan.text);
  std::string section;
  std::int64_t titan_options = 0;
  while (std::getline(toml, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      REQUIRE(titan_keys.count(section) == 1);
      continue;
    }
    const std::string key = line.substr(0, line.find(" = "));
    CHECK(titan_keys.at(section).count(key) == 1);
    ++titan_options;
  }
  CHECK(titan_options > 20);
  CHECK(titan.text.find("local_batch_size = 8\n") != std::string::npos);
  CHECK(titan.text.find("pipeline_parallel_microbatch_size = 2\n") != std::string::npos);
  CHECK(titan.text.find("global_batch_size = 16\n") != std::string::npos);
  CHECK(titan.text.find("pipeline_parallel_layers_per_stage = 4\n") != std::string::npos);  // 32 / (4 x 2)
  CHECK(titan.text.find("converters = [\"quantize.linear.float8\"]") != std::string::npos);
  // The rotation the step-time model charges, pinned (job_config.py @ c854924).
  CHECK(titan.text.find("context_parallel_degree = 2\ncontext_parallel_rotate_method = \"allgather\"\n") != std::string::npos);
}

TEST_CASE("the TRL file holds SFTConfig / ModelConfig fields; the Unsloth script runs one GPU", "[launch][trl][unsloth]") {
  const ModelArchitecture a = preset("Qwen/Qwen3-4B");
  LaunchInput in;
  in.arch = &a;
  in.model_id = "Qwen/Qwen3-4B";
  in.setup = bf16(2, 4096, 8);
  in.setup.precision = Precision::kAmpBf16;
  in.setup.method = Method::kQlora;
  in.setup.lora_targets = {"q", "k", "v", "o"};
  in.setup.lora_rank = 32;
  in.setup.checkpointing = Checkpointing::kFull;
  in.setup.loss = LossKernel::kChunkedNll;
  const std::vector<LaunchFormat> one = launch_configs(in);
  REQUIRE(one.size() == 11);
  const LaunchFormat& trl = one[5];
  REQUIRE(trl.format == "trl_sft_yaml");
  REQUIRE(trl.supported);
  // trl @ f2cd5771: sft_config.py, base_config.py, TrainingArguments and model_config.py fields.
  const std::set<std::string> keys = {"model_name_or_path", "dtype", "attn_implementation", "bf16", "fp16",
                                      "per_device_train_batch_size", "gradient_accumulation_steps", "max_length", "packing",
                                      "gradient_checkpointing", "activation_offloading", "optim", "use_liger_kernel",
                                      "loss_type", "use_peft", "lora_r", "lora_dropout", "lora_target_modules", "use_dora",
                                      "load_in_4bit", "bnb_4bit_quant_type", "use_bnb_nested_quant", "load_in_8bit"};
  std::istringstream yaml(trl.text);
  std::string line;
  std::map<std::string, std::string> got;
  while (std::getline(yaml, line)) {
    const auto colon = line.find(": ");
    REQUIRE(colon != std::string::npos);
    CHECK(keys.count(line.substr(0, colon)) == 1);
    got[line.substr(0, colon)] = line.substr(colon + 2);
  }
  CHECK(got["dtype"] == "float32");  // AMP: the float32 model under bf16 autocast
  CHECK(got["bf16"] == "true");
  CHECK(got["loss_type"] == "chunked_nll");
  CHECK(got["per_device_train_batch_size"] == "2");
  CHECK(got["gradient_accumulation_steps"] == "8");
  CHECK(got["lora_target_modules"] == "[\"q_proj\", \"k_proj\", \"v_proj\", \"o_proj\"]");
  CHECK(got["load_in_4bit"] == "true");
  CHECK(got["lora_r"] == "32");
  const LaunchFormat& unsloth = one[6];
  REQUIRE(unsloth.format == "unsloth_python");
  REQUIRE(unsloth.supported);
  CHECK(unsloth.text.find("load_in_4bit=True") != std::string::npos);
  CHECK(unsloth.text.find("    r=32,\n") != std::string::npos);
  CHECK(unsloth.text.find("use_gradient_checkpointing=True") != std::string::npos);
  in.setup.offload = Offload::kActivations;
  CHECK(launch_configs(in)[6].text.find("use_gradient_checkpointing=\"unsloth\"") != std::string::npos);
  // Several GPUs: TRL through accelerate, the Unsloth script not; model parallelism neither.
  in.layout.dp = 4;
  const std::vector<LaunchFormat> dp = launch_configs(in);
  CHECK(dp[5].supported);
  CHECK_FALSE(dp[6].supported);
  in.layout.tp = 2;
  CHECK_FALSE(launch_configs(in)[5].supported);
}

namespace {

// Reads `key: value` lines of a flat YAML (comments and nested lines skipped).
std::map<std::string, std::string> yaml_keys(const std::string& text) {
  std::istringstream yaml(text);
  std::map<std::string, std::string> got;
  for (std::string line; std::getline(yaml, line);) {
    const auto colon = line.find(':');
    if (line.empty() || line[0] == '#' || line[0] == ' ' || colon == std::string::npos) continue;
    got[line.substr(0, colon)] = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
  }
  return got;
}

}  // namespace

TEST_CASE("the Axolotl and LLaMA-Factory files hold their schemas' keys, the sharding and the GPU count", "[launch][axolotl][llamafactory]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  LaunchInput in;
  in.arch = &a;
  in.model_id = "meta-llama/Llama-3.1-8B";
  in.setup = bf16(2, 4096, 8);
  in.setup.method = Method::kQlora;
  in.setup.lora_targets = {"all-linear"};
  in.setup.lora_rank = 32;
  in.setup.checkpointing = Checkpointing::kFull;
  in.layout.dp = 8;
  in.layout.sharding = Sharding::kZero3;
  const std::vector<LaunchFormat> f = launch_configs(in);
  const LaunchFormat& ax = f[9];
  const LaunchFormat& lf = f[10];
  REQUIRE(ax.format == "axolotl_yaml");
  REQUIRE(lf.format == "llamafactory_yaml");
  REQUIRE(ax.supported);
  REQUIRE(lf.supported);
  // axolotl @ 067b021c utils/schemas/{config,training,peft,fsdp}.py field names.
  const std::set<std::string> ax_keys = {"base_model", "adapter", "load_in_4bit", "load_in_8bit", "lora_r", "lora_alpha", "lora_dropout",
                                         "lora_target_linear", "lora_target_modules", "peft_use_dora", "sequence_len", "sample_packing",
                                         "micro_batch_size", "gradient_accumulation_steps", "optimizer", "optim_target_modules", "optim_args",
                                         "bf16", "fp16", "gradient_checkpointing", "activation_offloading", "attn_implementation",
                                         "torch_compile", "plugins", "liger_fused_linear_cross_entropy", "liger_rms_norm",
                                         "liger_glu_activation", "liger_rope", "cut_cross_entropy", "deepspeed", "fsdp_version", "fsdp_config"};
  const auto got = yaml_keys(ax.text);
  for (const auto& [key, value] : got) CHECK(ax_keys.count(key) == 1);
  CHECK(got.at("adapter") == "qlora");
  CHECK(got.at("load_in_4bit") == "true");
  CHECK(got.at("lora_target_linear") == "true");
  CHECK(got.at("micro_batch_size") == "2");
  CHECK(got.at("fsdp_version") == "2");
  CHECK(ax.text.find("  reshard_after_forward: true\n") != std::string::npos);  // ZeRO-3 as FSDP2
  CHECK(ax.text.rfind("# run: accelerate launch --num_processes 8 --num_machines 1 ", 0) == 0);
  // LLaMA-Factory @ ff6d4d12 hparams/*_args.py and TrainingArguments field names.
  const std::set<std::string> lf_keys = {"model_name_or_path", "stage", "do_train", "finetuning_type", "freeze_trainable_layers",
                                         "lora_rank", "lora_dropout", "lora_target", "use_dora", "quantization_bit", "quantization_method",
                                         "cutoff_len", "packing", "per_device_train_batch_size", "gradient_accumulation_steps", "pure_bf16",
                                         "bf16", "fp16", "disable_gradient_checkpointing", "flash_attn", "enable_liger_kernel", "use_galore",
                                         "galore_target", "galore_rank", "galore_update_interval", "galore_layerwise", "use_apollo",
                                         "apollo_target", "apollo_rank", "apollo_update_interval", "apollo_scale_type", "apollo_layerwise",
                                         "use_adam_mini", "optim", "deepspeed", "fsdp"};
  const auto lgot = yaml_keys(lf.text);
  for (const auto& [key, value] : lgot) CHECK(lf_keys.count(key) == 1);
  CHECK(lgot.at("finetuning_type") == "lora");
  CHECK(lgot.at("quantization_bit") == "4");
  CHECK(lgot.at("lora_target") == "all");
  CHECK(lgot.at("disable_gradient_checkpointing") == "false");
  CHECK(lgot.at("fsdp") == "\"full_shard auto_wrap\"");
  // Optimizer offload: DeepSpeed inline; GaLore in each framework's spelling.
  in.setup = bf16(1, 2048, 1);
  in.setup.offload = Offload::kOptimizer;
  in.layout.sharding = Sharding::kZero2;
  in.setup.optimizer = Optimizer::kGaloreAdamW;
  in.setup.projection_rank = 64;
  const std::vector<LaunchFormat> g = launch_configs(in);
  CHECK(g[9].text.find("deepspeed:\n") != std::string::npos);
  CHECK(g[9].text.find("    stage: 2\n    offload_optimizer: {device: cpu, pin_memory: true}\n") != std::string::npos);
  CHECK(yaml_keys(g[9].text).at("optimizer") == "galore_adamw");
  CHECK(yaml_keys(g[9].text).at("optim_args") == "\"rank=64,update_proj_gap=200\"");
  CHECK(yaml_keys(g[10].text).at("use_galore") == "true");
  CHECK(yaml_keys(g[10].text).at("galore_rank") == "64");
  CHECK(yaml_keys(g[10].text).at("pure_bf16") == "true");
  // Model parallelism: neither.
  in.layout.tp = 2;
  CHECK_FALSE(launch_configs(in)[9].supported);
  CHECK_FALSE(launch_configs(in)[10].supported);
}

TEST_CASE("PEFT's modules_to_save reaches every format that builds LoRA adapters, by the checkpoint's names", "[launch][peft]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  LaunchInput in;
  in.arch = &a;
  in.model_id = "meta-llama/Llama-3.1-8B";
  in.setup = bf16(1, 2048, 1);
  in.setup.method = Method::kLora;
  in.setup.lora_targets = {"all-linear"};
  in.setup.lora_saves_embedding = true;
  in.setup.lora_saves_head = true;
  std::map<std::string, std::string> text;
  std::map<std::string, std::vector<std::string>> notes;
  for (const LaunchFormat& f : launch_configs(in)) {
    text[f.format] = f.text;
    notes[f.format] = f.notes;
  }
  // trl @ f2cd5771 model_config.py lora_modules_to_save; axolotl schemas/peft.py lora_modules_to_save;
  // LLaMA-Factory hparams/finetuning_args.py additional_target; PEFT LoraConfig / Unsloth get_peft_model modules_to_save.
  CHECK(text["trl_sft_yaml"].find("lora_modules_to_save: [\"embed_tokens\", \"lm_head\"]") != std::string::npos);
  CHECK(text["axolotl_yaml"].find("lora_modules_to_save: [\"embed_tokens\", \"lm_head\"]") != std::string::npos);
  CHECK(text["llamafactory_yaml"].find("additional_target: embed_tokens,lm_head\n") != std::string::npos);
  CHECK(text["python_script"].find("modules_to_save=[\"embed_tokens\", \"lm_head\"]") != std::string::npos);
  CHECK(text["unsloth_python"].find("modules_to_save=[\"embed_tokens\", \"lm_head\"]") != std::string::npos);
  bool said = false;
  for (const std::string& n : notes["torchtune_command"]) said = said || n.find("modules_to_save") != std::string::npos;
  CHECK(said);
}

TEST_CASE("BAdam reaches the LLaMA-Factory file, and the other formats say they train every layer", "[launch][badam]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  LaunchInput in;
  in.arch = &a;
  in.model_id = "meta-llama/Llama-3.1-8B";
  in.setup = bf16(1, 2048, 1);
  in.setup.method = Method::kFull;
  in.setup.badam_active_layer = 0;
  for (const LaunchFormat& f : launch_configs(in)) {
    bool said = false;
    for (const std::string& n : f.notes) said = said || n.find("BAdam is not a setting here") != std::string::npos;
    if (f.format == "llamafactory_yaml") {
      // LLaMA-Factory hparams/finetuning_args.py use_badam, badam_mode, badam_start_block.
      CHECK(f.text.find("finetuning_type: full\nuse_badam: true\nbadam_mode: layer\nbadam_start_block: 0\n") != std::string::npos);
      CHECK_FALSE(said);
    } else {
      CHECK(said);
    }
  }
  in.setup.badam_active_layer = -1;
  for (const LaunchFormat& f : launch_configs(in)) CHECK(f.text.find("use_badam") == std::string::npos);
}

TEST_CASE("a framework's own format refuses a method that framework cannot train, and says which it trains", "[launch][peft]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  LaunchInput in;
  in.arch = &a;
  in.model_id = "meta-llama/Llama-3.1-8B";
  in.setup = bf16(1, 2048, 1);
  in.setup.method = Method::kLoha;
  in.setup.lora_rank = 8;
  for (const LaunchFormat& f : launch_configs(in)) {
    INFO(f.format);
    if (f.format == "axolotl_yaml") {
      // Axolotl's adapter: lora / qlora (frameworks/axolotl/profile.cpp): no LoHa, so no file that trains something else.
      CHECK_FALSE(f.supported);
      CHECK(f.text.empty());
      REQUIRE(f.notes.size() == 1);
      CHECK(f.notes[0] == "axolotl.yaml cannot train loha: its framework trains full, lora, qlora, dora");
    }
    if (f.format == "python_script") CHECK(f.text.find("LoHaConfig(r=8") != std::string::npos);
  }
  // Every method: a supported framework-specific file belongs to a framework that trains it.
  const std::pair<const char*, Framework> owned[] = {{"axolotl_yaml", Framework::kAxolotl}, {"llamafactory_yaml", Framework::kLlamaFactory},
                                                     {"torchtune_command", Framework::kTorchtune}, {"unsloth_python", Framework::kUnsloth},
                                                     {"megatron_args", Framework::kMegatron}, {"torchtitan_toml", Framework::kTorchtitan}};
  for (const auto& [name, method] : kMethodNames) {
    if (method == Method::kAdapter || method == Method::kAdapterV2) continue;  // LitGPT's own adapters
    in.setup = bf16(1, 2048, 1);
    in.setup.method = method;
    for (const LaunchFormat& f : launch_configs(in)) {
      for (const auto& [format, framework] : owned) {
        INFO(name << " " << format);
        if (f.format == format && f.supported) CHECK(framework_capabilities(framework).methods[static_cast<int>(method)]);
      }
    }
  }
}
