// Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
// (arXiv:2205.05198). Activations only: a GPT block (MHA, 4h GeLU MLP, dropout, pre-LayerNorm),
// 16-bit activations and 1-byte dropout masks; the MLP width, GQA and the optimizer do not enter.
#include "reference/detail.h"

namespace memfit::reference {

namespace {
constexpr const char* kCitation = "Korthikanti et al. 2022, arXiv:2205.05198, Table 2, Eq. 5-6";
}  // namespace

using detail::real;
using detail::RealTerm;

double korthikanti_layer_bytes(const TransformerShape& shape, const ReferenceInputs& in) {
  detail::check_parallel_shape(shape, in);
  const double s = real(in.s), h = real(shape.hidden);
  const double a = real(shape.heads), t = real(in.t);
  const double sbh = s * real(in.b) * h;
  // Table 2. The 10sbh that TP leaves whole (LayerNorm inputs 4, dropout masks 2, block inputs 4)
  // is split by sequence parallelism, giving 34/t; the attention core 5as/(ht) (softmax output,
  // its dropout mask and output) is what selective recomputation drops.
  const double linear_part = in.sequence_parallel ? 34.0 / t : 10.0 + 24.0 / t;
  const double attention_core = 5.0 * a * s / (h * t);
  switch (in.recompute) {
    case Recompute::kFull: return 2.0 * sbh;  // Table 2, full recomputation: the layer input
    case Recompute::kSelective: return sbh * linear_part;
    case Recompute::kNone: break;
  }
  return sbh * (linear_part + attention_core);
}

ReferenceResult korthikanti(const TransformerShape& shape, const ReferenceInputs& in) {
  const double layer = korthikanti_layer_bytes(shape, in);
  const double sbh = real(in.s) * real(in.b) * real(shape.hidden);
  const double t = real(in.t), p = real(in.p);
  ReferenceResult r{"korthikanti", kCitation, 0, 0, 0, 0, {}};
  // Eq. 5-6: under 1F1B the first stage holds p micro-batches of L/p layers, i.e. L layers;
  // the interleaved schedule multiplies that by 1 + (p-1)/(p*vpp) (stated with Eq. 5).
  std::vector<RealTerm> terms = {
      {"transformer_layers", layer * real(shape.layers) * detail::interleave_factor(in)},
      {"embedding_dropout", sbh * p / t},  // 1-byte mask for p micro-batches in flight, sbhp/t
  };
  if (in.p == 1) {
    // Final LayerNorm output 2sbh/t, output-layer input 2sbh/t, fp32 logits 4sbv/t; the first
    // stage holds them only when it is also the last: 4sbh/t (1 + v/h).
    const double v_over_h = real(shape.vocab) / real(shape.hidden);
    terms.push_back({"final_norm_and_fp32_logits", 4.0 * sbh / t * (1.0 + v_over_h)});
  }
  r.activations_bytes = detail::append_terms(r, terms);
  r.total_bytes = r.activations_bytes;
  return r;
}

}  // namespace memfit::reference
