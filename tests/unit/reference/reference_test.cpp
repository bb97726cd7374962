// Reference accountings (src/reference): each checked exactly against values worked out by hand
// from its source's formula (the arithmetic is in the comments), Fujii et al.'s own unit-test
// values, relations between the configurations, and bad inputs.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "common/units.h"
#include "hf_config/parse_hf_config.h"
#include "presets/registry.h"
#include "reference/reference.h"

using namespace memfit;
using namespace memfit::reference;

namespace {

// GPT-3 175B (Korthikanti et al. Table 3): h 12288, a 96, L 96, v 51200.
TransformerShape gpt3() {
  TransformerShape m;
  m.hidden = 12288; m.ffn = 4 * 12288; m.layers = 96; m.heads = 96; m.kv_heads = 96;
  m.head_dim = 128; m.vocab = 51200;
  return m;
}

// A GPT-2-medium-like shape: h 1024, a 16, L 24, v 50304.
TransformerShape gpt_medium() {
  TransformerShape m;
  m.hidden = 1024; m.ffn = 4096; m.layers = 24; m.heads = 16; m.kv_heads = 16;
  m.head_dim = 64; m.vocab = 50304;
  return m;
}

// A 6.4B GPT: h 4096, f 4h, L 32, MHA a = k = 32, d_h 128, v 51200, tied, LayerNorm.
TransformerShape gpt_6b() {
  TransformerShape m;
  m.hidden = 4096; m.ffn = 16384; m.layers = 32; m.heads = 32; m.kv_heads = 32;
  m.head_dim = 128; m.vocab = 51200; m.tied_embeddings = true; m.norm = NormKind::kLayerNorm;
  return m;
}

// Llama-3.1-8B as in the Fujii et al. unit test: h 4096, f 14336, L 32, a 32, k 8, v 128256.
TransformerShape llama8b() {
  TransformerShape m;
  m.hidden = 4096; m.ffn = 14336; m.layers = 32; m.heads = 32; m.kv_heads = 8;
  m.head_dim = 128; m.vocab = 128256; m.swiglu = true;
  return m;
}

ReferenceInputs run(std::int64_t s, std::int64_t b, std::int64_t t, std::int64_t p) {
  ReferenceInputs in;
  in.s = s; in.b = b; in.t = t; in.p = p;
  return in;
}

std::int64_t term(const ReferenceResult& r, const std::string& label) {
  for (const Term& x : r.terms) {
    if (x.label == label) return x.bytes;
  }
  FAIL("no term " << label);
  return -1;
}

struct Caught {
  ErrorCode code;
  std::string path;
};

template <class F>
Caught error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.code(), e.path()};
  }
  FAIL("no error");
  return {};
}

}  // namespace

TEST_CASE("korthikanti: Table 2 rows for GPT-3 175B at t = 8", "[reference][korthikanti]") {
  // s 2048, b 1: sbh = 2048 * 12288 = 25,165,824; 5as/h = 5 * 96 * 2048 / 12288 = 80.
  const TransformerShape m = gpt3();
  ReferenceInputs in = run(2048, 1, 1, 1);
  CHECK(korthikanti_layer_bytes(m, in) == 114.0 * 25165824);  // sbh(34 + 80) = 2,868,903,936
  in.t = 8;
  CHECK(korthikanti_layer_bytes(m, in) == 578813952.0);  // sbh(10 + 24/8 + 80/8) = 23 sbh
  in.recompute = Recompute::kSelective;
  CHECK(korthikanti_layer_bytes(m, in) == 327155712.0);  // sbh(10 + 3) = 13 sbh
  in.sequence_parallel = true;
  CHECK(korthikanti_layer_bytes(m, in) == 106954752.0);  // 34 sbh / 8 = 4.25 sbh
  in.recompute = Recompute::kNone;
  CHECK(korthikanti_layer_bytes(m, in) == 358612992.0);  // sbh(34/8 + 80/8) = 14.25 sbh
  in.recompute = Recompute::kFull;
  CHECK(korthikanti_layer_bytes(m, in) == 50331648.0);  // 2 sbh
}

