// The transformer block as data: one layer group's matmuls in forward order, each with its input
// and output widths, how tensor parallelism splits them and what it saves of its input for
// backward. Derived once from the architecture (and, for what is saved, the kernel choices and the
// trainable set); the step time (GEMM shapes, the op policy's recomputed share, linear counts) and
// the memory model (the matmuls' saved inputs, the op policy's kept outputs) fold over it.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "block/adapters.h"
#include "common/units.h"
#include "model/architecture.h"
#include "training/training_setup.h"

namespace memfit {

/// How tensor parallelism divides a count of units (Megatron column/row linears): query heads
/// (tp divides them), K/V heads (at least one per rank: a GQA group below tp is replicated), MLP
/// columns (rounded up), or not at all (the hidden width).
enum class SplitRule : std::uint8_t { kReplicated, kHeads, kKvHeads, kColumns };

/// `units` divided by `rule`, `width` elements each.
struct SplitTerm {
  SplitRule rule = SplitRule::kReplicated;
  std::int64_t units = 0, width = 0;
  std::int64_t at(std::int64_t tp) const {
    switch (rule) {
      case SplitRule::kHeads: return units / tp * width;
      case SplitRule::kKvHeads: return (units >= tp ? units / tp : 1) * width;
      case SplitRule::kColumns: return ceil_div(units, tp) * width;
      case SplitRule::kReplicated: break;
    }
    return units * width;
  }
};

/// Elements per token on one rank: two terms (a fused qkv's query heads and K/V heads).
struct SplitWidth {
  SplitTerm a, b;
  std::int64_t at(std::int64_t tp) const { return a.at(tp) + b.at(tp); }
};

/// Which part of the block a matmul is in; a routed expert's matmuls run once per top-k copy.
enum class BlockPart : std::uint8_t { kAttention, kMlp, kRoutedExpert, kSharedExpert };
inline constexpr std::size_t kBlockPartCount = 4;

/// What a matmul keeps of its input for backward: `copies` of it in `elem_bytes` each (0 copies:
/// it keeps none, or shares the storage an earlier op of the block saved).
struct SavedInput {
  std::int64_t copies = 0, elem_bytes = 0;
};

struct BlockOp {
  BlockPart part = BlockPart::kAttention;
  /// The inventory role of the op's weight (q k v qkv o gate up gate_up down), which adapter
  /// targets name (training/parameters.h adapter_targets_role).
  const char* role = "";
  SplitWidth in, out;
  /// Column-parallel: reads the block's (norm) input, which tensor parallelism gathers under
  /// sequence parallelism and whose input gradient it reduces (q, k, v, gate, up; not o, down).
  bool column = false;
  SavedInput saves;
  /// A LoRA-like adapter sits on the op's weight (the setup's targets name its role; set by the
  /// setup-aware block_program). Its saved activations fold over these ops (block/activations.cpp).
  bool adapted = false;
  /// Forward FLOPs per token on a rank of `tp`: 2 x in x out.
  double flops_per_token(std::int64_t tp) const;
};

/// The block's ops around its matmuls: norms (the block's, MLA's latent ones, per-head q/k
/// norms), residual adds, rotary, the attention core, the MLP's activation function, dropout, and
/// an MoE layer's router (its gate linear's logits, softmax and top-k) and token dispatch (the
/// permute to the experts, the expert-parallel all-to-alls, the unpermute).
enum class StepKind : std::uint8_t {
  kNorm, kLatentNorm, kQkNorm, kResidual, kRotary, kAttentionCore, kActivation, kDropout, kRouter, kDispatch
};

/// One figure per way a framework runs the block's memory-bound ops: eager PyTorch, torch.compile
/// (one kernel per elementwise chain), or hand-fused kernels (Megatron-LM's; TrainingSetup::
/// fused_elementwise).
struct ByRuntime {
  float eager = 0, compiled = 0, fused = 0;  // small whole numbers: bytes per element, launches
};

/// One op between the matmuls, or several alike (the block's norms, its two residual adds, its
/// dropouts: `elems.a.units` of them): what it moves through HBM and launches in the forward (the
/// step time), what it keeps for backward (the memory model) and, for the MoE dispatch, what it
/// exchanges between expert-parallel ranks. Per token of one rank.
struct BlockStep {
  StepKind kind = StepKind::kNorm;
  /// The part of the block it runs in (the MLP side's norm and residual add: kMlp); a routed
  /// expert's activation runs once per top-k copy, its widths are one copy's.
  BlockPart part = BlockPart::kAttention;
  /// Tensor parallelism leaves it whole and only sequence parallelism splits it (norms, residual
  /// adds, dropout masks: the hidden-width tensors); else it runs on heads or MLP columns.
  bool sequence_split = false;
  SplitWidth elems;                 // elements it reads per token (its traffic's width)
  ByRuntime hbm_bytes_per_elem;     // forward reads + writes per element (0: not counted)
  ByRuntime kernels;                // forward launches
  /// Bytes it saves for backward per token, and per token per key (eager attention's scores), as
  /// the setup-aware block_program decides (dtype, kernel, trained weights, what selective
  /// checkpointing recomputes); the setup-free program leaves them 0. An activation's saves are
  /// per MLP column of its part (block/activations.cpp adds them with the part's matmul inputs).
  SplitWidth saved;
  SplitTerm saved_per_position;
  /// Expert-parallel all-to-alls per forward (the dispatch's: one to the experts, one back), each
  /// moving `elems` activation elements per routed copy of a token; 0 for every other step.
  float all_to_alls_fwd = 0;
};

/// One matmul of a block per token on one rank: its input and output widths (a BlockOp at a tp).
struct BlockMatmul {
  std::int64_t in = 0, out = 0;
  bool column = false;  // BlockOp::column
};

/// One layer group's block. The matmuls in forward order, as torchtitan's op-level checkpointing
/// policy counts them (parallelize_llama.py _apply_ac_to_transformer_block, "op"): q k v (or a
/// fused qkv), o, then per MLP copy gate up (or a fused gate_up) and down; routed experts repeat
/// per top-k copy, a shared expert follows.
struct BlockProgram {
  static constexpr std::size_t kMaxOps = 10;  // q k v o + routed gate up down + shared gate up down
  AttentionDims attention;
  std::int64_t routed_copies = 0;  // top_k of an MoE group
  std::array<BlockOp, kMaxOps> ops{};
  std::size_t op_count = 0;
  /// norms, latent norms, q/k norms, rotary, attention core, router, dispatch, 2 activations
  /// (routed and shared expert), dropouts, residual adds.
  static constexpr std::size_t kMaxSteps = 11;
  std::array<BlockStep, kMaxSteps> steps{};
  std::size_t step_count = 0;

