// PEFT's method_comparison methods beyond LoRA's kin (issue 34): each one's trainable shapes and
// what its forward keeps for backward, per adapted (out x in) linear. Plain arithmetic, no JSON.
#pragma once
#include <cstdint>

#include "training/peft_linear_adapters.h"
#include "training/training_setup.h"

namespace memfit {

/// MiSS's trainable shard (peft v0.21.2 tuners/miss/layer.py update_layer): r x out by default,
/// out/r blocks of r x r for "bat" (r·out as well), r x mini_r for "mini".
std::int64_t miss_params(const TrainingSetup& t, std::int64_t out);

/// What MiSS's forward keeps (AdaptedLinearTerms' saved fields; tuners/miss/layer.py MissLinear.forward), `ab` the shard's element
/// bytes (fp32 under autocast_adapter_dtype):
/// - default / mini: the input cast to the shard's dtype is summed over its in/r blocks and the
///   r-wide sum multiplied by the shard, which saves the sum (ab·r per token); "mini" repeats its
///   r x mini_r shard to r x out for that product, saved for the input's gradient.
/// - bat: each forward merges the shard into an fp32 copy of the weight (get_delta_weight: the
///   r x r blocks' matmul saves the fp32 weight, ab·out·in) and runs F.linear on the input cast to
///   fp32, which saves that input (ab·in per token) and, for the input's gradient, the merged weight.
AdaptedLinearTerms miss_saves(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab);

/// GLoRA's trained weight scale A and shift B (peft v0.21.2 tuners/glora/layer.py update_layer):
/// two rank-r pairs Xd (out x r) and Xu (r x in), two out x 1 columns, or two scalars. A biased
/// linear's bias paths C, D, E (at most r(in + 1) + 2·out more) are not counted.
std::int64_t glora_params(const TrainingSetup& t, std::int64_t in, std::int64_t out);

/// What GLoRA's forward keeps (tuners/glora/layer.py Linear.forward): each forward builds
/// W + W·A + B in the model dtype and runs F.linear(x, weight_eff), which saves x (e·in per token,
/// one copy for linears reading the same input) and, for x's gradient, the out x in weight_eff.
/// The frozen base linear runs too and saves nothing.
AdaptedLinearTerms glora_saves(std::int64_t in, std::int64_t out, std::int64_t e);

}  // namespace memfit
