// The memory replay and the step-time model describe the same run: over generated layouts of each
// framework, what activation offload moves in the step time is what the replay keeps, and the
// gradient dtype the data-parallel collective moves is the replay's reduce-buffer dtype.
#include <catch2/catch.hpp>

#include <random>

#include <string>

#include "block/activations.h"
#include "block/block_program.h"
#include "hf_config/parse_hf_config.h"
#include "memory/model_states.h"
#include "memory/timeline.h"
#include "parallel/as_run.h"
#include "perf/perf_model.h"
#include "presets/registry.h"
#include "../test_support.h"
#include "frameworks/profile.h"

using namespace memfit;
using memfit_test::preset;

namespace {

ClusterSpec h100s(std::int64_t gpus) {
  ClusterSpec c;
  c.gpu = *presets::find_gpu("H100-80GB");
  c.gpus = gpus;
  return c;
}

struct Generated {
  TrainingSetup setup;
  ParallelLayout layout;
};

// A random setup and layout of one of the frameworks: method, precision, checkpointing policy,
// tp (sequence parallel or not), pp, cp and the sharding stage; `layers` divides by every pp.
Generated generate(std::mt19937& rng, const ModelArchitecture& a) {
  auto pick = [&](std::initializer_list<std::int64_t> xs) {
    return *(xs.begin() + std::uniform_int_distribution<std::size_t>(0, xs.size() - 1)(rng));
  };
  const Framework frameworks[] = {Framework::kHfTrainer, Framework::kMegatron, Framework::kTorchtitan,
                                  Framework::kTorchtune, Framework::kDeepspeed};
  const FrameworkProfile& profile = framework_profile(frameworks[pick({0, 1, 2, 3, 4})]);
  Generated g;
  g.setup = framework_defaults(profile, 0);
  TrainingSetup& t = g.setup;
  t.method = pick({0, 1, 2}) == 0 ? Method::kLora : (pick({0, 1}) ? Method::kFull : Method::kFreeze);
  if (t.method == Method::kLora) {
    t.lora_rank = 16;
    t.lora_targets = {"all-linear"};
  }
  t.precision = pick({0, 1}) ? Precision::kBf16 : Precision::kAmpBf16;
  t.micro_batch = pick({1, 2});
  t.seq_len = pick({2048, 4096});
  t.attention = pick({0, 1, 2, 3}) == 0 ? AttentionKernel::kEager : AttentionKernel::kFlash;
  t.checkpointing = static_cast<Checkpointing>(pick({0, 1, 2}));
  t.selective_layer_period = t.checkpointing == Checkpointing::kSelective && pick({0, 1}) ? pick({2, 3}) : 0;
  t.selective_every_other_mm = t.checkpointing == Checkpointing::kSelective && t.selective_layer_period == 0 && pick({0, 1});
  t.offload = Offload::kActivations;
  ParallelLayout& l = g.layout;
  l.behaviour = framework_behaviour(profile, 0);
  l.tp = pick({1, 2, 4, 8});
  l.sequence_parallel = l.tp > 1 && pick({0, 1});
  l.pp = pick({1, 1, 2, 4});
  l.cp = pick({1, 1, 2});
  l.dp = pick({1, 2, 4});
  l.sharding = static_cast<Sharding>(pick({0, 1, 2, 3}));
  l.ep = a.is_moe() ? pick({1, 2, 4}) : 1;
  if (a.num_layers % l.pp != 0) l.pp = 1;
  return g;
}

// Trainable elements of one transformer block on a rank without tensor parallelism.
std::int64_t block_elements(const TensorInventory& inv) {
  std::int64_t n = 0;
  for (const TensorSpec& s : inv.groups.front().tensors) n += s.numel() * s.copies;
  return n;
}

}  // namespace