TEST_CASE("korthikanti: first stage under 1F1B and the interleaved schedule", "[reference][korthikanti]") {
  ReferenceInputs in = run(2048, 1, 8, 8);
  in.sequence_parallel = true;
  in.recompute = Recompute::kSelective;
  // Eq. 6: 34 sbh L / t = 4.25 sbh * 96 = 408 sbh = 10,267,656,192; embedding dropout
  // sbhp/t = sbh = 25,165,824; p > 1: no output layer. Total 409 sbh = 10,292,822,016.
  const ReferenceResult r = korthikanti(gpt3(), in);
  CHECK(r.name == "korthikanti");
  CHECK(term(r, "transformer_layers") == 10267656192LL);
  CHECK(term(r, "embedding_dropout") == 25165824LL);
  CHECK(r.activations_bytes == 10292822016LL);
  CHECK(r.model_states_bytes == 0);
  CHECK(r.total_bytes == r.activations_bytes);
  CHECK(r.terms.size() == 2);
  // vpp 3 (96 = 8 * 3 * 4): layers * (1 + 7/24) = 408 * 31/24 sbh = 527 sbh = 13,262,389,248.
  in.vpp = 3;
  const ReferenceResult interleaved = korthikanti(gpt3(), in);
  CHECK(term(interleaved, "transformer_layers") == 13262389248LL);
  CHECK(interleaved.activations_bytes == 13287555072LL);  // + sbh
}

TEST_CASE("korthikanti: one GPU adds the output layer", "[reference][korthikanti]") {
  // s 1024, b 2, h 1024: sbh = 2,097,152; 5as/h = 5 * 16 * 1024 / 1024 = 80.
  // layers 114 sbh * 24 = 2736 sbh = 5,737,807,872; dropout sbh = 2,097,152;
  // output 4sbh(1 + v/h) = 4 * 2048 * (1024 + 50304) = 420,478,976. Total 6,160,384,000.
  const ReferenceResult r = korthikanti(gpt_medium(), run(1024, 2, 1, 1));
  CHECK(term(r, "transformer_layers") == 5737807872LL);
  CHECK(term(r, "embedding_dropout") == 2097152LL);
  CHECK(term(r, "final_norm_and_fp32_logits") == 420478976LL);
  CHECK(r.activations_bytes == 6160384000LL);
}

TEST_CASE("korthikanti: relations between the rows", "[reference][korthikanti]") {
  const TransformerShape m = gpt3();
  for (Recompute rc : {Recompute::kNone, Recompute::kSelective}) {
    ReferenceInputs one = run(2048, 1, 1, 1), sp = run(2048, 1, 8, 1);
    one.recompute = sp.recompute = rc;
    sp.sequence_parallel = true;
    // Sequence parallelism divides the whole single-GPU layer by t.
    CHECK(korthikanti_layer_bytes(m, sp) * 8 == korthikanti_layer_bytes(m, one));
  }
  ReferenceInputs in = run(2048, 1, 8, 1);
  auto layer = [&](Recompute rc, bool sp) {
    in.recompute = rc;
    in.sequence_parallel = sp;
    return korthikanti_layer_bytes(m, in);
  };
  CHECK(layer(Recompute::kFull, false) < layer(Recompute::kSelective, true));
  CHECK(layer(Recompute::kSelective, true) < layer(Recompute::kSelective, false));
  CHECK(layer(Recompute::kSelective, false) < layer(Recompute::kNone, false));
  CHECK(layer(Recompute::kNone, true) < layer(Recompute::kNone, false));
  // SP + selective is about 5x below the TP baseline (23 / 4.25 = 5.4).
  CHECK(layer(Recompute::kNone, false) / layer(Recompute::kSelective, true) == Approx(23 / 4.25));
  // Interleaving scales the layers by 1 + (p-1)/(p vpp): 1 + 3/8 at p 4, vpp 2.
  ReferenceInputs flat = run(2048, 1, 8, 4), inter = flat;
  inter.vpp = 2;
  CHECK(term(korthikanti(m, inter), "transformer_layers") ==
        term(korthikanti(m, flat), "transformer_layers") * 11 / 8);
}

