// The pipeline between the api and the engines (src/pipeline/evaluate.cpp): one evaluation per
// problem, the memory-only detail a range's variants use, and the range judged by its high end.
#include <catch2/catch.hpp>

#include "../test_support.h"
#include "model/tensor_inventory.h"
#include "pipeline/evaluate.h"

using namespace memfit;

namespace {

struct Model {
  ModelArchitecture arch;
  TensorInventory inv;
  explicit Model(const char* id) : arch(memfit_test::preset(id)), inv(build_tensor_inventory(arch)) {}
};

Problem one_gpu(const Model& m, const char* gpu, std::int64_t micro_batch) {
  Problem p;
  p.arch = &m.arch;
  p.inv = &m.inv;
  p.training = memfit_test::bf16(micro_batch, 4096);
  p.cluster = memfit_test::cluster(gpu, 1);
  return p;
}

}  // namespace

TEST_CASE("evaluate: the memory detail is the full answer's memory without step time or batch search", "[pipeline]") {
  const Model m("meta-llama/Llama-3.2-1B-Instruct");
  const Problem p = one_gpu(m, "H100-80GB", 2);
  const Evaluation full = evaluate(p);
  const Evaluation memory = evaluate(p, Detail::kMemory);
  CHECK(memory.peak().device_total_bytes == full.peak().device_total_bytes);
  CHECK(memory.peak().peak_reserved_bytes == full.peak().peak_reserved_bytes);
  CHECK(memory.fit.verdict == full.fit.verdict);
  CHECK(memory.compared_bytes == full.compared_bytes);
  CHECK(full.fit.max_micro_batch >= 2);  // it fits at 2, so the search finds at least 2
  CHECK(memory.fit.max_micro_batch == 0);
  CHECK(full.step.tokens_per_s > 0);
  CHECK(memory.step.tokens_per_s == 0);
  // One GPU kind: the device total is compared with that GPU's memory.
  CHECK(full.compared_bytes == full.peak().device_total_bytes);
  CHECK(full.gpu_memory_bytes == p.cluster.gpu.memory_total_bytes);
}

TEST_CASE("evaluate: a mixed cluster is judged on its most-used stage, timed on its slowest GPU", "[pipeline]") {
  const Model m("meta-llama/Llama-3.1-8B");
  Problem p = one_gpu(m, "H100-80GB", 1);
  p.cluster.gpus = 4;
  p.parallel.pp = 2;
  p.parallel.dp = 2;
  p.gpu_mix = {{*presets::find_gpu("H100-80GB"), 2}, {*presets::find_gpu("A100-40GB"), 2}};
  const Evaluation ev = evaluate(p);
  REQUIRE(ev.placement);
  std::int64_t most_used = 0;
  double usage = 0;
  for (const StagePlacement& s : ev.placement->kinds) {
    if (s.usage_fraction > usage) {
      usage = s.usage_fraction;
      most_used = s.device_total_bytes;
    }
  }
  CHECK(ev.compared_bytes == most_used);
  CHECK(ev.fit.usage_fraction == Approx(usage));
  CHECK(ev.step_cluster.gpu.id == "A100-40GB");  // the slower kind sets the pace
}

TEST_CASE("judge_range: the high end decides the verdict only when it is above the estimate", "[pipeline]") {
  const Model m("meta-llama/Llama-3.2-1B-Instruct");
  const Evaluation base = evaluate(one_gpu(m, "H100-80GB", 1), Detail::kMemory);
  const std::int64_t point = base.peak().device_total_bytes;
  Evaluation lower = base;
  lower.distributed.ranks[lower.distributed.peak_rank].estimate.device_total_bytes = point / 2;
  Evaluation higher = base;
  higher.distributed.ranks[higher.distributed.peak_rank].estimate.device_total_bytes = base.gpu_memory_bytes + 1;

  const RangeJudgement below = judge_range(base, {lower});
  CHECK(below.device_total.low == point / 2);
  CHECK(below.device_total.high == point);
  CHECK_FALSE(below.judged_on_high);
  CHECK(below.gpu_verdict == base.fit.verdict);
  CHECK(below.compared_bytes == point);

  const RangeJudgement above = judge_range(base, {lower, higher});
  CHECK(above.device_total.low == point / 2);
  CHECK(above.device_total.high == base.gpu_memory_bytes + 1);
  CHECK(above.judged_on_high);
  CHECK(above.gpu_verdict == Verdict::kOom);  // fits at the point, OOM at the high end
  CHECK(above.usage_fraction > 1.0);
}
