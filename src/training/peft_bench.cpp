// PEFT method_comparison methods' shapes and saved tensors (see peft_bench.h).
#include "training/peft_bench.h"

#include "common/units.h"

namespace memfit {

std::int64_t miss_params(const TrainingSetup& t, std::int64_t out) {
  const std::int64_t r = t.lora_rank;
  return t.miss_shape == MissShape::kMini ? r * t.miss_mini_r : checked_mul(r, out, "parameter count");
}

AdaptedLinearTerms miss_saves(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab) {
  AdaptedLinearTerms s;
  if (t.miss_shape == MissShape::kBat) {
    const std::int64_t weight = checked_mul(ab * out, in, "adapter bytes");
    s.saved_per_token = ab * in;
    s.saved_weight = weight;
    s.saved_weight_for_input_grad = weight;
    return s;
  }
  s.saved_per_token = ab * t.lora_rank;
  if (t.miss_shape == MissShape::kMini) s.saved_weight_for_input_grad = checked_mul(ab * t.lora_rank, out, "adapter bytes");
  return s;
}

std::int64_t glora_params(const TrainingSetup& t, std::int64_t in, std::int64_t out) {
  switch (t.glora_a_b) {
    case GloraPath::kLora: return 2 * checked_mul(t.lora_rank, in + out, "parameter count");
    case GloraPath::kVector: return 2 * out;
    default: return 2;
  }
}

AdaptedLinearTerms glora_saves(std::int64_t in, std::int64_t out, std::int64_t e) {
  AdaptedLinearTerms s;
  s.saved_per_token = e * in;
  s.saved_weight_for_input_grad = checked_mul(e * out, in, "adapter bytes");
  return s;
}

}  // namespace memfit
