// Per-layer saved-tensor bytes (see activations.h). Each term names the tensor that stays alive.
#include "block/activations.h"

#include <algorithm>
#include <optional>
#include <string>

#include "common/units.h"
#include "training/parameters.h"
#include "training/peft_bench.h"
#include "training/peft_linear_adapters.h"
#include "training/peft_shared_adapters.h"

namespace memfit {

namespace {

// What PEFT's adapters other than LoRA save per adapted linear (peft v0.21.2), `ab` the adapter
// dtype's bytes (fp32 under autocast_adapter_dtype):
// - IA3 (tuners/ia3/layer.py Linear.forward): k/v-like linears save the frozen linear's output for
//   the scaling vector's gradient (e·out); a feed-forward one saves its input cast to the vector's
//   dtype (ab·in); each keeps its `1 * ia3_l` product (ab·vector per layer).
// - LoHa / LoKr (tuners/loha/layer.py, lokr/layer.py _get_delta_activations): the input cast to
//   the adapter dtype (ab·in per token), and the delta weight made each forward (Hadamard product
//   of two rank-r products; Kronecker product of w1 and w2), out x in in the adapter dtype, which
//   F.linear saves when its input needs a gradient.
// - VeRA (tuners/vera/layer.py Linear.forward): the frozen vera_A's output for lambda_d (ab·r) and
//   the frozen vera_B's output for lambda_b (ab·out); the shared projections save nothing new.
// - OFT (tuners/oft/layer.py OFTRotationModule.forward): the input cast to the adapter dtype
//   (ab·in), which the block rotation's einsum saves for R's gradient; per layer the rotation R
//   [in/b, b, b] and the Cayley-Neumann powers of the skew matrix its bmm's save (Q, Q², Q³: 5
//   terms, the default), 4 such tensors in the adapter dtype.
// - BOFT (tuners/boft/layer.py Linear.forward): the full in x in rotation is built each forward in
//   the input dtype: bmm(P, ·) saves P's 16-bit copy, the rotation's product with eye(in) saves the
//   eye, and x @ rotation saves x (shared by linears reading one input) and, for x's gradient, the
//   rotation; the output scale's mul saves the base output (e·out).
// - MiSS, GLoRA: training/peft_bench.h miss_saves, glora_saves; LiLy .. AdaMSS:
//   training/peft_shared_adapters.h shared_adapter_terms.
// PEFT's newer adapters on linears (training/peft_linear_adapters.h): per token what each adapted linear
// saves, per layer the weight it builds and keeps; `n` copies of the linear per token (MoE top-k).
void add_adapted_linear_terms(const AdaptedLinearTerms& w, std::int64_t n, bool reads_block_input, std::int64_t& s,
                            LayerActivations& out) {
  s += n * w.saved_per_token;
  out.saved_per_layer += w.saved_weight;
  (reads_block_input ? out.saved_per_layer_for_input_grad : out.saved_per_layer) += w.saved_weight_for_input_grad;
  out.backward_transient_per_layer = std::max(out.backward_transient_per_layer, w.backward_transient);
}

void add_peft_adapter_terms(const ModelArchitecture& a, const TrainingSetup& t, std::int64_t heads, std::int64_t kvh,
                            std::int64_t d, std::int64_t dv, std::int64_t e, bool moe, std::int64_t& s,
                            LayerActivations& out) {
  if (!is_adapter_method(t.method) || is_lora_like(t.method)) return;
  const std::int64_t ab = t.adapters_fp32 ? 4 : e;
  const std::int64_t h = a.hidden_size;
  const std::int64_t f = moe ? a.moe.expert_intermediate_size : a.mlp.intermediate_size;
  // Separate projections (the llama layout): the roles lora_targets_role adapts.
  struct Linear { const char* role; std::int64_t in, out; };
  const Linear linears[] = {{"q", h, heads * d}, {"k", h, kvh * d}, {"v", h, kvh * dv}, {"o", heads * dv, h},
                            {"gate", h, f}, {"up", h, f}, {"down", f, h}};
  const std::int64_t copies = moe ? a.moe.top_k : 1;
  // Whether an adapted linear runs before this one in the block (q, k and v read the block's
  // input side by side): its output needs a gradient even where the block's input does not.
  bool adapted_before = false, adapted_qkv = false;
  bool qkv_input_saved = false, gate_up_input_saved = false;  // BOFT, GLoRA: one saved x per shared input
  // Whether an earlier linear already saved this one's input (q, k, v share one; gate, up another;
  // o and down read their own), marking it saved.
  auto input_saved_before = [&](const std::string& role) {
    bool* shared = role == "q" || role == "k" || role == "v" ? &qkv_input_saved
                   : role == "gate" || role == "up"          ? &gate_up_input_saved
                                                              : nullptr;
    const bool before = shared && *shared;
    if (shared) *shared = true;
    return before;
  };
  for (const Linear& l : linears) {
    const std::string role = l.role;
    if (role == "o") adapted_before = adapted_qkv;
    bool on = false;
    for (const std::string& r : t.lora_targets) on = on || r == "all-linear" || r == l.role;
    if (!on || (!a.mlp.gated && role == "gate")) continue;
    const bool reads_block_input = role == "q" || role == "k" || role == "v" || !adapted_before;
    if (role == "q" || role == "k" || role == "v") adapted_qkv = true;
    else adapted_before = true;
    const std::int64_t n = role == "gate" || role == "up" || role == "down" ? copies : 1;
    switch (t.method) {
      case Method::kIa3:
        s += n * (ia3_scales_input(l.role) ? ab * l.in : e * l.out);
        out.saved_per_layer += ab * (ia3_scales_input(l.role) ? l.in : l.out);
        break;
      case Method::kLoha:
      case Method::kLokr: {
        s += n * ab * l.in;
        const std::int64_t delta = checked_mul(ab * l.out, l.in, "adapter bytes");
        (reads_block_input ? out.saved_per_layer_for_input_grad : out.saved_per_layer) += delta;
        // Backward of the largest delta, once F.linear's backward has freed the saved delta: LoHa's
        // HadaWeight.backward holds the incoming gradient, its scaled copy, the old and new `temp`
        // and a rebuilt factor product (5 deltas, 4 beyond the freed one); LoKr's scale and kron
        // backward the gradient, its scaled copy and one broadcast product (3, 2 beyond).
        out.backward_transient_per_layer = std::max(out.backward_transient_per_layer, (t.method == Method::kLoha ? 4 : 2) * delta);
        break;
      }
      case Method::kVera: s += n * ab * (t.lora_rank + l.out); break;
      case Method::kMiss: add_adapted_linear_terms(miss_saves(t, l.in, l.out, ab), n, reads_block_input, s, out); break;
      case Method::kGlora: {
        AdaptedLinearTerms g = glora_saves(l.in, l.out, e);
        if (input_saved_before(role)) g.saved_per_token = 0;  // x is saved once per shared input
        add_adapted_linear_terms(g, n, reads_block_input, s, out);
        break;
      }
      case Method::kOft: {
        s += n * ab * l.in;
        const std::int64_t b = orthogonal_block_for(t, l.in);
        out.saved_per_layer += 4 * checked_mul(ab * (l.in / b) * b, b, "adapter bytes");
        break;
      }
      case Method::kBoft: {
        if (!input_saved_before(role)) s += n * e * l.in;
        s += n * e * l.out;
        const std::int64_t square = checked_mul(e * l.in, l.in, "adapter bytes");
        out.saved_per_layer += 2 * square;
        (reads_block_input ? out.saved_per_layer_for_input_grad : out.saved_per_layer) += square;
        break;
      }
      default:
        if (is_more_peft_adapter(t.method)) add_adapted_linear_terms(adapted_linear_terms(t, l.in, l.out, ab, e), n, reads_block_input, s, out);
        if (is_shared_peft_adapter(t.method)) add_adapted_linear_terms(shared_adapter_terms(t, l.in, l.out, ab, e), n, reads_block_input, s, out);
        break;
    }
  }
  out.saved_per_layer += out.saved_per_layer_for_input_grad;
}

// LLaMA-Adapter's gated prefix attention in an adapted layer, and what such a layer leaves unsaved
// when its input needs no gradient (the first adapted one: its attention side and the kernel's
// output, `attention_side` + the output).
// - LitGPT (litgpt v0.5.13 adapter.py CausalSelfAttention.scaled_dot_product_attention): from q to the
//   prefix's cached keys and values with an explicit mask, SDPA's memory-efficient kernel, which
//   saves its output and an fp32 logsumexp; `gating_factor * ay` keeps that output.
//   adapter_v2.py: each AdapterV2Linear computes adapter_scale * (linear(x) + adapter_bias) and
//   saves the sum (out per token) for the scale's gradient; the trained RMSNorm weight makes
//   `x_normed * weight.float()` save the fp32 normalised input (litgpt model.py RMSNorm).
// - PEFT (peft v0.21.2 tuners/adaption_prompt/layer.py AdaptedAttention.forward, utils.py
//   llama_compute_query_states): q recomputed and rotated, saved by matmul(q, adapter_k^T) since
//   adapter_k needs a gradient (in the first adapted layer too); per prefix position the fp32
//   softmax, its 16-bit cast (saved by the gate's mul) and the gated scores (saved by the V
//   matmul); adapter K and V repeated over the batch, saved by the two matmuls.
void add_llama_adapter_terms(const ModelArchitecture& a, const TrainingSetup& t, const BlockProgram& p, std::int64_t tp,
                             std::int64_t heads, std::int64_t d, std::int64_t dv, std::int64_t e, std::int64_t norms,
                             std::int64_t attention_side, std::int64_t& s, std::int64_t& seq, LayerActivations& out) {
  if (!is_llama_adapter(t.method)) return;
  const std::int64_t kernel_out = e * heads * dv;
  if (t.method == Method::kAdaptionPrompt) {
    const std::int64_t n = t.adapter_prompt_length;
    out.adapter_prompt_per_token = e * heads * d + (4 + 2 * e) * heads * n;
    out.entry_layer_unsaved_per_token = attention_side + kernel_out;
    out.saved_per_layer += checked_mul(t.micro_batch * n, e * heads * (d + dv), "activation bytes");
  } else {
    out.adapter_prompt_per_token = kernel_out + 4 * heads;
    out.entry_layer_unsaved_per_token = attention_side + kernel_out + 4 * heads;
  }
  s += out.adapter_prompt_per_token;
  if (t.method != Method::kAdapterV2) return;
  p.for_each_matmul(tp, tp, [&](const BlockOp& op, std::int64_t split) { s += e * op.out.at(split); });
  if (a.norm == NormKind::kRmsNorm) seq += norms * 4 * a.hidden_size;
}

// Prefix tuning: each layer's attention runs over the virtual tokens' keys and values before the
// sequence's (the cache PEFT passes as past_key_values), so the kernel saves K and V n positions
// longer per sequence (peft v0.21.2 peft_model.py PeftModelForCausalLM.forward, get_prompt).
std::int64_t prefix_kv_per_layer(const TrainingSetup& t, std::int64_t kvh, std::int64_t d, std::int64_t dv, std::int64_t e) {
  if (t.method != Method::kPrefixTuning) return 0;
  return checked_mul(t.micro_batch * t.virtual_tokens, e * kvh * (d + dv), "activation bytes");
}

}  // namespace

LayerActivations layer_activations(const ModelArchitecture& a, const TrainingSetup& t, bool moe,
                                   bool cross_attention, bool base_trains, const ActivationSplit& split,
                                   BlockProgramMemo* programs) {
  const std::int64_t h = a.hidden_size;
  const std::int64_t tp = std::max<std::int64_t>(1, split.tp);
  // The block's matmuls and what they save of their inputs (block_program.h).
  std::optional<BlockProgram> own;
  const BlockProgram& program = programs ? programs->get(a, t, moe, base_trains) : own.emplace(block_program(a, t, moe, base_trains));
  const std::int64_t etp = split.expert_tp > 0 ? split.expert_tp : tp;  // MoE parallel folding's expert tp
  const std::array<MatmulInputSaves, kBlockPartCount> matmul_inputs = saved_matmul_inputs(program, tp, etp);
  // Tensor parallelism splits heads and MLP width (Megatron column/row linears); a GQA group
  // count below tp is replicated so that every rank keeps one key/value head.
  const std::int64_t heads = program.attention.heads / tp;
  const std::int64_t kvh = std::max<std::int64_t>(1, program.attention.kv_heads / tp);
  const std::int64_t d = program.attention.qk_head_dim, dv = program.attention.v_head_dim;
  const std::int64_t e = activation_bytes(t.precision);   // element bytes of activations
  // fp32 residual stream with 16-bit casts per linear: AMP, or fp32 embeddings under autocast.
  const bool amp = fp32_residual_stream(t);
  const bool lora = is_lora_like(t.method);
  // PEFT with fp32 adapters over a 16-bit model: each adapter's lora_A saves its own fp32 copy
  // of the input instead of the shared input (counted with the adapters below).
  const bool adapter_own_copy = lora && t.adapters_fp32 && e != 4;
  auto targeted = [&](const char* role) { return lora && adapter_targets_role(t, role); };
  LayerActivations out;
  // `s` collects tensors split by tensor parallelism (per rank already); `seq` collects tensors
  // of the full hidden width, which only sequence parallelism splits (Korthikanti et al. 2022,
  // Table 2: the 10sbh that tp alone leaves replicated).
  std::int64_t s = 0, seq = 0;
  std::int64_t linear_inputs = 0;  // the column-parallel linears' (full-width) inputs

  const std::int64_t norms = std::max<std::int64_t>(1, a.norms_per_layer);
  const std::int64_t stream = amp ? 4 : e;
  // Attention in-projection input (the norm output) and o's input (the attention output).
  const MatmulInputSaves& attention_inputs = matmul_inputs[static_cast<std::size_t>(BlockPart::kAttention)];
  linear_inputs += attention_inputs.full_width;
  // The steps' saved tensors (block_program.cpp save_steps): norms, MLA's latent norms, q/k norms,
  // the attention core (its scores per key under eager attention), an MoE router's logits and
  // probabilities, dropout masks.
  std::int64_t norm_bytes = 0;
  // The attention side before its output (LLaMA-Adapter's entry layer): one norm, the q/k/v
  // inputs, the latent and q/k norms and the kernel's inputs.
  std::int64_t attention_side = attention_inputs.full_width;
  for (std::size_t i = 0; i < program.step_count; ++i) {
    const BlockStep& step = program.steps[i];
    // With its MLP part's matmul inputs (mlp_bytes): the activation function, the dispatch's
    // permuted copies.
    if (step.kind == StepKind::kActivation || step.kind == StepKind::kDispatch) continue;
    const std::int64_t saved = step.saved.at(tp);
    (step.sequence_split ? seq : s) += saved;
    out.saved_per_token_per_position += step.saved_per_position.at(tp);
    if (step.kind == StepKind::kNorm) norm_bytes = step.saved.a.width;  // one norm's
    if (step.kind == StepKind::kLatentNorm || step.kind == StepKind::kQkNorm || step.kind == StepKind::kAttentionCore) {
      attention_side += saved;
    }
  }
  attention_side += norm_bytes;
  s += attention_inputs.split;
  add_llama_adapter_terms(a, t, program, tp, heads, d, dv, e, norms, attention_side, s, seq, out);
  if (cross_attention) {                              // T5 decoder: q, encoder k/v, output, norm
    s += e * (3 * heads * d + heads * d);
    seq += norm_bytes + 2 * h;
  }

  // MLP.
  const std::int64_t f = a.mlp.intermediate_size;
  // Bytes of one MLP per token on this rank: its full-width input, its `width` columns split by
  // tp, and (routed experts) the dispatch's permuted copy.
  struct MlpBytes { std::int64_t input = 0, split = 0, dispatch = 0; };
  // LoRA on fused expert stacks: the grouped matmuls save their inputs (block_program), the
  // stacks themselves are kept per layer (below).
  const bool merged_experts = lora_merges_experts(t, moe);
  // Its matmuls' saved inputs, its activation function's and dispatch's saves (the program's
  // steps), at `split_by`.
  auto mlp_bytes = [&](BlockPart part, std::int64_t split_by) {
    const MatmulInputSaves& inputs = matmul_inputs[static_cast<std::size_t>(part)];
    MlpBytes out_bytes;
    out_bytes.input = inputs.full_width;
    out_bytes.split = inputs.split;  // down_proj's input
    for (std::size_t i = 0; i < program.step_count; ++i) {
      const BlockStep& step = program.steps[i];
      if (step.part != part) continue;
      if (step.kind == StepKind::kActivation) out_bytes.split += step.saved.at(split_by);
      if (step.kind == StepKind::kDispatch) out_bytes.dispatch += step.saved.at(split_by);
    }
    return out_bytes;
  };
  if (moe) {
    // Per routed copy of the token (the program's routed_copies; the router's saves are with the
    // steps above): the expert's saves and the dispatch's permuted copy (block_program.cpp
    // save_steps), etp / tp of the sequence per rank (tp > 1 runs MoE with sequence parallelism),
    // each split etp ways.
    const std::int64_t k = program.routed_copies;
    const MlpBytes expert = mlp_bytes(BlockPart::kRoutedExpert, etp);
    s += ceil_div(k * (expert.input + expert.split + expert.dispatch) * etp, tp);
    if (a.moe.shared_intermediate_size > 0) {
      const MlpBytes shared = mlp_bytes(BlockPart::kSharedExpert, tp);
      linear_inputs += shared.input;
      s += shared.split;
    }
  } else {
    const MlpBytes dense = mlp_bytes(BlockPart::kMlp, tp);
    linear_inputs += dense.input;
    s += dense.split;
  }
  if (lora) {
    // Per adapted linear: lora_B saves lora_A's output (r values); lora_A saves its input. PEFT
    // with fp32 adapters casts the input to fp32 per module (tuners_utils._cast_input_dtype), so
    // each adapted linear keeps its own fp32 copy; adapters in the model dtype share the base
    // input. Dropout > 0 keeps a dropped copy and its mask instead. DoRA also keeps the base
    // output and the adapter output for the magnitude rescale (peft/tuners/lora/dora.py).
    const std::int64_t ab = t.adapters_fp32 ? 4 : e;
    auto adapter_bytes = [&](const AdapterWidths& w) {
      std::int64_t bytes = ab * t.lora_rank;
      if (t.lora_dropout > 0) bytes += ab * w.in + w.in;  // dropped input + bool mask
      else if (adapter_own_copy) bytes += ab * w.in;
      if (t.method == Method::kDora) bytes += (e + ab) * w.out;
      return bytes;
    };
    // One adapter per matmul of the block program that carries one (BlockOp::adapted: a fused qkv
    // or gate_up linear once when any of its roles is targeted; a plain MLP has no gate), at its
    // widths on this rank (block_program.h adapter_widths: the widths model states give it). A
    // routed expert's run once per top-k copy, each on the tokens routed to it: per copy at the
    // expert tp, etp / tp of the sequence per rank, as its matmul inputs above.
    std::int64_t routed = 0;
    for (std::size_t i = 0; i < program.op_count; ++i) {
      const BlockOp& op = program.ops[i];
      if (!op.adapted) continue;
      if (op.part == BlockPart::kRoutedExpert) {
        if (!merged_experts) routed += adapter_bytes(adapter_widths(op, etp));  // else through the merged stacks
      } else {
        s += adapter_bytes(adapter_widths(op, tp));
      }
    }
    if (routed > 0) s += ceil_div(a.moe.top_k * routed * etp, tp);
    // The shared expert's sigmoid gate (Qwen2-MoE's shared_expert_gate, hidden -> 1; not a matmul
    // of the program): an adapter on it when targeted, replicated.
    if (moe && a.moe.shared_expert_gate && targeted("shared_gate")) s += adapter_bytes({h, 1});
  }
  add_peft_adapter_terms(a, t, heads, kvh, d, dv, e, moe, s, out);
  out.saved_per_layer += prefix_kv_per_layer(t, kvh, d, dv, e);
  // torchtitan's op policy: keep the outputs of the 1st, 3rd, 5th ... matmul of the block and of
  // the attention kernel (output and fp32 logsumexp), recompute the rest from the block input.
  {
    std::int64_t kept = e * heads * dv + 4 * heads;  // attention output + logsumexp
    std::size_t i = 0;
    program.for_each_matmul(tp, tp, [&](const BlockOp& op, std::int64_t split_by) {
      if (i++ % 2 == 0) kept += e * op.out.at(split_by);
    });
    out.mm_policy_kept_per_token = kept;
  }
  const std::int64_t seq_div = split.sequence_parallel ? tp : 1;
  const std::int64_t input_div = split.gathered_linear_inputs ? 1 : seq_div;
  out.saved_per_token = s + ceil_div(seq, seq_div) + ceil_div(linear_inputs, input_div);
  out.checkpoint_per_token = ceil_div(stream * h, seq_div);
  out.mm_policy_kept_per_token += out.checkpoint_per_token;
  out.checkpoint_per_token *= t.checkpoint_saved_inputs_per_block;
  out.residual_grad_per_token = ceil_div(stream * h, seq_div);
  // Largest in-layer gradient set: in the MLP backward, grads of the down input, act out, up and
  // gate (4 x width) plus the partial grads of the MLP input.
  const std::int64_t width = ceil_div(moe ? a.moe.top_k * a.moe.expert_intermediate_size : f, tp);
  out.backward_transient_per_token = e * (4 * width + 2 * h);
  if (merged_experts) {
    // peft v0.21.2 tuners/lora/layer.py ParamWrapper._activate_lora: _LoraFactorsProxy gives
    // torch.baddbmm(W, B, A) in W's dtype, one stack per targeted parameter, saved by the grouped
    // matmul. Its backward writes the stack's gradient: the down stack's while both are saved,
    // the gate_up stack's once the down one is released.
    const std::int64_t stack = checked_mul(checked_mul(a.moe.num_experts, ceil_div(a.moe.expert_intermediate_size, tp), "expert bytes"),
                                           checked_mul(h, e, "expert bytes"), "expert bytes");
    const std::int64_t gate_up = targeted("gate") || targeted("up") ? (a.mlp.gated ? 2 : 1) * stack : 0;
    const std::int64_t down = targeted("down") ? stack : 0;
    out.saved_per_layer = gate_up + down;
    out.backward_transient_per_layer = std::max(down, gate_up - down);
  }
  return out;
}

}  // namespace memfit

