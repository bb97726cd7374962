// Hugging Face Trainer (+ PEFT): its launch files (frameworks/launch.h; the writers' shared
// machinery: launch_common.h; its profile: profile.cpp).
// Option names:
//   accelerate: docs/source/usage_guides/fsdp.md and deepspeed.md, `accelerate config` output
//     (compute_environment, distributed_type, mixed_precision, num_machines, num_processes,
//     machine_rank, main_process_ip/port, fsdp_config.fsdp_*, deepspeed_config.*; FSDP's
//     HYBRID_SHARD shards within each node, fsdp_activation_checkpointing wraps whole blocks).
//   Python script: transformers v5.15.0 TrainingArguments (per_device_train_batch_size,
//     gradient_accumulation_steps, gradient_checkpointing, bf16, fp16), BitsAndBytesConfig; peft @
//     5d602fdb LoraConfig, get_peft_model, prepare_model_for_kbit_training; deepspeed.initialize and
//     the `deepspeed` launcher's --num_nodes / --num_gpus; `accelerate launch --num_processes`.
#include "frameworks/launch_common.h"

namespace memfit::launch_files {

namespace {

// LoRA target roles (request names) as Hugging Face module names (Llama-style models).
std::vector<std::string> hf_modules(const std::vector<std::string>& roles) {
  static constexpr std::pair<const char*, const char*> kNames[] = {{"q", "q_proj"},       {"k", "k_proj"},   {"v", "v_proj"},
                                                                   {"o", "o_proj"},       {"gate", "gate_proj"},
                                                                   {"up", "up_proj"},     {"down", "down_proj"},
                                                                   {"head", "lm_head"}};
  std::vector<std::string> out;
  for (const std::string& r : roles) {
    std::string name = r;
    for (const auto& [role, module] : kNames) {
      if (r == role) name = module;
    }
    out.push_back(name);
  }
  return out;
}

// The training script's model setup: the 4-bit base (bitsandbytes), the adapters (PEFT) or the
// frozen blocks, and activation checkpointing. transformers v5.15.0 BitsAndBytesConfig
// (load_in_4bit, bnb_4bit_quant_type, bnb_4bit_use_double_quant, bnb_4bit_compute_dtype,
// bnb_4bit_quant_storage); peft @ 5d602fdb LoraConfig (r, lora_alpha, lora_dropout,
// target_modules, use_dora), prepare_model_for_kbit_training, get_peft_model.
// PEFT's other methods as their config classes take them (peft v0.21.2 tuners/{ia3,loha,lokr,vera,
// prompt_tuning,prefix_tuning,adaption_prompt,p_tuning,oft,boft,ln_tuning,miss,glora}/config.py: target_modules,
// feedforward_modules, r, num_virtual_tokens, adapter_len, adapter_layers, encoder_reparameterization_type,
// oft_block_size, boft_block_size; tuners/{fourierft,waveft,hira,shira,c3a,delora,gralora,peanut}/config.py: n_frequency, r, block_size;
// tuners/{road,osf,deft,beft,trainable_tokens}/config.py: variant, rank_pattern, para, token_indices;
// tuners/{adalora,psoft,randlora}/config.py: init_r, total_step, r).
void python_other_peft(Text& p, const TrainingSetup& t, const ModelArchitecture& a) {
  const std::int64_t num_layers = a.num_layers;
  if (!base_frozen(t.method) || is_lora_like(t.method)) return;
  std::vector<std::string> targets = hf_modules(t.lora_targets);
  const std::string target_text = targets.size() == 1 && targets[0] == "all-linear" ? "\"all-linear\"" : python_list(targets);
  const SharedAdapterShape& s = t.shared_adapter;
  p << "model = get_peft_model(model, ";
  switch (t.method) {
    case Method::kIa3: p << "IA3Config(target_modules=" << target_text << ", feedforward_modules=[\"down_proj\"]"; break;
    case Method::kLoha: p << "LoHaConfig(r=" << t.lora_rank << ", target_modules=" << target_text; break;
    case Method::kLokr: p << "LoKrConfig(r=" << t.lora_rank << ", target_modules=" << target_text; break;
    case Method::kVera: p << "VeraConfig(r=" << t.lora_rank << ", target_modules=" << target_text; break;
    case Method::kPromptTuning: p << "PromptTuningConfig(num_virtual_tokens=" << t.virtual_tokens; break;
    case Method::kPTuning:
      p << "PromptEncoderConfig(num_virtual_tokens=" << t.virtual_tokens << ", encoder_reparameterization_type=\""
        << (t.prompt_encoder == PromptEncoder::kLstm ? "LSTM" : "MLP") << "\"";
      break;
    case Method::kOft:
      p << "OFTConfig(r=" << t.oft_blocks << ", oft_block_size=" << (t.oft_blocks > 0 ? 0 : orthogonal_block(t))
        << ", target_modules=" << target_text;
      break;
    case Method::kBoft: p << "BOFTConfig(boft_block_size=" << orthogonal_block(t) << ", target_modules=" << target_text; break;
    case Method::kLnTuning: p << "LNTuningConfig(target_modules=[\"input_layernorm\", \"post_attention_layernorm\", \"norm\"]"; break;
    case Method::kMiss:
      p << "MissConfig(r=" << t.lora_rank << ", init_weights="
        << (t.miss_shape == MissShape::kDefault ? std::string("True") : "\"" + std::string(name_of(t.miss_shape, kMissShapeNames)) + "\"")
        << ", mini_r=" << t.miss_mini_r << ", target_modules=" << target_text;
      break;
    case Method::kGlora:
      p << "GloraConfig(r=" << t.lora_rank << ", config_A_B=\"" << name_of(t.glora_a_b, kGloraPathNames)
        << "\", target_modules=" << target_text;
      break;
    case Method::kAdaptionPrompt:
      p << "AdaptionPromptConfig(adapter_len=" << t.adapter_prompt_length << ", adapter_layers="
        << num_layers - std::min(t.adapter_start_layer, num_layers);
      break;
    case Method::kFourierFt:
    case Method::kWaveFt:
      p << peft_config_class(t.method) << "(n_frequency=" << spectral_frequencies(t) << ", target_modules=" << target_text;
      break;
    case Method::kHira:
    case Method::kShira:
    case Method::kDelora:
    case Method::kGralora:
    case Method::kPvera:
    case Method::kUnilora:
    case Method::kPsoft:
    case Method::kRandlora:
    case Method::kPeanut: p << peft_config_class(t.method) << "(r=" << t.lora_rank << ", target_modules=" << target_text; break;
    // tuners/adalora/config.py: init_r is the trained rank; total_step (required) as the script's max_steps.
    case Method::kAdalora:
      p << "AdaLoraConfig(init_r=" << t.lora_rank << ", total_step=1000, target_modules=" << target_text;
      break;
    case Method::kC3a: p << "C3AConfig(block_size=" << circulant_block(t) << ", target_modules=" << target_text; break;
    // peft v0.21.2 tuners/{lily,tinylora,vblora,frod,adamss}/config.py: r, stride_A, num_B, u, weight_tying,
    // num_vectors, vector_length, topk, sparse_rate, runtime_offload_base_weight, num_subspaces, subspace_rank.
    case Method::kLily:
      p << "LilyConfig(r=" << t.lora_rank << ", stride_A=" << s.lily_stride_a << ", num_B=" << s.lily_num_b
        << ", target_modules=" << target_text;
      break;
    case Method::kTinyLora:
      p << "TinyLoraConfig(r=" << t.lora_rank << ", u=" << s.tinylora_u << ", weight_tying=" << s.tinylora_weight_tying
        << ", target_modules=" << target_text;
      break;
    case Method::kVblora:
      p << "VBLoRAConfig(r=" << t.lora_rank << ", num_vectors=" << s.vblora_num_vectors << ", vector_length="
        << s.vblora_vector_length << ", topk=" << s.vblora_topk << ", target_modules=" << target_text;
      break;
    case Method::kFrod:
      p << "FrodConfig(sparse_rate=" << s.frod_sparse_rate << ", runtime_offload_base_weight="
        << (s.frod_offload_base ? "True" : "False") << ", target_modules=" << target_text;
      break;
    case Method::kAdamss:
      p << "AdamssConfig(r=" << t.lora_rank << ", num_subspaces=" << s.adamss_subspaces << ", subspace_rank="
        << s.adamss_subspace_rank << ", target_modules=" << target_text;
      break;
    case Method::kRoad:
      p << "RoadConfig(variant=\"" << name_of(t.road_variant, kRoadVariantNames) << "\", target_modules=" << target_text;
      break;
    case Method::kDeft:
      p << "DeftConfig(r=" << t.lora_rank << ", para=" << (t.deft_para ? "True" : "False") << ", target_modules=" << target_text;
      break;
    case Method::kBeft: p << "BeftConfig(target_modules=" << target_text; break;
    case Method::kOsf: {
      p << "OSFConfig(target_modules=" << target_text;
      if (t.lora_rank <= 0) break;
      // memfit's lora.rank is the trainable rank: PEFT's effective_rank is min(in, out) minus it, per module.
      const std::int64_t h = a.hidden_size, q = a.attention.num_heads * a.attention.head_dim;
      const std::int64_t kv = a.attention.num_kv_heads * a.attention.head_dim, f = a.mlp.intermediate_size;
      const std::pair<const char*, std::int64_t> dims[] = {{"q_proj", std::min(h, q)}, {"k_proj", std::min(h, kv)},
                                                           {"v_proj", std::min(h, kv)}, {"o_proj", std::min(h, q)},
                                                           {"gate_proj", std::min(h, f)}, {"up_proj", std::min(h, f)},
                                                           {"down_proj", std::min(h, f)}};
      p << ", rank_pattern={";
      for (const auto& [module, m] : dims) p << (module == dims[0].first ? "" : ", ") << "\"" << module << "\": " << m - std::min(t.lora_rank, m - 1);
      p << "}";
      break;
    }
    case Method::kTrainableTokens:
      p << "TrainableTokensConfig(token_indices=list(range(" << t.trainable_token_count << ")), target_modules=[\"embed_tokens\"]";
      break;
    default: p << "PrefixTuningConfig(num_virtual_tokens=" << t.virtual_tokens; break;
  }
  p << ", task_type=\"CAUSAL_LM\"))\n";
}

void python_model_setup(Text& p, const LaunchInput& in, const char* torch_dtype) {
  const TrainingSetup& t = in.setup;
  const bool lora = is_lora_like(t.method);
  if (t.method == Method::kQlora) {
    p << "quantization = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\", bnb_4bit_use_double_quant=True,\n"
      << "                                  bnb_4bit_compute_dtype=" << torch_dtype << ", bnb_4bit_quant_storage=" << torch_dtype << ")\n";
  }
  p << "model = AutoModelForCausalLM.from_pretrained(MODEL, dtype=" << torch_dtype
    << (t.method == Method::kQlora ? ", quantization_config=quantization" : "") << ")\n";
  const bool ckpt = t.checkpointing != Checkpointing::kNone;
  if (t.method == Method::kQlora) p << "model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=" << (ckpt ? "True" : "False") << ")\n";
  if (lora) {
    std::vector<std::string> targets = hf_modules(t.lora_targets);
    const std::string target_text = targets.size() == 1 && targets[0] == "all-linear" ? "\"all-linear\"" : python_list(targets);
    p << "model = get_peft_model(model, LoraConfig(r=" << t.lora_rank << ", lora_alpha=" << 2 * t.lora_rank
      << ", lora_dropout=" << t.lora_dropout << ", target_modules=" << target_text << ", use_dora="
      << (t.method == Method::kDora ? "True" : "False") << lora_init_argument(t);
    if (const std::string saved = saved_modules(t, *in.arch); !saved.empty()) p << ", modules_to_save=[" << saved << "]";
    p << ", task_type=\"CAUSAL_LM\"))\n";
  }
  python_other_peft(p, t, *in.arch);
  if (t.method == Method::kFreeze) {
    p << "TRAINABLE_BLOCKS = " << t.freeze_trainable_layers << "  # the last blocks train, everything else is frozen\n"
      << "for p in model.parameters():\n    p.requires_grad_(False)\n"
      << "for block in model.model.layers[-TRAINABLE_BLOCKS:]:\n    block.requires_grad_(True)\n";
  }
}

const char* torch_dtype_of(Precision p) {
  switch (p) {
    case Precision::kFp16: return "torch.float16";
    case Precision::kBf16:
    case Precision::kFp8: return "torch.bfloat16";
    default: return "torch.float32";  // fp32 and AMP: fp32 weights
  }
}

}  // namespace

LaunchFormat accelerate(const LaunchInput& in) {
  LaunchFormat f = named("accelerate_yaml", "accelerate_config.yaml");
  const ParallelLayout& l = in.layout;
  if (model_parallel(l)) {
    f.supported = false;
    f.notes.emplace_back("accelerate's config covers data parallelism (DDP, FSDP, DeepSpeed ZeRO); for tp/pp/cp/ep use Megatron-LM or torchtitan");
    return f;
  }
  Text y;
  const std::string dt = dtype_name(in.setup.precision);
  const bool ds = l.sharding == Sharding::kZero1 || in.setup.offload == Offload::kOptimizer;
  const bool fsdp = !ds && (l.sharding == Sharding::kZero2 || l.sharding == Sharding::kZero3);
  const bool hybrid = l.shard_degree > 0 && l.shard_degree < l.dp;
  if (ds && deepspeed_ignores_offload(in)) {
    f.supported = false;
    f.notes.emplace_back(kDeepSpeedOffloadStages);
    return f;
  }
  if (fsdp && hybrid && l.shard_degree != in.gpus_per_node) {
    f.supported = false;
    f.notes.emplace_back("accelerate's FSDP hybrid sharding shards within each node; a shard group of " + std::to_string(l.shard_degree) +
                         " ranks on nodes of " + std::to_string(in.gpus_per_node) + " GPUs is not an accelerate option");
    return f;
  }
  y << "compute_environment: LOCAL_MACHINE\n";
  y << "distributed_type: " << (ds ? "DEEPSPEED" : fsdp ? "FSDP" : l.gpus() > 1 ? "MULTI_GPU" : "NO") << "\n";
  y << "mixed_precision: " << (dt == "fp32" ? "no" : dt) << "\n";
  y << "num_machines: " << nodes(in) << "\n";
  y << "num_processes: " << l.gpus() << "\n";
  y << "machine_rank: 0\n";
  if (nodes(in) > 1) {
    y << "main_process_ip: 10.0.0.1\n";
    y << "main_process_port: 29500\n";
  }
  y << "main_training_function: main\n";
  if (ds) {
    y << "deepspeed_config:\n";
    y << "  zero_stage: " << deepspeed_stage(in) << "\n";
    y << "  gradient_accumulation_steps: " << in.setup.grad_accum << "\n";
    y << "  offload_optimizer_device: " << (in.setup.offload == Offload::kNone ? "none" : "cpu") << "\n";
    y << "  offload_param_device: " << (in.setup.offload == Offload::kParamsOptimizer ? "cpu" : "none") << "\n";
    y << "  zero3_init_flag: " << (l.sharding == Sharding::kZero3 ? "true" : "false") << "\n";
    if (nodes(in) > 1) y << "  deepspeed_multinode_launcher: standard\n";
  } else if (fsdp) {
    y << "fsdp_config:\n";
    const char* strategy = l.sharding == Sharding::kZero2 ? (hybrid ? "HYBRID_SHARD_ZERO2" : "SHARD_GRAD_OP") : hybrid ? "HYBRID_SHARD" : "FULL_SHARD";
    y << "  fsdp_sharding_strategy: " << strategy << "\n";
    y << "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n";
    y << "  fsdp_backward_prefetch: BACKWARD_PRE\n";
    y << "  fsdp_offload_params: " << (in.setup.offload == Offload::kParamsOptimizer ? "true" : "false") << "\n";
    y << "  fsdp_state_dict_type: SHARDED_STATE_DICT\n";
    y << "  fsdp_cpu_ram_efficient_loading: true\n";
    y << "  fsdp_sync_module_states: true\n";
    y << "  fsdp_use_orig_params: true\n";
    y << "  fsdp_activation_checkpointing: " << (in.setup.checkpointing == Checkpointing::kNone ? "false" : "true") << "\n";
  }
  f.text = y.str();
  if (nodes(in) > 1) {
    f.notes.emplace_back("multi-node: set main_process_ip to the first node's address and machine_rank to each node's index (0 on the first)");
  }
  if (fsdp && in.setup.checkpointing == Checkpointing::kSelective) {
    f.notes.emplace_back("fsdp_activation_checkpointing recomputes whole blocks (full checkpointing); selective checkpointing is set in the model code");
  }
  f.notes.emplace_back("per-device batch size " + std::to_string(in.setup.micro_batch) + " and gradient_accumulation_steps " +
                       std::to_string(in.setup.grad_accum) + " go to the training script (TrainingArguments)");
  return f;
}

// A Python training script: the Hugging Face Trainer (launched by accelerate with
// accelerate_config.yaml) or, for the deepspeed framework, a DeepSpeed engine loop over the same
// model (launched by the deepspeed launcher with ds_config.json).
LaunchFormat python_script(const LaunchInput& in) {
  LaunchFormat f = named("python_script", "train.py");
  const ParallelLayout& l = in.layout;
  const TrainingSetup& t = in.setup;
  if (model_parallel(l) && in.framework != Framework::kDeepspeed) {
    f.supported = false;
    f.notes.emplace_back("the Trainer script runs data parallelism (DDP, FSDP, DeepSpeed ZeRO); for tp/pp/cp/ep use Megatron-LM or torchtitan");
    return f;
  }
  const bool deepspeed_loop = in.framework == Framework::kDeepspeed;
  if (deepspeed_loop && (l.pp > 1 || l.cp > 1 || l.ep > 1)) {
    f.supported = false;
    f.notes.emplace_back("a DeepSpeed engine loop sets tensor parallelism (AutoTP) in ds_config.json; pipeline, context and expert parallelism need model code");
    return f;
  }
  const char* dtype = torch_dtype_of(t.precision);
  const std::string mixed = dtype_name(t.precision);
  Text p;
  if (deepspeed_loop) {
    p << "# deepspeed --num_nodes " << nodes(in) << " --num_gpus " << std::min(in.gpus_per_node, l.gpus()) << " train.py\n";
  } else {
    p << "# accelerate launch --config_file accelerate_config.yaml --num_processes " << l.gpus() << " train.py\n";
  }
  p << "import torch\n";
  p << (deepspeed_loop ? "import deepspeed\nfrom transformers import AutoModelForCausalLM\n"
                       : "from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer, TrainingArguments\n");
  if (is_lora_like(t.method)) p << "from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training\n";
  else if (base_frozen(t.method)) p << "from peft import " << peft_config_class(t.method) << ", get_peft_model\n";
  p << "\nMODEL = \"" << in.model_id << "\"\n";
  python_model_setup(p, in, dtype);
  const bool ckpt = t.checkpointing != Checkpointing::kNone;
  if (deepspeed_loop) {
    if (ckpt) p << "model.gradient_checkpointing_enable()\n";
    p << "engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=[p for p in model.parameters() if p.requires_grad],\n"
      << "                                             config=\"ds_config.json\")  # micro-batch " << t.micro_batch
      << ", accumulation " << t.grad_accum << "\n";
    p << "for batch in loader:  # sequences of " << t.seq_len << " tokens, " << t.micro_batch << " per GPU\n"
      << "    loss = engine(**batch).loss\n    engine.backward(loss)\n";
    // AdaLoRA's allocator reads the gradients, which engine.step() zeroes (safe_get_full_grad under ZeRO).
    if (t.method == Method::kAdalora) p << "    model.base_model.update_and_allocate(engine.global_steps)  # AdaLoRA's rank allocator\n";
    p << "    engine.step()\n";
  } else {
    p << "args = TrainingArguments(output_dir=\"out\", per_device_train_batch_size=" << t.micro_batch
      << ", gradient_accumulation_steps=" << t.grad_accum << ",\n"
      << "                         gradient_checkpointing=" << (ckpt ? "True" : "False") << ", bf16=" << (mixed == "bf16" ? "True" : "False")
      << ", fp16=" << (mixed == "fp16" ? "True" : "False");
    const std::string optim = hf_optim_name(t);
    if (!optim.empty()) p << ",\n                         optim=\"" << optim << "\"";
    // GaLore / APOLLO: the projected modules and the projection's rank and gap (transformers
    // _get_galore_optimizer / _get_apollo_optimizer read optim_target_modules and optim_args).
    if (projects_gradients(t.optimizer)) {
      p << ", optim_target_modules=[\"attn\", \"mlp\"],\n                         optim_args=\"rank=" << t.projection_rank
        << ",update_proj_gap=" << t.projection_update_gap << (t.optimizer == Optimizer::kApolloMini ? ",scale_type=tensor,scale=128" : "")
        << "\"";
    }
    p << ", max_steps=1000)\n";
    const bool adalora = t.method == Method::kAdalora;
    if (adalora) {
      // peft v0.21.2 tuners/adalora/model.py update_and_allocate: after each optimizer step, before
      // zero_grad; transformers' Trainer calls on_optimizer_step there.
      p << "from transformers import TrainerCallback\n\n\nclass AdaLoraAllocate(TrainerCallback):\n"
        << "    def on_optimizer_step(self, args, state, control, **kwargs):\n"
        << "        model.base_model.update_and_allocate(state.global_step)\n\n\n";
    }
    p << "trainer = Trainer(model=model, args=args, train_dataset=dataset" << (adalora ? ", callbacks=[AdaLoraAllocate()]" : "")
      << ")  # your dataset: sequences of " << t.seq_len << " tokens\n"
      << "trainer.train()\n";
  }
  f.text = p.str();
  if (!deepspeed_loop && hf_optim_name(t).empty()) {
    f.notes.emplace_back("TrainingArguments has no optim name for this optimizer: build it and pass Trainer(optimizers=(optimizer, None))");
  }
  if (t.checkpointing == Checkpointing::kSelective) {
    f.notes.emplace_back("gradient_checkpointing recomputes whole decoder layers (full); selective recompute is not a Trainer option");
  }
  return f;
}

}  // namespace memfit::launch_files
