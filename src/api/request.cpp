// Request reading (see request.h).
#include "api/request.h"

#include <algorithm>
#include <iterator>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "api/api.h"
#include "block/activations.h"
#include "training/peft_linear_adapters.h"
#include "training/peft_shared_adapters.h"
#include "common/units.h"
#include "hardware/network.h"
#include "hf_config/parse_hf_config.h"
#include "presets/registry.h"
#include "training/setup_names.h"

namespace memfit::api {

namespace {

// Documented bounds (README "Limits").
constexpr std::int64_t kMaxMicroBatch = 1 << 16;
constexpr std::int64_t kMaxSeqLen = std::int64_t{1} << 24;   // 16M tokens
constexpr std::int64_t kMaxGradAccum = 1 << 20;
constexpr std::int64_t kMaxLoraRank = 1 << 16;
constexpr std::int64_t kMaxVirtualTokens = 1 << 14;
constexpr std::int64_t kMaxGpus = 1 << 20;
constexpr std::int64_t kMaxDegree = 1 << 16;
constexpr double kMaxGpuMemoryGib = 1 << 20;  // 1 PiB: far above any accelerator, well inside 2^53 bytes
constexpr double kMaxHostMemoryGib = 1 << 20;  // per node, as bounded as a GPU

// The value of a string enum field, or `fallback` when absent.
template <typename E, std::size_t N>
E enum_or(const FieldReader& f, const char* key, const EnumName<E> (&choices)[N], E fallback) {
  const std::optional<std::string> v = f.get_string({key});
  if (!v) return fallback;
  std::string list;
  for (const EnumName<E>& c : choices) {
    if (*v == c.name) return c.value;
    list += (list.empty() ? "" : ", ") + std::string(c.name);
  }
  throw Error(ErrorCode::kInvalidValue, f.path(key),
              key + std::string(" '") + v->substr(0, 64) + "' is not one of: " + list);
}

const char* const kLoraTargets[] = {"q", "k", "v", "o", "gate", "up", "down", "head"};

// lora.modules_to_save: PEFT's full trainable copies, by memfit's name or the module names
// checkpoints use for the token embedding and the output layer.
void read_modules_to_save(const FieldReader& f, TrainingSetup& t) {
  const Json* saved = f.find({"modules_to_save"});
  if (!saved) return;
  const std::string spath = f.path("modules_to_save");
  if (!saved->is_array()) throw Error(ErrorCode::kInvalidType, spath, "modules_to_save must be an array such as [\"embedding\", \"head\"]");
  if (saved->size() > 2) throw Error(ErrorCode::kInvalidValue, spath, "modules_to_save names at most the embedding and the head");
  static const char* const kEmbeddingNames[] = {"embedding", "embed_tokens", "wte", "word_embeddings", "tok_embeddings"};
  static const char* const kHeadNames[] = {"head", "lm_head", "output"};
  for (std::size_t i = 0; i < saved->size(); ++i) {
    const std::string ipath = pointer_append(spath, std::to_string(i));
    const Json& v = (*saved)[i];
    if (!v.is_string()) throw Error(ErrorCode::kInvalidType, ipath, "a module name must be a string");
    const std::string name = v.get<std::string>();
    const auto named = [&name](const auto& names) {
      return std::any_of(std::begin(names), std::end(names), [&name](const char* k) { return name == k; });
    };
    t.lora_saves_embedding = t.lora_saves_embedding || named(kEmbeddingNames);
    t.lora_saves_head = t.lora_saves_head || named(kHeadNames);
    if (!named(kEmbeddingNames) && !named(kHeadNames)) {
      throw Error(ErrorCode::kInvalidValue, ipath,
                  "unknown module '" + name.substr(0, 32) + "' (modelled: embedding / embed_tokens / wte, head / lm_head)");
    }
  }
}

// PEFT's newer adapters: fourierft / waveft take n_frequency, c3a block_size, hira / shira / delora /
// gralora / peanut / deft rank, osf rank as its trainable rank (peft v0.21.2 tuners/<method>/config.py;
// road and beft take targets only); none models a dropout.
void read_more_peft_adapter(const FieldReader& f, TrainingSetup& t) {
  const bool spectral = t.method == Method::kFourierFt || t.method == Method::kWaveFt;
  const bool ranked = is_ranked_more_peft_adapter(t.method);
  for (const char* key : {"dropout", "init", "rank", "n_frequency", "block_size"}) {
    const std::string k = key;
    const bool takes = (k == "rank" && ranked) || (k == "n_frequency" && spectral) || (k == "block_size" && t.method == Method::kC3a);
    if (f.has({key}) && !takes) {
      throw Error(ErrorCode::kInvalidValue, f.path(k),
                  k + " does not apply to " + name_of(t.method, kMethodNames) +
                      " (fourierft/waveft: n_frequency; c3a: block_size; hira/shira/delora/gralora/peanut/deft/osf/pvera/unilora/adalora/psoft/randlora: rank; none has dropout or init)");
    }
  }
  t.spectral_frequencies = f.int_or({"n_frequency"}, 1, std::int64_t{1} << 30, t.spectral_frequencies);
  t.circulant_block_size = f.int_or({"block_size"}, 1, 4096, t.circulant_block_size);
}

void read_lora(const Json& j, const std::string& path, TrainingSetup& t) {
  const FieldReader f(j, path);
  reject_unknown_keys(f, {"rank", "targets", "dropout", "init", "block_size", "modules_to_save", "n_frequency"});
  // The shared-bank adapters take rank (PEFT's r; FRoD has none) and targets; their shapes are in
  // training.<method> (read_shared_adapter).
  if (is_shared_peft_adapter(t.method)) {
    for (const char* key : {"dropout", "init", "n_frequency", "block_size", "rank"}) {
      if (f.has({key}) && (std::string(key) != "rank" || t.method == Method::kFrod)) {
        throw Error(ErrorCode::kInvalidValue, f.path(key),
                    std::string(key) + " does not apply to " + name_of(t.method, kMethodNames) +
                        " (lily/tinylora/vblora/adamss take rank and targets, frod targets; their shapes: training." +
                        name_of(t.method, kMethodNames) + ")");
      }
    }
  }
  if (is_more_peft_adapter(t.method)) {
    read_more_peft_adapter(f, t);
  } else if (f.has({"n_frequency"})) {
    throw Error(ErrorCode::kInvalidValue, f.path("n_frequency"), "n_frequency needs method fourierft or waveft");
  }
  if (is_orthogonal(t.method)) {
    // PEFT's OFTConfig takes r (blocks per linear) or oft_block_size, not both; BOFT memfit reads by
    // boft_block_size (butterfly factor 1); neither has LoRA's dropout.
    if (f.has({"dropout"}) || (t.method == Method::kBoft && f.has({"rank"}))) {
      throw Error(ErrorCode::kInvalidValue, f.path(f.has({"dropout"}) ? "dropout" : "rank"),
                  "boft takes lora.block_size, oft lora.block_size or lora.rank (blocks per linear); neither has dropout");
    }
    if (f.has({"rank"}) && f.has({"block_size"})) {
      throw Error(ErrorCode::kInvalidValue, f.path("block_size"), "oft takes lora.rank (blocks per linear) or lora.block_size, not both");
    }
    if (f.has({"rank"})) t.oft_blocks = f.int_or({"rank"}, 1, kMaxLoraRank, 0);
  } else if (f.has({"block_size"}) && t.method != Method::kC3a) {
    throw Error(ErrorCode::kInvalidValue, f.path("block_size"), "block_size needs method oft, boft or c3a");
  }
  if (is_orthogonal(t.method)) t.orthogonal_block_size = f.int_or({"block_size"}, 1, 4096, t.orthogonal_block_size);
  if (!is_orthogonal(t.method)) t.lora_rank = f.int_or({"rank"}, 1, kMaxLoraRank, t.lora_rank);
  if (auto d = f.get_number({"dropout"}, 0.0, 0.99)) t.lora_dropout = *d;
  if (f.has({"init"})) {
    if (!is_lora_like(t.method)) throw Error(ErrorCode::kInvalidValue, f.path("init"), "init needs method lora, qlora or dora");
    t.lora_init = enum_or(f, "init", kLoraInitNames, t.lora_init);
    // peft v0.21.2 tuners/lora/layer.py pissa_init: "Please initialize PiSSA under float32, float16, or bfloat16"
    if (t.lora_init == LoraInit::kPissa && t.method == Method::kQlora) {
      throw Error(ErrorCode::kInvalidValue, f.path("init"),
                  "PiSSA initialises from a float base (PEFT refuses a quantised one): quantise the residual after init");
    }
  }
  read_modules_to_save(f, t);
  const Json* targets = f.find({"targets"});
  if (t.lora_saves_head && targets && targets->is_array() &&
      std::any_of(targets->begin(), targets->end(), [](const Json& v) { return v.is_string() && v.get<std::string>() == "head"; })) {
    throw Error(ErrorCode::kInvalidValue, f.path("modules_to_save"), "the head is either a LoRA target or a module to save, not both");
  }
  if (!targets) return;
  const std::string tpath = f.path("targets");
  if (targets->is_string()) {
    if (targets->get<std::string>() != "all-linear") {
      throw Error(ErrorCode::kInvalidValue, tpath, "targets must be \"all-linear\" or a list such as [\"q\", \"v\"]");
    }
    t.lora_targets = {"all-linear"};
    return;
  }
  if (!targets->is_array()) throw Error(ErrorCode::kInvalidType, tpath, "targets must be a string or an array of strings");
  if (targets->empty() || targets->size() > 16) {
    throw Error(ErrorCode::kInvalidValue, tpath, "targets needs 1 to 16 entries");
  }
  t.lora_targets.clear();
  for (std::size_t i = 0; i < targets->size(); ++i) {
    const std::string ipath = pointer_append(tpath, std::to_string(i));
    const Json& v = (*targets)[i];
    if (!v.is_string()) throw Error(ErrorCode::kInvalidType, ipath, "a target must be a string");
    const std::string name = v.get<std::string>();
    bool known = name == "all-linear";
    for (const char* k : kLoraTargets) known = known || name == k;
    if (!known) {
      throw Error(ErrorCode::kInvalidValue, ipath,
                  "unknown target '" + name.substr(0, 32) + "' (expected q, k, v, o, gate, up, down, head or all-linear)");
    }
    t.lora_targets.push_back(name);
  }
}

/// PEFT's config defaults where memfit's LoRA ones differ (peft v0.21.2 tuners/*/config.py and
/// utils/constants.py target mappings): IA3 on k, v and down (feed-forward); LoHa / LoKr r 8; VeRA r 256.
void apply_peft_defaults(TrainingSetup& t) {
  if (t.method == Method::kIa3) t.lora_targets = {"k", "v", "down"};
  if (t.method == Method::kLoha || t.method == Method::kLokr) t.lora_rank = 8;
  if (t.method == Method::kVera) t.lora_rank = 256;
  if (t.method == Method::kMiss) t.lora_rank = 64;  // peft v0.21.2 tuners/miss/config.py MissConfig r
  if (t.method == Method::kGlora) t.lora_rank = 8;  // tuners/glora/config.py GloraConfig r
  if (t.method == Method::kDelora) t.lora_rank = 8;  // PEFT's r; hira, shira, gralora, peanut: 32
  if (is_ranked_more_peft_adapter(t.method) && t.method != Method::kDelora) t.lora_rank = 32;
  if (is_ranked_shared_peft_adapter(t.method)) t.lora_rank = shared_adapter_default_rank(t.method);
  if (t.method == Method::kDeft) t.lora_rank = 8;  // tuners/deft/config.py DeftConfig r
  if (t.method == Method::kOsf) t.lora_rank = 0;   // OSFConfig effective_rank None: half of each linear's
  if (t.method == Method::kPvera) t.lora_rank = 256;  // PveraConfig r
  if (t.method == Method::kUnilora) t.lora_rank = 4;  // UniLoraConfig r
  if (t.method == Method::kAdalora) t.lora_rank = 12;  // AdaLoraConfig init_r (psoft, randlora: r 32)
}

/// The shared-bank adapters' shapes, each in an object named after its method (PEFT's config keys,
/// peft v0.21.2 tuners/<method>/config.py): lily {stride_a, num_b}, tinylora {u, weight_tying},
/// vblora {num_vectors, vector_length, topk}, frod {sparse_rate, offload_base_weight}, adamss
/// {subspaces, subspace_rank}. Another method's object is invalid_value at its pointer.
void read_shared_adapter(const FieldReader& f, TrainingSetup& t) {
  for (const char* name : {"lily", "tinylora", "vblora", "frod", "adamss"}) {
    const Json* o = f.find({name});
    if (!o) continue;
    const std::string path = f.path(name);
    if (!o->is_object()) throw Error(ErrorCode::kInvalidType, path, std::string(name) + " must be an object");
    if (name_of(t.method, kMethodNames) != std::string(name)) {
      throw Error(ErrorCode::kInvalidValue, path, std::string(name) + " settings need method " + name);
    }
    const FieldReader r(*o, path);
    SharedAdapterShape& s = t.shared_adapter;
    if (t.method == Method::kLily) {
      reject_unknown_keys(r, {"stride_a", "num_b"});
      s.lily_stride_a = r.int_or({"stride_a"}, 1, 4096, s.lily_stride_a);
      s.lily_num_b = r.int_or({"num_b"}, 2, 4096, s.lily_num_b);  // LilyConfig refuses num_B < 2
    } else if (t.method == Method::kTinyLora) {
      reject_unknown_keys(r, {"u", "weight_tying"});
      s.tinylora_u = r.int_or({"u"}, 1, kMaxLoraRank, s.tinylora_u);
      if (auto w = r.get_number({"weight_tying"}, 0.0, 1.0)) s.tinylora_weight_tying = *w;
    } else if (t.method == Method::kVblora) {
      reject_unknown_keys(r, {"num_vectors", "vector_length", "topk"});
      s.vblora_num_vectors = r.int_or({"num_vectors"}, 1, 1 << 20, s.vblora_num_vectors);
      s.vblora_vector_length = r.int_or({"vector_length"}, 1, kMaxLoraRank, s.vblora_vector_length);
      s.vblora_topk = r.int_or({"topk"}, 1, kMaxLoraRank, s.vblora_topk);
      if (s.vblora_topk > s.vblora_num_vectors) {
        throw Error(ErrorCode::kInvalidValue, r.path("topk"), "topk picks among num_vectors bank vectors: it cannot exceed them");
      }
    } else if (t.method == Method::kFrod) {
      reject_unknown_keys(r, {"sparse_rate", "offload_base_weight"});
      if (auto rate = r.get_number({"sparse_rate"}, 0.0, 1.0)) s.frod_sparse_rate = *rate;
      s.frod_offload_base = r.bool_or({"offload_base_weight"}, s.frod_offload_base);
    } else {
      reject_unknown_keys(r, {"subspaces", "subspace_rank"});
      s.adamss_subspaces = r.int_or({"subspaces"}, 1, 4096, s.adamss_subspaces);
      s.adamss_subspace_rank = r.int_or({"subspace_rank"}, 1, kMaxLoraRank, s.adamss_subspace_rank);
    }
  }
}

/// RoAd's `road` {variant}, DEFT's `deft` {para} and trainable tokens' `trainable_tokens` {count}
/// (peft v0.21.2 RoadConfig variant, DeftConfig para, TrainableTokensConfig token_indices' length,
/// which has no default: `missing_field`).
void read_method_settings(const FieldReader& f, TrainingSetup& t) {
  static constexpr struct { const char* key; Method method; const char* example; } kSettings[] = {
      {"road", Method::kRoad, "{\"variant\": \"road_2\"}"},
      {"deft", Method::kDeft, "{\"para\": true}"},
      {"trainable_tokens", Method::kTrainableTokens, "{\"count\": 2}"}};
  for (const auto& s : kSettings) {
    const Json* j = f.find({s.key});
    const std::string path = f.path(s.key);
    if (!j) {
      if (t.method == Method::kTrainableTokens && s.method == t.method) {
        throw Error(ErrorCode::kMissingField, path, "trainable_tokens needs trainable_tokens.count (PEFT's token_indices have no default)");
      }
      continue;
    }
    if (!j->is_object()) throw Error(ErrorCode::kInvalidType, path, std::string(s.key) + " must be an object such as " + s.example);
    if (t.method != s.method) throw Error(ErrorCode::kInvalidValue, path, std::string(s.key) + " settings need method " + s.key);
    const FieldReader r(*j, path);
    if (s.method == Method::kRoad) {
      reject_unknown_keys(r, {"variant"});
      t.road_variant = enum_or(r, "variant", kRoadVariantNames, t.road_variant);
    } else if (s.method == Method::kDeft) {
      reject_unknown_keys(r, {"para"});
      t.deft_para = r.bool_or({"para"}, t.deft_para);
    } else {
      reject_unknown_keys(r, {"count"});
      if (!r.has({"count"})) throw Error(ErrorCode::kMissingField, r.path("count"), "trainable_tokens needs count (PEFT's token_indices have no default)");
      t.trainable_token_count = r.int_or({"count"}, 1, std::int64_t{1} << 24, 0);
    }
  }
}

/// MiSS's `miss` {init, mini_r}: PEFT MissConfig init_weights (true: "default", "bat", "mini") and
/// mini_r (the "mini" shard's columns, default 1; it must divide the adapted linears' outputs).
void read_miss(const FieldReader& f, TrainingSetup& t) {
  const Json* m = f.find({"miss"});
  if (!m) return;
  const std::string path = f.path("miss");
  if (!m->is_object()) throw Error(ErrorCode::kInvalidType, path, "miss must be an object such as {\"init\": \"bat\"}");
  if (t.method != Method::kMiss) throw Error(ErrorCode::kInvalidValue, path, "miss settings need method miss");
  const FieldReader mr(*m, path);
  reject_unknown_keys(mr, {"init", "mini_r"});
  t.miss_shape = enum_or(mr, "init", kMissShapeNames, t.miss_shape);
  if (mr.has({"mini_r"}) && t.miss_shape != MissShape::kMini) {
    throw Error(ErrorCode::kInvalidValue, mr.path("mini_r"), "mini_r is the \"mini\" shard's width: it needs init \"mini\"");
  }
  t.miss_mini_r = mr.int_or({"mini_r"}, 1, kMaxLoraRank, t.miss_mini_r);
}

/// GLoRA's `glora` {a_b}: PEFT GloraConfig config_A_B, the weight scale and shift's path ("lora",
/// the default, "vector" or "constant"; "none" trains no weight path and is not modelled).
void read_glora(const FieldReader& f, TrainingSetup& t) {
  const Json* g = f.find({"glora"});
  if (!g) return;
  const std::string path = f.path("glora");
  if (!g->is_object()) throw Error(ErrorCode::kInvalidType, path, "glora must be an object such as {\"a_b\": \"vector\"}");
  if (t.method != Method::kGlora) throw Error(ErrorCode::kInvalidValue, path, "glora settings need method glora");
  const FieldReader gr(*g, path);
  reject_unknown_keys(gr, {"a_b"});
  t.glora_a_b = enum_or(gr, "a_b", kGloraPathNames, t.glora_a_b);
}

/// GaLore / APOLLO: `projection` {rank, update_gap} and the methods they train. HF Trainer's
/// galore_* / apollo_* optimizers project the full gradients of the optim_target_modules linears
/// (transformers _get_galore_optimizer, _get_apollo_optimizer: rank 128, update_proj_gap 200);
/// APOLLO-Mini is rank 1 with a tensor-wise scale (Zhu et al. 2024, §4).
void read_projection(const FieldReader& f, TrainingSetup& t) {
  const bool projects = projects_gradients(t.optimizer);
  if (projects && !(t.method == Method::kFull || t.method == Method::kFreeze)) {
    throw Error(ErrorCode::kInvalidValue, f.path("optimizer"),
                "galore_adamw, apollo_adamw and apollo_mini project full-rank weight gradients: method full or freeze");
  }
  if (t.optimizer == Optimizer::kApolloMini) t.projection_rank = 1;
  const Json* p = f.find({"projection"});
  if (!p) return;
  if (!projects) {
    throw Error(ErrorCode::kInvalidValue, f.path("projection"), "projection needs optimizer galore_adamw, apollo_adamw or apollo_mini");
  }
  if (!p->is_object()) throw Error(ErrorCode::kInvalidType, f.path("projection"), "projection must be an object");
  const FieldReader pr(*p, f.path("projection"));
  reject_unknown_keys(pr, {"rank", "update_gap"});
  t.projection_rank = pr.int_or({"rank"}, 1, kMaxLoraRank, t.projection_rank);
  if (t.optimizer == Optimizer::kApolloMini && t.projection_rank != 1) {
    throw Error(ErrorCode::kInvalidValue, pr.path("rank"), "apollo_mini is APOLLO at rank 1: use apollo_adamw for rank " +
                                                               std::to_string(t.projection_rank));
  }
  t.projection_update_gap = pr.int_or({"update_gap"}, 1, 1'000'000, t.projection_update_gap);
}

/// BAdam's `badam` {active_block}: block-coordinate AdamW in layer mode (Luo et al. 2024; badam 1.4
/// block_optim.py BlockOptimizer as LLaMA-Factory's use_badam builds it, train/trainer_utils.py
/// _create_badam_optimizer): one decoder layer trains at a time over a 16-bit model, the embedding
/// and output layer never. active_block "first" / "last" / an index: the block period estimated;
/// by default the first, the run's peak (every block is active in turn, and the gradient into the
/// first passes through every frozen layer above it).
void read_badam(const FieldReader& f, std::int64_t num_layers, TrainingSetup& t) {
  const Json* b = f.find({"badam"});
  if (!b) return;
  if (!b->is_object()) throw Error(ErrorCode::kInvalidType, f.path("badam"), "badam must be an object such as {\"active_block\": \"first\"}");
  const std::string path = f.path("badam");
  if (t.method != Method::kFull) throw Error(ErrorCode::kInvalidValue, path, "BAdam trains every block in turn: it needs method full");
  if (t.precision != Precision::kBf16 && t.precision != Precision::kFp16) {
    throw Error(ErrorCode::kInvalidValue, path, "BAdam steps an fp32 copy of a 16-bit model: it needs precision bf16 or fp16");
  }
  if (t.optimizer != Optimizer::kAdamW || t.optimizer_in_backward || t.offload != Offload::kNone) {
    throw Error(ErrorCode::kInvalidValue, path, "BAdam is modelled over torch AdamW stepped after backward, without offload");
  }
  const FieldReader br(*b, path);
  reject_unknown_keys(br, {"active_block"});
  const Json* active = br.find({"active_block"});
  if (!active) {
    t.badam_active_layer = 0;
  } else if (active->is_string() && (*active == "first" || *active == "last")) {
    t.badam_active_layer = *active == "first" ? 0 : num_layers - 1;
  } else if (active->is_number_integer() && active->get<std::int64_t>() >= 0 && active->get<std::int64_t>() < num_layers) {
    t.badam_active_layer = active->get<std::int64_t>();
  } else {
    throw Error(ErrorCode::kInvalidValue, br.path("active_block"),
                "active_block must be \"first\", \"last\" or a layer index from 0 to " + std::to_string(num_layers - 1));
  }
}

/// LLaMA-Adapter's `adapter` {prompt_length, start_layer | layers}: LitGPT's adapter / adapter_v2
/// (litgpt v0.5.13 adapter.py Config adapter_prompt_length 10, adapter_start_layer 2; LitGPT's own
/// models, so framework litgpt) and PEFT's adaption_prompt (peft v0.21.2 AdaptionPromptConfig
/// adapter_len, adapter_layers counted from the top: both required, no default).
void read_llama_adapter(const FieldReader& f, const FrameworkProfile& profile, std::int64_t num_layers, TrainingSetup& t) {
  if (is_litgpt_adapter(t.method) && profile.id != Framework::kLitgpt) {
    throw Error(ErrorCode::kInvalidValue, f.path("method"),
                "adapter and adapter_v2 are LitGPT's LLaMA-Adapter models (finetune_adapter, finetune_adapter_v2): "
                "they need framework litgpt (PEFT's is adaption_prompt)");
  }
  const Json* a = f.find({"adapter"});
  if (!a) {
    if (t.method == Method::kAdaptionPrompt) {
      throw Error(ErrorCode::kMissingField, f.path("adapter"),
                  "adaption_prompt needs adapter {prompt_length, layers}: PEFT's adapter_len and adapter_layers have no default");
    }
    return;
  }
  if (!is_llama_adapter(t.method)) {
    throw Error(ErrorCode::kInvalidValue, f.path("adapter"), "adapter settings need method adapter, adapter_v2 or adaption_prompt");
  }
  if (!a->is_object()) throw Error(ErrorCode::kInvalidType, f.path("adapter"), "adapter must be an object");
  const FieldReader ar(*a, f.path("adapter"));
  reject_unknown_keys(ar, {"prompt_length", "start_layer", "layers"});
  if (ar.has({"start_layer"}) && ar.has({"layers"})) {
    throw Error(ErrorCode::kInvalidValue, ar.path("layers"), "give start_layer or layers (counted from the top), not both");
  }
  if (t.method == Method::kAdaptionPrompt) {
    for (const char* key : {"prompt_length", "layers"}) {
      if (!ar.has({key}) && !(std::string(key) == "layers" && ar.has({"start_layer"}))) {
        throw Error(ErrorCode::kMissingField, ar.path(key), std::string("adaption_prompt needs adapter.") + key + " (PEFT has no default)");
      }
    }
  }
  t.adapter_prompt_length = ar.int_or({"prompt_length"}, 1, kMaxVirtualTokens, t.adapter_prompt_length);
  t.adapter_start_layer = ar.int_or({"start_layer"}, 0, std::max<std::int64_t>(0, num_layers), t.adapter_start_layer);
  if (auto layers = ar.get_int({"layers"}, 0, std::max<std::int64_t>(0, num_layers))) t.adapter_start_layer = num_layers - *layers;
}

TrainingSetup read_training(const Json& j, const std::string& path, const FrameworkProfile*& profile,
                            std::int64_t num_layers, std::int64_t& yyyymm) {
  const FieldReader f(j, path);
  reject_unknown_keys(f, {"framework", "framework_version", "method", "lora", "virtual_tokens", "prompt_encoder", "adapter", "base_quant", "freeze_trainable_layers", "precision",
                          "optimizer", "optimizer_impl", "optimizer_in_backward", "micro_batch", "grad_accum",
                          "seq_len", "packed", "activation_checkpointing", "offload", "attention", "loss",
                          "loss_chunks", "compile", "compile_scope", "selective_layer_period", "liger_kernels",
                          "expandable_segments", "cuda_launch_blocking", "projection", "badam", "miss", "glora", "lily",
                          "tinylora", "vblora", "frod", "adamss", "road", "deft",
                          "trainable_tokens"});
  profile = &framework_profile(Framework::kHfTrainer);
  if (auto key = f.get_string({"framework"})) {
    profile = find_framework(*key);
    if (!profile) {
      std::string list;
      for (const FrameworkProfile& p : framework_profiles()) list += (list.empty() ? "" : ", ") + p.key;
      throw Error(ErrorCode::kInvalidValue, f.path("framework"),
                  "framework '" + key->substr(0, 64) + "' is not one of: " + list);
    }
  }
  yyyymm = 0;
  if (auto v = f.get_string({"framework_version"})) {
    const bool shaped = v->size() == 7 && (*v)[4] == '-' &&
                        std::all_of(v->begin(), v->end(), [](char c) { return (c >= '0' && c <= '9') || c == '-'; });
    const std::int64_t year = shaped ? std::stoll(v->substr(0, 4)) : 0, month = shaped ? std::stoll(v->substr(5, 2)) : 0;
    if (!shaped || year < 2015 || year > 2100 || month < 1 || month > 12) {
      throw Error(ErrorCode::kInvalidValue, f.path("framework_version"),
                  "framework_version must be a month, YYYY-MM (e.g. 2024-06)");
    }
    yyyymm = year * 100 + month;
  }
  TrainingSetup t = framework_defaults(*profile, yyyymm);
  t.method = enum_or(f, "method", kMethodNames, t.method);
  const bool lora = is_lora_like(t.method);
  if (profile->method_defaults) profile->method_defaults(t);
  apply_peft_defaults(t);
  if (const Json* l = f.find({"lora"})) {
    if (!is_adapter_method(t.method)) {
      throw Error(ErrorCode::kInvalidValue, f.path("lora"), "lora settings need an adapter method: lora, qlora, dora, ia3, loha, lokr, vera, oft, boft, miss, glora, fourierft, waveft, hira, shira, c3a, delora, gralora, peanut, lily, tinylora, vblora, frod, adamss, road, osf, deft, beft, pvera, unilora, adalora, psoft or randlora");
    }
    if (!l->is_object()) throw Error(ErrorCode::kInvalidType, f.path("lora"), "lora must be an object");
    if (t.method == Method::kIa3 && l->contains("rank")) {
      throw Error(ErrorCode::kInvalidValue, pointer_append(f.path("lora"), "rank"), "ia3 learns one scaling vector per linear: it has no rank");
    }
    read_lora(*l, f.path("lora"), t);
  }
  if (f.has({"virtual_tokens"}) && !is_prompt_method(t.method)) {
    throw Error(ErrorCode::kInvalidValue, f.path("virtual_tokens"), "virtual_tokens needs method prompt_tuning, prefix_tuning or p_tuning");
  }
  t.virtual_tokens = f.int_or({"virtual_tokens"}, 1, kMaxVirtualTokens, t.virtual_tokens);
  if (f.has({"prompt_encoder"}) && t.method != Method::kPTuning) {
    throw Error(ErrorCode::kInvalidValue, f.path("prompt_encoder"), "prompt_encoder needs method p_tuning");
  }
  t.prompt_encoder = enum_or(f, "prompt_encoder", kPromptEncoderNames, t.prompt_encoder);
  read_llama_adapter(f, *profile, num_layers, t);
  t.base_quant = enum_or(f, "base_quant", kBaseQuantNames, t.base_quant);
  if (t.base_quant != BaseQuant::kNone && !lora) {
    throw Error(ErrorCode::kInvalidValue, f.path("base_quant"),
                "quantised base weights are frozen: they need method lora, qlora or dora");
  }
  if (t.method == Method::kQlora && f.has({"base_quant"}) && t.base_quant == BaseQuant::kNone) {
    throw Error(ErrorCode::kInvalidValue, f.path("base_quant"), "method qlora quantises the base: base_quant cannot be none");
  }
  if (t.lora_init == LoraInit::kPissa && t.base_quant != BaseQuant::kNone) {
    throw Error(ErrorCode::kInvalidValue, pointer_append(f.path("lora"), "init"),
                "PiSSA initialises from a float base (PEFT refuses a quantised one): quantise the residual after init");
  }
  t.freeze_trainable_layers = f.int_or({"freeze_trainable_layers"}, 1, std::max<std::int64_t>(1, num_layers),
                                       std::min(t.freeze_trainable_layers, num_layers));
  t.precision = enum_or(f, "precision", kPrecisionNames, t.precision);
  t.optimizer = enum_or(f, "optimizer", kOptimizerNames, t.optimizer);
  t.optimizer_impl = enum_or(f, "optimizer_impl", kOptimizerImplNames, t.optimizer_impl);
  t.optimizer_in_backward = f.bool_or({"optimizer_in_backward"}, t.optimizer_in_backward);
  read_projection(f, t);
  t.micro_batch = f.int_or({"micro_batch"}, 1, kMaxMicroBatch, t.micro_batch);
  t.grad_accum = f.int_or({"grad_accum"}, 1, kMaxGradAccum, t.grad_accum);
  t.seq_len = f.int_or({"seq_len"}, 1, kMaxSeqLen, t.seq_len);
  t.packed = f.bool_or({"packed"}, t.packed);
  t.checkpointing = enum_or(f, "activation_checkpointing", kCheckpointingNames, t.checkpointing);
  t.offload = enum_or(f, "offload", kOffloadNames, t.offload);
  t.attention = enum_or(f, "attention", kAttentionNames, t.attention);
  t.liger_kernels = f.bool_or({"liger_kernels"}, t.liger_kernels);
  // transformers' apply_liger_kernel swaps the model's loss for Liger's fused linear CE
  // (fused_linear_cross_entropy=True by default); TRL then leaves its chunked_nll default (trl >= 1.15
  // turns it off and keeps its fused head, kTrlFusedHead, untouched here).
  if (t.liger_kernels && (t.loss == LossKernel::kStandard || t.loss == LossKernel::kChunkedNll)) t.loss = LossKernel::kLigerFlce;
  t.loss = enum_or(f, "loss", kLossNames, t.loss);
  if (t.liger_kernels && t.loss == LossKernel::kChunkedNll) {
    throw Error(ErrorCode::kInvalidValue, f.path("loss"),
                "loss chunked_nll is not compatible with liger_kernels (TRL SFTTrainer refuses the pair)");
  }
  if (auto c = f.get_int({"loss_chunks"}, 1, 1 << 16)) {
    t.loss_chunks = *c;
    t.loss_chunk_tokens = 0;
  }
  t.compile = f.bool_or({"compile"}, t.compile);
  if (auto scope = f.get_string({"compile_scope"})) {
    if (*scope != "model" && *scope != "regions") {
      throw Error(ErrorCode::kInvalidValue, f.path("compile_scope"), "compile_scope must be model or regions");
    }
    if (!t.compile) throw Error(ErrorCode::kInvalidValue, f.path("compile_scope"), "compile_scope needs compile true");
    t.compile_regions = *scope == "regions";
  }
  // Regional compilation leaves the forward that computes the loss eager (accelerate compile_regions).
  if (t.compile_regions) t.compile_loss = false;
  t.expandable_segments = f.bool_or({"expandable_segments"}, t.expandable_segments);
  t.cuda_launch_blocking = f.bool_or({"cuda_launch_blocking"}, t.cuda_launch_blocking);
  if (auto p = f.get_int({"selective_layer_period"}, 0, std::max<std::int64_t>(1, num_layers))) {
    if (*p > 0 && t.checkpointing != Checkpointing::kSelective) {
      throw Error(ErrorCode::kInvalidValue, f.path("selective_layer_period"),
                  "selective_layer_period needs activation_checkpointing selective");
    }
    t.selective_layer_period = *p;
  }
  if (t.method == Method::kPrefixTuning && t.checkpointing != Checkpointing::kNone) {
    // peft v0.21.2 peft_model.py _setup_prompt_encoder: "PREFIX_TUNING does not work with gradient checkpointing"
    throw Error(ErrorCode::kInvalidValue, f.path("activation_checkpointing"),
                "prefix_tuning passes its keys and values as a cache, which PEFT refuses under gradient checkpointing");
  }
  if (t.optimizer_in_backward && t.grad_accum > 1) {
    throw Error(ErrorCode::kInvalidValue, f.path("optimizer_in_backward"),
                "the optimizer steps inside backward, so gradients cannot accumulate: grad_accum must be 1");
  }
  read_badam(f, num_layers, t);
  read_miss(f, t);
  read_glora(f, t);
  read_shared_adapter(f, t);
  read_method_settings(f, t);
  return t;
}

GpuSpec read_gpu(const Json& j, const std::string& path) {
  const FieldReader f(j, path);
  reject_unknown_keys(f, {"preset", "spec", "memory_gib"});
  const bool has_preset = f.json().contains("preset");
  if (has_preset == f.json().contains("spec")) {
    throw Error(ErrorCode::kInvalidValue, path, "gpu needs exactly one of preset or spec");
  }
  GpuSpec g;
  if (!has_preset) {
    g = presets::parse_gpu_spec(j.at("spec"), f.path("spec"));
  } else {
    const std::string id = f.get_string({"preset"}).value_or("");
    const GpuSpec* found = presets::find_gpu(id);
    if (!found) {
      throw Error(ErrorCode::kUnknownPreset, f.path("preset"),
                  "unknown GPU preset '" + id.substr(0, 64) + "' (list them with `memfit presets`)");
    }
    g = *found;
  }
  // A custom memory size on a known GPU's compute and links (e.g. a MIG slice or a card variant).
  if (const auto gib = f.get_number({"memory_gib"}, 1.0 / 1024, kMaxGpuMemoryGib)) {
    g.memory_total_bytes = static_cast<std::int64_t>(std::llround(*gib * static_cast<double>(kGiB)));
  }
  return g;
}

// A node's CPU memory from the GPU presets' reference nodes: the least of a mix's kinds, 0 when
// any kind has none.
// The inter-node bandwidth per GPU of the GPU preset's reference node (a mix: its slowest kind's);
// the default where a kind names none.
double reference_network_bandwidth(const GpuSpec& gpu, const std::vector<GpuGroup>& mix) {
  const auto of = [](const GpuSpec& g) {
    const NetworkPreset* n = g.reference_network.empty() ? nullptr : find_network(g.reference_network);
    return n ? n->gb_per_s_per_gpu() : kDefaultInterNodeBandwidthGbPerS;
  };
  if (mix.empty()) return of(gpu);
  double least = of(mix.front().gpu);
  for (const GpuGroup& g : mix) least = std::min(least, of(g.gpu));
  return least;
}

std::int64_t host_memory_of(const GpuSpec& gpu, const std::vector<GpuGroup>& mix) {
  if (mix.empty()) return gpu.host_memory_bytes_per_node;
  std::int64_t least = mix.front().gpu.host_memory_bytes_per_node;
  for (const GpuGroup& g : mix) least = std::min(least, g.gpu.host_memory_bytes_per_node);
  return least;
}

// cluster.gpu_mix: [{"gpu": {...}, "count": n}, ...], 2 to 16 groups in rank order.
std::vector<GpuGroup> read_gpu_mix(const Json& j, const std::string& path) {
  constexpr std::size_t kMaxGroups = 16;
  if (!j.is_array() || j.size() < 2 || j.size() > kMaxGroups) {
    throw Error(ErrorCode::kInvalidType, path,
                "gpu_mix must be an array of 2 to " + std::to_string(kMaxGroups) + " {\"gpu\": {...}, \"count\": n} groups");
  }
  std::vector<GpuGroup> out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string at = path + "/" + std::to_string(i);
    if (!j[i].is_object()) throw Error(ErrorCode::kInvalidType, at, "a gpu_mix group must be an object");
    const FieldReader f(j[i], at);
    reject_unknown_keys(f, {"gpu", "count"});
    const Json* gpu = f.find({"gpu"});
    if (!gpu) throw Error(ErrorCode::kMissingField, at + "/gpu", "missing required field gpu");
    if (!gpu->is_object()) throw Error(ErrorCode::kInvalidType, at + "/gpu", "gpu must be an object");
    if (!f.has({"count"})) throw Error(ErrorCode::kMissingField, at + "/count", "missing required field count");
    out.push_back(GpuGroup{read_gpu(*gpu, at + "/gpu"), f.int_or({"count"}, 1, kMaxGpus, 1)});
  }
  return out;
}

// parallel.backend: "framework" (the framework's own distributed code, the default) or "deepspeed".
bool read_backend(const Json& parallel) {
  const FieldReader f(parallel, "/parallel");
  const std::optional<std::string> backend = f.get_string({"backend"});
  if (!backend || *backend == "framework") return false;
  if (*backend == "deepspeed") return true;
  throw Error(ErrorCode::kInvalidValue, f.path("backend"),
              "backend '" + backend->substr(0, 64) + "' is not one of: framework, deepspeed");
}

// accelerate re-enabled FSDP2 for bitsandbytes 4-bit models in v1.7.0 (PR #3546, 2025-05).
constexpr std::int64_t kAccelerateFsdp2QloraYyyymm = 202505;

// Frameworks whose FSDP is accelerate's plugin (its fsdp_config keys apply). Axolotl hands its
// fsdp_config and fsdp_version to the Trainer's accelerate plugin (axolotl-ai-cloud/axolotl @ 067b021c:
// src/axolotl/utils/schemas/config.py fsdp_config, fsdp_version).
bool fsdp_through_accelerate(const FrameworkProfile& profile) {
  return profile.id == Framework::kHfTrainer || profile.id == Framework::kTrl || profile.id == Framework::kTransformersLoop ||
         profile.id == Framework::kAxolotl;
}

// accelerate's FSDP2 plugin checkpointed each child of a wrapped block rather than the block
// (utils/fsdp_utils.py fsdp2_apply_ac: checkpoint_wrapper on every child whose parent the wrap
// policy matches) from v1.8.0 (2025-06-19) to v1.14.0; v1.15.0 (2026-09-09) wraps the block.
constexpr std::int64_t kAccelerateFsdp2ChildAcFromYyyymm = 202506;
constexpr std::int64_t kAccelerateFsdp2BlockAcFromYyyymm = 202609;

// parallel.fsdp_activation_checkpointing: the FSDP plugin's own checkpointing (accelerate's
// fsdp_activation_checkpointing) instead of the Trainer's gradient_checkpointing. Under FSDP2 at
// the dates above each child of a block keeps its input (block_child_inputs).
void read_fsdp_plugin_checkpointing(const Json& parallel, const FrameworkProfile& profile, std::int64_t yyyymm,
                                    const ModelArchitecture& arch, TrainingSetup& t) {
  const FieldReader f(parallel, "/parallel");
  if (!f.bool_or({"fsdp_activation_checkpointing"}, false)) return;
  if (!fsdp_through_accelerate(profile)) {
    throw Error(ErrorCode::kInvalidValue, f.path("fsdp_activation_checkpointing"),
                "fsdp_activation_checkpointing is accelerate's FSDP plugin option (hf_trainer, trl, transformers_loop, axolotl)");
  }
  if (t.checkpointing == Checkpointing::kSelective) {
    throw Error(ErrorCode::kInvalidValue, f.path("fsdp_activation_checkpointing"),
                "the FSDP plugin checkpoints whole modules: activation_checkpointing selective does not apply");
  }
  t.checkpointing = Checkpointing::kFull;
  const bool fsdp2 = f.int_or({"fsdp_version"}, 1, 2, 1) == 2;
  const bool per_child = yyyymm >= kAccelerateFsdp2ChildAcFromYyyymm && yyyymm < kAccelerateFsdp2BlockAcFromYyyymm;
  if (fsdp2 && per_child) t.checkpoint_saved_inputs_per_block = block_child_inputs(arch);
}

// parallel.fsdp_version: which FSDP accelerate runs under the HF Trainer, TRL or a loop (fsdp_version in its
// config). 2: fully_shard, whose all-gathers are copied out per parameter, and which shards a
// 4-bit model where it was loaded (DistributedBehaviour::fsdp2_wraps_loaded_4bit_model).
void read_fsdp_version(const FieldReader& f, const FrameworkProfile& profile, std::int64_t yyyymm, DistributedBehaviour& b) {
  const std::int64_t version = f.int_or({"fsdp_version"}, 1, 2, 1);
  if (!fsdp_through_accelerate(profile)) {
    throw Error(ErrorCode::kInvalidValue, f.path("fsdp_version"),
                "fsdp_version selects accelerate's FSDP under hf_trainer, trl, transformers_loop and axolotl; " + profile.key +
                    " fixes its own");
  }
  if (version == 2) {
    b.gather_copy_out = true;
    b.fsdp2_wraps_loaded_4bit_model = yyyymm == 0 || yyyymm >= kAccelerateFsdp2QloraYyyymm;
  }
}

ParallelLayout read_parallel(const Json* j, const std::string& path, std::int64_t gpus, const FrameworkProfile& profile,
                             std::int64_t framework_yyyymm) {
  ParallelLayout p;
  p.behaviour = framework_behaviour(profile, framework_yyyymm);
  bool dp_given = false;
  const std::string where = path.empty() ? "/parallel" : path;
  if (j) {
    const FieldReader f(*j, path);
    reject_unknown_keys(f, {"dp", "tp", "pp", "vpp", "cp", "cp_kind", "ep", "etp", "sequence_parallel", "sharding",
                            "shard_degree", "schedule", "stage_layers", "reshard_after_forward", "backend",
                            "fsdp_version", "fsdp_activation_checkpointing", "zero3_init", "cpu_ram_efficient_loading",
                            "accumulate_allreduce_grads_in_fp32"});
    dp_given = f.has({"dp"});
    p.dp = f.int_or({"dp"}, 1, kMaxDegree, 1);
    p.tp = f.int_or({"tp"}, 1, kMaxDegree, 1);
    p.pp = f.int_or({"pp"}, 1, kMaxDegree, 1);
    p.vpp = f.int_or({"vpp"}, 1, kMaxDegree, 1);
    p.cp = f.int_or({"cp"}, 1, kMaxDegree, 1);
    p.ep = f.int_or({"ep"}, 1, kMaxDegree, 1);
    p.cp_kind = enum_or(f, "cp_kind", kCpKindNames, p.cp_kind);
    p.etp = f.int_or({"etp"}, 1, kMaxDegree, 0);
    // A framework whose tensor-parallel plan always shards the sequence runs tp > 1 with it.
    p.sequence_parallel = f.bool_or({"sequence_parallel"}, p.tp > 1 && p.behaviour.tp_sequence_parallel_only);
    p.sharding = enum_or(f, "sharding", kShardingNames, p.sharding);
    p.shard_degree = f.int_or({"shard_degree"}, 1, kMaxDegree, 0);
    p.schedule = enum_or(f, "schedule", kScheduleNames, p.vpp > 1 ? PipelineSchedule::kInterleaved : PipelineSchedule::k1F1B);
    if (p.schedule == PipelineSchedule::kInterleaved && p.vpp == 1) {
      throw Error(ErrorCode::kInvalidValue, f.path("schedule"), "the interleaved schedule needs vpp > 1 model chunks per rank");
    }
    if (p.schedule != PipelineSchedule::kInterleaved && p.vpp > 1) {
      throw Error(ErrorCode::kInvalidValue, f.path("schedule"), "vpp > 1 model chunks per rank run the interleaved schedule");
    }
    p.behaviour.reshard_after_forward = f.bool_or({"reshard_after_forward"}, p.behaviour.reshard_after_forward);
    if (f.has({"fsdp_version"})) read_fsdp_version(f, profile, framework_yyyymm, p.behaviour);
    // parallel.cpu_ram_efficient_loading: accelerate's fsdp_cpu_ram_efficient_loading (sync_module_states):
    // rank 0 holds the model in host memory, the others on the meta device, and FSDP1 builds each unit
    // on the GPU from there, as Answer.AI's low_memory loading does (DistributedBehaviour::
    // fsdp1_wrap_from_host; accelerate @ d6d3e03 utils/dataclasses.py FullyShardedDataParallelPlugin
    // cpu_ram_efficient_loading, accelerator.py prepare_model FSDP(sync_module_states, param_init_fn,
    // device_id); axolotl @ 15f7910d3 utils/model_shard_quant.py load_sharded_model_quant: rank 0 on
    // the CPU, the others on meta). FSDP2 loads a full state dict instead: no change there.
    if (f.has({"cpu_ram_efficient_loading"})) {
      const bool efficient = f.bool_or({"cpu_ram_efficient_loading"}, false);
      if (!fsdp_through_accelerate(profile)) {
        throw Error(ErrorCode::kInvalidValue, f.path("cpu_ram_efficient_loading"),
                    "cpu_ram_efficient_loading is accelerate's FSDP plugin option (hf_trainer, trl, transformers_loop, axolotl)");
      }
      if (efficient && !p.behaviour.gather_copy_out) p.behaviour.fsdp1_wrap_from_host = true;
    }
    // parallel.zero3_init: whether the model was built under deepspeed.zero.Init (DeepSpeed's
    // documented way, and what transformers does when the DeepSpeed config is registered before
    // from_pretrained); false: DistributedBehaviour::zero3_autograd_holds_gathered.
    if (f.has({"zero3_init"})) {
      const bool zero_init = f.bool_or({"zero3_init"}, true);
      if (profile.id != Framework::kDeepspeed) {
        throw Error(ErrorCode::kInvalidValue, f.path("zero3_init"),
                    "zero3_init is DeepSpeed's (framework deepspeed, or backend deepspeed under a wrapper); " + profile.key +
                        " shards with its own code");
      }
      p.behaviour.zero3_autograd_holds_gathered = !zero_init;
    }
    // parallel.accumulate_allreduce_grads_in_fp32: Megatron-LM's --accumulate-allreduce-grads-in-fp32,
    // an fp32 main_grad buffer under --fp16 (--bf16 always has one; arguments.py @ d98e8a64).
    if (f.has({"accumulate_allreduce_grads_in_fp32"})) {
      const bool fp32 = f.bool_or({"accumulate_allreduce_grads_in_fp32"}, false);
      if (profile.id != Framework::kMegatron) {
        throw Error(ErrorCode::kInvalidValue, f.path("accumulate_allreduce_grads_in_fp32"),
                    "accumulate_allreduce_grads_in_fp32 is Megatron-LM's flag; " + profile.key + " keeps its own gradient dtype");
      }
      if (fp32) p.behaviour.fp16_grads_reduce_in_fp16 = false;
    }
    if (const Json* sl = f.find({"stage_layers"})) {
      const std::string spath = f.path("stage_layers");
      if (!sl->is_array()) throw Error(ErrorCode::kInvalidType, spath, "stage_layers must be an array of layer counts");
      if (sl->size() > static_cast<std::size_t>(kMaxDegree)) throw Error(ErrorCode::kOutOfRange, spath, "stage_layers is too long");
      // Bounded per stage so that their sum cannot overflow (check_layout compares it).
      constexpr std::int64_t kMaxStage = 2 * ConfigLimits::kMaxLayers;  // decoder + encoder layers
      for (std::size_t i = 0; i < sl->size(); ++i) {
        const Json& v = (*sl)[i];
        const std::string at = pointer_append(spath, std::to_string(i));
        if (!v.is_number_integer()) throw Error(ErrorCode::kInvalidType, at, "a layer count must be an integer");
        if (v.is_number_unsigned() ? v.get<std::uint64_t>() > kMaxStage : v.get<std::int64_t>() > kMaxStage) {
          throw Error(ErrorCode::kOutOfRange, at, "a stage holds at most " + format_count(kMaxStage) + " layers, got " + v.dump());
        }
        p.stage_layers.push_back(v.get<std::int64_t>());
      }
    }
  }
  const std::int64_t model_parallel = p.tp * p.pp * p.cp;
  if (model_parallel > kMaxGpus) throw Error(ErrorCode::kOutOfRange, where, "tp x pp x cp exceeds the GPU bound");
  if (!dp_given) {
    if (gpus % model_parallel != 0) {
      throw Error(ErrorCode::kInvalidValue, path.empty() ? "/cluster/gpus" : path,
                  "tp x pp x cp = " + std::to_string(model_parallel) + " does not divide " + std::to_string(gpus) + " GPUs");
    }
    p.dp = gpus / model_parallel;
  } else if (p.dp > kMaxGpus || p.dp * model_parallel != gpus) {
    throw Error(ErrorCode::kInvalidValue, where,
                "dp x tp x pp x cp = " + std::to_string(p.dp) + " x " + std::to_string(model_parallel) + " but the cluster has " +
                    std::to_string(gpus) + " GPUs");
  }
  return p;
}

// A bandwidth in GB/s: a finite number in (0, 10^6].
// cluster.network: a fabric preset (hardware/network.h), which sets the inter-node bandwidth per
// GPU and the GPUs per node unless the request gives them.
const NetworkPreset* read_network(const FieldReader& c) {
  const auto id = c.get_string({"network"});
  if (!id) return nullptr;
  if (const NetworkPreset* n = find_network(*id)) return n;
  std::string list;
  for (const NetworkPreset& n : network_presets()) list += (list.empty() ? "" : ", ") + std::string(n.id);
  throw Error(ErrorCode::kInvalidValue, c.path("network"), "network '" + id->substr(0, 64) + "' is not one of: " + list);
}

double bandwidth_or(const FieldReader& f, const char* key, double fallback) {
  const Json* v = f.find({key});
  if (!v) return fallback;
  if (!v->is_number()) throw Error(ErrorCode::kInvalidType, f.path(key), std::string(key) + " must be a number (GB/s)");
  const double x = v->get<double>();
  if (!(x > 0 && x <= 1e6)) throw Error(ErrorCode::kOutOfRange, f.path(key), std::string(key) + " must be in (0, 1,000,000] GB/s");
  return x;
}

// A list of integers in [lo, hi] at `key` (empty when absent).
std::vector<std::int64_t> int_list(const FieldReader& f, const char* key, std::int64_t lo, std::int64_t hi) {
  std::vector<std::int64_t> out;
  const Json* v = f.find({key});
  if (!v) return out;
  const std::string path = f.path(key);
  if (!v->is_array()) throw Error(ErrorCode::kInvalidType, path, std::string(key) + " must be an array of integers");
  if (v->empty() || v->size() > 4096) throw Error(ErrorCode::kOutOfRange, path, std::string(key) + " must hold 1 … 4096 values");
  for (std::size_t i = 0; i < v->size(); ++i) {
    const Json& x = (*v)[i];
    const std::string at = pointer_append(path, std::to_string(i));
    if (!x.is_number_integer()) throw Error(ErrorCode::kInvalidType, at, "must be an integer");
    const auto n = x.get<std::int64_t>();
    if (n < lo || n > hi) throw Error(ErrorCode::kOutOfRange, at, "must be in " + std::to_string(lo) + " … " + std::to_string(hi));
    out.push_back(n);
  }
  return out;
}

// A list of enum names at `key` (empty when absent).
template <typename E, std::size_t N>
std::vector<E> enum_list(const FieldReader& f, const char* key, const EnumName<E> (&choices)[N]) {
  std::vector<E> out;
  const Json* v = f.find({key});
  if (!v) return out;
  const std::string path = f.path(key);
  if (!v->is_array() || v->empty() || v->size() > 64) {
    throw Error(ErrorCode::kInvalidType, path, std::string(key) + " must be a non-empty array of names");
  }
  for (std::size_t i = 0; i < v->size(); ++i) {
    const Json& x = (*v)[i];
    const std::string at = pointer_append(path, std::to_string(i));
    if (!x.is_string()) throw Error(ErrorCode::kInvalidType, at, "must be a string");
    bool found = false;
    std::string list;
    for (const EnumName<E>& c : choices) {
      if (x.get<std::string>() == c.name) {
        out.push_back(c.value);
        found = true;
      }
      list += (list.empty() ? "" : ", ") + std::string(c.name);
    }
    if (!found) throw Error(ErrorCode::kInvalidValue, at, "'" + x.get<std::string>().substr(0, 64) + "' is not one of: " + list);
  }
  return out;
}

// Presets are parsed and inventoried once per process: they are immutable, and building the
// inventory dominates a request (tools/bench).
struct ParsedPreset {
  ModelArchitecture arch;
  std::shared_ptr<const TensorInventory> inventory;
};

const ParsedPreset& parsed_preset(const presets::ModelPreset& p) {
  static std::mutex mutex;
  static std::map<std::string, ParsedPreset> parsed;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = parsed.find(p.id);
  if (it == parsed.end()) {
    ParsedPreset entry;
    entry.arch = parse_hf_config_text(p.config_text);
    entry.inventory = std::make_shared<const TensorInventory>(build_tensor_inventory(entry.arch));
    throw_if_beyond_exact();
    it = parsed.emplace(p.id, std::move(entry)).first;
  }
  return it->second;
}

}  // namespace

