// The rank plan (parallel/rank_plan.h): each decision once, as the memory replay and the step time
// both read it.
#include <catch2/catch.hpp>

#include "memory/timeline.h"
#include "parallel/rank_plan.h"
#include "../test_support.h"
#include "frameworks/profile.h"

using namespace memfit;
using memfit_test::bf16;
using memfit_test::preset;

TEST_CASE("a rank's tokens are its micro-batch times its context-parallel share of the sequence", "[plan]") {
  ParallelLayout l;
  l.cp = 4;
  const RankPlan p = plan_rank(l, bf16(2, 8192));
  CHECK(p.positions == 2048);
  CHECK(p.tokens_per_micro_batch == 4096);
  // Prompt tuning prepends its virtual tokens to every sequence.
  TrainingSetup prompt = bf16(3, 1000);
  prompt.method = Method::kPromptTuning;
  prompt.virtual_tokens = 24;
  CHECK(plan_rank(ParallelLayout{}, prompt).tokens_per_micro_batch == 3 * 1024);
}

TEST_CASE("tensor parallelism splits activations unless the linears are row-split; sequence parallelism splits full width",
          "[plan]") {
  ParallelLayout l;
  l.tp = 4;
  RankPlan p = plan_rank(l, bf16(1, 1024));
  CHECK(p.activation_tp() == 4);
  CHECK(p.sequence_split() == 1);
  CHECK_FALSE(p.row_split_linears);
  l.sequence_parallel = true;
  CHECK(plan_rank(l, bf16(1, 1024)).sequence_split() == 4);
  l.sequence_parallel = false;
  l.behaviour.tp_row_linears = true;  // Colossal-AI 1D
  p = plan_rank(l, bf16(1, 1024));
  CHECK(p.row_split_linears);
  CHECK(p.activation_tp() == 1);
  l.tp = 1;
  CHECK_FALSE(plan_rank(l, bf16(1, 1024)).row_split_linears);
}

TEST_CASE("ZeRO-3 gathers again for backward unless the framework keeps the parameters under pipeline parallelism", "[plan]") {
  ParallelLayout l;
  l.sharding = Sharding::kZero3;
  l.behaviour.reshard_after_forward = true;
  l.behaviour.reshard_after_forward_with_pp = false;
  CHECK(plan_rank(l, bf16(1, 1024)).reshard_after_forward);
  l.pp = 2;
  CHECK_FALSE(plan_rank(l, bf16(1, 1024)).reshard_after_forward);
  l.behaviour.reshard_after_forward_with_pp = true;
  CHECK(plan_rank(l, bf16(1, 1024)).reshard_after_forward);
}

TEST_CASE("the checkpointing policy decodes once into what backward reruns", "[plan]") {
  TrainingSetup t = bf16(1, 1024);
  CHECK(recompute_policy(t).whole_block_share == 0);
  t.checkpointing = Checkpointing::kFull;
  CHECK(recompute_policy(t).whole_block_share == 1);
  t.checkpointing = Checkpointing::kSelective;
  RecomputePolicy r = recompute_policy(t);
  CHECK(r.attention_core);
  CHECK_FALSE(r.op_level);
  CHECK(r.whole_block_share == 0);
  t.selective_layer_period = 4;  // torchtitan: every 4th block whole
  CHECK(recompute_policy(t).whole_block_share == 0.25);
  CHECK_FALSE(recompute_policy(t).attention_core);
  t.selective_layer_period = 0;
  t.selective_every_other_mm = true;  // torchtitan's op-level policy
  r = recompute_policy(t);
  CHECK(r.op_level);
  CHECK_FALSE(r.attention_core);
  CHECK(r.mode == Checkpointing::kSelective);
}

TEST_CASE("the plan's reduced gradients are 4 bytes for pure bf16 ZeRO-3 with an fp32 reduction, 2 without sharding", "[plan]") {
  TrainingSetup t = framework_defaults(framework_profile(Framework::kLitgpt), 0);
  t.method = Method::kFull;
  t.precision = Precision::kBf16;
  ParallelLayout l;
  l.dp = 8;
  l.behaviour = framework_behaviour(framework_profile(Framework::kLitgpt), 0);
  REQUIRE(l.behaviour.reduce_in_fp32);
  l.sharding = Sharding::kZero3;
  CHECK(plan_rank(l, t).reduced_gradient_bytes == 4);
  l.sharding = Sharding::kNone;  // DDP all-reduces the gradients as backward computed them
  CHECK(plan_rank(l, t).reduced_gradient_bytes == 2);
}

TEST_CASE("every rank kind of the memory replay runs the layout's one plan", "[plan]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TensorInventory inv = build_tensor_inventory(a);
  ParallelLayout l;
  l.tp = 2;
  l.pp = 4;
  l.cp = 2;
  l.sequence_parallel = true;
  const TrainingSetup t = bf16(2, 4096, 8);
  const RankPlan plan = plan_rank(l, t);
  const DistributedEstimate d = estimate_distributed(a, inv, t, l, {}, false);
  REQUIRE(d.ranks.size() == 3);
  CHECK(d.plan.tokens_per_micro_batch == plan.tokens_per_micro_batch);
  CHECK(d.plan.split.tp == 2);
  CHECK(d.plan.split.sequence_parallel);
  for (const RankEstimate& r : d.ranks) CHECK(r.estimate.tokens_per_micro_batch == 2 * 4096 / 2);
  CHECK(estimate_single_gpu(a, inv, t).tokens_per_micro_batch == 2 * 4096);
}

TEST_CASE("Megatron reduces fp16 gradients in fp16 and bf16 ones in its fp32 main_grad buffer", "[plan]") {
  const FrameworkProfile& megatron = framework_profile(Framework::kMegatron);
  ParallelLayout l;
  l.dp = 8;
  l.behaviour = megatron.dist;
  TrainingSetup t = framework_defaults(megatron, 0);
  t.micro_batch = 1;
  t.seq_len = 2048;
  t.precision = Precision::kAmpBf16;
  CHECK(plan_rank(l, t).reduced_gradient_bytes == 4);
  t.precision = Precision::kAmpFp16;
  CHECK(plan_rank(l, t).reduced_gradient_bytes == 2);
  // Without the behaviour the fp32 main_grad buffer's 4 bytes would move.
  l.behaviour.fp16_grads_reduce_in_fp16 = false;
  CHECK(plan_rank(l, t).reduced_gradient_bytes == 4);
}