TEST_CASE("activation offload moves in the step time what the memory replay keeps", "[consistency]") {
  // Dense GQA, MoE with expert parallelism, alternating sliding-window attention, a parallel
  // attention and GELU MLP block with LayerNorm: every layer of each alike, so every stage keeps its share.
  const char* model = GENERATE("meta-llama/Llama-3.1-8B", "Qwen/Qwen3-30B-A3B", "google/gemma-2-9b", "microsoft/phi-2");
  const ModelArchitecture a = preset(model);
  const TensorInventory inv = build_tensor_inventory(a);
  std::mt19937 rng(2026);
  int compared = 0;
  for (int i = 0; i < 300; ++i) {
    const Generated g = generate(rng, a);
    if (check_layout(g.layout, a, g.setup)) continue;
    const DistributedEstimate d = estimate_distributed(a, inv, g.setup, g.layout, {}, false);
    const StepTime st = estimate_step_time(build_perf_basis(a, inv, g.setup), g.setup, g.layout, h100s(g.layout.gpus()));
    // Every stage holds num_layers / pp uniform layers, so each rank kind keeps the stage's share.
    for (const RankEstimate& r : d.ranks) {
      INFO(model << ", case " << i << ", tp " << g.layout.tp << ", sp " << g.layout.sequence_parallel << ", pp " << g.layout.pp
           << ", cp " << g.layout.cp << ", checkpointing " << static_cast<int>(g.setup.checkpointing) << " period "
           << g.setup.selective_layer_period << " op policy " << g.setup.selective_every_other_mm << ", "
           << r.context.kind.name);
      // Stages checkpoint different counts of layers; under freeze, the replay decides per stage
      // whether a group's layers train, the step time per group (one stage: the same).
      if (g.layout.pp > 1 && (g.setup.selective_layer_period > 0 || g.setup.method == Method::kFreeze)) continue;
      // The replay keeps an integer mean per layer range (a freeze run has two: frozen, trained),
      // truncated by less than a byte per layer of the range.
      CHECK(st.activation_offload_bytes_per_micro_batch ==
            Approx(static_cast<double>(r.estimate.kept_activation_bytes_per_micro_batch)).epsilon(1e-9).margin(a.num_layers));
      ++compared;
    }
  }
  INFO(model);
  CHECK(compared > 150);
}

TEST_CASE("the step time reduces gradients in the dtype of the memory replay's reduce buffers", "[consistency]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TensorInventory inv = build_tensor_inventory(a);
  const std::int64_t block = block_elements(inv);
  std::mt19937 rng(7);
  int compared = 0;
  for (int i = 0; i < 300; ++i) {
    Generated g = generate(rng, a);
    g.setup.method = Method::kFull;
    g.setup.offload = Offload::kNone;
    g.layout.tp = 1;
    g.layout.sequence_parallel = false;
    g.layout.pp = g.layout.cp = 1;
    g.layout.dp = 8;
    if (g.layout.sharding != Sharding::kZero2 && g.layout.sharding != Sharding::kZero3) continue;
    if (check_layout(g.layout, a, g.setup)) continue;
    const DistributedEstimate d = estimate_distributed(a, inv, g.setup, g.layout, {}, false);
    // One block's reduce buffer: its gradients as computed, plus an fp32 copy when the reduction
    // upcasts them (2, 4 or 2 + 4 bytes per element).
    const std::int64_t per_element = d.peak().states.reduce_layer_bytes / block;
    REQUIRE(d.peak().states.reduce_layer_bytes % block == 0);
    const double memory_reduced = per_element == 2 ? 2.0 : 4.0;
    const StepTime st = estimate_step_time(build_perf_basis(a, inv, g.setup), g.setup, g.layout, h100s(8));
    INFO("case " << i << ", precision " << static_cast<int>(g.setup.precision) << ", sharding "
                 << static_cast<int>(g.layout.sharding) << ", reduce_in_fp32 " << g.layout.behaviour.reduce_in_fp32);
    CHECK(st.gradient_reduce_element_bytes == memory_reduced);
    ++compared;
  }
  CHECK(compared > 50);
}