void reject_unknown_keys(const FieldReader& f, std::initializer_list<const char*> known) {
  for (auto it = f.json().begin(); it != f.json().end(); ++it) {
    bool found = false;
    for (const char* k : known) found = found || it.key() == k;
    if (!found) {
      std::string list;
      for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      throw Error(ErrorCode::kUnknownField, f.path(it.key()),
                  "unknown field " + it.key().substr(0, 64) + " (expected one of: " + list + ")");
    }
  }
}

void check_schema_version(const FieldReader& f) {
  if (auto v = f.get_int({"schema_version"}, 1, 1000); v && *v != kSchemaVersion) {
    throw Error(ErrorCode::kInvalidValue, f.path("schema_version"),
                "schema_version " + std::to_string(*v) + " is not supported (this build speaks " +
                    std::to_string(kSchemaVersion) + ")");
  }
}

ResolvedModel model_from_config(ModelArchitecture arch) {
  ResolvedModel r;
  r.inventory = std::make_shared<const TensorInventory>(build_tensor_inventory(arch));
  throw_if_beyond_exact();
  r.id = arch.name;
  r.source = "config";
  r.arch = std::move(arch);
  return r;
}

ResolvedModel resolve_model(const Json& model, const std::string& path) {
  if (!model.is_object()) throw Error(ErrorCode::kInvalidType, path, "model must be an object");
  const FieldReader f(model, path);
  reject_unknown_keys(f, {"preset", "config"});
  const bool has_preset = f.json().contains("preset");
  const bool has_config = f.json().contains("config");
  if (has_preset == has_config) {
    throw Error(ErrorCode::kInvalidValue, path, "model needs exactly one of preset or config");
  }
  ResolvedModel r;
  if (has_preset) {
    const std::string id = f.get_string({"preset"}).value_or("");
    const presets::ModelPreset* p = presets::find_model(id);
    if (!p) {
      throw Error(ErrorCode::kUnknownPreset, f.path("preset"),
                  "unknown model preset '" + id.substr(0, 128) + "' (list them with `memfit presets`)");
    }
    const ParsedPreset& parsed = parsed_preset(*p);
    r.arch = parsed.arch;
    r.inventory = parsed.inventory;
    r.id = p->id;
    r.source = "preset";
  } else {
    const std::string config_path = f.path("config");
    r = at_pointer(config_path, [&] { return model_from_config(parse_hf_config(model.at("config"), config_path)); });
  }
  return r;
}