TEST_CASE("megatron: tied 6.4B GPT at t 2, p 2, distributed optimizer", "[reference][megatron]") {
  // Params: 2Lh^2 [(1 + 32/32)(128*32/4096) + 4 + 2/h + 1/(Lh)] = 12Lh^2 + 4Lh + 2h
  //   = 6,442,450,944 + 524,288 + 8,192 = 6,442,983,424; embedding hv = 209,715,200.
  // Shard (P/p + hv)/t = (3,221,491,712 + 209,715,200)/2 = 1,715,603,456 (tied: no output layer).
  ReferenceInputs in = run(2048, 1, 2, 2);
  in.distributed_optimizer = true;
  in.d = 4;
  CHECK(megatron_shard_params(gpt_6b(), in) == 1715603456.0);
  // Bytes/param 6 + 12/4 = 9: 15,440,431,104 = 2P + 4P + 3P.
  const ReferenceResult r = megatron(gpt_6b(), in);
  CHECK(r.model_states_bytes == 15440431104LL);
  CHECK(term(r, "weights_bf16") == 3431206912LL);
  CHECK(term(r, "grads_fp32") == 6862413824LL);
  CHECK(term(r, "optimizer_fp32") == 5146810368LL);
  // Activations: sbh = 8,388,608; sbh(18 + 4*4) L = 34 sbh * 32 = 9,126,805,504; 8sbp = 32,768;
  // sbhp = 16,777,216; sum 9,143,615,488, / t = 4,571,807,744.
  CHECK(term(r, "transformer_layers") == 4563402752LL);
  CHECK(term(r, "input_ids_int64") == 16384);
  CHECK(term(r, "embedding_dropout") == 8388608);
  CHECK(r.activations_bytes == 4571807744LL);
  CHECK(r.total_bytes == 20012238848LL);
}

TEST_CASE("megatron: Llama-3.1-8B on one GPU", "[reference][megatron]") {
  // Params: 2Lh^2 [1.25 + 3.5 * 1.5 + 2/4096 + 1/(32*4096)] = 6,979,321,856 + 524,288 + 8,192
  //   = 6,979,854,336; hv = 525,336,576; untied, p 1: + hv. Shard 8,030,527,488.
  const ReferenceInputs in = run(8192, 1, 1, 1);
  CHECK(megatron_shard_params(llama8b(), in) == 8030527488.0);
  const ReferenceResult r = megatron(llama8b(), in);
  CHECK(r.model_states_bytes == 144549494784LL);  // * 18
  // sbh = 33,554,432: 32 sbh * 32 = 34,359,738,368; 8sbp = 65,536; sbhp = 33,554,432;
  // 4sbh(1 + v/h) = 4 * 8192 * 132,352 = 4,336,910,336. Sum 38,730,268,672.
  CHECK(term(r, "final_norm_and_fp32_logits") == 4336910336LL);
  CHECK(r.activations_bytes == 38730268672LL);
  CHECK(r.total_bytes == 183279763456LL);
}

TEST_CASE("megatron: schedule factors and rounding of the source's float", "[reference][megatron]") {
  ReferenceInputs in = run(2048, 1, 2, 2);
  in.distributed_optimizer = true;
  in.d = 4;
  in.microbatches = 1;  // min(1, 1/2): half of 4,571,807,744
  CHECK(megatron(gpt_6b(), in).activations_bytes == 2285903872LL);
  in.microbatches = 0;
  in.vpp = 2;  // 1 + 1/4: 9,143,615,488 * 1.25 / 2
  CHECK(megatron(gpt_6b(), in).activations_bytes == 5714759680LL);

  // Llama-2-13B-like (h 5120, f 13824, L 40, MHA 40, v 32000, untied), t 2, p 4, d 7, m 3:
  // the source returns 12867389074.285717 bytes of model states and 9091203072.0 of activations
  // (theoretical_memory_usage.py@2bfe9bea run on these arguments).
  TransformerShape m = llama8b();
  m.hidden = 5120; m.ffn = 13824; m.layers = 40; m.heads = 40; m.kv_heads = 40; m.vocab = 32000;
  ReferenceInputs big = run(4096, 1, 2, 4);
  big.distributed_optimizer = true;
  big.d = 7;
  big.microbatches = 3;
  const ReferenceResult r = megatron(m, big);
  CHECK(r.model_states_bytes == 12867389074LL);
  CHECK(r.activations_bytes == 9091203072LL);
}

