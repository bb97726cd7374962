// The block's op program (see block_program.h): derived once, folded by memory and perf.
#include "block/block_program.h"

#include <algorithm>
#include <iterator>
#include <string_view>

#include "common/units.h"
#include "training/parameters.h"

namespace memfit {

namespace {

// HBM bytes per element that eager PyTorch kernels move in the forward, counted from the ops
// (reads + writes, 2-byte activations):
//   RMSNorm/LayerNorm written out in the model (x.float(), pow, mean, x*rsqrt, type_as, *weight):
//   6 + 8 + 4 + 8 + 6 + 4 = 36; a residual add: 2 + 2 + 2 = 6; gated activation (silu(gate) then
//   * up): 4 + 6 = 10; plain activation (gelu): 4; rotary in fp32 (float(), complex mul, cast):
//   6 + 12 + 6 = 24.
constexpr double kEagerNormBytes = 36, kResidualBytes = 6, kEagerGatedBytes = 10, kPlainActBytes = 4,
                 kEagerRotaryBytes = 24;
// torch.compile fuses each chain into one kernel that reads its inputs once and writes once:
// norm + residual 2 + 2 (+2 for the residual operand), gated 2 + 2 + 2, rotary 2 + 2.
constexpr double kCompiledNormBytes = 6, kCompiledGatedBytes = 6, kCompiledRotaryBytes = 4;
// Hand-fused kernels (Megatron-LM: fused layer norm, bias-dropout-add, bias-activation, rotary)
// fuse each op but not the chain: a norm reads 2 and writes 2; the residual add stays a kernel of
// its own (kResidualBytes); gated and plain activations and rotary as compiled.
constexpr double kFusedNormBytes = 4;
// Kernels an eager PyTorch block launches in its forward (transformers modeling_llama.py, counted
// from the code): an RMSNorm 8 (to fp32, pow, mean, + eps, rsqrt, x, to dtype, x weight); rotary
// 5 each for q and k (x cos, rotate_half's neg and cat, x sin, +); the attention kernel and the
// copy of its transposed output 2; SiLU and the gate product 2; two residual adds.
// torch.compile runs each elementwise chain as one kernel (norm with its residual add, rotary,
// the activation product, the attention kernel); Megatron-LM's fused kernels one per op (norm,
// bias-dropout-add twice, rotary for q and for k, the attention kernel, the activation).
constexpr double kEagerNormKernels = 8, kEagerRotaryKernels = 10, kEagerAttentionKernels = 2, kEagerGatedKernels = 2;
// Megatron-LM's eager attention (ParallelAttention.forward, megatron/model/transformer.py @ 3d718bfc):
// baddbmm for the scores, the fused scale-mask-softmax, the attention dropout, bmm for the context
// and the context's permute + contiguous copy, where its fused attention is one kernel.
constexpr double kMegatronEagerAttentionKernels = 5;

}  // namespace

double BlockOp::flops_per_token(std::int64_t tp) const {
  return 2.0 * static_cast<double>(in.at(tp)) * static_cast<double>(out.at(tp));
}

std::size_t BlockProgram::matmul_count() const {
  std::size_t n = 0;
  for_each_matmul(1, 1, [&](const BlockOp&, std::int64_t) { ++n; });
  return n;
}

bool sdpa_math_kernel(const ModelArchitecture& a, const TrainingSetup& t) {
  return t.attention == AttentionKernel::kSdpa && a.attention.sdpa_unexpanded_kv &&
         a.attention.num_kv_heads != a.attention.num_heads;
}

std::int64_t kernel_kv_heads(const ModelArchitecture& a, const TrainingSetup& t) {
  return a.attention.layout == QkvLayout::kLowRank || t.attention_repeats_kv ? a.attention.num_heads
                                                                              : a.attention.num_kv_heads;
}

bool lora_merges_experts(const TrainingSetup& t, bool moe) {
  return moe && is_lora_like(t.method) && t.lora_merges_fused_experts && !t.lora_routed_experts_unadapted &&
         (adapter_targets_role(t, "gate") || adapter_targets_role(t, "up") || adapter_targets_role(t, "down"));
}

namespace {

SplitWidth hidden_width(std::int64_t h) { return {{SplitRule::kReplicated, 1, h}, {}}; }
SplitWidth heads_width(SplitRule rule, std::int64_t heads, std::int64_t dim) { return {{rule, heads, dim}, {}}; }
SplitWidth columns_width(std::int64_t columns, std::int64_t blocks) { return {{SplitRule::kColumns, columns, blocks}, {}}; }

BlockStep& add_step(BlockProgram& p, StepKind kind, bool sequence_split, SplitWidth elems, ByRuntime hbm, ByRuntime kernels) {
  BlockStep& s = p.steps[p.step_count++];
  s.kind = kind;
  s.sequence_split = sequence_split;
  s.elems = elems;
  s.hbm_bytes_per_elem = hbm;
  s.kernels = kernels;
  return s;
}

// The steps: the block's norms, q_a's and kv_a's latent norms, q/k norms, rotary, the attention
// core, an MoE layer's router and dispatch, the activation function per MLP part, dropout and the
// residual adds.
// Traffic and launches of the latent and q/k norms, the router, the dispatch's permutes and
// dropout are not counted by the step time (0).
void add_steps(BlockProgram& p, const ModelArchitecture& a, bool moe) {
  const AttentionDims& d = p.attention;
  const std::int64_t h = a.hidden_size;
  // The block's norms (before and, sandwiched, after attention and MLP; one for a parallel block).
  const std::int64_t norms = a.norms_per_layer;
  const float count = static_cast<float>(norms);
  add_step(p, StepKind::kNorm, true, {{SplitRule::kReplicated, norms, h}, {}}, {kEagerNormBytes, kCompiledNormBytes, kFusedNormBytes},
           {static_cast<float>(kEagerNormKernels) * count, count, count});
  if (a.attention.layout == QkvLayout::kLowRank) add_step(p, StepKind::kLatentNorm, true, {}, {}, {});
  if (a.attention.qk_norm) add_step(p, StepKind::kQkNorm, false, {}, {}, {});
  if (a.attention.rotary_dim > 0) {
    add_step(p, StepKind::kRotary, false,
             {{SplitRule::kHeads, d.heads, a.attention.rotary_dim}, {SplitRule::kKvHeads, d.kv_heads, a.attention.rotary_dim}},
             {kEagerRotaryBytes, kCompiledRotaryBytes, kCompiledRotaryBytes}, {kEagerRotaryKernels, 1, 2});
  }
  add_step(p, StepKind::kAttentionCore, false, {}, {}, {kEagerAttentionKernels, 1, 1});
  // The activation function over each MLP part's columns (a routed expert's per top-k copy). The
  // MLP's activation launches count once per block: a shared expert's are not counted (0).
  const float act_bytes = static_cast<float>(a.mlp.gated ? kEagerGatedBytes : kPlainActBytes);
  const float compiled_act_bytes = static_cast<float>(a.mlp.gated ? kCompiledGatedBytes : kPlainActBytes);
  const ByRuntime act_traffic{act_bytes, compiled_act_bytes, compiled_act_bytes};
  const ByRuntime act_kernels{static_cast<float>(a.mlp.gated ? kEagerGatedKernels : 1.0), 1, 1};
  if (!moe) {
    add_step(p, StepKind::kActivation, false, columns_width(a.mlp.intermediate_size, 1), act_traffic, act_kernels).part = BlockPart::kMlp;
  } else {
    // The router: its gate linear (hidden -> experts, replicated; its FLOPs are the inventory's, a
    // linear weight of the layer) gives one logit per expert, then softmax and top-k. It runs on
    // the hidden-width side, which only sequence parallelism splits.
    add_step(p, StepKind::kRouter, true, {{SplitRule::kReplicated, a.moe.num_experts, 1}, {}}, {}, {});
    // The dispatch: each routed copy of a token, hidden wide, permuted to its expert, sent to the
    // expert's rank and back (GShard, Lepikhin et al. 2020: a dispatch and a combine all-to-all per
    // forward) and unpermuted.
    BlockStep& dispatch = add_step(p, StepKind::kDispatch, false, hidden_width(h), {}, {});
    dispatch.part = BlockPart::kRoutedExpert;
    dispatch.all_to_alls_fwd = 2;
    add_step(p, StepKind::kActivation, false, columns_width(a.moe.expert_intermediate_size, 1), act_traffic, act_kernels).part =
        BlockPart::kRoutedExpert;
    if (a.moe.shared_intermediate_size > 0) {
      add_step(p, StepKind::kActivation, false, columns_width(a.moe.shared_intermediate_size, 1), act_traffic, {}).part =
          BlockPart::kSharedExpert;
    }
  }
  // Dropout after the attention output and after the MLP; the two residual adds.
  const SplitWidth two_hidden{{SplitRule::kReplicated, 2, h}, {}};
  if (a.hidden_dropout > 0) add_step(p, StepKind::kDropout, true, two_hidden, {}, {});
  add_step(p, StepKind::kResidual, true, two_hidden, {kResidualBytes, 0, kResidualBytes}, {2, 0, 2});
}

void add(BlockProgram& p, BlockPart part, const char* role, SplitWidth in, SplitWidth out, bool column) {
  BlockOp& op = p.ops[p.op_count++];
  op.part = part;
  op.role = role;
  op.in = in;
  op.out = out;
  op.column = column;
}

// gate and up (or a fused gate_up, or a plain MLP's up), then down, `columns` wide.
void add_mlp(BlockProgram& p, const ModelArchitecture& a, BlockPart part, std::int64_t columns) {
  const SplitWidth h = hidden_width(a.hidden_size);
  if (a.mlp.gated && !a.mlp.fused_gate_up) {
    add(p, part, "gate", h, columns_width(columns, 1), true);
    add(p, part, "up", h, columns_width(columns, 1), true);
  } else {
    add(p, part, a.mlp.gated ? "gate_up" : "up", h, columns_width(columns, a.mlp.gated ? 2 : 1), true);
  }
  add(p, part, "down", columns_width(columns, 1), h, false);
}

}  // namespace

namespace {

// What the steps save (BlockStep::saved). Each term names the tensor that stays alive.
void save_steps(BlockProgram& p, const ModelArchitecture& a, const ProgramSetup& t) {
  const AttentionDims& d = p.attention;
  const std::int64_t h = a.hidden_size, e = activation_bytes(t.precision);
  // fp32 residual stream with 16-bit casts per linear: AMP, or fp32 embeddings under autocast.
  const std::int64_t stream = t.residual_fp32 ? 4 : e;
  // Norms: RMSNorm (HF) saves an fp32 copy of its input, rsqrt, and for its weight's gradient
  // the normalised pre-weight tensor (autograd saves a mul operand only when the other one needs
  // a gradient: a frozen weight keeps none); LayerNorm saves its input and fp32 mean/rstd. Under
  // AMP the residual stream is fp32. torch.compile fuses RMSNorm into one kernel that saves its
  // input and rsqrt; so does Liger's.
  const bool norm_trains = t.base_trains || t.method == Method::kLnTuning;  // PEFT LN tuning's trained copies
  const bool fused_norm = t.compile || t.liger_kernels;
  const std::int64_t norm_bytes = a.norm == NormKind::kRmsNorm
                                      ? (fused_norm ? stream * h + 4 : 4 * h + (norm_trains ? stream * h : 0) + 4)
                                      : (stream * h + 8);
  // Attention core. Selective checkpointing recomputes it, so its own saved tensors (the s x s
  // scores, the logsumexp) are dropped; q, k, v stay as the recompute's inputs.
  const bool core_recomputed = t.selective;
  const std::int64_t dq = d.qk_head_dim, dv = d.v_head_dim;
  for (std::size_t i = 0; i < p.step_count; ++i) {
    BlockStep& s = p.steps[i];
    switch (s.kind) {
      case StepKind::kNorm: s.saved = {{SplitRule::kReplicated, s.elems.a.units, norm_bytes}, {}}; break;
      case StepKind::kLatentNorm:
        // MLA latents: q_a output (norm input + normalised), kv_a output, both saved by their norms.
        s.saved = hidden_width((a.attention.q_lora_rank + a.attention.kv_lora_rank) * (4 + 2 * e));
        break;
      case StepKind::kQkNorm:
        // q/k norms stay HF's under Liger: its instance patch (transformers' apply_liger_kernel)
        // swaps the block norms and the MLP, not q_norm / k_norm (monkey_patch.py
        // apply_liger_kernel_to_qwen3): fp32 input copy and normalised tensor per element, rsqrt per head.
        s.saved = {{SplitRule::kHeads, d.heads, (4 + e) * dq + 4}, {SplitRule::kKvHeads, d.kv_heads, (4 + e) * dq + 4}};
        break;
      case StepKind::kAttentionCore:
        if (t.attention == AttentionKernel::kEager) {
          // q, and k/v expanded to every head; models that take QK^T in fp32 save fp32 q and k.
          const std::int64_t qk = a.attention.upcast_qk ? 4 : e;
          s.saved = {{SplitRule::kHeads, d.heads, qk * dq + qk * dv + e * dv}, {}};
          // Per score: the softmax output it saves (fp32 in HF eager; the compute dtype when
          // fused, Megatron FusedScaleMaskSoftmax) and the probabilities the V matmul saves (the
          // 16-bit cast, or with dropout its mask and dropped output: Korthikanti et al.'s 5as^2b).
          const std::int64_t softmax = t.softmax_fused_16bit ? e : 4;
          const std::int64_t probs = a.attention_dropout > 0 ? 1 + e : (t.softmax_fused_16bit ? 0 : e);
          if (!core_recomputed) s.saved_per_position = {SplitRule::kHeads, d.heads, softmax + probs};
          s.kernels.fused = kMegatronEagerAttentionKernels;
        } else if (t.attention == AttentionKernel::kSdpa && a.attention.sdpa_unexpanded_kv &&
                   a.attention.num_kv_heads != a.attention.num_heads) {  // sdpa_math_kernel
          // torch's math SDPA (attention.cpp _scaled_dot_product_attention_math) upcasts 16-bit
          // inputs and saves fp32 copies of the scaled q, k and v and the fp32 probabilities,
          // which both the softmax and the second matmul save (measured on an H200, torch 2.11:
          // B·H·S²·4 bytes and the fp32 q, k, v beside the output; tools/oracle/gpu_checks).
          s.saved = {{SplitRule::kHeads, d.heads, 4 * dq}, {SplitRule::kKvHeads, d.kv_heads, 4 * (dq + dv)}};
          if (!core_recomputed) s.saved_per_position = {SplitRule::kHeads, d.heads, 4};
        } else {
          // q, k, v as the kernel takes them (kernel_kv_heads) and the fp32 logsumexp.
          s.saved = {{SplitRule::kHeads, d.heads, e * dq + (core_recomputed ? 0 : 4)},
                     {SplitRule::kKvHeads,
                      a.attention.layout == QkvLayout::kLowRank || t.attention_repeats_kv ? a.attention.num_heads
                                                                                          : a.attention.num_kv_heads,  // kernel_kv_heads
                      e * (dq + dv)}};
        }
        break;
      case StepKind::kDropout: s.saved = s.elems; break;  // a 1-byte mask per element
      case StepKind::kRouter:
        // The router logits and the fp32 routing probabilities: 8 bytes per expert, whatever the
        // activation dtype.
        s.saved = {{SplitRule::kReplicated, s.elems.a.units, 8}, {}};
        break;
      case StepKind::kDispatch:
        // Per routed copy: the permuted token, hidden wide in the activation dtype. Routed tokens
        // are exchanged between expert-parallel ranks, not removed (balanced routing: each rank
        // receives top_k copies per local token); the permuted copy is full width, as Megatron's
        // dispatcher gathers its expert-tp group's tokens (token_dispatcher.py
        // dispatch_postprocess), and sits with the routed expert's saves (etp / tp of the
        // sequence per rank: block/activations.cpp).
        s.saved = {{SplitRule::kReplicated, s.elems.a.units, s.elems.a.width * e}, {}};
        break;
      case StepKind::kActivation: {
        // Per MLP column. Gated: gate out, act out, up out (compiled or Liger's SwiGLU: gate and
        // up only, the rest recomputed); plain: the activation's input. transformers'
        // NewGELUActivation ("gelu_new") is built from elementwise ops that save tanh's output,
        // 0.5·x and 1 + tanh beside x (transformers activations.py; the oracle's records: three
        // more 4h tensors per layer); compiled, or Megatron's bias-gelu fusion
        // (fused_elementwise), it is one kernel that saves its input. ReLU's backward reads its
        // output, which down's saved input is otherwise.
        const bool new_gelu = !a.mlp.gated && a.mlp.activation == "gelu_new" && !t.compile && !t.fused_elementwise;
        bool down_saves = false;
        for (std::size_t j = 0; j < p.op_count; ++j) {
          down_saves = down_saves || (p.ops[j].part == s.part && !p.ops[j].column && p.ops[j].saves.copies > 0);
        }
        std::int64_t per_column = a.mlp.gated ? (t.compile || t.liger_kernels ? 2 : 3) * e : e;
        if (new_gelu) per_column += 3 * e;
        if (!down_saves && !a.mlp.gated && a.mlp.activation == "relu") per_column += e;
        s.saved = {{SplitRule::kColumns, s.elems.a.units, per_column}, {}};
        break;
      }
      case StepKind::kResidual:
      case StepKind::kRotary: break;
    }
  }
}

}  // namespace

BlockProgram block_program(const ModelArchitecture& a, bool moe) {
  BlockProgram p;
  p.attention = attention_dims(a);
  const AttentionDims& d = p.attention;
  const SplitWidth h = hidden_width(a.hidden_size);
  if (a.attention.layout == QkvLayout::kFused) {
    add(p, BlockPart::kAttention, "qkv", h,
        {{SplitRule::kHeads, d.heads, d.qk_head_dim}, {SplitRule::kKvHeads, d.kv_heads, 2 * d.v_head_dim}}, true);
  } else {
    // MLA's low-rank projections run as q, k and v of its head dims (the adapter targets' names).
    add(p, BlockPart::kAttention, "q", h, heads_width(SplitRule::kHeads, d.heads, d.qk_head_dim), true);
    add(p, BlockPart::kAttention, "k", h, heads_width(SplitRule::kKvHeads, d.kv_heads, d.qk_head_dim), true);
    add(p, BlockPart::kAttention, "v", h, heads_width(SplitRule::kKvHeads, d.kv_heads, d.v_head_dim), true);
  }
  add(p, BlockPart::kAttention, "o", heads_width(SplitRule::kHeads, d.heads, d.v_head_dim), h, false);  // o: row-parallel
  if (moe) {
    p.routed_copies = a.moe.top_k;
    add_mlp(p, a, BlockPart::kRoutedExpert, a.moe.expert_intermediate_size);
    if (a.moe.shared_intermediate_size > 0) add_mlp(p, a, BlockPart::kSharedExpert, a.moe.shared_intermediate_size);
  } else {
    add_mlp(p, a, BlockPart::kMlp, a.mlp.intermediate_size);
  }
  add_steps(p, a, moe);
  return p;
}

namespace {

// The op roles a LoRA-like adapter can sit on (BlockOp::role), one bit each in ProgramSetup::adapted_roles.
constexpr const char* kAdaptableRoles[] = {"q", "k", "v", "qkv", "o", "gate", "up", "gate_up", "down"};

std::uint16_t role_bit(std::string_view role) {
  for (std::size_t i = 0; i < std::size(kAdaptableRoles); ++i) {
    if (role == kAdaptableRoles[i]) return static_cast<std::uint16_t>(1u << i);
  }
  return 0;
}

}  // namespace

ProgramSetup program_setup(const TrainingSetup& t, bool moe, bool base_trains) {
  ProgramSetup s;
  s.precision = t.precision;
  s.method = t.method;
  s.attention = t.attention;
  s.moe = moe;
  s.base_trains = base_trains;
  s.residual_fp32 = fp32_residual_stream(t);
  s.fp8_saves_fp8_inputs = t.fp8_saves_fp8_inputs;
  s.adapters_fp32 = t.adapters_fp32;
  s.merged_experts = lora_merges_experts(t, moe);
  s.selective = t.checkpointing == Checkpointing::kSelective;
  s.compile = t.compile;
  s.liger_kernels = t.liger_kernels;
  s.softmax_fused_16bit = t.softmax_fused_16bit;
  s.attention_repeats_kv = t.attention_repeats_kv;
  s.fused_elementwise = t.fused_elementwise;
  s.routed_experts_unadapted = t.lora_routed_experts_unadapted;
  if (is_lora_like(t.method)) {
    for (const char* role : kAdaptableRoles) {
      if (adapter_targets_role(t, role)) s.adapted_roles |= role_bit(role);
    }
  }
  return s;
}

BlockProgram block_program(const ModelArchitecture& a, const TrainingSetup& t, bool moe, bool base_trains) {
  return block_program(a, program_setup(t, moe, base_trains));
}

const BlockProgram& BlockProgramMemo::get(const ModelArchitecture& a, const TrainingSetup& t, bool moe, bool base_trains) {
  if (arch_ != &a) {
    entries_.clear();
    arch_ = &a;
  }
  const ProgramSetup key = program_setup(t, moe, base_trains);
  for (const auto& [setup, program] : entries_) {
    if (setup == key) return program;
  }
  return entries_.emplace_back(key, block_program(a, key)).second;
}

BlockProgram block_program(const ModelArchitecture& a, const ProgramSetup& t) {
  const bool moe = t.moe, base_trains = t.base_trains;
  BlockProgram p = block_program(a, moe);
  const std::int64_t e = activation_bytes(t.precision);
  // fp32 residual stream with 16-bit casts per linear: AMP, or fp32 embeddings under autocast.
  const bool amp = t.residual_fp32;
  const bool lora = is_lora_like(t.method);
  // fp8 linears (Transformer Engine) save their inputs as fp8 casts plus a scale.
  const bool fp8_saved = t.precision == Precision::kFp8 && t.fp8_saves_fp8_inputs;
  const std::int64_t column_in = fp8_saved ? 1 : (amp ? 2 : e);
  // PEFT with fp32 adapters over a 16-bit model: each adapter's lora_A saves its own fp32 copy
  // of the input instead of the shared input (counted with the adapters, activations.cpp).
  const bool adapter_own_copy = lora && t.adapters_fp32 && e != 4;
  // A LoRA-like adapter on each matmul whose role the targets name (a routed expert's unless PEFT
  // leaves the fused stacks unadapted), and per part whether one sits on a matmul reading the
  // part's input (the block's norm output for attention, the MLP's input).
  std::array<bool, kBlockPartCount> column_adapted{};
  for (std::size_t i = 0; i < p.op_count; ++i) {
    BlockOp& op = p.ops[i];
    op.adapted = lora && (t.adapted_roles & role_bit(op.role)) != 0 &&
                 !(op.part == BlockPart::kRoutedExpert && t.routed_experts_unadapted);
    bool& part_adapted = column_adapted[static_cast<std::size_t>(op.part)];
    if (op.column) part_adapted = part_adapted || op.adapted;
  }
  // A linear's input stays alive when its weight needs a gradient, or when an adapter on it saves
  // the shared input itself.
  auto input_saved = [&](bool adapter) { return base_trains || (lora && adapter && !adapter_own_copy); };
  const bool merged_experts = t.merged_experts;  // the expert matmuls save their inputs
  const bool qkv_saved = input_saved(column_adapted[static_cast<std::size_t>(BlockPart::kAttention)]);
  // q, k and v read one storage (one saved input); under AMP each separate projection keeps its
  // own 16-bit autocast copy. An MLP's gate and up each keep one under AMP (the fused gate_up too).
  const bool qkv_casts = amp && a.attention.layout == QkvLayout::kSeparate;
  bool first_qkv = true;
  for (std::size_t i = 0; i < p.op_count; ++i) {
    BlockOp& op = p.ops[i];
    const bool merged = merged_experts && op.part == BlockPart::kRoutedExpert;
    if (op.part == BlockPart::kAttention && op.column) {
      if (qkv_saved && (first_qkv || qkv_casts)) op.saves = {1, column_in};
      first_qkv = false;
    } else if (op.part == BlockPart::kAttention) {
      op.saves = {1, e};  // the attention output, which o's weight and input gradients both read
    } else if (op.column) {
      const bool first = !p.ops[i - 1].column;  // an MLP's first column-parallel matmul
      const bool fused = a.mlp.gated && a.mlp.fused_gate_up;
      if ((input_saved(column_adapted[static_cast<std::size_t>(op.part)]) || merged) && (first || amp)) op.saves = {amp && fused ? 2 : 1, column_in};
    } else if (input_saved(op.adapted) || merged) {
      op.saves = {1, fp8_saved ? 1 : e};  // down's input
    }
  }
  save_steps(p, a, t);
  return p;
}

AdapterWidths adapter_widths(const BlockOp& op, std::int64_t tp) {
  return adapter_widths_on_rank(op.in.at(1), op.out.at(1), op.column ? AdapterSplit::kColumn : AdapterSplit::kRow, tp);
}

std::vector<BlockMatmul> block_matmuls(const BlockProgram& p, std::int64_t tp) {
  tp = std::max<std::int64_t>(1, tp);
  std::vector<BlockMatmul> mms;
  mms.reserve(p.matmul_count());
  p.for_each_matmul(tp, tp, [&](const BlockOp& op, std::int64_t split) {
    mms.push_back(BlockMatmul{op.in.at(split), op.out.at(split), op.column});
  });
  return mms;
}

std::array<MatmulInputSaves, kBlockPartCount> saved_matmul_inputs(const BlockProgram& p, std::int64_t tp,
                                                                   std::int64_t expert_tp) {
  std::array<MatmulInputSaves, kBlockPartCount> saves{};
  for (std::size_t i = 0; i < p.op_count; ++i) {
    const BlockOp& op = p.ops[i];
    if (op.saves.copies == 0) continue;
    const std::int64_t width = op.in.at(op.part == BlockPart::kRoutedExpert ? expert_tp : tp);
    MatmulInputSaves& part = saves[static_cast<std::size_t>(op.part)];
    (op.column ? part.full_width : part.split) += op.saves.copies * op.saves.elem_bytes * width;
  }
  return saves;
}

}  // namespace memfit
