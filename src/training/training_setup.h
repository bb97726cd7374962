// What is trained and how: method, dtypes, optimizer, batch shape, kernels. Plain data, no JSON;
// the api resolves a request (and later a framework profile) into this.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace memfit {

enum class Method { kFull, kLora, kQlora, kFreeze };
enum class Precision { kFp32, kAmpBf16, kAmpFp16, kBf16, kFp16 };
enum class Optimizer { kAdamW, kAdamW8bit, kPagedAdamW8bit, kPagedAdamW32bit, kAdamW4bit, kSgd,
                       kSgdMomentum, kAdafactor, kLion, kMuon };
enum class OptimizerImpl { kForeach, kFused, kForLoop };
enum class Checkpointing { kNone, kFull };
enum class AttentionKernel { kEager, kSdpa, kFlash };
enum class LossKernel { kStandard, kChunked, kFused };

struct TrainingSetup {
  Method method = Method::kFull;
  std::int64_t lora_rank = 16;
  std::vector<std::string> lora_targets = {"q", "v"};  // short roles; "all-linear" expands
  double lora_dropout = 0.0;
  Precision precision = Precision::kBf16;
  Optimizer optimizer = Optimizer::kAdamW;
  OptimizerImpl optimizer_impl = OptimizerImpl::kForeach;
  std::int64_t micro_batch = 1;
  std::int64_t seq_len = 2048;
  std::int64_t grad_accum = 1;
  Checkpointing checkpointing = Checkpointing::kNone;
  AttentionKernel attention = AttentionKernel::kSdpa;
  LossKernel loss = LossKernel::kStandard;
  std::int64_t loss_chunks = 8;        // chunked loss: logits materialised 1/chunks at a time
  std::int64_t freeze_trainable_layers = 2;  // method freeze: the last k blocks train
};

/// Bytes of one element of the compute (activation) dtype: 4 for fp32, else 2.
inline std::int64_t activation_bytes(Precision p) { return p == Precision::kFp32 ? 4 : 2; }
/// Bytes of one stored weight of a trainable tensor.
inline std::int64_t weight_bytes(Precision p) {
  return p == Precision::kBf16 || p == Precision::kFp16 ? 2 : 4;
}
inline bool is_amp(Precision p) { return p == Precision::kAmpBf16 || p == Precision::kAmpFp16; }

}  // namespace memfit
