// Estimate -> JSON (see estimate_json.h).
#include "export/estimate_json.h"

#include "common/units.h"
#include "training/peft_linear_adapters.h"
#include "training/peft_shared_adapters.h"
#include "training/setup_names.h"

namespace memfit {

namespace {

Json breakdown_to_json(const Breakdown& b) {
  return Json{{"weights_bytes", b.weights_bytes},
              {"gradients_bytes", b.gradients_bytes},
              {"optimizer_states_bytes", b.optimizer_states_bytes},
              {"activations_bytes", b.activations_bytes},
              {"logits_loss_bytes", b.logits_loss_bytes},
              {"temporaries_bytes", b.temporaries_bytes},
              {"communication_bytes", b.communication_bytes}};
}

}  // namespace

Json training_to_json(const TrainingSetup& t) {
  Json j{{"method", name_of(t.method, kMethodNames)},
         {"base_quant", name_of(effective_base_quant(t), kBaseQuantNames)},
         {"precision", name_of(t.precision, kPrecisionNames)},
         {"optimizer", name_of(t.optimizer, kOptimizerNames)},
         {"optimizer_impl", name_of(t.optimizer_impl, kOptimizerImplNames)},
         {"optimizer_in_backward", t.optimizer_in_backward},
         {"micro_batch", t.micro_batch},
         {"grad_accum", t.grad_accum},
         {"seq_len", t.seq_len},
         {"packed", t.packed},
         {"activation_checkpointing", name_of(t.checkpointing, kCheckpointingNames)},
         {"offload", name_of(t.offload, kOffloadNames)},
         {"attention", name_of(t.attention, kAttentionNames)},
         {"loss", name_of(t.loss, kLossNames)},
         {"compile", t.compile},
         {"expandable_segments", t.expandable_segments}};
  if (t.cuda_launch_blocking) j["cuda_launch_blocking"] = true;  // echoed when set (a step-time setting only)
  if (t.loss == LossKernel::kChunked) {
    if (t.loss_chunk_tokens > 0) j["loss_chunk_tokens"] = t.loss_chunk_tokens;
    else j["loss_chunks"] = t.loss_chunks;
  }
  if (t.compile_regions) j["compile_scope"] = "regions";  // echoed when set (the default is the whole model)
  if (t.liger_kernels) j["liger_kernels"] = true;
  if (is_adapter_method(t.method)) {
    if (is_shared_peft_adapter(t.method)) {
      j["lora"] = {{"targets", t.lora_targets}};
      if (t.method != Method::kFrod) j["lora"]["rank"] = t.lora_rank;
    } else if (is_more_peft_adapter(t.method)) {
      j["lora"] = {{"targets", t.lora_targets}};
      if (t.method == Method::kFourierFt || t.method == Method::kWaveFt) j["lora"]["n_frequency"] = spectral_frequencies(t);
      if (is_ranked_more_peft_adapter(t.method) && t.lora_rank > 0) j["lora"]["rank"] = t.lora_rank;  // osf: 0 is PEFT's half
      if (t.method == Method::kC3a) j["lora"]["block_size"] = circulant_block(t);
    } else if (is_orthogonal(t.method)) {
      j["lora"] = {{"targets", t.lora_targets}};
      if (t.oft_blocks > 0) j["lora"]["rank"] = t.oft_blocks;
      else j["lora"]["block_size"] = orthogonal_block(t);
    } else j["lora"] = {{"rank", t.lora_rank}, {"targets", t.lora_targets}, {"dropout", t.lora_dropout}};
    if (is_lora_like(t.method)) j["lora"]["init"] = name_of(t.lora_init, kLoraInitNames);
    if (t.lora_saves_embedding || t.lora_saves_head) {
      Json saved = Json::array();
      if (t.lora_saves_embedding) saved.push_back("embedding");
      if (t.lora_saves_head) saved.push_back("head");
      j["lora"]["modules_to_save"] = saved;
    }
  }
  if (t.method == Method::kMiss) {
    j["miss"] = {{"init", name_of(t.miss_shape, kMissShapeNames)}};
    if (t.miss_shape == MissShape::kMini) j["miss"]["mini_r"] = t.miss_mini_r;
  }
  if (t.method == Method::kGlora) j["glora"] = {{"a_b", name_of(t.glora_a_b, kGloraPathNames)}};
  const SharedAdapterShape& sh = t.shared_adapter;
  if (t.method == Method::kLily) j["lily"] = {{"stride_a", sh.lily_stride_a}, {"num_b", sh.lily_num_b}};
  if (t.method == Method::kTinyLora) j["tinylora"] = {{"u", sh.tinylora_u}, {"weight_tying", sh.tinylora_weight_tying}};
  if (t.method == Method::kVblora) {
    j["vblora"] = {{"num_vectors", sh.vblora_num_vectors}, {"vector_length", sh.vblora_vector_length}, {"topk", sh.vblora_topk}};
  }
  if (t.method == Method::kFrod) j["frod"] = {{"sparse_rate", sh.frod_sparse_rate}, {"offload_base_weight", sh.frod_offload_base}};
  if (t.method == Method::kAdamss) j["adamss"] = {{"subspaces", sh.adamss_subspaces}, {"subspace_rank", sh.adamss_subspace_rank}};
  if (t.method == Method::kRoad) j["road"] = {{"variant", name_of(t.road_variant, kRoadVariantNames)}};
  if (t.method == Method::kDeft) j["deft"] = {{"para", t.deft_para}};
  if (t.method == Method::kTrainableTokens) j["trainable_tokens"] = {{"count", t.trainable_token_count}};
  if (is_prompt_method(t.method)) j["virtual_tokens"] = t.virtual_tokens;
  if (t.method == Method::kPTuning) j["prompt_encoder"] = name_of(t.prompt_encoder, kPromptEncoderNames);
  if (is_llama_adapter(t.method)) j["adapter"] = {{"prompt_length", t.adapter_prompt_length}, {"start_layer", t.adapter_start_layer}};
  if (t.method == Method::kFreeze) j["freeze_trainable_layers"] = t.freeze_trainable_layers;
  if (t.method == Method::kFull && t.badam_active_layer >= 0) j["badam"] = {{"active_layer", t.badam_active_layer}};
  if (t.checkpointing == Checkpointing::kSelective) {
    j["selective"] = t.selective_layer_period > 0 ? "every " + std::to_string(t.selective_layer_period) + " layers"
                     : t.selective_every_other_mm ? "every other matmul output kept" : "attention core recomputed";
  }
  if (amp_like(t)) j["amp_weights"] = name_of(t.amp_weights, kAmpWeightsNames);
  if (projects_gradients(t.optimizer)) j["projection"] = {{"rank", t.projection_rank}, {"update_gap", t.projection_update_gap}};
  return j;
}

Json framework_to_json(const FrameworkProfile& p, const TrainingSetup& t) {
  Json counters = Json::array();
  if (p.logged_counters.empty()) counters.push_back(name_of(t.logged_counter, kMemoryCounterNames));
  for (const MemoryCounter c : p.logged_counters) counters.push_back(name_of(c, kMemoryCounterNames));
  return Json{{"id", p.key},
              {"name", p.name},
              {"logged_counter", name_of(t.logged_counter, kMemoryCounterNames)},
              {"logged_counters", counters},
              {"logits_upcast", t.logits_upcast},
              {"logits_upcast_in_model", t.logits_upcast_in_model},
              {"outputs_held_across_steps", t.outputs_held_across_steps},
              {"adapters_fp32", t.adapters_fp32},
              {"kbit_prep_fp32", t.kbit_prep_fp32},
              {"embeddings_fp32", t.embeddings_fp32},
              {"sources", p.sources}};
}

Json estimate_to_json(const Estimate& e, const RuntimeProfile& rt, bool include_timeline) {
  const ModelStates& s = e.states;
  // At the peak: allocated categories, with fp32 master weights (AMP) reported apart from the
  // weights, then what lies outside the allocated bytes, so every part sums to the device total.
  Json at_peak = breakdown_to_json(e.at_peak);
  const std::int64_t master = std::min(s.master_weights_bytes, e.at_peak.weights_bytes);
  at_peak["weights_bytes"] = e.at_peak.weights_bytes - master;
  at_peak["master_weights_bytes"] = master;
  at_peak["allocator_cache_bytes"] = e.peak_reserved_bytes - e.peak_allocated_bytes;
  at_peak["cublas_workspace_bytes"] = rt.cublas_workspace_bytes;
  at_peak["cuda_context_bytes"] = rt.cuda_context_bytes;
  at_peak["outside_allocator_bytes"] = s.unmanaged_optimizer_states_bytes;
  at_peak["nccl_bytes"] = e.nccl_bytes;

  Json j{{"peak_allocated_bytes", e.peak_allocated_bytes},
         {"peak_active_bytes", e.peak_active_bytes},
         {"peak_tensor_bytes", e.peak_tensor_bytes},
         {"peak_reserved_bytes", e.peak_reserved_bytes},
         {"device_total_bytes", e.device_total_bytes},
         // NVML's v1 `used` (pynvml, trackio, wandb): the device total and the driver's reservation.
         {"nvml_used_bytes", e.device_total_bytes + rt.nvml_v1_reserved_bytes},
         {"first_step_peak_allocated_bytes", e.first_step_peak_allocated_bytes},
         {"loss_segments_remapped_bytes", e.loss_segments_remapped_bytes},
         {"peak_allocated_gib", to_gib(e.peak_allocated_bytes)},
         {"peak_reserved_gib", to_gib(e.peak_reserved_bytes)},
         {"device_total_gib", to_gib(e.device_total_bytes)},
         {"model_states_bytes", s.total_bytes()},
         {"activations_peak_bytes", e.activations_peak_bytes},
         {"host_bytes", s.host_bytes},
         {"tokens_per_micro_batch", e.tokens_per_micro_batch},
         {"peak", {{"phase", e.peak_phase}, {"label", e.peak_label}, {"layer", e.peak_layer}}},
         {"breakdown", at_peak},
         {"states",
          {{"total_params", s.total_params},
           {"trainable_params", s.trainable_params},
           {"adapter_params", s.adapter_params},
           {"weights_bytes", s.weights_bytes},
           {"master_weights_bytes", s.master_weights_bytes},
           {"gradients_bytes", s.gradients_bytes},
           {"optimizer_states_bytes", s.optimizer_states_bytes + s.unmanaged_optimizer_states_bytes},
           {"optimizer_step_temp_bytes", s.optimizer_step_temp_bytes}}},
         {"runtime",
          {{"cuda_context_bytes", rt.cuda_context_bytes},
           {"cublas_workspace_bytes", rt.cublas_workspace_bytes},
           {"large_block_slack_bytes", rt.large_block_slack_bytes},
           {"provisional", true}}}};
  if (include_timeline) {
    Json events = Json::array();
    for (const TimelineEvent& ev : e.timeline) {
      Json x = breakdown_to_json(ev.live);
      x["phase"] = ev.phase;
      x["label"] = ev.label;
      x["layer"] = ev.layer;
      x["live_bytes"] = ev.live.total();
      x["start_s"] = ev.start_s;
      x["end_s"] = ev.end_s;
      events.push_back(std::move(x));
    }
    j["timeline"] = std::move(events);
  }
  return j;
}

Json layout_to_json(const ParallelLayout& l) {
  const DistributedBehaviour& b = l.behaviour;
  Json j{{"dp", l.dp}, {"tp", l.tp}, {"pp", l.pp}, {"vpp", l.vpp}, {"cp", l.cp}, {"ep", l.ep}, {"etp", l.expert_tp()},
         {"cp_kind", name_of(l.cp_kind, kCpKindNames)},
         {"sequence_parallel", l.sequence_parallel},
         {"sharding", name_of(l.sharding, kShardingNames)},
         {"shard_degree", l.dense_shard()},
         {"schedule", name_of(l.schedule, kScheduleNames)},
         {"gpus", l.gpus()},
         {"behaviour",
          {{"ddp_bucket_copy", b.ddp_bucket_copy},
           {"grad_buffer_at_init", b.grad_buffer_at_init},
           {"zero3_grad_partition_at_init", b.zero3_grad_partition_at_init},
           {"fp32_grads_at_step", b.fp32_grads_at_step},
           {"fp32_grad_sub_group_elements", b.fp32_grad_sub_group_elements},
           {"zero_offload_grads_on_host", b.zero_offload_grads_on_host},
           {"zero_offload_grad_check_bytes_per_element", b.zero_offload_grad_check_bytes_per_element},
           {"reduce_bucket_bytes", b.reduce_bucket_bytes},
           {"prefetch_units", b.prefetch_units},
           {"prefetch_bytes", b.prefetch_bytes},
           {"zero3_max_live_elements", b.zero3_max_live_elements},
           {"zero3_autograd_holds_gathered", b.zero3_autograd_holds_gathered},
           {"reshard_after_forward", b.reshard_after_forward},
           {"reshard_after_forward_with_pp", b.reshard_after_forward_with_pp},
           {"last_unit_kept", b.last_unit_kept},
           {"pp_defers_grad_sync", b.pp_defers_grad_sync},
           {"root_unit_gathered", b.root_unit_gathered},
           {"root_outputs_include_loss", b.root_outputs_include_loss},
           {"sharded_params_16bit", b.sharded_params_16bit},
           {"reduce_in_fp32", b.reduce_in_fp32},
           {"cp_gather_kv", b.cp_gather_kv},
           {"gather_copy_out", b.gather_copy_out},
           {"sharded_grads_on_reduce_stream", b.sharded_grads_on_reduce_stream},
           {"fsdp2_wraps_loaded_4bit_model", b.fsdp2_wraps_loaded_4bit_model},
           {"fsdp1_wrap_from_host", b.fsdp1_wrap_from_host},
           {"sp_saves_gathered_inputs", b.sp_saves_gathered_inputs},
           {"sp_collective_copies", b.sp_collective_copies},
           {"sp_gather_view_at_batch_1", b.sp_gather_view_at_batch_1},
           {"tp_sequence_parallel_only", b.tp_sequence_parallel_only},
           {"tp_backward_overlap", b.tp_backward_overlap},
           {"pp_scatter_gather", b.pp_scatter_gather},
           {"grad_add_per_micro_batch", b.grad_add_per_micro_batch},
           {"param_gather_overlaps_forward", b.param_gather_overlaps_forward},
           {"dp_reduce_overlaps_backward", b.dp_reduce_overlaps_backward},
           {"loss_parallel_decomposed", b.loss_parallel_decomposed},
           {"grads_in_param_chunks", b.grads_in_param_chunks},
           {"gather_replaces_shard", b.gather_replaces_shard},
           {"tp_row_linears", b.tp_row_linears},
           {"vocab_multiple", b.vocab_multiple}}}};
  if (!l.stage_layers.empty()) j["stage_layers"] = l.stage_layers;
  return j;
}

Json step_schedule_to_json(const std::vector<StepSpan>& spans) {
  Json out = Json::array();
  for (const StepSpan& s : spans) {
    out.push_back({{"phase", s.phase}, {"label", s.label}, {"first_layer", s.first_layer}, {"layers", s.layers},
                   {"start_s", s.start_s}, {"end_s", s.end_s}});
  }
  return out;
}

Json ranks_to_json(const DistributedEstimate& d, const RuntimeProfile& rt, bool include_timeline) {
  Json out = Json::array();
  for (std::size_t i = 0; i < d.ranks.size(); ++i) {
    const RankEstimate& r = d.ranks[i];
    Json layers = Json::array();
    for (const LayerRange& range : r.context.kind.layers) layers.push_back({range.first, range.first + range.count - 1});
    Json j = estimate_to_json(r.estimate, rt, include_timeline);
    j["kind"] = r.context.kind.name;
    j["stage"] = r.context.kind.stage;
    j["ranks"] = r.context.kind.ranks;
    j["layers"] = std::move(layers);
    j["embedding"] = r.context.kind.embedding;
    j["head"] = r.context.kind.head;
    j["micro_batch_chunks_in_flight"] = r.context.kind.chunks_in_flight;
    j["most_loaded"] = i == d.peak_rank;
    out.push_back(std::move(j));
  }
  return out;
}

Json fit_to_json(const FitReport& fit, const GpuSpec& gpu, const Estimate& e, bool searched) {
  Json j{{"verdict", verdict_name(fit.verdict)},
         {"usage_fraction", fit.usage_fraction},
         {"tight_fraction", kTightFraction},
         {"compared_bytes", e.device_total_bytes},
         {"gpu_memory_bytes", gpu.memory_total_bytes},
         {"headroom_bytes", gpu.memory_total_bytes - e.device_total_bytes}};
  if (searched) {
    j["max_micro_batch"] = fit.max_micro_batch;
    j["max_micro_batch_capped"] = fit.max_micro_batch_capped;
  }
  return j;
}

Json placement_to_json(const std::vector<StagePlacement>& placement) {
  Json out = Json::array();
  for (const StagePlacement& p : placement) {
    out.push_back({{"rank_kind", p.rank_kind}, {"gpu", p.gpu}, {"stages", p.stages}, {"device_total_bytes", p.device_total_bytes},
                   {"gpu_memory_bytes", p.gpu_memory_bytes}, {"usage_fraction", p.usage_fraction}});
  }
  return out;
}

Json gpu_mix_to_json(const std::vector<GpuGroup>& mix) {
  Json out = Json::array();
  for (const GpuGroup& g : mix) out.push_back({{"id", g.gpu.id}, {"count", g.count}, {"memory_total_bytes", g.gpu.memory_total_bytes}});
  return out;
}

}  // namespace memfit