namespace memfit {

std::optional<LayerActivationsKey> layer_activations_key(const TrainingSetup& t, bool moe, bool cross_attention,
                                                         bool base_trains, const ActivationSplit& split) {
  if (is_adapter_method(t.method) && !is_lora_like(t.method)) return std::nullopt;  // add_peft_adapter_terms
  LayerActivationsKey k;
  k.program = program_setup(t, moe, base_trains);
  k.split = split;
  k.cross_attention = cross_attention;
  k.lora_rank = t.lora_rank;
  k.lora_dropout = t.lora_dropout;
  k.shared_gate_adapted = is_lora_like(t.method) && adapter_targets_role(t, "shared_gate");
  k.micro_batch = t.micro_batch;
  k.adapter_prompt_length = t.adapter_prompt_length;
  k.virtual_tokens = t.virtual_tokens;
  k.checkpoint_saved_inputs_per_block = t.checkpoint_saved_inputs_per_block;
  return k;
}

namespace {

// A hash of the fields that tell a search's keys apart (equal keys hash alike; the others are
// compared by operator== only).
std::size_t key_hash(const LayerActivationsKey& k) {
  std::uint64_t h = static_cast<std::uint64_t>(k.split.tp);
  auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 0x100000001b3ULL; };  // FNV-1a's prime
  mix(static_cast<std::uint64_t>(k.split.expert_tp));
  mix(static_cast<std::uint64_t>(k.micro_batch));
  mix((k.split.sequence_parallel ? 1u : 0u) | (k.split.gathered_linear_inputs ? 2u : 0u) | (k.cross_attention ? 4u : 0u) |
      (k.program.moe ? 8u : 0u) | (k.program.base_trains ? 16u : 0u) | (k.program.selective ? 32u : 0u));
  mix(static_cast<std::uint64_t>(k.program.precision));
  mix(static_cast<std::uint64_t>(k.program.method));
  mix(static_cast<std::uint64_t>(k.program.attention));
  return static_cast<std::size_t>(h ^ (h >> 29));
}

}  // namespace