TEST_CASE("fujii: the authors' unit test, exactly", "[reference][fujii]") {
  // tools/memory_estimate/tests_memory_consumption_estimator.py@55d369bf: Llama-3.1-8B, s 8192,
  // distributed optimizer, fp32 grads; expected GiB compared with == in the source.
  struct Row {
    std::int64_t t, c, p, b, d;
    double states_gib, activations_gib;
  };
  const Row rows[] = {
      {2, 1, 1, 1, 2, 44.87260437011719, 22.64453125},
      {1, 2, 1, 1, 2, 67.30887222290039, 22.64453125},
      {2, 1, 2, 1, 32, 11.919273376464844, 20.75},
      {2, 2, 1, 2, 32, 23.137436628341675, 22.64453125},
  };
  for (const Row& row : rows) {
    ReferenceInputs in = run(8192, row.b, row.t, row.p);
    in.c = row.c;
    in.d = row.d;
    in.distributed_optimizer = true;
    in.grad_fp32 = true;
    const ReferenceResult r = fujii(llama8b(), in);
    INFO("t " << row.t << " c " << row.c << " p " << row.p << " b " << row.b);
    CHECK(to_gib(r.model_states_bytes) == row.states_gib);
    CHECK(to_gib(r.activations_bytes) == row.activations_gib);
  }
}

TEST_CASE("fujii: worked example t 2, d 2", "[reference][fujii]") {
  ReferenceInputs in = run(8192, 1, 2, 1);
  in.d = 2;
  in.distributed_optimizer = true;
  // P_tl = 2Lh^2 (1.25 + 5.25 + 1/h) + h = 6,979,588,096; hv = 525,336,576;
  // P_gpu = (P_tl - h + hv)/2 + hv/2 + h = 4,015,132,672.
  CHECK(fujii_params_per_gpu(llama8b(), in) == 4015132672.0);
  const ReferenceResult r = fujii(llama8b(), in);
  CHECK(r.model_states_bytes == 48181592064LL);  // * (2 + 4 + 12/2)
  CHECK(term(r, "optimizer_fp32") == 24090796032LL);
  // 32 * 8192 * 4096 * 41 / 2 + 8 * 8192 * 4096 / 2 + 4 * 8192 * (4096 + 128256) / 2
  CHECK(term(r, "transformer_layers") == 22011707392LL);
  CHECK(term(r, "input_to_embedding") == 134217728LL);
  CHECK(term(r, "final_norm_and_fp32_logits") == 2168455168LL);
  CHECK(r.activations_bytes == 24314380288LL);
  // Bf16 gradients and no distributed optimizer: B = 2 + 2 + 12 = 16.
  in.grad_fp32 = false;
  in.distributed_optimizer = false;
  const ReferenceResult plain = fujii(llama8b(), in);
  CHECK(plain.model_states_bytes == 4015132672LL * 16);
  CHECK(term(plain, "grads_bf16") == 4015132672LL * 2);
}

TEST_CASE("fujii: the 80% rule", "[reference][fujii]") {
  // 67.52 GiB in total (first row above): fits 94 (<= 75.2), not 80 (<= 64).
  ReferenceInputs in = run(8192, 1, 2, 1);
  in.d = 2;
  in.distributed_optimizer = true;
  const ReferenceResult r = fujii(llama8b(), in);
  CHECK(r.total_bytes == 48181592064LL + 24314380288LL);
  CHECK(fujii_trainable(r.total_bytes, 94));
  CHECK_FALSE(fujii_trainable(r.total_bytes, 80));
  CHECK(fujii_trainable(64 * kGiB, 80));
  CHECK_FALSE(fujii_trainable(64 * kGiB + 1, 80));
}

