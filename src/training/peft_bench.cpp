// PEFT method_comparison methods' shapes and saved tensors (see peft_bench.h).
#include "training/peft_bench.h"

#include "common/units.h"

namespace memfit {

std::int64_t miss_params(const TrainingSetup& t, std::int64_t out) {
  const std::int64_t r = t.lora_rank;
  return t.miss_shape == MissShape::kMini ? r * t.miss_mini_r : checked_mul(r, out, "parameter count");
}

AdapterSaves miss_saves(const TrainingSetup& t, std::int64_t in, std::int64_t out, std::int64_t ab) {
  AdapterSaves s;
  if (t.miss_shape == MissShape::kBat) {
    const std::int64_t weight = checked_mul(ab * out, in, "adapter bytes");
    s.per_token = ab * in;
    s.per_layer = weight;
    s.per_layer_for_input_grad = weight;
    return s;
  }
  s.per_token = ab * t.lora_rank;
  if (t.miss_shape == MissShape::kMini) s.per_layer_for_input_grad = checked_mul(ab * t.lora_rank, out, "adapter bytes");
  return s;
}

std::int64_t glora_params(const TrainingSetup& t, std::int64_t in, std::int64_t out) {
  switch (t.glora_a_b) {
    case GloraPath::kLora: return 2 * checked_mul(t.lora_rank, in + out, "parameter count");
    case GloraPath::kVector: return 2 * out;
    default: return 2;
  }
}

AdapterSaves glora_saves(std::int64_t in, std::int64_t out, std::int64_t e) {
  AdapterSaves s;
  s.per_token = e * in;
  s.per_layer_for_input_grad = checked_mul(e * out, in, "adapter bytes");
  return s;
}

}  // namespace memfit
