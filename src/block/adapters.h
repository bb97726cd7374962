// The adapters a PEFT method puts on a model's linears, derived once from the tensor inventory and
// the setup: per adapted linear its shape and trainable parameters. The memory model's states and
// the step time's adapter FLOPs and trainable count read adapted_linear; the block program marks
// its matmuls with the same rule (BlockOp::adapted), which the saved activations fold over.
#pragma once
#include <cstdint>
#include <optional>

#include "model/tensor_inventory.h"
#include "training/training_setup.h"

namespace memfit {

/// One adapter on one linear weight of the inventory.
struct AdaptedLinear {
  std::int64_t in = 0, out = 0;  // the base linear's features (its weight is [out, in])
  /// Trainable elements of one adapter (training/parameters.h adapter_params: LoRA r(in + out),
  /// DoRA's magnitude `out` beside it, the other methods' own shapes).
  std::int64_t params = 0;
  /// Elements of LoRA's A (r x in) and B (out x r): the two matmuls the adapter adds per token.
  std::int64_t lora_factor_elems = 0;
};

/// The adapter `t` puts on `s` (training/parameters.h lora_targets_role on a 2-D linear weight),
/// or none. The whole linear's: the step time's FLOPs and trainable count.
std::optional<AdaptedLinear> adapted_linear(const TrainingSetup& t, const TensorSpec& s);

/// How tensor parallelism divides an adapted linear: as its base linear is column-parallel (its
/// output split), row-parallel (its input split), or left whole.
enum class AdapterSplit : std::uint8_t { kWhole, kColumn, kRow };

/// A LoRA-like adapter's input and output widths on one rank.
struct AdapterWidths {
  std::int64_t in = 0, out = 0;
};

/// The adapter of a base linear of `in` x `out` (whole) on a rank of `tp`: it spans the base's
/// per-rank widths. PEFT's LoraParallelLinear (peft v0.21.2 tuners/lora/tp_layer.py __init__,
/// update_layer) makes lora_A a RowParallelLinear and lora_B a plain nn.Linear on a
/// row-parallel base (A's input split, B whole), lora_A a plain nn.Linear and lora_B a
/// ColumnParallelLinear (gather_output as the base's: False) on a column-parallel one (A whole,
/// B's output split).
AdapterWidths adapter_widths_on_rank(std::int64_t in, std::int64_t out, AdapterSplit split, std::int64_t tp);

/// How tensor parallelism splits `s`'s adapter (Megatron's column / row linears; a routed
/// expert's down projection is row-parallel under expert tensor parallelism, its others column).
AdapterSplit adapter_split(const TensorSpec& s);

/// The adapter `t` puts on `s` on one rank: its widths on a rank of `tp` (`expert_tp` for routed
/// experts) as adapter_widths_on_rank divides them, and its trainable elements at those widths.
/// LoRA-like methods only (PEFT divides no other adapter under tensor parallelism): the others
/// as adapted_linear.
std::optional<AdaptedLinear> adapted_linear_on_rank(const TrainingSetup& t, const TensorSpec& s, std::int64_t tp,
                                                    std::int64_t expert_tp);

}  // namespace memfit