TEST_CASE("deepspeed zero2: model states as the estimator computes them", "[reference][deepspeed]") {
  TransformerShape m;
  m.total_params = 1000000007;
  ReferenceInputs in;
  in.gpus_per_node = 8;
  // gpu 2P + int(18P/8) = 2,000,000,014 + int(2,250,000,015.75); cpu P * 4 * 8 * 1.5.
  ReferenceResult r = deepspeed_zero2(m, in);
  CHECK(r.model_states_bytes == 4250000029LL);
  CHECK(r.cpu_bytes == 48000000336LL);
  CHECK(r.activations_bytes == 0);
  CHECK(r.total_bytes == r.model_states_bytes);
  in.cpu_offload = true;  // gpu 2P; cpu P * max(32, 16) * 1.5
  r = deepspeed_zero2(m, in);
  CHECK(r.model_states_bytes == 2000000014LL);
  CHECK(r.cpu_bytes == 48000000336LL);
  in.gpus_per_node = 2;  // cpu P * max(8, 16) * 1.5
  CHECK(deepspeed_zero2(m, in).cpu_bytes == 24000000168LL);
  in.cpu_offload = false;  // gpu 2P + int(18P/2) = 11,000,000,077; cpu P * 4 * 2 * 1.5
  r = deepspeed_zero2(m, in);
  CHECK(r.model_states_bytes == 11000000077LL);
  CHECK(r.cpu_bytes == 12000000084LL);
}

TEST_CASE("deepspeed zero3: every branch, with Python's truncation", "[reference][deepspeed]") {
  // P = 1,000,000,007, largest layer 100,000,001 (4x: 400,000,004), 3 nodes x 8 GPUs.
  TransformerShape m;
  m.total_params = 1000000007;
  m.largest_layer_params = 100000001;
  ReferenceInputs in;
  in.gpus_per_node = 8;
  in.nodes = 3;
  struct Case {
    bool offload, offload_params, zero_init;
    std::int64_t cpu, gpu;
  };
  const Case cases[] = {
      // cpu: int(18P * (1/3) * 1.5) = 9,000,000,063
      {true, true, true, 9000000063LL, 400000004LL},
      // cpu: P * max(32, 6.0) * 1.5 = 48,000,000,336
      {true, true, false, 48000000336LL, 400000004LL},
      // gpu: + int(2P/24) = + 83,333,333; cpu: 16P * (1/3) * 1.5 is 8,000,000,056 exactly, but
      // the float product is 8000000055.999999, and int() truncates it
      {true, false, true, 8000000055LL, 483333337LL},
      {true, false, false, 48000000336LL, 483333337LL},
      // gpu: + int(18P/24) = + int(750,000,005.25); cpu: largest * 4 * 8 * 1.5
      {false, false, true, 4800000048LL, 1150000009LL},
      {false, false, false, 48000000336LL, 1150000009LL},  // cpu: P * 4 * 8 * 1.5
  };
  for (const Case& c : cases) {
    in.cpu_offload = c.offload;
    in.cpu_offload_params = c.offload_params;
    in.zero_init = c.zero_init;
    const ReferenceResult r = deepspeed_zero3(m, in);
    INFO(c.offload << c.offload_params << c.zero_init);
    CHECK(r.cpu_bytes == c.cpu);
    CHECK(r.model_states_bytes == c.gpu);
    CHECK(term(r, "largest_layer") == 400000004LL);
  }
  // One GPU: max(4, 18.0) keeps the float 18.0, so P * 18.0 * 1.5 = 27,000,000,189.
  in.gpus_per_node = 1;
  in.nodes = 1;
  in.cpu_offload = in.cpu_offload_params = true;
  in.zero_init = false;
  CHECK(deepspeed_zero3(m, in).cpu_bytes == 27000000189LL);
}

TEST_CASE("shape_of reads Llama-3.1-8B", "[reference]") {
  const presets::ModelPreset* preset = presets::find_model("meta-llama/Llama-3.1-8B");
  REQUIRE(preset != nullptr);
  const TransformerShape m = shape_of(parse_hf_config_text(preset->config_text));
  CHECK(m.hidden == 4096);
  CHECK(m.ffn == 14336);
  CHECK(m.layers == 32);
  CHECK(m.heads == 32);
  CHECK(m.kv_heads == 8);
  CHECK(m.head_dim == 128);
  CHECK(m.vocab == 128256);
  CHECK(m.swiglu);
  CHECK_FALSE(m.tied_embeddings);
  CHECK(m.norm == NormKind::kRmsNorm);
  CHECK(m.experts == 0);
  CHECK(m.total_params == 8030261248LL);
  CHECK(m.largest_layer_params == 128256LL * 4096);  // embed_tokens (and lm_head)
}

