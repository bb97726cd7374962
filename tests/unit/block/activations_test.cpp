// A layer's saved activations (block/activations.h) as folds over its block program, checked
// against bytes written out by hand for an MoE layer (the router and the dispatch included).
#include <catch2/catch.hpp>

#include "block/activations.h"
#include "hf_config/parse_hf_config.h"
#include "../test_support.h"
#include "toy_models.h"

using namespace memfit;

TEST_CASE("an MoE layer saves its router's logits and each routed copy's permuted token", "[block][activations]") {
  const ModelArchitecture a = memfit_test::moe_toy();
  TrainingSetup t;
  t.precision = Precision::kBf16;
  t.attention = AttentionKernel::kFlash;
  // Full fine-tuning in bf16, no checkpointing, one rank. Per token, by hand:
  //   two RMSNorms with trained weights: 2 x (fp32 input 4h + normalised 2h + rsqrt 4) = 104
  //   flash core: 2 heads x (q 2·4 + logsumexp 4) + 1 K/V head x 2·(4 + 4) = 40
  //   q/k/v's input 2h = 16, o's input 2 x 2 heads x 4 = 16
  //   router: 8 bytes per expert x 4 = 32
  //   per routed copy (2): gate's input 2h = 16, down's input 2·5 = 10, SwiGLU 3·2·5 = 30, the
  //   permuted token 2h = 16: 72 each, 144
  //   shared expert: input 2h = 16, down's input 2·12 = 24, SwiGLU 3·2·12 = 72
  const LayerActivations acts = layer_activations(a, t, true, false, true);
  CHECK(acts.saved_per_token == 104 + 40 + 16 + 16 + 32 + 144 + (16 + 24 + 72));
  // More experts of the same width: only the router's logits grow, 8 bytes each.
  ModelArchitecture wider = a;
  wider.moe.num_experts = 64;
  CHECK(layer_activations(wider, t, true, false, true).saved_per_token - acts.saved_per_token == 8 * (64 - 4));
}

TEST_CASE("tensor and expert parallelism split the router with the sequence and the permuted copies etp / tp", "[block][activations]") {
  // Mixtral-8x7B, bf16: h 4096, 8 experts, top 2.
  const ModelArchitecture a = memfit_test::preset("mistralai/Mixtral-8x7B-Instruct-v0.1");
  const TrainingSetup t = memfit_test::bf16(1, 4096);
  // The router's and the dispatch's share of a layer's saves: what a wider hidden size adds
  // through them alone is hard to isolate, so compare top-k: one more routed copy adds one copy's
  // saves (expert + permuted token) etp / tp of the sequence per rank.
  ModelArchitecture top3 = a;
  top3.moe.top_k = 3;
  const ActivationSplit sp2{2, true, false, 0}, etp1{2, true, false, 1};
  const std::int64_t copy2 = layer_activations(top3, t, true, false, true, sp2).saved_per_token -
                             layer_activations(a, t, true, false, true, sp2).saved_per_token;
  const std::int64_t copy1 = layer_activations(top3, t, true, false, true, etp1).saved_per_token -
                             layer_activations(a, t, true, false, true, etp1).saved_per_token;
  // Per copy at etp 2: gate's input 2h, down's input 2·f/2, SwiGLU 3·2·f/2, the permuted token
  // 2h; per rank etp / tp = 1 of it. At etp 1 the expert's columns are whole and half of the
  // sequence's copies sit on each rank.
  const std::int64_t h = 4096, f = 14336;
  CHECK(copy2 == 2 * h + 2 * (f / 2) + 6 * (f / 2) + 2 * h);
  CHECK(copy1 == (2 * h + 2 * f + 6 * f + 2 * h) / 2);
  // The router's 8 bytes per expert are on the hidden-width side: sequence parallelism halves them.
  ModelArchitecture more = a;
  more.moe.num_experts = 16;
  CHECK(layer_activations(more, t, true, false, true, sp2).saved_per_token -
            layer_activations(a, t, true, false, true, sp2).saved_per_token ==
        8 * 8 / 2);
}
