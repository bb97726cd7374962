// Persistent state bytes from the tensor inventory (see model_states.h for sources).
#include "memory/model_states.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "block/adapters.h"
#include "common/units.h"
#include "memory/caching_allocator.h"
#include "parallel/as_run.h"
#include "training/peft_linear_adapters.h"
#include "training/peft_shared_adapters.h"

namespace memfit {

namespace {

// bitsandbytes Optimizer8bit.init_state with optim_bits 32: state1 and state2 as float32
// (bitsandbytes 0.49.1 optim/optimizer.py), 8 bytes per parameter for AdamW.
constexpr std::int64_t kBnb32bitStateBytes = 8;

// Millionths of a byte per parameter of a quantised frozen linear with `in` input features.
std::int64_t quant_micro_bytes(BaseQuant q, std::int64_t in) {
  switch (q) {
    case BaseQuant::kNf4: return kNf4MicroBytesPerParam;
    case BaseQuant::kGptq4: return kGptq4MicroBytesPerParam;
    case BaseQuant::kInt8: return 1'000'000 + kInt8RowScaleBytes * 1'000'000 / std::max<std::int64_t>(1, in);
    case BaseQuant::kNone: break;
  }
  return 0;
}

}  // namespace

std::int64_t RankShard::held(std::int64_t first, std::int64_t count) const noexcept {
  if (layers.empty()) return count;
  std::int64_t n = 0;
  for (const LayerRange& r : layers) {
    const std::int64_t lo = std::max(first, r.first), hi = std::min(first + count, r.first + r.count);
    if (hi > lo) n += hi - lo;
  }
  return n;
}

namespace {

// Which pipeline end a model-level tensor lives on: embeddings (and what projects or normalises
// them) on the first stage, the final norm, output layer and pooler on the last.
bool on_embedding_side(const TensorSpec& s) {
  return s.kind == ModuleKind::kEmbedding || s.kind == ModuleKind::kPositionEmbedding || s.role == "project_in" ||
         (s.kind == ModuleKind::kNorm && s.name.find("embedding") != std::string::npos);
}

// Elements of one copy of `s` on a rank: Megatron splits column/row/vocab tensors over tp (a
// vocabulary padded to `padded_vocab` rows), experts over the expert tensor-parallel degree
// (tp, the Megatron-Core default, unless MoE parallel folding sets etp) and their copies over ep.
std::int64_t rank_numel(const TensorSpec& s, const RankShard& r, std::int64_t vocab) {
  std::int64_t n = s.numel();
  if (s.tp_split == TpSplit::kVocab && r.padded_vocab > vocab && !s.shape.empty() && s.shape[0] == vocab) {
    n = n / vocab * r.padded_vocab;
  }
  if (s.tp_split == TpSplit::kReplicated) return n;
  return ceil_div(n, s.kind == ModuleKind::kExpert && r.etp > 0 ? r.etp : r.tp);
}

// The optimizer states of `elems` parameters held in tensors of `tensor_elems` when one state
// tensor is larger than the allocator's small size (the large pool's), else 0.
std::int64_t large_pool_states(Optimizer o, std::int64_t tensor_elems, std::int64_t elem_bytes, std::int64_t elems) {
  const std::int64_t tensors = optimizer_state_tensors(o);
  const std::int64_t per_param = state_bytes_per_param(o, elem_bytes);
  if (tensors == 0 || checked_mul(tensor_elems, per_param, "state bytes") / tensors <= kAllocatorSmallSizeBytes) return 0;
  return checked_mul(elems, per_param, "state bytes");
}

// Adam-mini's second moments of one tensor (Adam-mini @ 402aadf adam_mini.py): one per head for q
// and k (m viewed as rows of hidden² / heads elements), one per output row for the other matrices
// (embedding, output layer, v, o, MLP), one for any other tensor (norms).
std::int64_t adam_mini_second_moments(const TensorSpec& s, const ModelArchitecture& arch) {
  if (s.shape.size() != 2) return 1;
  const std::int64_t head_numel = arch.hidden_size * arch.hidden_size / std::max<std::int64_t>(1, arch.attention.num_heads);
  if ((s.role == "q" || s.role == "k") && head_numel > 0 && s.numel() % head_numel == 0) return s.numel() / head_numel;
  return s.shape[0];
}

// Totals of one class of parameters (dense or expert), before data-parallel sharding.
struct ClassBytes {
  std::int64_t weights = 0, gradients = 0, states = 0;
};

// Newton–Schulz on one (rows x cols) matrix (torch v2.15 torch/optim/_muon.py): the Nesterov
// update grad.lerp(buf) in the parameter dtype, the bf16 copy it orthogonalises and the next one
// (addmm writes a new tensor before the old is dropped), and the m x m Gram matrix and its
// update in bf16, m the smaller side.
std::int64_t muon_step_temp_bytes(std::int64_t rows, std::int64_t cols, std::int64_t elem) {
  const std::int64_t m = std::min(rows, cols);
  return rows * cols * (elem + 2 * 2) + 2 * 2 * m * m;
}

// LLaMA-Adapter's prompt, per layer from adapter_start_layer on. LitGPT (litgpt v0.5.13 adapter.py
// CausalSelfAttention): adapter_wte (prompt_length x hidden) and gating_factor (one per head) in the
// model dtype. fit() runs validate() under no_grad before training, whose forward stores the
// prefix's keys and values in adapter_kv_cache; training reuses that cache, so adapter_wte never
// receives a gradient (the oracle's lg_2026_11 records: AdamW states for gating_factor only): it
// is counted as a frozen weight. PEFT (peft v0.21.2 tuners/adaption_prompt/layer.py
// _BaseAdaptedAttention): adaption_prompt (adapter_len x hidden) and one adaption_gate, both
// trained, in q_proj's weight dtype (not cast by autocast_adapter_dtype).
void add_llama_adapter_prompt(const ModelArchitecture& arch, const TrainingSetup& t, const RankShard& shard,
                              ModelStates& m, ClassBytes& dense, std::int64_t (&dense_elems)[5]) {
  const std::int64_t first = std::min(t.adapter_start_layer, arch.num_layers);
  const std::int64_t layers = shard.held(first, arch.num_layers - first);
  const bool peft = t.method == Method::kAdaptionPrompt;
  const std::int64_t b = peft ? stored_weight_bytes(t) : adapter_bytes(t);
  const std::int64_t prompt = checked_mul(t.adapter_prompt_length * arch.hidden_size, layers, "parameter count");
  const std::int64_t gates = checked_mul(peft ? 1 : arch.attention.num_heads, layers, "parameter count");
  const std::int64_t trained = peft ? prompt + gates : gates;
  m.adapter_params += prompt + gates;
  m.trainable_params += trained;
  dense_elems[b] += trained;
  dense.weights = checked_add(dense.weights, checked_mul(prompt + gates, b, "weight bytes"), "weight bytes");
  // Their gradients arrive with the blocks' backward, not the output layer's (head_gradient_bytes
  // would make the final norm and the head save what a trained head needs).
}

// What a PEFT method adds beside its per-linear adapters: VeRA's frozen shared projections
// vera_A (r x largest in) and vera_B (largest out x r), fp32 buffers (peft v0.21.2
// tuners/vera/model.py _init_vera_A_vera_B); prompt tuning's virtual-token embeddings (n x h) on the
// first stage and prefix tuning's per-layer keys and values (n x layers x 2 x kv width, GQA-aware:
// peft_model.py _prepare_prompt_learning_config), trainable in the adapter dtype.
// DeepSpeed ZeRO-3 keeps parameters the trace uses again gathered while they fit in
// stage3_max_live_parameters elements (partitioned_param_coordinator.py __params_to_release): at the
// forward's end the output layer (vocab x hidden) and the top blocks that fit beside it. Executed (tools/oracle/zero3_gathered_probe.py, DeepSpeed 0.18.9): Qwen3-4B's proportions
// keep the output layer and 6 blocks, (1e9 - 389 M) / 100.9 M. The limit counts the stored tensors'
// elements (16-bit, or 4-bit packed in 16-bit storage). Over one rank no gather copies anything
// (partition_parameters.py _no_gather_coalesced: the gathered parameter is its partition).
std::int64_t live_kept_layers(const ModelArchitecture& arch, const RankShard& shard, std::int64_t layer_gather_bytes,
                               std::int64_t held_layers) {
  const std::int64_t reach = shard.behaviour.zero3_max_live_elements;
  const std::int64_t head_elems = checked_mul(arch.vocab_size, arch.hidden_size, "parameter count");
  if (shard.dense_shard <= 1 || reach <= head_elems || layer_gather_bytes <= 0 || !(shard.embedding && shard.head)) return 0;
  return std::min(held_layers, (reach - head_elems) / ceil_div(layer_gather_bytes, 2));
}

void add_method_extras(const ModelArchitecture& arch, const TrainingSetup& t, const RankShard& shard, std::int64_t vera_max_in,
                       std::int64_t vera_max_out, std::int64_t held_layers, const std::vector<AdaptedRole>& shared_roles,
                       ModelStates& m, ClassBytes& dense, std::int64_t (&dense_elems)[5]) {
  if (is_shared_peft_adapter(t.method)) {
    // LiLy's shared A and B, TinyLoRA's u-vectors, VB-LoRA's bank (training/peft_shared_adapters.h),
    // trained in the adapter dtype. Their gradients are counted with the others' at the step, not as
    // live from the top block's backward (a shared tensor's gradient is made at its first use there).
    const std::int64_t n = shared_adapter_model_params(t, shared_roles);
    const std::int64_t b = adapter_bytes(t);
    m.adapter_params += n;
    m.trainable_params += n;
    dense_elems[b] += n;
    dense.weights = checked_add(dense.weights, checked_mul(n, b, "weight bytes"), "weight bytes");
    return;
  }
  if (t.method == Method::kVera || t.method == Method::kPvera) {  // PVeRA's A has 2r rows (tuners/pvera/model.py)
    const std::int64_t rows_in = t.method == Method::kPvera ? 2 * vera_max_in : vera_max_in;
    dense.weights = checked_add(dense.weights, checked_mul(t.lora_rank * 4, rows_in + vera_max_out, "weight bytes"), "weight bytes");
    return;
  }
  if (t.method == Method::kRandlora) {  // the shared random bases, fp32 (training/peft_linear_adapters.h)
    const std::int64_t n = randlora_shared_elems(t.lora_rank, vera_max_in, vera_max_out);
    dense.weights = checked_add(dense.weights, checked_mul(n, 4, "weight bytes"), "weight bytes");
    return;
  }
  if (t.method == Method::kUnilora) {  // the shared theta_d (tuners/unilora/model.py), trained in the adapter dtype
    const std::int64_t b = adapter_bytes(t);
    m.adapter_params += kUniloraThetaLength;
    m.trainable_params += kUniloraThetaLength;
    dense_elems[b] += kUniloraThetaLength;
    dense.weights = checked_add(dense.weights, kUniloraThetaLength * b, "weight bytes");
    return;
  }
  if (is_llama_adapter(t.method)) {
    add_llama_adapter_prompt(arch, t, shard, m, dense, dense_elems);
    return;
  }
  if (t.method == Method::kTrainableTokens) {
    // PEFT's trainable tokens (peft v0.21.2 tuners/trainable_tokens/layer.py): the chosen rows
    // (n x h) train beside an equal frozen copy of their originals (a BufferDict, upcast with them
    // by cast_adapter_dtype), on the embedding's stage; each forward index_copies them into a copy
    // of the whole table (token_table_copy_bytes, in the embedding's dtype).
    if (!shard.embedding) return;
    const std::int64_t n = checked_mul(t.trainable_token_count, arch.hidden_size, "parameter count");
    const std::int64_t b = adapter_bytes(t);
    m.adapter_params += n;
    m.trainable_params += n;
    dense_elems[b] += n;
    dense.weights = checked_add(dense.weights, checked_mul(2 * n, b, "weight bytes"), "weight bytes");
    m.token_table_copy_bytes = checked_mul(checked_mul(arch.vocab_size, arch.hidden_size, "parameter count"),
                                           stored_weight_bytes(t), "weight bytes");
    return;
  }
  if (!is_prompt_method(t.method)) return;
  const std::int64_t kv_width = arch.attention.num_kv_heads * arch.attention.head_dim;
  std::int64_t n = 0;
  if (t.method == Method::kPromptTuning && shard.embedding) n = t.virtual_tokens * arch.hidden_size;
  if (t.method == Method::kPTuning && shard.embedding) n = p_tuning_encoder_params(t, arch.hidden_size);
  if (t.method == Method::kPrefixTuning) n = checked_mul(t.virtual_tokens * 2 * kv_width, held_layers, "parameter count");
  const std::int64_t b = adapter_bytes(t);
  m.adapter_params += n;
  m.trainable_params += n;
  dense_elems[b] += n;
  dense.weights = checked_add(dense.weights, checked_mul(n, b, "weight bytes"), "weight bytes");
  m.head_gradient_bytes += n * b;
}

// DeepSpeed's ZeRO step on fp32 gradient copies (DistributedBehaviour::fp32_grads_at_step): stage 3
// one sub-group's copy at a time; stage 1/2 every group's copy, the first made beside a flattened
// 16-bit copy of its group (the HF Trainer's decay group: every parameter but norms and biases).
std::int64_t fp32_step_gradient_bytes(const RankShard& shard, Sharding z, bool master_in_optimizer,
                                      std::int64_t stepped_params, std::int64_t grad_bytes) {
  const DistributedBehaviour& b = shard.behaviour;
  if (!b.fp32_grads_at_step || !master_in_optimizer || z == Sharding::kNone) return 0;
  if (z == Sharding::kZero3) {
    const std::int64_t group = b.fp32_grad_sub_group_elements > 0 ? std::min(stepped_params, b.fp32_grad_sub_group_elements)
                                                                  : stepped_params;
    return checked_mul(group, 4, "optimizer step bytes");
  }
  return checked_mul(stepped_params, 4 + grad_bytes, "optimizer step bytes");
}

}  // namespace

ModelStates compute_model_states(const ModelArchitecture& arch, const TensorInventory& inv,
                                 const TrainingSetup& t, const RankShard& shard) {
  ModelStates m;
  m.total_params = inv.total_params;
  // Megatron / DeepSpeed AMP: the model is 16-bit; the fp32 master copy lives in the optimizer.
  const bool master_in_opt = amp_like(t) && t.amp_weights == AmpWeights::kMasterInOptimizer;
  // BAdam (badam 1.4 block_optim.py _switch_trainable_params_single_gpu): a 16-bit model and an
  // fp32 clone of the active layer, which the base AdamW steps with fp32 states.
  const bool badam = trains_block_range(t) && t.method == Method::kFull;
  const bool gathered_16bit = amp_like(t) && t.amp_weights == AmpWeights::kGathered16bit;
  const std::int64_t wb = master_in_opt ? 2 : stored_weight_bytes(t);
  const bool lora = is_lora_like(t.method);
  const bool adapters = is_adapter_method(t.method);
  std::int64_t vera_max_in = 0, vera_max_out = 0;  // VeRA's shared projections span the largest adapted linear
  std::vector<AdaptedRole> shared_roles;           // LiLy / TinyLoRA / VB-LoRA: the adapted roles and their layers
  const BaseQuant quant = lora ? effective_base_quant(t) : BaseQuant::kNone;
  const std::int64_t adapter_elem_bytes = adapter_bytes(t);
  // prepare_model_for_kbit_training casts the non-quantised parameters to fp32.
  const std::int64_t quant_other_bytes = t.kbit_prep_fp32 ? 4 : wb;
  // Trainable elements by class (0 dense, 1 expert) and by element bytes of the stored tensor.
  std::int64_t trainable_elems[2][5] = {};
  ClassBytes cls[2];
  std::int64_t largest_trainable = 0;
  // Trainable elements of the largest block tensor, the output layer (untied, or a tied copy) and the
  // embedding table: the tensors DeepSpeed's offloaded ZeRO-2 checks one at a time.
  std::int64_t largest_layer_trainable_elems = 0, head_trainable_elems = 0, embedding_trainable_elems = 0;
  std::int64_t adafactor_state = 0;
  std::int64_t large_states = 0;  // of large_pool_state_bytes, before sharding
  // bitsandbytes' quant states (absmax and its double-quantised scales) are attributes of each
  // Params4bit, not parameters: FSDP and ZeRO-3 shard and offload the packed weights only, and every
  // rank keeps every quant state on its GPU (fsdp_qlora train.py @ 4cd6923 load_and_quantize: "FSDP
  // only syncs parameters and buffers, so the quant_state isn't copied"; bitsandbytes 0.43
  // Params4bit.to moves quant_state beside the data). By class, before sharding.
  std::int64_t quant_state_bytes[2] = {};
  // transformers' Adafactor.step, one tensor at a time (v5.24.0 optimization.py): a 16-bit
  // parameter's grad.float() and p.float() copies, `grad**2 + eps` and the factored product
  // r_factor * c_factor, all fp32 and live together; fp32 parameters make no copies.
  std::int64_t adafactor_step_temp = 0;
  // Muon steps the blocks' 2-d matrices with one momentum buffer; the rest (embeddings, output
  // layer, norms, biases) steps with AdamW (torch/optim/_muon.py takes 2-d parameters only;
  // github.com/KellerJordan/Muon README). muon_matrix_state: the matrices' momentum bytes by class.
  std::int64_t muon_matrix_state[2] = {}, muon_step_temp = 0;
  // GaLore / APOLLO: the block matrices' AdamW states as counted by state_bytes_per_param, the
  // projected states replacing them (projected_state_elems), and the largest step temporaries of
  // a projected matrix and of an unprojected tensor (denom and norm_grad, one tensor at a time).
  std::int64_t projected_full_state[2] = {}, projected_low_state[2] = {};
  std::int64_t projected_step_temp = 0, largest_unprojected = 0;
  // Adam-mini's second moments: one per output row (or head, fewer) of a matrix, one per other tensor.
  std::int64_t adam_mini_v = 0;
  // nn.Embedding weights that bitsandbytes' 8-bit optimizer steps with 32-bit states
  // (TrainingSetup::bnb8_embedding_states_fp32), by class.
  std::int64_t bnb_fp32_state_elems[2] = {};
  const bool bnb8 = t.optimizer == Optimizer::kAdamW8bit || t.optimizer == Optimizer::kPagedAdamW8bit;
  std::int64_t layer_grad_sum = 0;
  std::int64_t layer_gather = 0, layer_reduce = 0, layer_reduce_input = 0;  // of the layer being visited
  std::int64_t layer_cast = 0;  // autocast's 16-bit weight copies of the layer being visited
  // Gradient element bytes of base weights as computed in backward, and as reduced.
  const GradientBytes grad_bytes = base_gradient_bytes(t, shard.behaviour);

  // saved_copy: PEFT's trainable copy of a global module (peft_saves_module), its own storage.
  auto visit = [&](const TensorSpec& s, std::int64_t layer, std::int64_t layers_in_group, bool in_stack, bool saved_copy) {
    if (!in_stack && !saved_copy) {
      // A tied output layer is the embedding's storage; on a last pipeline stage without the
      // embedding it is a real copy (Megatron keeps the shared weight on both ends).
      const bool tied_copy = s.tied && shard.head && !shard.embedding;
      if (s.tied && !tied_copy) {
        // Under autocast a tied output layer's F.linear casts the fp32 table to 16-bit and saves
        // the cast for backward, as for an untied head (aten/src/ATen/autocast_mode.cpp cached_cast).
        if (autocast_amp(t) && shard.head && quant == BaseQuant::kNone) {
          m.amp_weight_cast_bytes += checked_mul(rank_numel(s, shard, arch.vocab_size), s.copies * 2, "weight bytes");
        }
        return;
      }
      if (on_embedding_side(s) ? !shard.embedding : !shard.head) return;
    }
    if (saved_copy && (on_embedding_side(s) ? !shard.embedding : !shard.head)) return;
    const int c = s.kind == ModuleKind::kExpert ? 1 : 0;
    const std::int64_t copies = c == 1 ? ceil_div(s.copies, shard.ep) : s.copies;
    const std::int64_t per_copy = rank_numel(s, shard, arch.vocab_size);
    const std::int64_t n = checked_mul(checked_mul(per_copy, copies, "parameter count"), layers_in_group, "parameter count");
    m.weight_tensor_count += copies * layers_in_group;
    // LitGPT adapter v2 trains the block and final norms (adapter_v2.py adapter_filter: norm_1,
    // norm_2, ln_f), not q/k norms.
    // PEFT's LN tuning trains a deep copy of each block and final norm and keeps the original
    // (peft v0.21.2 tuners/ln_tuning/layer.py update_layer: deepcopy(layer)), in the model dtype.
    const bool block_or_final_norm = s.kind == ModuleKind::kNorm && s.role == "norm";
    const bool ln_copy = t.method == Method::kLnTuning && block_or_final_norm;
    const bool trains = saved_copy || layer_trains(t, layer, arch.num_layers) ||
                        ((t.method == Method::kAdapterV2 || ln_copy) && block_or_final_norm);
    std::int64_t bytes_per = wb;
    std::int64_t gather_bytes = 0;  // one copy of this tensor as gathered for compute, per layer
    if (quant != BaseQuant::kNone && is_linear_in_block(s)) {
      const std::int64_t in = s.shape.size() == 2 ? s.shape[1] : 1;
      // n x micro-bytes can pass 2^53 for the largest models: split n into millions and the rest.
      const std::int64_t micro = quant_micro_bytes(quant, in);
      const std::int64_t qb = checked_add(checked_mul(n / 1'000'000, micro, "weight bytes"),
                                          ceil_div((n % 1'000'000) * micro, 1'000'000), "weight bytes");
      cls[c].weights = checked_add(cls[c].weights, qb, "weight bytes");
      gather_bytes = qb / std::max<std::int64_t>(1, layers_in_group);
      // torchtune's NF4 is torchao's NF4Tensor, whose scalers are inner tensors that FSDP2 shards with
      // the data (torchao dtypes/nf4tensor.py fsdp_pre_all_gather); its profile is the one whose
      // dequantisation runs torchao's eager path (nf4_dequant_bytes_per_param above bitsandbytes' 2).
      const bool bnb_quant_state = t.nf4_dequant_bytes_per_param <= 2;
      if (quant == BaseQuant::kNf4 && bnb_quant_state) quant_state_bytes[c] += qb - std::min(qb, ceil_div(n, 2));
      // The kernel dequantises one weight at a time to the compute dtype (freed after the matmul,
      // and again in backward), with the library's eager intermediates (TrainingSetup::
      // nf4_dequant_bytes_per_param), which torch.compile fuses away.
      const std::int64_t dequant_bytes = quant == BaseQuant::kNf4 && !t.compile ? t.nf4_dequant_bytes_per_param : 2;
      m.dequant_workspace_bytes = std::max(m.dequant_workspace_bytes, checked_mul(per_copy, dequant_bytes, "workspace bytes"));
      if (quant == BaseQuant::kNf4) {
        m.init_quantize_workspace_bytes = std::max(
            m.init_quantize_workspace_bytes, checked_mul(per_copy, t.nf4_quantize_at_init_bytes_per_param, "workspace bytes"));
      }
      bytes_per = 0;
    } else if (quant != BaseQuant::kNone) {
      bytes_per = quant_other_bytes;
    }
    // Axolotl outside FSDP: the embedding and output layer upcast to fp32 over the 16-bit model.
    const bool upcast_embedding = t.embeddings_fp32 && bytes_per == 2 &&
                                  ((s.kind == ModuleKind::kEmbedding && s.role == "embedding") || s.kind == ModuleKind::kLmHead);
    if (upcast_embedding) bytes_per = 4;
    cls[c].weights = checked_add(cls[c].weights, checked_mul(n, ln_copy ? 2 * bytes_per : bytes_per, "weight bytes"), "weight bytes");
    if (bytes_per > 0) gather_bytes = per_copy * copies * (gathered_16bit ? 2 : bytes_per);
    if (in_stack) layer_gather += gather_bytes;
    else {
      m.gather_root_bytes += gather_bytes;
      if (!on_embedding_side(s)) m.gather_head_bytes += gather_bytes;
    }
    if (trains) {
      m.trainable_params += n;
      trainable_elems[c][bytes_per] += n;
      if (bytes_per == 4 && autocast_amp(t)) m.master_weights_bytes += 4 * n;
      largest_trainable = std::max(largest_trainable, per_copy * bytes_per);
      if (in_stack) largest_layer_trainable_elems = std::max(largest_layer_trainable_elems, per_copy);
      if (s.kind == ModuleKind::kLmHead) head_trainable_elems = std::max(head_trainable_elems, per_copy);
      if (s.kind == ModuleKind::kEmbedding && s.role == "embedding") embedding_trainable_elems = per_copy;
      large_states += large_pool_states(t.optimizer, per_copy, master_in_opt && bytes_per == wb ? 4 : bytes_per, n);
      if (s.kind == ModuleKind::kEmbedding && s.role == "embedding") m.embedding_grad_bytes = per_copy * bytes_per;
      if (bnb8 && t.bnb8_embedding_states_fp32 && (s.kind == ModuleKind::kEmbedding || s.kind == ModuleKind::kPositionEmbedding)) {
        bnb_fp32_state_elems[c] += n;
        large_states += checked_mul(n, kBnb32bitStateBytes - state_bytes_per_param(t.optimizer, bytes_per), "state bytes");
      }
      if (t.optimizer == Optimizer::kAdafactor) adafactor_step_temp = std::max(adafactor_step_temp, per_copy * 4 * (bytes_per == 4 ? 2 : 4));
      if (t.optimizer == Optimizer::kMuon && is_linear_in_block(s) && s.shape.size() == 2) {
        muon_matrix_state[c] += n * (master_in_opt ? 4 : bytes_per);
        muon_step_temp = std::max(muon_step_temp, muon_step_temp_bytes(s.shape[0], s.shape[1], bytes_per));
      }
      if (projects_gradients(t.optimizer)) {
        const std::int64_t eb = master_in_opt ? 4 : bytes_per;
        if (is_linear_in_block(s) && s.shape.size() == 2) {
          const std::int64_t rows = s.shape[0], cols = s.shape[1];
          projected_full_state[c] += checked_mul(n, state_bytes_per_param(t.optimizer, eb), "state bytes");
          // This rank's share of the matrix (tensor parallelism splits it like the weight).
          // APOLLO also keeps the scaled gradient's norm, a 0-dim tensor (apollo.py state["scaled_grad"]).
          const std::int64_t norm = t.optimizer == Optimizer::kGaloreAdamW ? 0 : 1;
          const std::int64_t low = ceil_div(projected_state_elems(t.projection_rank, rows, cols) * per_copy, rows * cols) + norm;
          projected_low_state[c] += checked_mul(low * eb, copies * layers_in_group, "state bytes");
          projected_step_temp = std::max(projected_step_temp, projected_step_temp_bytes(t.projection_rank, rows, cols, eb,
                                                                                          t.optimizer == Optimizer::kGaloreAdamW) *
                                                                  per_copy / (rows * cols));
        } else {
          largest_unprojected = std::max(largest_unprojected, per_copy * eb);
        }
      }
      if (t.optimizer == Optimizer::kAdamMini) {
        adam_mini_v += adam_mini_second_moments(s, arch) * (master_in_opt ? 4 : bytes_per) * copies * layers_in_group;
      }
      if (t.optimizer == Optimizer::kAdafactor) {
        adafactor_state += s.shape.size() == 2 ? (s.shape[0] + s.shape[1]) * 4 * copies * layers_in_group : n * 4;
      }
      const std::int64_t gb = master_in_opt ? t.main_grad_bytes : bytes_per;
      m.unsharded_accumulated_gradient_bytes += n * grad_bytes.reduced;
      if (in_stack) {
        layer_grad_sum += n * gb;
        // The computed gradient, and its fp32 copy when the reduction upcasts it.
        const std::int64_t upcast = grad_bytes.reduced != grad_bytes.computed ? grad_bytes.reduced : 0;
        layer_reduce += per_copy * copies * (grad_bytes.computed + upcast);
        layer_reduce_input += per_copy * copies * grad_bytes.reduced;
      } else {
        m.root_unsharded_gradient_bytes += n * grad_bytes.computed;
        m.root_reduce_input_bytes += n * grad_bytes.reduced;
        if (s.kind == ModuleKind::kLmHead || s.kind == ModuleKind::kNorm) {
          m.head_gradient_bytes += n * gb;
          m.root_head_unsharded_gradient_bytes += n * grad_bytes.computed;
        }
      }
    }
    if ((autocast_amp(t) || (upcast_embedding && s.kind == ModuleKind::kLmHead)) && s.linear_weight && quant == BaseQuant::kNone) {
      m.amp_weight_cast_bytes += n * 2;  // autocast's 16-bit copy, saved by mm for backward
      if (in_stack) {
        m.amp_layer_weight_cast_bytes += n * 2;
        // cached_cast caches casts of fp32 leaves that require grad only (aten/src/ATen/autocast_mode.cpp).
        if (!trains) m.amp_uncached_layer_weight_cast_bytes += n * 2;
        layer_cast += per_copy * copies * 2;
      }
    }
    // Trainable adapter tensors of `per_adapter` elements on this tensor, per copy and layer.
    auto add_adapter = [&](std::int64_t per_adapter) {
      const std::int64_t a = checked_mul(per_adapter, checked_mul(copies, layers_in_group, "adapter size"), "adapter size");
      m.adapter_params += a;
      m.trainable_params += a;
      trainable_elems[c][adapter_elem_bytes] += a;
      cls[c].weights = checked_add(cls[c].weights, a * adapter_elem_bytes, "weight bytes");
      largest_trainable = std::max(largest_trainable, per_adapter * adapter_elem_bytes);
      m.unsharded_accumulated_gradient_bytes += a * adapter_elem_bytes;
      if (in_stack) {
        layer_grad_sum += a * adapter_elem_bytes;
        layer_gather += per_adapter * copies * adapter_elem_bytes;
        layer_reduce += per_adapter * copies * adapter_elem_bytes;
        layer_reduce_input += per_adapter * copies * adapter_elem_bytes;
      } else {
        m.head_gradient_bytes += a * adapter_elem_bytes;
      }
    };
    // LitGPT adapter v2 (adapter_v2.py AdapterV2Linear): adapter_bias and adapter_scale, one value
    // per output feature, on every linear of every block and on the output layer (GPT.lm_head).
    if (t.method == Method::kAdapterV2 && ((in_stack && is_linear_in_block(s)) || (s.kind == ModuleKind::kLmHead && s.linear_weight))) {
      add_adapter(2 * s.shape[0]);
    }
    // The adapter at this rank's widths (block/adapters.h: the base linear's tensor-parallel split).
    if (const std::optional<AdaptedLinear> adapter = adapters ? adapted_linear_on_rank(t, s, shard.tp, shard.etp) : std::nullopt) {
      const std::int64_t in = adapter->in;
      const std::int64_t out = adapter->out;
      vera_max_in = std::max(vera_max_in, in);
      vera_max_out = std::max(vera_max_out, out);
      const std::int64_t per_adapter = adapter->params;
      add_adapter(per_adapter);
      const std::int64_t adapted = checked_mul(copies, layers_in_group, "adapter size");
      for (const std::int64_t side : {in, out}) {  // A (r x in), B (out x r)
        if (is_orthogonal(t.method) || is_more_peft_adapter(t.method) || is_shared_peft_adapter(t.method)) break;
        large_states += large_pool_states(t.optimizer, t.lora_rank * side, adapter_elem_bytes,
                                          checked_mul(t.lora_rank * side, adapted, "adapter size"));
      }
      // Frozen buffers per adapted linear: BOFT's butterfly permutation boft_P [1, in, in] in fp32
      // (peft v0.21.2 tuners/boft/layer.py update_layer: torch.empty, non-persistent); OFT's int64
      // upper-triangle indices rows and cols, b(b-1)/2 each (tuners/oft/layer.py OFTRotationModule).
      if (is_orthogonal(t.method)) {
        const std::int64_t b = orthogonal_block_for(t, in);
        const std::int64_t buffer = t.method == Method::kBoft ? checked_mul(4 * in, in, "buffer bytes") : 8 * b * (b - 1);
        cls[c].weights = checked_add(cls[c].weights, checked_mul(buffer, adapted, "buffer bytes"), "weight bytes");
      }
      // AdaLoRA (peft v0.21.2 tuners/adalora/model.py forward): loss += orth_reg_weight · mean ||PPᵀ - I||
      // over every A and B, added after the model's forward, so backward reaches A and B first.
      if (t.method == Method::kAdalora) {
        m.regularizer_gradient_bytes += checked_mul(checked_mul(t.lora_rank * adapter_elem_bytes, in + out, "gradient bytes"),
                                                    adapted, "gradient bytes");
      }
      if (is_more_peft_adapter(t.method)) {  // SHiRA's device indices, OSF's frozen SVD parts and its V_low gradient's storage
        const AdaptedLinearTerms terms = adapted_linear_terms(t, in, out, adapter_elem_bytes, wb);
        cls[c].weights = checked_add(cls[c].weights, checked_mul(terms.buffer_bytes, adapted, "buffer bytes"), "weight bytes");
        const std::int64_t extra = checked_mul(terms.gradient_extra_bytes, adapted, "gradient bytes");
        cls[c].gradients = checked_add(cls[c].gradients, extra, "gradient bytes");
        m.unsharded_accumulated_gradient_bytes += extra;
        if (in_stack) layer_grad_sum += extra;
      }
      if (is_shared_peft_adapter(t.method)) {
        const std::int64_t buffer = shared_adapter_terms(t, in, out, adapter_elem_bytes, wb).buffer_bytes;
        cls[c].weights = checked_add(cls[c].weights, checked_mul(buffer, adapted, "buffer bytes"), "weight bytes");
        auto role = std::find_if(shared_roles.begin(), shared_roles.end(), [&](const AdaptedRole& a) { return a.role == s.role; });
        if (role == shared_roles.end()) role = shared_roles.insert(shared_roles.end(), AdaptedRole{s.role, in, out, 0});
        role->layers += adapted;
        // FRoD's runtime_offload_base_weight: the frozen weight leaves the device at the first forward.
        if (offloads_adapted_base_weight(t)) cls[c].weights -= std::min(cls[c].weights, checked_mul(n, bytes_per, "weight bytes"));
      }
      if (t.method == Method::kDora) {
        // PEFT DoRA: lora_B.weight @ lora_A.weight and W + that product, both (out, in) in the
        // adapter dtype, to take the column norm each forward (peft/tuners/lora/dora.py).
        m.dora_norm_workspace_bytes = std::max(m.dora_norm_workspace_bytes, checked_mul(2 * out * in, adapter_elem_bytes, "workspace bytes"));
      }
    }
  };
  for (const TensorSpec& s : inv.globals) visit(s, -1, 1, false, false);
  for (const TensorSpec& s : inv.globals) {
    if (peft_saves_module(t, s)) visit(s, -1, 1, false, true);
  }
  std::int64_t held_layers = 0;
  for (const LayerGroup& g : inv.groups) {
    const std::int64_t before = layer_grad_sum;
    const std::int64_t count = shard.held(g.first_layer, g.layer_count);
    if (count == 0) continue;
    held_layers += count;
    layer_gather = layer_reduce = layer_reduce_input = layer_cast = 0;
    // Freeze and BAdam decide per layer; other methods treat the group uniformly.
    if (trains_block_range(t)) {
      for (std::int64_t i = 0; i < g.layer_count; ++i) {
        if (shard.held(g.first_layer + i, 1) == 0) continue;
        for (const TensorSpec& s : g.tensors) visit(s, g.first_layer + i, 1, true, false);
      }
      layer_gather /= count;
      layer_reduce /= count;
      layer_reduce_input /= count;
      layer_cast /= count;
    } else {
      for (const TensorSpec& s : g.tensors) visit(s, g.first_layer, count, true, false);
    }
    m.gather_layer_bytes = std::max(m.gather_layer_bytes, layer_gather);
    m.amp_largest_layer_weight_cast_bytes = std::max(m.amp_largest_layer_weight_cast_bytes, layer_cast);
    m.reduce_layer_bytes = std::max(m.reduce_layer_bytes, layer_reduce);
    m.reduce_layer_input_bytes = std::max(m.reduce_layer_input_bytes, layer_reduce_input);
    m.largest_layer_gradient_bytes = std::max(m.largest_layer_gradient_bytes, (layer_grad_sum - before) / count);
  }
  add_method_extras(arch, t, shard, vera_max_in, vera_max_out, held_layers, shared_roles, m, cls[0], trainable_elems[0]);
  // A per-layer average for the backward timeline (layers of one model are near-uniform; the
  // totals below stay exact).
  m.layer_gradient_bytes = layer_grad_sum / std::max<std::int64_t>(1, held_layers);

  for (int c = 0; c < 2; ++c) {
    for (std::int64_t b = 1; b <= 4; ++b) {
      const std::int64_t elems = trainable_elems[c][b];
      const std::int64_t gb = master_in_opt && b == wb ? t.main_grad_bytes : b;
      cls[c].gradients = checked_add(cls[c].gradients, checked_mul(elems, gb, "gradient bytes"), "gradient bytes");
      const bool fp32_copy = (master_in_opt || badam) && b == wb;
      std::int64_t state = t.optimizer == Optimizer::kAdafactor ? 0 : state_bytes_per_param(t.optimizer, fp32_copy ? 4 : b);
      if (fp32_copy) state += 4;  // the fp32 master copy (BAdam: its clone of the active layer)
      cls[c].states = checked_add(cls[c].states, checked_mul(elems, state, "state bytes"), "state bytes");
    }
  }
  cls[0].states += adafactor_state + adam_mini_v;
  for (int c = 0; c < 2; ++c) {
    cls[c].states += checked_mul(bnb_fp32_state_elems[c], kBnb32bitStateBytes - state_bytes_per_param(t.optimizer, 2), "state bytes");
  }
  for (int c = 0; c < 2; ++c) cls[c].states = cls[c].states - std::min(cls[c].states, projected_full_state[c]) + projected_low_state[c];
  // state_bytes_per_param counts Muon's elements as AdamW's; the matrices keep one buffer, not two.
  for (int c = 0; c < 2; ++c) cls[c].states -= std::min(cls[c].states, muon_matrix_state[c]);
  const std::int64_t all_states = cls[0].states + cls[1].states;
  const std::int64_t adamw_group_states = all_states - muon_matrix_state[0] - muon_matrix_state[1];
  // Data-parallel sharding (ZeRO stages): states from zero1, gradients from zero2, weights at zero3.
  const std::int64_t div[2] = {std::max<std::int64_t>(1, shard.dense_shard), std::max<std::int64_t>(1, shard.expert_shard)};
  const Sharding z = shard.sharding;
  const std::int64_t unsharded_gradients = cls[0].gradients + cls[1].gradients;
  if (z == Sharding::kZero3) m.loaded_weights_bytes = checked_add(cls[0].weights, cls[1].weights, "weight bytes");
  std::int64_t stepped_params = 0;  // trainable parameters of this rank's optimizer-state shard
  for (int c = 0; c < 2; ++c) {
    std::int64_t elems = 0;
    for (std::int64_t b = 1; b <= 4; ++b) elems += trainable_elems[c][b];
    stepped_params += z != Sharding::kNone ? ceil_div(elems, div[c]) : elems;
  }
  for (int c = 0; c < 2; ++c) {
    const std::int64_t qs = z == Sharding::kZero3 && div[c] > 1 ? quant_state_bytes[c] : 0;  // kept whole
    m.weights_bytes += z == Sharding::kZero3 ? ceil_div(cls[c].weights - qs, div[c]) + qs : cls[c].weights;
    m.gradients_bytes += z == Sharding::kZero2 || z == Sharding::kZero3 ? ceil_div(cls[c].gradients, div[c]) : cls[c].gradients;
    m.optimizer_states_bytes += z != Sharding::kNone ? ceil_div(cls[c].states, div[c]) : cls[c].states;
  }
  // torch.optim creates states lazily in the first step (_init_group); optimizers that keep the fp32
  // master in the optimizer build them with it at construction, before any loss buffer exists, except
  // DeepSpeed's ZeRO, whose initialize_optimizer_states (v0.19.8 stage3.py, stage_1_and_2.py) sets
  // only the fp32 gradients and leaves the states to the first step (TD-14: adam.py _init_group).
  if (!master_in_opt || shard.behaviour.fp32_grads_at_step) {
    m.large_pool_state_bytes = std::min(m.optimizer_states_bytes, z != Sharding::kNone ? ceil_div(large_states, div[0]) : large_states);
  }
  if (z == Sharding::kZero3) m.master_weights_bytes = ceil_div(m.master_weights_bytes, div[0]);
  // Each attention layer's rotary cos and sin caches: buffers over max_position_embeddings in the
  // model dtype, on every rank that holds the layer (TrainingSetup::rotary_cache_per_layer).
  if (t.rotary_cache_per_layer && arch.attention.rotary_dim > 0) {
    const std::int64_t cache = checked_mul(checked_mul(2 * arch.max_position_embeddings, arch.attention.rotary_dim, "buffer bytes"),
                                           stored_weight_bytes(t), "buffer bytes");
    m.weights_bytes = checked_add(m.weights_bytes, checked_mul(cache, held_layers, "buffer bytes"), "buffer bytes");
  }
  if (t.model_rotary_cache_values_per_dim > 0 && arch.attention.rotary_dim > 0 && held_layers > 0) {
    const std::int64_t values = checked_mul(arch.max_position_embeddings * arch.attention.rotary_dim,
                                            t.model_rotary_cache_values_per_dim, "buffer bytes");
    const std::int64_t caches = t.model_rotary_cache_per_layer ? held_layers : 1;
    m.weights_bytes = checked_add(m.weights_bytes, checked_mul(checked_mul(values, 4, "buffer bytes"), caches, "buffer bytes"),
                                  "buffer bytes");
  }
  if (unsharded_gradients > 0 && m.gradients_bytes != unsharded_gradients) {
    // Per-layer persistent gradients shrink with the shards (proportionally across classes).
    const double ratio = static_cast<double>(m.gradients_bytes) / static_cast<double>(unsharded_gradients);
    m.layer_gradient_bytes = static_cast<std::int64_t>(static_cast<double>(m.layer_gradient_bytes) * ratio);
    m.head_gradient_bytes = static_cast<std::int64_t>(static_cast<double>(m.head_gradient_bytes) * ratio);
    m.regularizer_gradient_bytes = static_cast<std::int64_t>(static_cast<double>(m.regularizer_gradient_bytes) * ratio);
    m.root_sharded_gradient_bytes = static_cast<std::int64_t>(static_cast<double>(m.root_unsharded_gradient_bytes) * ratio);
  }
  m.unit_layer_bytes = m.gather_layer_bytes;
  m.unit_root_bytes = m.gather_root_bytes;
  m.unit_head_bytes = m.gather_head_bytes;
  if (z != Sharding::kZero2 && z != Sharding::kZero3) m.reduce_layer_bytes = m.reduce_layer_input_bytes = 0;
  m.live_kept_layers = z == Sharding::kZero3 ? live_kept_layers(arch, shard, m.gather_layer_bytes, held_layers) : 0;
  // Over one rank the gathered parameter is its partition (_no_gather_coalesced): nothing is held
  // beside it. Under full checkpointing the forward saves no weight views.
  m.gathered_held_to_backward = z == Sharding::kZero3 && shard.behaviour.zero3_autograd_holds_gathered &&
                                shard.dense_shard > 1 && t.checkpointing != Checkpointing::kFull;
  if (m.gathered_held_to_backward) m.live_kept_layers = 0;
  if (z == Sharding::kZero3 && shard.behaviour.gather_replaces_shard && div[0] > 1) {
    const auto others = [&](std::int64_t b) { return b / div[0] * (div[0] - 1) + b % div[0] * (div[0] - 1) / div[0]; };
    m.gather_layer_bytes = others(m.gather_layer_bytes);
    m.gather_root_bytes = others(m.gather_root_bytes);
    m.gather_head_bytes = others(m.gather_head_bytes);
  }
  if (shard.behaviour.grads_in_param_chunks) {
    m.gradients_bytes = m.layer_gradient_bytes = m.head_gradient_bytes = m.reduce_layer_bytes = m.regularizer_gradient_bytes = 0;
    m.largest_layer_gradient_bytes = 0;
  }
  if (z != Sharding::kZero3) {
    m.gather_layer_bytes = m.gather_root_bytes = m.gather_head_bytes = 0;
    m.root_unsharded_gradient_bytes = m.root_head_unsharded_gradient_bytes = m.root_reduce_input_bytes = 0;
    m.root_sharded_gradient_bytes = 0;
  }
  const bool pipelined = !(shard.embedding && shard.head);
  if (z == Sharding::kZero3 && pipelined && shard.behaviour.pp_defers_grad_sync) {
    // The sharded gradients appear only at the last micro-batch's reduce-scatter; until then the
    // unsharded ones accumulate (both live at the last backward).
    m.gradients_bytes += m.unsharded_accumulated_gradient_bytes;
    m.layer_gradient_bytes = m.unsharded_accumulated_gradient_bytes / std::max<std::int64_t>(1, held_layers);
    m.reduce_layer_bytes = 0;
  } else {
    m.unsharded_accumulated_gradient_bytes = 0;
  }
  m.gradients_at_init = shard.behaviour.grad_buffer_at_init;
  if (z == Sharding::kZero3 && shard.behaviour.zero3_grad_partition_at_init) {
    m.gradients_at_init = true;
    m.persistent_reduce_bucket_bytes = shard.behaviour.reduce_bucket_bytes;
  }
  if (z == Sharding::kNone && shard.data_parallel > 1 && shard.behaviour.ddp_bucket_copy && !shard.behaviour.grad_buffer_at_init) {
    m.ddp_bucket_bytes = unsharded_gradients;
  }
  m.largest_trainable_tensor_bytes = largest_trainable;
  const bool adam_like = t.optimizer == Optimizer::kAdamW || t.optimizer == Optimizer::kPagedAdamW32bit;
  const std::int64_t stepped_states = m.optimizer_states_bytes;
  if (projects_gradients(t.optimizer)) {
    // galore_torch / apollo_torch step one parameter at a time (a for-loop, no foreach), in the
    // step or, layer-wise, in each parameter's gradient hook.
    m.optimizer_step_temp_bytes = std::max(projected_step_temp, 2 * largest_unprojected);
  } else if (t.optimizer == Optimizer::kAdamMini) {
    // adam_mini.py steps one tensor at a time: grad * grad (reduced per row) then the update m * stepsize.
    m.optimizer_step_temp_bytes = largest_trainable;
  } else if (t.optimizer_in_backward) {
    // One parameter stepped at a time inside backward: at most one tensor's temporaries.
    m.optimizer_step_temp_bytes = adam_like ? largest_trainable : 0;
  } else if (t.optimizer == Optimizer::kPagedAdamW32bit) {
    // bitsandbytes steps each parameter with one kernel in place (0.43.1 optim/optimizer.py Optimizer2State.
    // update_step -> functional.optimizer_update_32bit): no torch foreach temporaries, whatever
    // optimizer_impl the framework's torch AdamW would use.
    m.optimizer_step_temp_bytes = 0;
  } else if (adam_like) {
    switch (t.optimizer_impl) {
      case OptimizerImpl::kForeach: m.optimizer_step_temp_bytes = stepped_states / (master_in_opt || badam ? 3 : 2); break;  // sqrt copy of exp_avg_sq
      case OptimizerImpl::kForLoop: m.optimizer_step_temp_bytes = largest_trainable; break;
      case OptimizerImpl::kFused: m.optimizer_step_temp_bytes = 0; break;
    }
  } else if (t.optimizer == Optimizer::kAdafactor) {
    m.optimizer_step_temp_bytes = adafactor_step_temp;

  } else if (t.optimizer == Optimizer::kMuon) {
    // The AdamW group's foreach sqrt(exp_avg_sq) copy (half its states), or Newton–Schulz on the
    // largest matrix, whichever is larger: the two groups step one after the other.
    // This rank's share of the AdamW group (sharded like all states).
    const std::int64_t group = all_states > 0 ? static_cast<std::int64_t>(static_cast<double>(adamw_group_states) *
                                                                          static_cast<double>(stepped_states) / static_cast<double>(all_states))
                                              : 0;
    m.optimizer_step_temp_bytes = std::max(t.optimizer_impl == OptimizerImpl::kForeach ? group / 2 : 0, muon_step_temp);
  }
  m.optimizer_step_temp_bytes += fp32_step_gradient_bytes(shard, z, master_in_opt && !t.optimizer_in_backward,
                                                          stepped_params, t.main_grad_bytes);
  // Megatron's fp16 optimizers step on an fp32 copy of each stepped 16-bit main_grad (as_run.h
  // step_upcasts_main_grad), all made before the step.
  if (!t.optimizer_in_backward && step_upcasts_main_grad(t, shard.behaviour)) {
    m.optimizer_step_temp_bytes += checked_mul(stepped_params, 4, "optimizer step bytes");
  }
  // BAdam's _grad_to_hp: each 16-bit gradient is cast to an fp32 .grad on the clone, then freed.
  if (badam) m.optimizer_step_temp_bytes += checked_mul(stepped_params, 4 - wb, "optimizer step bytes");
  if (t.optimizer == Optimizer::kPagedAdamW8bit || t.optimizer == Optimizer::kPagedAdamW32bit) {
    m.unmanaged_optimizer_states_bytes = m.optimizer_states_bytes;
    m.optimizer_states_bytes = 0;
    m.large_pool_state_bytes = 0;  // unified memory, outside the caching allocator
  }
  if (t.offload == Offload::kOptimizer || t.offload == Offload::kParamsOptimizer) {
    // CPU optimizer (DeepSpeedCPUAdam / torchao CPUOffloadOptimizer): fp32 states and the step
    // live in host memory; the GPU keeps the model-dtype weights and gradients.
    m.host_bytes = m.optimizer_states_bytes + m.unmanaged_optimizer_states_bytes;
    // The CPU optimizer steps on an fp32 gradient partition in (pinned) host memory (DeepSpeed
    // stage_1_and_2.py: single_partition_of_fp32_groups[i].grad on the offload device).
    if (t.offload == Offload::kOptimizer) m.host_bytes += checked_mul(stepped_params, 4, "host bytes");
    m.optimizer_states_bytes = 0;
    m.large_pool_state_bytes = 0;
    m.unmanaged_optimizer_states_bytes = 0;
    m.optimizer_step_temp_bytes = 0;
  }
  if (t.offload == Offload::kOptimizer && z == Sharding::kZero2 && shard.behaviour.zero_offload_grads_on_host) {
    // DeepSpeed's offloaded ZeRO-2 (v0.14.2 stage_1_and_2.py): each gradient of the rank's partition
    // is reduced and copied to the host fp32 partition in its backward hook (copy_grads_in_partition
    // -> async_inplace_copy_grad_to_fp32_buffer_from_gpu, then param.grad = None); no 16-bit partition
    // on the device. The engine keeps temp_grad_buffer_for_gpu_offload, largest_param_numel elements
    // in the model dtype, from its construction.
    m.gradients_bytes = largest_trainable;
    m.gradients_at_init = true;
    m.layer_gradient_bytes = m.head_gradient_bytes = m.regularizer_gradient_bytes = 0;
    // The output layer's gradient stays a tensor of its own when it exceeds the reduce bucket
    // (extra_large_param_to_reduce); a smaller one is copied into the bucket (counted there).
    const std::int64_t head_grad = checked_mul(head_trainable_elems, t.main_grad_bytes > 0 ? t.main_grad_bytes : wb, "gradient bytes");
    m.offload_head_gradient_bytes = head_grad > shard.behaviour.reduce_bucket_bytes ? head_grad : 0;
    // Before the copy, set_norm_for_param_grad_in_gpu takes the norm of an fp64 copy and
    // update_overflow_tracker_for_param_grad checks the whole 16-bit gradient (_has_inf_or_nan);
    // one parameter at a time, so the largest of each kind binds where it is reduced.
    const std::int64_t per_element = shard.behaviour.zero_offload_grad_check_bytes_per_element;
    m.offload_grad_check_layer_bytes = checked_mul(largest_layer_trainable_elems, per_element, "gradient bytes");
    m.offload_grad_check_head_bytes = checked_mul(head_trainable_elems, per_element, "gradient bytes");
    m.offload_grad_check_embedding_bytes = checked_mul(embedding_trainable_elems, per_element, "gradient bytes");
  }
  if (t.offload == Offload::kParamsOptimizer) {
    // ZeRO-Infinity / FSDP CPUOffload(offload_params=True): parameter and gradient shards live
    // on the host; the GPU holds only what is gathered for compute and reduced from it.
    // The quant states stay on the GPU (not parameters: not offloaded either).
    const std::int64_t quant_states = quant_state_bytes[0] + quant_state_bytes[1];
    const std::int64_t kept = std::min(m.weights_bytes, quant_states);
    m.host_bytes += m.weights_bytes - kept + m.gradients_bytes;
    // DeepSpeed's ZeRO-3 with offload_optimizer steps every sub-group on an fp32 gradient buffer of
    // its own, pinned on the host from initialisation (stage3.py initialize_optimizer_states @ v0.16.4:
    // subgroup_gradient_buffer per sub-group), beside the partitions' gradient buffer counted above
    // (grad_partitions_flat_buffer on the offload device, in the gradient accumulation dtype).
    if (master_in_opt && shard.behaviour.fp32_grads_at_step && !t.optimizer_in_backward) {
      m.host_bytes += checked_mul(stepped_params, 4, "host bytes");
    }
    m.weights_bytes = kept;
    m.master_weights_bytes = 0;
    m.gradients_bytes = 0;
    m.layer_gradient_bytes = 0;
    m.head_gradient_bytes = 0;
    m.regularizer_gradient_bytes = 0;
  }
  return m;
}

std::int64_t block_model_states_bytes(const ModelArchitecture& arch, const TensorInventory& inv,
                                      const TrainingSetup& t, const RankShard& shard) {
  RankShard blocks = shard;
  blocks.embedding = blocks.head = false;
  return compute_model_states(arch, inv, t, blocks).total_bytes();
}

const ModelStates& ModelStatesMemo::get(const ModelArchitecture& arch, const TensorInventory& inv, const TrainingSetup& t,
                                        const RankShard& shard) {
  const DistributedBehaviour& b = shard.behaviour;
  key_.assign({static_cast<std::int64_t>(t.offload), static_cast<std::int64_t>(t.amp_weights), static_cast<std::int64_t>(t.method),
               shard.embedding, shard.head, shard.tp, shard.ep, shard.etp, static_cast<std::int64_t>(shard.sharding), shard.dense_shard,
               shard.expert_shard, shard.data_parallel, shard.padded_vocab, b.ddp_bucket_copy, b.grad_buffer_at_init,
               b.pp_defers_grad_sync, b.reduce_in_fp32, b.zero_offload_grads_on_host,
               b.zero_offload_grad_check_bytes_per_element, t.main_grad_bytes});
  if (trains_block_range(t)) {
    key_.push_back(t.badam_active_layer);
    for (const LayerRange& r : shard.layers) key_.insert(key_.end(), {r.first, r.count});
    key_.push_back(shard.layers.empty());
  } else {
    for (const LayerGroup& g : inv.groups) key_.push_back(shard.held(g.first_layer, g.layer_count));
  }
  auto it = memo_.find(key_);
  if (it == memo_.end()) it = memo_.emplace(key_, compute_model_states(arch, inv, t, shard)).first;
  return it->second;
}

}  // namespace memfit