TEST_CASE("pure bf16 ZeRO-3 with an fp32 reduction moves 4-byte gradients in both engines", "[consistency]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TensorInventory inv = build_tensor_inventory(a);
  TrainingSetup t = framework_defaults(framework_profile(Framework::kLitgpt), 0);
  t.method = Method::kFull;
  t.precision = Precision::kBf16;
  ParallelLayout l;
  l.dp = 8;
  l.sharding = Sharding::kZero3;
  l.behaviour = framework_behaviour(framework_profile(Framework::kLitgpt), 0);
  REQUIRE(l.behaviour.reduce_in_fp32);
  const GradientBytes g = base_gradient_bytes(t, l.behaviour);
  CHECK(g.computed == 2);
  CHECK(g.reduced == 4);
  const StepTime st = estimate_step_time(build_perf_basis(a, inv, t), t, l, h100s(8));
  CHECK(st.gradient_reduce_element_bytes == 4.0);
  CHECK(estimate_distributed(a, inv, t, l, {}, false).peak().states.reduce_layer_bytes == block_elements(inv) * (2 + 4));
}

TEST_CASE("the step time trains the adapters' parameters the memory model holds, DoRA's magnitude included", "[consistency]") {
  // Both read block/adapters.h adapted_linear: LoRA's r(in + out) per adapted linear, DoRA's
  // magnitude vector (out) beside it; fused qkv, MoE experts and a plain MLP.
  const char* model = GENERATE("meta-llama/Llama-3.1-8B", "Qwen/Qwen3-30B-A3B", "microsoft/phi-2", "EleutherAI/pythia-160m");
  const Method method = GENERATE(Method::kLora, Method::kQlora, Method::kDora);
  const ModelArchitecture a = preset(model);
  const TensorInventory inv = build_tensor_inventory(a);
  TrainingSetup t;
  t.method = method;
  t.precision = Precision::kBf16;
  t.lora_rank = 16;
  t.lora_targets = {"all-linear"};
  const ModelStates m = compute_model_states(a, inv, t);
  INFO(model << ", method " << static_cast<int>(method));
  REQUIRE(m.adapter_params > 0);
  CHECK(m.trainable_params == m.adapter_params);
  CHECK(build_perf_basis(a, inv, t).trainable_params == static_cast<double>(m.adapter_params));
}

namespace {

// A small Qwen2-MoE block: 8 routed experts top-2 beside a gated shared expert.
ModelArchitecture shared_expert_moe() {
  return parse_hf_config_text(R"({"model_type":"qwen2_moe","vocab_size":64,"hidden_size":64,"num_hidden_layers":2,
    "num_attention_heads":4,"num_key_value_heads":4,"intermediate_size":128,"moe_intermediate_size":32,
    "shared_expert_intermediate_size":96,"num_experts":8,"num_experts_per_tok":2})");
}

}  // namespace