namespace {

// The model with its output layer apart from the embedding table (a framework that unties it).
ResolvedModel untied(const ResolvedModel& tied) {
  ModelArchitecture arch = tied.arch;
  arch.tie_word_embeddings = false;
  ResolvedModel r = model_from_config(std::move(arch));
  r.id = tied.id;
  r.source = tied.source;
  return r;
}

}  // namespace

EstimateRequest read_estimate_request(const Json& req) {
  if (!req.is_object()) throw Error(ErrorCode::kInvalidType, "", "the request must be a JSON object");
  const FieldReader f(req, "");
  reject_unknown_keys(f, {"schema_version", "model", "training", "cluster", "parallel", "options"});
  check_schema_version(f);
  EstimateRequest r;
  const Json* model = f.find({"model"});
  if (!model) throw Error(ErrorCode::kMissingField, "/model", "missing required field model");
  r.model = resolve_model(*model, "/model");
  r.warnings = r.model.arch.warnings;

  const Json* training = f.find({"training"});
  static const Json kEmpty = Json::object();
  if (training && !training->is_object()) throw Error(ErrorCode::kInvalidType, "/training", "training must be an object");
  std::int64_t framework_yyyymm = 0;
  r.training = read_training(training ? *training : kEmpty, "/training", r.framework,
                             r.model.arch.num_layers + r.model.arch.num_encoder_layers, framework_yyyymm);
  apply_model_code(r.training, r.model.arch);
  if (r.framework->own_output_layer && r.model.arch.tie_word_embeddings) r.model = untied(r.model);

  const Json* cluster = f.find({"cluster"});
  if (!cluster) throw Error(ErrorCode::kMissingField, "/cluster", "missing required field cluster (at least {\"gpu\": {\"preset\": id}})");
  if (!cluster->is_object()) throw Error(ErrorCode::kInvalidType, "/cluster", "cluster must be an object");
  const FieldReader c(*cluster, "/cluster");
  reject_unknown_keys(c, {"gpu", "gpu_mix", "gpus", "gpus_per_node", "network", "inter_node_bandwidth_gb_per_s",
                          "host_memory_bandwidth_gb_per_s", "host_memory_gib_per_node"});
  const NetworkPreset* network = read_network(c);
  const Json* gpu = c.find({"gpu"});
  const Json* mix = c.find({"gpu_mix"});
  if (gpu && mix) throw Error(ErrorCode::kInvalidValue, "/cluster/gpu_mix", "give either gpu or gpu_mix, not both");
  if (mix) {
    r.gpu_mix = read_gpu_mix(*mix, "/cluster/gpu_mix");
    r.gpu = r.gpu_mix.front().gpu;
    std::int64_t total = 0;
    for (const GpuGroup& g : r.gpu_mix) total += g.count;
    if (total > kMaxGpus) {
      throw Error(ErrorCode::kOutOfRange, "/cluster/gpu_mix",
                  "the mix holds " + std::to_string(total) + " GPUs; at most " + std::to_string(kMaxGpus));
    }
    r.gpus = c.int_or({"gpus"}, 1, kMaxGpus, total);
    if (r.gpus != total) {
      throw Error(ErrorCode::kInvalidValue, "/cluster/gpus",
                  "gpus is " + std::to_string(r.gpus) + " but the counts of gpu_mix sum to " + std::to_string(total));
    }
  } else {
    if (!gpu) throw Error(ErrorCode::kMissingField, "/cluster/gpu", "missing required field gpu");
    if (!gpu->is_object()) throw Error(ErrorCode::kInvalidType, "/cluster/gpu", "gpu must be an object");
    r.gpu = read_gpu(*gpu, "/cluster/gpu");
    r.gpus = c.int_or({"gpus"}, 1, kMaxGpus, 1);
  }
  r.gpus_per_node = c.int_or({"gpus_per_node"}, 1, 1024, std::min<std::int64_t>(network ? network->gpus_per_node : 8, r.gpus));
  if (r.framework->recipe) r.framework->recipe(r.training, r.gpus > 1, framework_yyyymm);
  // A node holds one kind of GPU: each group of a mix fills whole nodes.
  for (std::size_t i = 0; i < r.gpu_mix.size(); ++i) {
    if (r.gpu_mix[i].count % r.gpus_per_node != 0) {
      throw Error(ErrorCode::kInvalidValue, "/cluster/gpu_mix/" + std::to_string(i) + "/count",
                  "count " + std::to_string(r.gpu_mix[i].count) + " is not a whole number of nodes of " +
                      std::to_string(r.gpus_per_node) + " GPUs (a node holds one kind of GPU)");
    }
  }
  r.inter_node_bandwidth_gb_per_s = network ? network->gb_per_s_per_gpu() : reference_network_bandwidth(r.gpu, r.gpu_mix);
  r.inter_node_bandwidth_gb_per_s = bandwidth_or(c, "inter_node_bandwidth_gb_per_s", r.inter_node_bandwidth_gb_per_s);
  r.host_memory_bandwidth_gb_per_s = bandwidth_or(c, "host_memory_bandwidth_gb_per_s", r.host_memory_bandwidth_gb_per_s);
  r.host_memory_bytes_per_node = host_memory_of(r.gpu, r.gpu_mix);
  if (const auto gib = c.get_number({"host_memory_gib_per_node"}, 1.0 / 1024, kMaxHostMemoryGib)) {
    r.host_memory_bytes_per_node = static_cast<std::int64_t>(std::llround(*gib * static_cast<double>(kGiB)));
  }
  r.framework_yyyymm = framework_yyyymm;

  const Json* parallel = f.find({"parallel"});
  if (parallel && !parallel->is_object()) throw Error(ErrorCode::kInvalidType, "/parallel", "parallel must be an object");
  // parallel.backend deepspeed: the wrapper hands the model to the DeepSpeed engine, whose
  // precision and distributed behaviours replace the wrapper's.
  const bool deepspeed_engine = parallel && read_backend(*parallel);
  if (deepspeed_engine && !runs_deepspeed_engine(r.framework->id)) {
    throw Error(ErrorCode::kInvalidValue, "/parallel/backend",
                "backend deepspeed applies to frameworks that hand the model to DeepSpeed (hf_trainer, trl, axolotl, llamafactory), not " +
                    r.framework->key);
  }
  r.parallel = read_parallel(parallel, parallel ? "/parallel" : "", r.gpus,
                             deepspeed_engine ? framework_profile(Framework::kDeepspeed) : *r.framework, framework_yyyymm);
  if (deepspeed_engine) apply_deepspeed_engine(r.framework->id, r.training, r.parallel.behaviour, r.model.arch.hidden_size);
  if (parallel && !deepspeed_engine) read_fsdp_plugin_checkpointing(*parallel, *r.framework, framework_yyyymm, r.model.arch, r.training);
  // Axolotl leaves the embeddings 16-bit under FSDP (loaders/model.py _configure_embedding_dtypes:
  // not is_fsdp_enabled); ZeRO-2/3 without the DeepSpeed engine is FSDP here.
  const bool fsdp = !deepspeed_engine && (r.parallel.sharding == Sharding::kZero2 || r.parallel.sharding == Sharding::kZero3);
  if (fsdp && r.framework->id == Framework::kAxolotl) r.training.embeddings_fp32 = false;
  r.parallel.gpus_per_node = r.gpus_per_node;
  if (auto v = check_layout(r.parallel, r.model.arch, r.training)) {
    // Rules on training fields name them; the rest are fields of the layout.
    const std::string pointer = v->field.rfind("training/", 0) == 0 ? "/" + v->field : "/parallel/" + v->field;
    throw Error(v->unsupported ? ErrorCode::kUnsupported : ErrorCode::kInvalidValue, pointer, v->rule);
  }

  if (const Json* o = f.find({"options"})) {
    if (!o->is_object()) throw Error(ErrorCode::kInvalidType, "/options", "options must be an object");
    const FieldReader of(*o, "/options");
    reject_unknown_keys(of, {"timeline", "max_micro_batch", "accounting"});
    r.include_timeline = of.bool_or({"timeline"}, true);
    r.search_max_micro_batch = of.bool_or({"max_micro_batch"}, true);
    if (auto name = of.get_string({"accounting"}); name && *name != "timeline") {
      try {
        r.accounting = reference::parse_accounting(*name);
      } catch (const Error& e) {
        throw Error(e.code(), of.path("accounting"), e.what());
      }
    }
  }
  return r;
}

