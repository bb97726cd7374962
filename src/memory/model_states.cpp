// Persistent state bytes from the tensor inventory (see model_states.h for sources).
#include "memory/model_states.h"

#include <algorithm>

#include "common/units.h"

namespace memfit {

namespace {

// Optimizer state bytes per trainable parameter whose own dtype has `elem` bytes.
std::int64_t state_bytes_per_param(Optimizer o, std::int64_t elem) {
  switch (o) {
    case Optimizer::kAdamW: return 2 * elem;            // exp_avg + exp_avg_sq in the param dtype
    case Optimizer::kPagedAdamW32bit: return 8;         // fp32 moments (paged: unified memory)
    case Optimizer::kAdamW8bit:
    case Optimizer::kPagedAdamW8bit: return 2;          // two uint8 moments (+ per-2048 absmax)
    case Optimizer::kAdamW4bit: return 1;               // two 4-bit moments
    case Optimizer::kSgd: return 0;
    case Optimizer::kSgdMomentum:
    case Optimizer::kLion:
    case Optimizer::kMuon: return elem;                 // one momentum buffer
    case Optimizer::kAdafactor: return 0;               // factored: rows + cols, added per tensor
  }
  return 2 * elem;
}

bool is_linear_in_block(const TensorSpec& s) {
  return s.linear_weight && s.kind != ModuleKind::kLmHead && s.kind != ModuleKind::kRouter;
}

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

bool lora_targets_role(const TrainingSetup& t, const TensorSpec& s) {
  if (s.kind == ModuleKind::kLmHead && s.linear_weight && !s.tied) {
    for (const std::string& target : t.lora_targets) {
      if (target == "head") return true;  // the output projection (torchtune apply_lora_to_output)
    }
    return false;
  }
  if (!is_linear_in_block(s)) return false;
  for (const std::string& target : t.lora_targets) {
    if (target == "all-linear") return true;
    if (target == s.role) return true;
    // Fused projections carry the adapter when any of their parts is targeted.
    if (s.role == "qkv" && (target == "q" || target == "k" || target == "v")) return true;
    if (s.role == "gate_up" && (target == "gate" || target == "up")) return true;
    if ((s.role == "q_a" || s.role == "q_b") && target == "q") return true;
    if ((s.role == "kv_a" || s.role == "kv_b") && (target == "k" || target == "v")) return true;
  }
  return false;
}

bool layer_trains(const TrainingSetup& t, std::int64_t layer, std::int64_t num_layers) {
  switch (t.method) {
    case Method::kFull: return true;
    case Method::kFreeze: return layer >= 0 && layer >= num_layers - t.freeze_trainable_layers;
    case Method::kLora:
    case Method::kQlora:
    case Method::kDora: return false;
  }
  return true;
}

ModelStates compute_model_states(const ModelArchitecture& arch, const TensorInventory& inv,
                                 const TrainingSetup& t) {
  ModelStates m;
  m.total_params = inv.total_params;
  const std::int64_t wb = weight_bytes(t.precision);
  const bool lora = is_lora_like(t.method);
  const BaseQuant quant = lora ? effective_base_quant(t) : BaseQuant::kNone;
  // PEFT keeps adapters in fp32 (autocast_adapter_dtype=True since PEFT 0.12); frameworks that
  // build adapters in the model dtype keep them in the parameter dtype.
  const std::int64_t adapter_bytes = t.adapters_fp32 ? 4 : wb;
  // prepare_model_for_kbit_training casts the non-quantised parameters to fp32.
  const std::int64_t quant_other_bytes = t.kbit_prep_fp32 ? 4 : wb;
  std::int64_t trainable_elems_by_bytes[5] = {};  // index: element bytes of the trainable tensor
  std::int64_t largest_trainable = 0;
  std::int64_t adafactor_state = 0;
  std::int64_t layer_grad_sum = 0;

  auto visit = [&](const TensorSpec& s, std::int64_t layer, std::int64_t layers_in_group, bool in_stack) {
    if (s.tied) return;
    const std::int64_t n = checked_mul(s.total_numel(), layers_in_group, "parameter count");
    m.weight_tensor_count += s.copies * layers_in_group;
    const bool trains = layer_trains(t, layer, arch.num_layers);
    std::int64_t bytes_per = wb;
    if (quant != BaseQuant::kNone) {
      if (is_linear_in_block(s)) {
        const std::int64_t in = s.shape.size() == 2 ? s.shape[1] : 1;
        m.weights_bytes = checked_add(m.weights_bytes, ceil_div(checked_mul(n, quant_micro_bytes(quant, in), "weight bytes"),
                                                                1'000'000), "weight bytes");
        // The kernel dequantises one weight at a time to the compute dtype (bitsandbytes
        // dequantize_4bit output; freed after the matmul, and again in backward).
        m.dequant_workspace_bytes = std::max(m.dequant_workspace_bytes, checked_mul(s.numel(), 2, "workspace bytes"));
        bytes_per = 0;
      } else {
        bytes_per = quant_other_bytes;
      }
    }
    m.weights_bytes = checked_add(m.weights_bytes, checked_mul(n, bytes_per, "weight bytes"), "weight bytes");
    if (trains) {
      m.trainable_params += n;
      trainable_elems_by_bytes[bytes_per] += n;
      if (bytes_per == 4 && is_amp(t.precision)) m.master_weights_bytes += 4 * n;
      largest_trainable = std::max(largest_trainable, s.numel() * bytes_per);
      if (s.kind == ModuleKind::kEmbedding && s.role == "embedding") m.embedding_grad_bytes = s.numel() * bytes_per;
      if (t.optimizer == Optimizer::kAdafactor) {
        adafactor_state += s.shape.size() == 2 ? (s.shape[0] + s.shape[1]) * 4 * s.copies * layers_in_group : n * 4;
      }
      if (in_stack) layer_grad_sum += n * bytes_per;
      else if (s.kind == ModuleKind::kLmHead || s.kind == ModuleKind::kNorm) m.head_gradient_bytes += n * bytes_per;
    }
    if (is_amp(t.precision) && s.linear_weight && quant == BaseQuant::kNone) {
      m.amp_weight_cast_bytes += n * 2;  // autocast's 16-bit copy, saved by mm for backward
    }
    if (lora && lora_targets_role(t, s)) {
      const std::int64_t in = s.shape[1];
      const std::int64_t out = s.shape[0];
      // DoRA adds a magnitude vector of `out` values per adapted linear.
      const std::int64_t per_copy = t.lora_rank * (in + out) + (t.method == Method::kDora ? out : 0);
      const std::int64_t a = checked_mul(per_copy, checked_mul(s.copies, layers_in_group, "adapter size"), "adapter size");
      m.adapter_params += a;
      m.trainable_params += a;
      trainable_elems_by_bytes[adapter_bytes] += a;
      m.weights_bytes = checked_add(m.weights_bytes, a * adapter_bytes, "weight bytes");
      largest_trainable = std::max(largest_trainable, per_copy * adapter_bytes);
      if (in_stack) layer_grad_sum += a * adapter_bytes;
      else m.head_gradient_bytes += a * adapter_bytes;
      if (t.method == Method::kDora) {
        // PEFT DoRA: lora_B.weight @ lora_A.weight and W + that product, both (out, in) in the
        // adapter dtype, to take the column norm each forward (peft/tuners/lora/dora.py).
        m.dora_norm_workspace_bytes = std::max(m.dora_norm_workspace_bytes, checked_mul(2 * out * in, adapter_bytes, "workspace bytes"));
      }
    }
  };
  for (const TensorSpec& s : inv.globals) visit(s, -1, 1, false);
  for (const LayerGroup& g : inv.groups) {
    const std::int64_t before = layer_grad_sum;
    // Freeze decides per layer; other methods treat the group uniformly.
    if (t.method == Method::kFreeze) {
      for (std::int64_t i = 0; i < g.layer_count; ++i) {
        for (const TensorSpec& s : g.tensors) visit(s, g.first_layer + i, 1, true);
      }
    } else {
      for (const TensorSpec& s : g.tensors) visit(s, g.first_layer, g.layer_count, true);
    }
    m.largest_layer_gradient_bytes = std::max(m.largest_layer_gradient_bytes,
                                              (layer_grad_sum - before) / std::max<std::int64_t>(1, g.layer_count));
  }
  // A per-layer average for the backward timeline (layers of one model are near-uniform; the
  // totals below stay exact).
  const std::int64_t layers = std::max<std::int64_t>(1, arch.num_layers + arch.num_encoder_layers);
  m.layer_gradient_bytes = layer_grad_sum / layers;

  for (std::int64_t b = 1; b <= 4; ++b) {
    const std::int64_t elems = trainable_elems_by_bytes[b];
    m.gradients_bytes = checked_add(m.gradients_bytes, checked_mul(elems, b, "gradient bytes"), "gradient bytes");
    const std::int64_t state = t.optimizer == Optimizer::kAdafactor ? 0 : state_bytes_per_param(t.optimizer, b);
    m.optimizer_states_bytes = checked_add(m.optimizer_states_bytes, checked_mul(elems, state, "state bytes"), "state bytes");
  }
  m.optimizer_states_bytes += adafactor_state;
  m.largest_trainable_tensor_bytes = largest_trainable;
  const bool adam_like = t.optimizer == Optimizer::kAdamW || t.optimizer == Optimizer::kPagedAdamW32bit;
  if (t.optimizer_in_backward) {
    // One parameter stepped at a time inside backward: at most one tensor's temporaries.
    m.optimizer_step_temp_bytes = adam_like ? largest_trainable : 0;
  } else if (adam_like) {
    switch (t.optimizer_impl) {
      case OptimizerImpl::kForeach: m.optimizer_step_temp_bytes = m.optimizer_states_bytes / 2; break;  // sqrt copy of exp_avg_sq
      case OptimizerImpl::kForLoop: m.optimizer_step_temp_bytes = largest_trainable; break;
      case OptimizerImpl::kFused: m.optimizer_step_temp_bytes = 0; break;
    }
  } else if (t.optimizer == Optimizer::kAdafactor) {
    m.optimizer_step_temp_bytes = 3 * largest_trainable;  // fp32 grad copy, update, factored product
  }
  if (t.optimizer == Optimizer::kPagedAdamW8bit || t.optimizer == Optimizer::kPagedAdamW32bit) {
    m.unmanaged_optimizer_states_bytes = m.optimizer_states_bytes;
    m.optimizer_states_bytes = 0;
  }
  if (t.offload == Offload::kOptimizer || t.offload == Offload::kParamsOptimizer) {
    // CPU optimizer (DeepSpeedCPUAdam / torchao CPUOffloadOptimizer): fp32 states and the step
    // live in host memory; the GPU keeps the model-dtype weights and gradients.
    m.host_bytes = m.optimizer_states_bytes + m.unmanaged_optimizer_states_bytes;
    m.optimizer_states_bytes = 0;
    m.unmanaged_optimizer_states_bytes = 0;
    m.optimizer_step_temp_bytes = 0;
  }
  return m;
}

}  // namespace memfit