TEST_CASE("saved activations and model states count each LoRA adapter at the same widths on a rank", "[consistency]") {
  // Both fold over the adapters block/adapters.h places: model states per inventory tensor
  // (adapted_linear_on_rank), saved activations per op of the block program (adapter_widths).
  // From the program's ops: r(in + out) per adapter on the rank, every routed expert's own
  // (num_experts), the shared expert's and its gate's; and dropout's dropped input with its mask
  // per adapter input on the rank, a routed expert's once per top-k copy.
  const bool moe = GENERATE(false, true);
  const std::int64_t tp = GENERATE(1, 2, 4);
  const char* targets = GENERATE("all-linear", "q,v,gate,up,down");
  const ModelArchitecture a = moe ? shared_expert_moe() : preset("meta-llama/Llama-3.1-8B");
  const TensorInventory inv = build_tensor_inventory(a);
  TrainingSetup t;
  t.method = Method::kLora;
  t.precision = Precision::kBf16;
  t.adapters_fp32 = false;
  t.lora_rank = 16;
  t.lora_targets.clear();
  for (const char* p = targets; *p;) {
    const char* end = p;
    while (*end && *end != ',') ++end;
    t.lora_targets.emplace_back(p, end);
    p = *end ? end + 1 : end;
  }
  INFO((moe ? "MoE with a shared expert" : "Llama 3.1 8B") << ", tp " << tp << ", targets " << targets);
  const BlockProgram program = block_program(a, t, moe, false);
  std::int64_t params = 0, dropout_bytes = 0;
  for (std::size_t i = 0; i < program.op_count; ++i) {
    const BlockOp& op = program.ops[i];
    if (!op.adapted) continue;
    const AdapterWidths w = adapter_widths(op, tp);
    const bool routed = op.part == BlockPart::kRoutedExpert;
    params += t.lora_rank * (w.in + w.out) * (routed ? a.moe.num_experts : 1);
    dropout_bytes += (2 + 1) * w.in * (routed ? a.moe.top_k : 1);
  }
  if (moe && std::string(targets) == "all-linear") {  // the shared expert's gate, hidden -> 1, replicated
    params += t.lora_rank * (a.hidden_size + 1);
    dropout_bytes += (2 + 1) * a.hidden_size;
  }
  REQUIRE(params > 0);
  RankShard shard;
  shard.tp = tp;
  CHECK(compute_model_states(a, inv, t, shard).adapter_params == params * a.num_layers);
  ActivationSplit split;
  split.tp = tp;
  TrainingSetup dropped = t;
  dropped.lora_dropout = 0.1;
  CHECK(layer_activations(a, dropped, moe, false, false, split).saved_per_token -
            layer_activations(a, t, moe, false, false, split).saved_per_token ==
        dropout_bytes);
}

TEST_CASE("Megatron --fp16 holds, reduces and steps the gradient buffer's dtype in both engines", "[consistency]") {
  // One as-run decision (main_grad_bytes_as_run): Megatron's buffer takes the parameters' fp16
  // under --fp16 and fp32 under --bf16, in the dated code of 2021 and the current code alike; the
  // fp16 optimizers step on fp32 copies of the (sharded) buffer.
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TensorInventory inv = build_tensor_inventory(a);
  const FrameworkProfile& megatron = framework_profile(Framework::kMegatron);
  for (std::int64_t month : {std::int64_t{202108}, std::int64_t{0}}) {
    for (Sharding s : {Sharding::kNone, Sharding::kZero1}) {
      std::int64_t gradients[2] = {0, 0}, step_temp[2] = {0, 0};
      int i = 0;
      for (Precision p : {Precision::kAmpFp16, Precision::kAmpBf16}) {
        INFO("month " << month << ", sharding " << static_cast<int>(s) << ", precision " << static_cast<int>(p));
        TrainingSetup t = framework_defaults(megatron, month);
        t.method = Method::kFull;
        t.precision = p;
        ParallelLayout l;
        l.dp = 8;
        l.sharding = s;
        l.behaviour = framework_behaviour(megatron, month);
        const std::int64_t buffer = p == Precision::kAmpFp16 ? 2 : 4;
        CHECK(main_grad_bytes_as_run(t, l.behaviour) == buffer);
        CHECK(base_gradient_bytes(t, l.behaviour).computed == buffer);
        const DistributedEstimate d = estimate_distributed(a, inv, t, l, {}, false);
        CHECK(d.setup.main_grad_bytes == buffer);
        const StepTime st = estimate_step_time(build_perf_basis(a, inv, t), t, l, h100s(8));
        CHECK(st.gradient_reduce_element_bytes == static_cast<double>(buffer));
        gradients[i] = d.peak().states.gradients_bytes;
        step_temp[i] = d.peak().states.optimizer_step_temp_bytes;
        ++i;
      }
      // The fp16 buffer is half the fp32 one; its step adds an fp32 copy of the stepped shard
      // (every gradient without the distributed optimizer, 1/dp of them with it).
      CHECK(2 * gradients[0] == gradients[1]);
      const std::int64_t stepped = gradients[0] / 2 / (s == Sharding::kNone ? 1 : 8);
      CHECK(step_temp[0] - step_temp[1] == Approx(static_cast<double>(4 * stepped)).epsilon(1e-6));
    }
  }
}