ClusterSpec cluster_of(const EstimateRequest& r) {
  ClusterSpec c;
  c.gpu = r.gpu;
  c.gpus = r.gpus;
  c.gpus_per_node = r.gpus_per_node;
  c.inter_node_bandwidth_gb_per_s = r.inter_node_bandwidth_gb_per_s;
  c.host_memory_bandwidth_gb_per_s = r.host_memory_bandwidth_gb_per_s;
  c.host_memory_bytes_per_node = r.host_memory_bytes_per_node;
  return c;
}

Problem problem_of(const EstimateRequest& r) {
  Problem p;
  p.arch = &r.model.arch;
  p.inv = r.model.inventory.get();
  p.framework = r.framework->id;
  p.framework_yyyymm = r.framework_yyyymm;
  p.training = r.training;
  p.parallel = r.parallel;
  p.cluster = cluster_of(r);
  p.gpu_mix = r.gpu_mix;
  p.search_max_micro_batch = r.search_max_micro_batch;
  return p;
}

SearchRequest read_search_request(const Json& req) {
  if (!req.is_object()) throw Error(ErrorCode::kInvalidType, "", "the request must be a JSON object");
  const FieldReader f(req, "");
  reject_unknown_keys(f, {"schema_version", "model", "training", "cluster", "search"});
  Json rest = req;
  rest.erase("search");
  // Parameter offload needs ZeRO-3, which the search chooses: read offload apart from the
  // default layout's rules.
  std::optional<Offload> offload;
  if (rest.contains("training") && rest["training"].is_object() && rest["training"].contains("offload")) {
    const FieldReader tf(rest["training"], "/training");
    offload = enum_or(tf, "offload", kOffloadNames, Offload::kNone);
    rest["training"].erase("offload");
  }
  SearchRequest s;
  s.base = read_estimate_request(rest);
  if (offload) s.base.training.offload = *offload;
  SearchInput& in = s.input;
  in.training = s.base.training;
  in.training.offload = Offload::kNone;
  in.behaviour = s.base.parallel.behaviour;
  in.cluster = cluster_of(s.base);
  in.runtime = runtime_for(s.base.gpu);
  in.gpu_mix = s.base.gpu_mix;
  in.capabilities = framework_capabilities(s.base.framework->id, s.base.framework_yyyymm);
  // Training fields the user gave fix their dimension.
  if (const Json* t = f.find({"training"})) {
    if (t->contains("micro_batch")) in.space.micro_batch = {s.base.training.micro_batch};
    if (t->contains("activation_checkpointing")) in.space.checkpointing = {s.base.training.checkpointing};
    if (offload) in.space.offload = {*offload};
  }
  const Json* search = f.find({"search"});
  if (!search) return s;
  if (!search->is_object()) throw Error(ErrorCode::kInvalidType, "/search", "search must be an object");
  const FieldReader sf(*search, "/search");
  reject_unknown_keys(sf, {"objective", "top", "global_batch", "tokens_per_step", "space", "launch"});
  static constexpr EnumName<Objective> kObjectives[] = {
      {"fastest", Objective::kFastest}, {"least_memory", Objective::kLeastMemory}, {"largest_batch", Objective::kLargestBatch}};
  in.objective = enum_or(sf, "objective", kObjectives, in.objective);
  in.top = sf.int_or({"top"}, 1, kMaxSearchTop, in.top);
  in.global_batch = sf.int_or({"global_batch"}, 1, kMaxMicroBatch * kMaxGradAccum, 0);
  // The step's size in tokens (as training recipes state it, e.g. 4M tokens): whole sequences of
  // seq_len, the global batch they make.
  const std::int64_t seq = in.training.seq_len;
  if (const std::optional<std::int64_t> given = sf.get_int({"tokens_per_step"}, 1, kMaxMicroBatch * kMaxGradAccum * seq)) {
    const std::string at = sf.path("tokens_per_step");
    if (in.global_batch > 0) throw Error(ErrorCode::kInvalidValue, at, "give global_batch or tokens_per_step, not both");
    const std::int64_t tokens = *given;
    if (tokens % seq != 0) {
      const std::int64_t below = tokens / seq;
      throw Error(ErrorCode::kInvalidValue, at,
                  "tokens_per_step must be whole sequences of seq_len " + std::to_string(seq) + ": " + std::to_string(tokens) +
                      " tokens is between " + std::to_string(below) + " and " + std::to_string(below + 1) + " sequences (" +
                      std::to_string(below * seq) + " or " + std::to_string((below + 1) * seq) + " tokens)");
    }
    in.global_batch = tokens / seq;
  }
  s.with_launch = sf.bool_or({"launch"}, true);
  if (const Json* sp = sf.find({"space"})) {
    if (!sp->is_object()) throw Error(ErrorCode::kInvalidType, "/search/space", "space must be an object");
    const FieldReader p(*sp, "/search/space");
    reject_unknown_keys(p, {"tp", "pp", "vpp", "cp", "cp_kind", "ep", "micro_batch", "max_micro_batch", "sharding",
                            "sequence_parallel", "activation_checkpointing", "offload", "tp_within_node"});
    in.space.tp = int_list(p, "tp", 1, kMaxDegree);
    in.space.pp = int_list(p, "pp", 1, kMaxDegree);
    in.space.vpp = int_list(p, "vpp", 1, kMaxDegree);
    in.space.cp = int_list(p, "cp", 1, kMaxDegree);
    in.space.ep = int_list(p, "ep", 1, kMaxDegree);
    in.space.cp_kind = enum_or(p, "cp_kind", kCpKindNames, in.space.cp_kind);
    if (p.has({"micro_batch"})) in.space.micro_batch = int_list(p, "micro_batch", 1, kMaxMicroBatch);
    in.space.max_micro_batch = p.int_or({"max_micro_batch"}, 1, 1024, in.space.max_micro_batch);
    if (p.has({"sharding"})) in.space.sharding = enum_list(p, "sharding", kShardingNames);
    if (p.has({"activation_checkpointing"})) in.space.checkpointing = enum_list(p, "activation_checkpointing", kCheckpointingNames);
    if (p.has({"offload"})) in.space.offload = enum_list(p, "offload", kOffloadNames);
    if (const Json* v = p.find({"sequence_parallel"})) {
      if (!v->is_array() || v->empty() || v->size() > 2) {
        throw Error(ErrorCode::kInvalidType, p.path("sequence_parallel"), "sequence_parallel must be an array of booleans");
      }
      for (const Json& x : *v) {
        if (!x.is_boolean()) throw Error(ErrorCode::kInvalidType, p.path("sequence_parallel"), "sequence_parallel must be an array of booleans");
        in.space.sequence_parallel.push_back(x.get<bool>());
      }
    }
    in.space.tp_within_node = p.bool_or({"tp_within_node"}, true);
  }
  return s;
}

}  // namespace memfit::api