void LayerActivationsMemo::relink(std::size_t entry) {
  std::int32_t& head = buckets_[entries_[entry].hash & (buckets_.size() - 1)];
  entries_[entry].next = head;
  head = static_cast<std::int32_t>(entry);
}

LayerActivations LayerActivationsMemo::get(const ModelArchitecture& a, const TrainingSetup& t, bool moe,
                                           bool cross_attention, bool base_trains, const ActivationSplit& split) {
  const std::optional<LayerActivationsKey> key = layer_activations_key(t, moe, cross_attention, base_trains, split);
  if (!key) return layer_activations(a, t, moe, cross_attention, base_trains, split, &programs_);
  if (arch_ != &a) {
    entries_.clear();
    buckets_.assign(64, -1);
    arch_ = &a;
  }
  const std::size_t hash = key_hash(*key);
  for (std::int32_t i = buckets_[hash & (buckets_.size() - 1)]; i >= 0; i = entries_[static_cast<std::size_t>(i)].next) {
    const Entry& known = entries_[static_cast<std::size_t>(i)];
    if (known.hash == hash && known.key == *key) return known.acts;
  }
  // A flag raised before the call stays the caller's; one the fold raises is re-raised, and its
  // result is not kept (a later call must raise it again).
  const char* earlier = take_beyond_exact();
  LayerActivations acts = layer_activations(a, t, moe, cross_attention, base_trains, split, &programs_);
  const char* beyond = take_beyond_exact();
  if (earlier) note_beyond_exact(earlier);
  if (beyond) {
    note_beyond_exact(beyond);
    return acts;
  }
  if (entries_.size() >= buckets_.size()) {  // at most one entry per bucket on average
    buckets_.assign(2 * buckets_.size(), -1);
    for (std::size_t i = 0; i < entries_.size(); ++i) relink(i);
  }
  entries_.push_back({*key, acts, hash, -1});
  relink(entries_.size() - 1);
  return acts;
}

}  // namespace memfit
