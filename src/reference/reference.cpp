// The shape of a model as the reference formulas see it, the accounting names, and the helpers
// the accountings share (reference/detail.h).
#include "reference/reference.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/error.h"
#include "common/units.h"
#include "reference/detail.h"

namespace memfit::reference {

namespace detail {

void invalid(const char* field, const std::string& rule, std::int64_t value) {
  throw Error(ErrorCode::kInvalidValue, field,
              std::string(field) + " " + rule + ", got " + std::to_string(value));
}

void require_at_least(std::int64_t value, std::int64_t least, const char* field) {
  if (value < least) invalid(field, "must be at least " + std::to_string(least), value);
}

void require_divides(std::int64_t divisor, const char* divisor_field, std::int64_t n, const char* n_field) {
  if (n % divisor != 0) {
    invalid(divisor_field, "must divide " + std::string(n_field) + " (" + std::to_string(n) + ")", divisor);
  }
}

void check_parallel_shape(const TransformerShape& shape, const ReferenceInputs& in) {
  require_at_least(shape.hidden, 1, "hidden");
  require_at_least(shape.layers, 1, "layers");
  require_at_least(shape.heads, 1, "heads");
  require_at_least(shape.vocab, 1, "vocab");
  require_at_least(in.s, 1, "s");
  require_at_least(in.b, 1, "b");
  require_at_least(in.t, 1, "t");
  require_at_least(in.p, 1, "p");
  require_at_least(in.vpp, 1, "vpp");
  require_at_least(in.microbatches, 0, "microbatches");
  require_divides(in.t, "t", shape.heads, "heads");
  require_divides(in.p, "p", shape.layers, "layers");
  if (in.vpp > 1) {
    require_at_least(in.p, 2, "p");  // interleaving needs a pipeline
    if (in.vpp > shape.layers || shape.layers % (in.p * in.vpp) != 0) {
      invalid("vpp", "times p (" + std::to_string(in.p) + ") must divide layers (" +
                         std::to_string(shape.layers) + ")", in.vpp);
    }
  }
}

void check_full_shape(const TransformerShape& shape, const ReferenceInputs& in) {
  check_parallel_shape(shape, in);
  require_at_least(shape.ffn, 1, "ffn");
  require_at_least(shape.head_dim, 1, "head_dim");
  require_at_least(shape.kv_heads, 1, "kv_heads");
  require_at_least(shape.experts, 0, "experts");
  require_divides(shape.kv_heads, "kv_heads", shape.heads, "heads");
  require_divides(in.t, "t", shape.kv_heads, "kv_heads");  // Megatron splits query groups over TP
  require_at_least(in.d, 1, "d");
}

double interleave_factor(const ReferenceInputs& in) {
  if (in.vpp <= 1) return 1.0;
  const double p = real(in.p);
  return 1.0 + (p - 1.0) / (p * real(in.vpp));
}

double megatron_schedule_factor(const ReferenceInputs& in) {
  if (in.vpp > 1) return interleave_factor(in);
  if (in.p > 1 && in.microbatches > 0) {
    return std::min(1.0, real(in.microbatches) / real(in.p));
  }
  return 1.0;
}

namespace {
void check_range(double bytes, const char* what) {
  if (!std::isfinite(bytes) || bytes < 0 || bytes > static_cast<double>(kMaxExactInteger)) {
    throw Error(ErrorCode::kOutOfRange, "", std::string(what) + " is outside [0, 2^53] bytes");
  }
}
}  // namespace

std::int64_t round_bytes(double bytes, const char* what) {
  check_range(bytes, what);
  return std::llround(bytes);
}

std::int64_t truncate_bytes(double bytes, const char* what) {
  check_range(bytes, what);
  return static_cast<std::int64_t>(bytes);
}

std::int64_t append_terms(ReferenceResult& r, const std::vector<RealTerm>& terms) {
  double sum = 0;
  for (const RealTerm& term : terms) {
    r.terms.push_back({term.label, round_bytes(term.bytes, term.label)});
    sum += term.bytes;
  }
  return round_bytes(sum, "total");
}

}  // namespace detail

namespace {

// DeepSpeed's model_to_params (stage3.py@edaa7221) takes, over all nn.Modules, the largest sum of
// parameters held directly (recurse=False): in the inventory, tensors sharing a module path.
std::int64_t largest_module_params(const TensorInventory& inventory) {
  std::int64_t largest = 0;
  auto scan = [&largest](const std::vector<TensorSpec>& tensors) {
    std::map<std::string, std::int64_t> per_module;
    for (const TensorSpec& tensor : tensors) {
      const std::string module = tensor.name.substr(0, tensor.name.rfind('.'));
      largest = std::max(largest, per_module[module] += tensor.numel());
    }
  };
  scan(inventory.globals);
  for (const LayerGroup& group : inventory.groups) scan(group.tensors);
  return largest;
}

constexpr std::string_view kNames[] = {"korthikanti", "megatron", "fujii", "deepspeed_zero2",
                                       "deepspeed_zero3"};

}  // namespace

TransformerShape shape_of(const ModelArchitecture& arch) {
  return shape_of(arch, build_tensor_inventory(arch));
}

TransformerShape shape_of(const ModelArchitecture& arch, const TensorInventory& inventory) {
  const AttentionSpec& attn = arch.attention;
  TransformerShape shape;
  shape.hidden = arch.hidden_size;
  shape.ffn = arch.is_moe() && arch.moe.expert_intermediate_size > 0 ? arch.moe.expert_intermediate_size
                                                                     : arch.mlp.intermediate_size;
  shape.layers = arch.num_layers + arch.num_encoder_layers;
  shape.heads = attn.num_heads;
  shape.kv_heads = attn.num_kv_heads > 0 ? attn.num_kv_heads : attn.num_heads;
  shape.head_dim = attn.head_dim > 0 ? attn.head_dim
                  : attn.num_heads > 0 ? arch.hidden_size / attn.num_heads
                                       : 0;
  shape.vocab = arch.vocab_size;
  shape.swiglu = arch.mlp.gated;
  shape.tied_embeddings = arch.tie_word_embeddings;
  shape.norm = arch.norm;
  shape.experts = arch.moe.num_experts;
  shape.total_params = inventory.total_params;
  shape.largest_layer_params = largest_module_params(inventory);
  return shape;
}

std::string_view accounting_name(Accounting accounting) {
  return kNames[static_cast<int>(accounting)];
}

Accounting parse_accounting(std::string_view name) {
  for (int i = 0; i < static_cast<int>(std::size(kNames)); ++i) {
    if (kNames[i] == name) return static_cast<Accounting>(i);
  }
  throw Error(ErrorCode::kInvalidValue, "accounting",
              "accounting must be korthikanti, megatron, fujii, deepspeed_zero2 or deepspeed_zero3, got \"" +
                  std::string(name) + "\"");
}

ReferenceResult compute(Accounting accounting, const TransformerShape& shape, const ReferenceInputs& in) {
  switch (accounting) {
    case Accounting::kKorthikanti: return korthikanti(shape, in);
    case Accounting::kMegatron: return megatron(shape, in);
    case Accounting::kFujii: return fujii(shape, in);
    case Accounting::kDeepSpeedZero2: return deepspeed_zero2(shape, in);
    case Accounting::kDeepSpeedZero3: return deepspeed_zero3(shape, in);
  }
  throw Error(ErrorCode::kInternal, "accounting", "unknown accounting");
}

}  // namespace memfit::reference
