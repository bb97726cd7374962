// Framework profiles: the training setup a framework uses when the user does not say otherwise,
// and the behaviours fixed in its code (logit upcast, adapter dtype, the counter it logs). One
// place per framework, each default cited to the framework's source file at a named revision
// (frameworks/<key>/profile.cpp, listed in registry.h; docs/frameworks.md lists them in a table).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/architecture.h"
#include "parallel/layout.h"
#include "training/training_setup.h"

namespace memfit {

enum class Framework {
  kHfTrainer, kTransformersLoop, kPeftBench, kTorchtune, kTorchtitan, kMegatron, kDeepspeed,
  kLitgpt, kFsdpQlora, kColossalai, kTrl, kUnsloth, kAxolotl, kLlamaFactory, kPrimeRl, kOther
};

/// A behaviour of the framework's code before a dated change: requests that name an earlier
/// `framework_version` (YYYY-MM) get it applied on top of the current defaults. `since_yyyymm`
/// (0: always) bounds a behaviour that the code also lacked before some month.
struct DatedBehaviour {
  std::int64_t until_yyyymm;         // the change landed in this month: versions before it behave so
  std::string what;
  std::string source;
  void (*apply)(TrainingSetup&);                       // null: the setup is unchanged
  void (*apply_dist)(DistributedBehaviour&) = nullptr;  // its distributed code, when that differed
  std::int64_t since_yyyymm = 0;
  bool applies_to(std::int64_t yyyymm) const {
    return yyyymm > 0 && yyyymm < until_yyyymm && yyyymm >= since_yyyymm;
  }
};

struct FrameworkProfile {
  Framework id;
  std::string key;                   // request value: "hf_trainer"
  std::string name;                  // "Hugging Face Trainer"
  TrainingSetup defaults{};            // a complete setup; request fields override it
  DistributedBehaviour dist{};         // its distributed code's memory behaviours
  std::vector<std::string> sources{};  // repository @ revision: file, one per default
  std::vector<DatedBehaviour> history{};
  /// Every counter the framework's memory log prints (empty: only `defaults.logged_counter`). A
  /// published figure that does not say which it is spans them (result `framework.logged_counters`).
  std::vector<MemoryCounter> logged_counters{};
  /// Defaults that depend on which of the framework's recipes runs — by the method and whether
  /// the run spans GPUs — as of `yyyymm` (0: the current code); applied once the cluster is
  /// known. Null: none.
  void (*recipe)(TrainingSetup& t, bool distributed, std::int64_t yyyymm) = nullptr;
  /// Defaults that depend on the method, applied once the request's method is read and before
  /// its other fields (LLaMA-Factory upcasts full and freeze trainables to fp32). Null: none.
  void (*method_defaults)(TrainingSetup& t) = nullptr;
  /// The framework builds the model with an output layer of its own, untied from the embedding
  /// table whatever the config says (LitGPT's GPT).
  bool own_output_layer = false;
};

/// The profile's defaults as of `yyyymm` (e.g. 202404); 0 means the current code.
TrainingSetup framework_defaults(const FrameworkProfile& p, std::int64_t yyyymm);
/// The profile's distributed behaviours as of `yyyymm`; 0 means the current code.
DistributedBehaviour framework_behaviour(const FrameworkProfile& p, std::int64_t yyyymm);

/// A wrapper framework (HF Trainer / accelerate) that hands the model to the DeepSpeed engine
/// (`parallel.backend` deepspeed): DeepSpeed's precision and distributed behaviours replace the
/// wrapper's own. Whether the framework can: hf_trainer and TRL (whose trainers are HF Trainers).
bool runs_deepspeed_engine(Framework f);
/// The setup and behaviours as the DeepSpeed engine runs under such a wrapper: no torch autocast
/// (accelerate leaves native AMP off under DeepSpeed), a 16-bit model with fp32 master partitions
/// in DeepSpeed's optimizer and 16-bit gradients (the `deepspeed` profile's precision handling),
/// and the bucket sizes of the wrapper's usual launch: DeepSpeed's defaults from an accelerate
/// config (hf_trainer, trl), "auto" from the hidden size in Axolotl's and LLaMA-Factory's JSONs.
void apply_deepspeed_engine(Framework wrapper, TrainingSetup& t, DistributedBehaviour& b, std::int64_t hidden_size);

/// The dated behaviours that depend on the model type's code: where the model's own forward
/// computes the loss (TrainingSetup::model_computes_loss), whether it upcasts the logits and
/// returns them upcast; which models keep rotary caches per layer (rotary_cache_per_layer).
void apply_model_code(TrainingSetup& t, const ModelArchitecture& a);

const std::vector<FrameworkProfile>& framework_profiles();
const FrameworkProfile& framework_profile(Framework f);
/// nullptr when the key names no framework.
const FrameworkProfile* find_framework(std::string_view key);

}  // namespace memfit
