// The block's op program (see block_program.h): derived once, folded by memory and perf.
#include "block/block_program.h"

#include <algorithm>

#include "common/units.h"
#include "training/parameters.h"

namespace memfit {

double BlockOp::flops_per_token(std::int64_t tp) const {
  return 2.0 * static_cast<double>(in.at(tp)) * static_cast<double>(out.at(tp));
}

std::size_t BlockProgram::matmul_count() const {
  std::size_t n = 0;
  for_each_matmul(1, 1, [&](const BlockOp&, std::int64_t) { ++n; });
  return n;
}

bool lora_merges_experts(const TrainingSetup& t, bool moe) {
  return moe && is_lora_like(t.method) && t.lora_merges_fused_experts &&
         (adapter_targets_role(t, "gate") || adapter_targets_role(t, "up") || adapter_targets_role(t, "down"));
}

namespace {

SplitWidth hidden_width(std::int64_t h) { return {{SplitRule::kReplicated, 1, h}, {}}; }
SplitWidth heads_width(SplitRule rule, std::int64_t heads, std::int64_t dim) { return {{rule, heads, dim}, {}}; }
SplitWidth columns_width(std::int64_t columns, std::int64_t blocks) { return {{SplitRule::kColumns, columns, blocks}, {}}; }

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
  return p;
}

BlockProgram block_program(const ModelArchitecture& a, const TrainingSetup& t, bool moe, bool base_trains) {
  BlockProgram p = block_program(a, moe);
  const std::int64_t e = activation_bytes(t.precision);
  // fp32 residual stream with 16-bit casts per linear: AMP, or fp32 embeddings under autocast.
  const bool amp = fp32_residual_stream(t);
  const bool lora = is_lora_like(t.method);
  // fp8 linears (Transformer Engine) save their inputs as fp8 casts plus a scale.
  const bool fp8_saved = t.precision == Precision::kFp8 && t.fp8_saves_fp8_inputs;
  const std::int64_t column_in = fp8_saved ? 1 : (amp ? 2 : e);
  // PEFT with fp32 adapters over a 16-bit model: each adapter's lora_A saves its own fp32 copy
  // of the input instead of the shared input (counted with the adapters, activations.cpp).
  const bool adapter_own_copy = lora && t.adapters_fp32 && e != 4;
  // A LoRA-like adapter on each matmul whose role the targets name.
  bool qkv_adapted = false, gate_up_adapted = false;  // an adapter on a matmul reading the (MLP's) norm output
  for (std::size_t i = 0; i < p.op_count; ++i) {
    BlockOp& op = p.ops[i];
    op.adapted = lora && adapter_targets_role(t, op.role);
    if (op.part == BlockPart::kAttention && op.column) qkv_adapted = qkv_adapted || op.adapted;
    else if (op.column) gate_up_adapted = gate_up_adapted || op.adapted;
  }
  // A linear's input stays alive when its weight needs a gradient, or when an adapter on it saves
  // the shared input itself.
  auto input_saved = [&](bool adapter) { return base_trains || (lora && adapter && !adapter_own_copy); };
  const bool merged_experts = lora_merges_experts(t, moe);  // the expert matmuls save their inputs
  const bool qkv_saved = input_saved(qkv_adapted);
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
      if ((input_saved(gate_up_adapted) || merged) && (first || amp)) op.saves = {amp && fused ? 2 : 1, column_in};
    } else if (input_saved(op.adapted) || merged) {
      op.saves = {1, fp8_saved ? 1 : e};  // down's input
    }
  }
  return p;
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
