// Request reading (see request.h).
#include "api/request.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "api/api.h"
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
constexpr std::int64_t kMaxGpus = 1 << 20;
constexpr std::int64_t kMaxDegree = 1 << 16;

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

void read_lora(const Json& j, const std::string& path, TrainingSetup& t) {
  const FieldReader f(j, path);
  reject_unknown_keys(f, {"rank", "targets", "dropout"});
  t.lora_rank = f.int_or({"rank"}, 1, kMaxLoraRank, t.lora_rank);
  if (auto d = f.get_number({"dropout"}, 0.0, 0.99)) t.lora_dropout = *d;
  const Json* targets = f.find({"targets"});
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

TrainingSetup read_training(const Json& j, const std::string& path, const FrameworkProfile*& profile,
                            std::int64_t num_layers) {
  const FieldReader f(j, path);
  reject_unknown_keys(f, {"framework", "framework_version", "method", "lora", "base_quant", "freeze_trainable_layers", "precision",
                          "optimizer", "optimizer_impl", "optimizer_in_backward", "micro_batch", "grad_accum",
                          "seq_len", "packed", "activation_checkpointing", "offload", "attention", "loss",
                          "loss_chunks", "compile", "selective_layer_period"});
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
  std::int64_t yyyymm = 0;
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
  if (const Json* l = f.find({"lora"})) {
    if (!lora) throw Error(ErrorCode::kInvalidValue, f.path("lora"), "lora settings need method lora, qlora or dora");
    if (!l->is_object()) throw Error(ErrorCode::kInvalidType, f.path("lora"), "lora must be an object");
    read_lora(*l, f.path("lora"), t);
  }
  t.base_quant = enum_or(f, "base_quant", kBaseQuantNames, t.base_quant);
  if (t.base_quant != BaseQuant::kNone && !lora) {
    throw Error(ErrorCode::kInvalidValue, f.path("base_quant"),
                "quantised base weights are frozen: they need method lora, qlora or dora");
  }
  if (t.method == Method::kQlora && f.has({"base_quant"}) && t.base_quant == BaseQuant::kNone) {
    throw Error(ErrorCode::kInvalidValue, f.path("base_quant"), "method qlora quantises the base: base_quant cannot be none");
  }
  t.freeze_trainable_layers = f.int_or({"freeze_trainable_layers"}, 1, std::max<std::int64_t>(1, num_layers),
                                       std::min(t.freeze_trainable_layers, num_layers));
  t.precision = enum_or(f, "precision", kPrecisionNames, t.precision);
  t.optimizer = enum_or(f, "optimizer", kOptimizerNames, t.optimizer);
  t.optimizer_impl = enum_or(f, "optimizer_impl", kOptimizerImplNames, t.optimizer_impl);
  t.optimizer_in_backward = f.bool_or({"optimizer_in_backward"}, t.optimizer_in_backward);
  t.micro_batch = f.int_or({"micro_batch"}, 1, kMaxMicroBatch, t.micro_batch);
  t.grad_accum = f.int_or({"grad_accum"}, 1, kMaxGradAccum, t.grad_accum);
  t.seq_len = f.int_or({"seq_len"}, 1, kMaxSeqLen, t.seq_len);
  t.packed = f.bool_or({"packed"}, t.packed);
  t.checkpointing = enum_or(f, "activation_checkpointing", kCheckpointingNames, t.checkpointing);
  t.offload = enum_or(f, "offload", kOffloadNames, t.offload);
  t.attention = enum_or(f, "attention", kAttentionNames, t.attention);
  t.loss = enum_or(f, "loss", kLossNames, t.loss);
  if (auto c = f.get_int({"loss_chunks"}, 1, 1 << 16)) {
    t.loss_chunks = *c;
    t.loss_chunk_tokens = 0;
  }
  t.compile = f.bool_or({"compile"}, t.compile);
  if (auto p = f.get_int({"selective_layer_period"}, 0, std::max<std::int64_t>(1, num_layers))) {
    if (*p > 0 && t.checkpointing != Checkpointing::kSelective) {
      throw Error(ErrorCode::kInvalidValue, f.path("selective_layer_period"),
                  "selective_layer_period needs activation_checkpointing selective");
    }
    t.selective_layer_period = *p;
  }
  if (t.optimizer_in_backward && t.grad_accum > 1) {
    throw Error(ErrorCode::kInvalidValue, f.path("optimizer_in_backward"),
                "the optimizer steps inside backward, so gradients cannot accumulate: grad_accum must be 1");
  }
  return t;
}

GpuSpec read_gpu(const Json& j, const std::string& path) {
  const FieldReader f(j, path);
  reject_unknown_keys(f, {"preset", "spec"});
  const bool has_preset = f.json().contains("preset");
  if (has_preset == f.json().contains("spec")) {
    throw Error(ErrorCode::kInvalidValue, path, "gpu needs exactly one of preset or spec");
  }
  if (!has_preset) return presets::parse_gpu_spec(j.at("spec"), f.path("spec"));
  const std::string id = f.get_string({"preset"}).value_or("");
  const GpuSpec* g = presets::find_gpu(id);
  if (!g) {
    throw Error(ErrorCode::kUnknownPreset, f.path("preset"),
                "unknown GPU preset '" + id.substr(0, 64) + "' (list them with `memfit presets`)");
  }
  return *g;
}

ParallelLayout read_parallel(const Json* j, const std::string& path, std::int64_t gpus, const FrameworkProfile& profile) {
  ParallelLayout p;
  p.behaviour = profile.dist;
  bool dp_given = false;
  const std::string where = path.empty() ? "/parallel" : path;
  if (j) {
    const FieldReader f(*j, path);
    reject_unknown_keys(f, {"dp", "tp", "pp", "vpp", "cp", "ep", "sequence_parallel", "sharding", "shard_degree",
                            "schedule", "stage_layers", "reshard_after_forward"});
    dp_given = f.has({"dp"});
    p.dp = f.int_or({"dp"}, 1, kMaxDegree, 1);
    p.tp = f.int_or({"tp"}, 1, kMaxDegree, 1);
    p.pp = f.int_or({"pp"}, 1, kMaxDegree, 1);
    p.vpp = f.int_or({"vpp"}, 1, kMaxDegree, 1);
    p.cp = f.int_or({"cp"}, 1, kMaxDegree, 1);
    p.ep = f.int_or({"ep"}, 1, kMaxDegree, 1);
    p.sequence_parallel = f.bool_or({"sequence_parallel"}, false);
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
    if (const Json* sl = f.find({"stage_layers"})) {
      const std::string spath = f.path("stage_layers");
      if (!sl->is_array()) throw Error(ErrorCode::kInvalidType, spath, "stage_layers must be an array of layer counts");
      if (sl->size() > static_cast<std::size_t>(kMaxDegree)) throw Error(ErrorCode::kOutOfRange, spath, "stage_layers is too long");
      for (std::size_t i = 0; i < sl->size(); ++i) {
        const Json& v = (*sl)[i];
        if (!v.is_number_integer()) throw Error(ErrorCode::kInvalidType, pointer_append(spath, std::to_string(i)), "a layer count must be an integer");
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
    r = model_from_config(parse_hf_config(model.at("config"), f.path("config")));
  }
  return r;
}

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
  r.training = read_training(training ? *training : kEmpty, "/training", r.framework,
                             r.model.arch.num_layers + r.model.arch.num_encoder_layers);

  const Json* cluster = f.find({"cluster"});
  if (!cluster) throw Error(ErrorCode::kMissingField, "/cluster", "missing required field cluster (at least {\"gpu\": {\"preset\": id}})");
  if (!cluster->is_object()) throw Error(ErrorCode::kInvalidType, "/cluster", "cluster must be an object");
  const FieldReader c(*cluster, "/cluster");
  reject_unknown_keys(c, {"gpu", "gpus", "gpus_per_node"});
  const Json* gpu = c.find({"gpu"});
  if (!gpu) throw Error(ErrorCode::kMissingField, "/cluster/gpu", "missing required field gpu");
  if (!gpu->is_object()) throw Error(ErrorCode::kInvalidType, "/cluster/gpu", "gpu must be an object");
  r.gpu = read_gpu(*gpu, "/cluster/gpu");
  r.gpus = c.int_or({"gpus"}, 1, kMaxGpus, 1);
  r.gpus_per_node = c.int_or({"gpus_per_node"}, 1, 1024, std::min<std::int64_t>(8, r.gpus));

  const Json* parallel = f.find({"parallel"});
  if (parallel && !parallel->is_object()) throw Error(ErrorCode::kInvalidType, "/parallel", "parallel must be an object");
  r.parallel = read_parallel(parallel, parallel ? "/parallel" : "", r.gpus, *r.framework);
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

}  // namespace memfit::api