  /// Hands every matmul to `f(op, split)` in forward order (routed experts once per copy), with
  /// `split` the tp its widths divide by: `tp`, or `expert_tp` for routed experts.
  template <typename F>
  void for_each_matmul(std::int64_t tp, std::int64_t expert_tp, F&& f) const {
    for (std::size_t i = 0; i < op_count;) {
      if (ops[i].part != BlockPart::kRoutedExpert) {
        f(ops[i], tp);
        ++i;
        continue;
      }
      std::size_t end = i;
      while (end < op_count && ops[end].part == BlockPart::kRoutedExpert) ++end;
      for (std::int64_t c = 0; c < routed_copies; ++c) {
        for (std::size_t j = i; j < end; ++j) f(ops[j], expert_tp);
      }
      i = end;
    }
  }
  /// Matmuls a token passes through (routed experts once per copy).
  std::size_t matmul_count() const;
};

/// The block's shapes and its steps' traffic and launches: `moe` picks the sparse MLP. Nothing
/// is saved (SavedInput and BlockStep::saved left empty).
BlockProgram block_program(const ModelArchitecture& a, bool moe);

/// What the setup-aware block program reads of the setup, the layer group (`moe`) and whether its
/// weights train: equal keys give equal programs of one architecture (BlockProgramMemo).
struct ProgramSetup {
  Precision precision = Precision::kBf16;
  Method method = Method::kFull;
  AttentionKernel attention = AttentionKernel::kFlash;
  bool moe = false, base_trains = false;
  bool residual_fp32 = false;        // fp32_residual_stream
  bool fp8_saves_fp8_inputs = false, adapters_fp32 = false;
  bool merged_experts = false;       // lora_merges_experts
  bool selective = false;            // selective checkpointing recomputes the attention core
  bool compile = false, liger_kernels = false, softmax_fused_16bit = false, attention_repeats_kv = false,
       fused_elementwise = false;
  bool routed_experts_unadapted = false;  // TrainingSetup::lora_routed_experts_unadapted
  std::uint16_t adapted_roles = 0;   // a LoRA-like method's targets, one bit per op role
  bool operator==(const ProgramSetup&) const = default;
};
ProgramSetup program_setup(const TrainingSetup& t, bool moe, bool base_trains);

/// The block's shapes, which matmuls carry a LoRA-like adapter, and what its matmuls and steps
/// save under `t`: a matmul keeps its input when its weight trains (`base_trains`) or an adapter
/// on it saves the shared input (see SavedInput); a norm, the attention core, dropout as
/// BlockStep::saved says. Megatron's unfused eager attention launches its own kernels.
BlockProgram block_program(const ModelArchitecture& a, const TrainingSetup& t, bool moe, bool base_trains);
BlockProgram block_program(const ModelArchitecture& a, const ProgramSetup& s);

/// The setup-aware programs of one architecture derived so far, by ProgramSetup: the search's
/// candidates and a layout's rank kinds share them (the replay's layer activations read them).
class BlockProgramMemo {
 public:
  const BlockProgram& get(const ModelArchitecture& a, const TrainingSetup& t, bool moe, bool base_trains);