TEST_CASE("accounting names select the accountings", "[reference]") {
  TransformerShape m = llama8b();
  m.total_params = 8030261248LL;
  m.largest_layer_params = 525336576LL;
  const ReferenceInputs in = run(8192, 1, 2, 1);
  for (Accounting a : {Accounting::kKorthikanti, Accounting::kMegatron, Accounting::kFujii,
                       Accounting::kDeepSpeedZero2, Accounting::kDeepSpeedZero3}) {
    const std::string_view name = accounting_name(a);
    CHECK(parse_accounting(name) == a);
    const ReferenceResult r = compute(a, m, in);
    CHECK(r.name == name);
    CHECK_FALSE(r.citation.empty());
    CHECK(r.total_bytes == r.model_states_bytes + r.activations_bytes);
    std::int64_t sum = 0;
    for (const Term& x : r.terms) sum += x.bytes;
    CHECK(std::abs(sum - r.total_bytes) <= static_cast<std::int64_t>(r.terms.size()));
  }
  const Caught e = error_of([] { parse_accounting("llmem"); });
  CHECK(e.code == ErrorCode::kInvalidValue);
  CHECK(e.path == "accounting");
}

TEST_CASE("bad reference inputs name the field", "[reference][errors]") {
  const TransformerShape m = llama8b();
  auto path_of = [&](auto mutate, ReferenceResult (*f)(const TransformerShape&, const ReferenceInputs&)) {
    TransformerShape shape = m;
    shape.total_params = 100;
    ReferenceInputs in = run(8192, 1, 2, 2);
    mutate(shape, in);
    const Caught c = error_of([&] { f(shape, in); });
    CHECK(c.code == ErrorCode::kInvalidValue);
    return c.path;
  };
  using S = TransformerShape;
  using I = ReferenceInputs;
  CHECK(path_of([](S&, I& in) { in.s = 0; }, korthikanti) == "s");
  CHECK(path_of([](S&, I& in) { in.b = -1; }, megatron) == "b");
  CHECK(path_of([](S&, I& in) { in.t = 3; }, korthikanti) == "t");    // 3 does not divide 32 heads
  CHECK(path_of([](S&, I& in) { in.t = 16; }, megatron) == "t");      // 16 does not divide 8 kv heads
  CHECK(path_of([](S&, I& in) { in.p = 5; }, fujii) == "p");          // 5 does not divide 32 layers
  CHECK(path_of([](S&, I& in) { in.vpp = 32; }, megatron) == "vpp");  // 2 * 32 does not divide 32
  CHECK(path_of([](S&, I& in) { in.p = 1; in.vpp = 2; }, korthikanti) == "p");
  CHECK(path_of([](S&, I& in) { in.c = 3; }, fujii) == "c");          // 3 does not divide 8192
  CHECK(path_of([](S&, I& in) { in.d = 0; }, fujii) == "d");
  CHECK(path_of([](S&, I& in) { in.microbatches = -1; }, megatron) == "microbatches");
  CHECK(path_of([](S& s, I&) { s.hidden = 0; }, korthikanti) == "hidden");
  CHECK(path_of([](S& s, I&) { s.kv_heads = 5; }, megatron) == "kv_heads");
  CHECK(path_of([](S& s, I&) { s.ffn = 0; }, fujii) == "ffn");
  CHECK(path_of([](S& s, I&) { s.total_params = 0; }, deepspeed_zero2) == "total_params");
  CHECK(path_of([](S&, I& in) { in.nodes = 0; }, deepspeed_zero3) == "nodes");
  CHECK(path_of([](S&, I& in) { in.additional_buffer_factor = -1; }, deepspeed_zero2) ==
        "additional_buffer_factor");

  TransformerShape shape = m;
  shape.total_params = 100;
  ReferenceInputs in;
  in.cpu_offload_params = true;
  const Caught unsupported = error_of([&] { deepspeed_zero3(shape, in); });
  CHECK(unsupported.code == ErrorCode::kUnsupported);
  CHECK(unsupported.path == "cpu_offload_params");

  shape.total_params = kMaxExactInteger / 4;  // 18 * P passes 2^53
  const Caught range = error_of([&] { deepspeed_zero2(shape, ReferenceInputs{}); });
  CHECK(range.code == ErrorCode::kOutOfRange);
}
