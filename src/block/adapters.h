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
/// or none.
std::optional<AdaptedLinear> adapted_linear(const TrainingSetup& t, const TensorSpec& s);

}  // namespace memfit