 private:
  const ModelArchitecture* arch_ = nullptr;  // the architecture the entries are of
  std::deque<std::pair<ProgramSetup, BlockProgram>> entries_;  // a deque: references stay valid as it grows
};

/// Heads whose K and V reach the attention kernel (whole model): every query head for MLA and
/// when the model repeats K/V for its query groups (TrainingSetup::attention_repeats_kv), else the
/// key/value heads. The kernel saves them and a context-parallel ring passes them on.
std::int64_t kernel_kv_heads(const ModelArchitecture& a, const TrainingSetup& t);

/// SDPA takes the math kernel: the flash and memory-efficient kernels need as many K/V heads as
/// query heads unless enable_gqa is passed (sdp_utils.cpp check_batch_size_and_num_heads_dense),
/// and the model passes fewer (AttentionSpec::sdpa_unexpanded_kv).
bool sdpa_math_kernel(const ModelArchitecture& a, const TrainingSetup& t);

/// LoRA on fused expert stacks (TrainingSetup::lora_merges_fused_experts) with an MLP role
/// targeted: the grouped matmuls run on W + s·B·A, which needs a gradient.
bool lora_merges_experts(const TrainingSetup& t, bool moe);

/// A LoRA-like adapter's widths on `op` on a rank of `tp` (`expert_tp` for a routed expert's): the
/// op's whole widths divided as block/adapters.h adapter_widths_on_rank divides the inventory's
/// tensor (column-parallel ops split the output, o and down the input), so that saved activations
/// and model states count the same adapter.
AdapterWidths adapter_widths(const BlockOp& op, std::int64_t tp);

/// The block's matmuls at tensor-parallel degree `tp` in forward order (the program's fold).
std::vector<BlockMatmul> block_matmuls(const BlockProgram& p, std::int64_t tp);
inline std::vector<BlockMatmul> block_matmuls(const ModelArchitecture& a, bool moe, std::int64_t tp) {
  return block_matmuls(block_program(a, moe), tp);
}

/// Bytes per token that one part's matmuls save of their inputs on one rank: inputs of the hidden
/// width (column-parallel: split only by sequence parallelism) and inputs split by tp.
struct MatmulInputSaves {
  std::int64_t full_width = 0, split = 0;
};
/// Per BlockPart (indexed by its value), at `tp`; a routed expert's for one copy at `expert_tp`.
std::array<MatmulInputSaves, kBlockPartCount> saved_matmul_inputs(const BlockProgram& p, std::int64_t tp,
                                                                   std::int64_t expert_tp);

}  // namespace memfit
