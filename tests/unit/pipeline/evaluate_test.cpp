// The pipeline between the api and the engines (src/pipeline/evaluate.cpp): one evaluation per
// problem, the memory-only detail a range's variants use, and the range judged by its high end.
#include <catch2/catch.hpp>

#include "../test_support.h"
#include "model/tensor_inventory.h"
#include "pipeline/evaluate.h"

using namespace memfit;

namespace {

using memfit_test::Model;

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
  CHECK(memory.peak().peak_allocated_bytes == full.peak().peak_allocated_bytes);
  CHECK(memory.peak().timeline.empty());  // the peaks alone: no timeline replayed
  CHECK_FALSE(full.peak().timeline.empty());
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

TEST_CASE("judge_peaks: the estimate's peaks and verdict, on one GPU kind and placed on a mix", "[pipeline]") {
  const Model m("meta-llama/Llama-3.1-8B");
  Problem p = one_gpu(m, "H100-80GB", 1);
  p.cluster.gpus = 4;
  p.parallel.pp = 2;
  p.parallel.dp = 2;
  for (const bool mixed : {false, true}) {
    if (mixed) p.gpu_mix = {{*presets::find_gpu("H100-80GB"), 2}, {*presets::find_gpu("A100-40GB"), 2}};
    const Evaluation ev = evaluate(p, Detail::kMemory);
    const std::optional<PeakVerdict> v =
        judge_peaks(*p.arch, *p.inv, p.training, p.parallel, ev.runtime, p.cluster, p.gpu_mix);
    REQUIRE(v);
    CHECK(v->peak.device_total_bytes == ev.peak().device_total_bytes);
    CHECK(v->peak.peak_rank == ev.distributed.peak_rank);
    CHECK(v->verdict == ev.fit.verdict);
    CHECK(v->usage_fraction == ev.fit.usage_fraction);
    CHECK(v->placement.size() == (mixed ? ev.placement->kinds.size() : 0));
    // A limit below the forward floor cuts the replay: no size, out of memory.
    ReplayHints cut;
    cut.oom_above_bytes = 1;
    CHECK_FALSE(judge_peaks(*p.arch, *p.inv, p.training, p.parallel, ev.runtime, p.cluster, p.gpu_mix, cut).has_value());
  }
}

TEST_CASE("a size past 2^53 is data: evaluate names it, judge_peaks reads it as out of memory, the flag is left clear", "[pipeline][limits]") {
  const Model m("meta-llama/Llama-3.2-1B-Instruct");
  Problem p = one_gpu(m, "H100-80GB", 65536);
  p.training.seq_len = 16777216;
  take_beyond_exact();
  const Evaluation ev = evaluate(p);
  REQUIRE(ev.beyond_exact != nullptr);
  CHECK(take_beyond_exact() == nullptr);  // taken by evaluate: the api raises it from the evaluation
  CHECK_FALSE(judge_peaks(*p.arch, *p.inv, p.training, p.parallel, ev.runtime, p.cluster, p.gpu_mix).has_value());
  CHECK(take_beyond_exact() == nullptr);
  // A flag raised before a judged call stays for the caller.
  note_beyond_exact("earlier");
  CHECK_FALSE(judge_peaks(*p.arch, *p.inv, p.training, p.parallel, ev.runtime, p.cluster, p.gpu_mix).has_value());
  CHECK(std::string(take_beyond_exact()) == "earlier");
}

TEST_CASE("clusters_by_gpu_kind and slowest_step_time: one view per kind, the fewest tokens/s kept (the first on ties)", "[pipeline]") {
  ClusterSpec c = memfit_test::cluster("H100-80GB", 4);
  CHECK(clusters_by_gpu_kind(c, {}).size() == 1);
  const std::vector<GpuGroup> mix = {{*presets::find_gpu("H100-80GB"), 2}, {*presets::find_gpu("A100-40GB"), 2}};
  const std::vector<ClusterSpec> kinds = clusters_by_gpu_kind(c, mix);
  REQUIRE(kinds.size() == 2);
  CHECK(kinds[1].gpu.id == "A100-40GB");
  CHECK(kinds[1].gpus == 4);
  const double rates[] = {5.0, 3.0, 3.0, 4.0};
  const auto [st, kind] = slowest_step_time(4, [&](std::size_t i) {
    StepTime t;
    t.tokens_per_s = rates[i];
    return t;
  });
  CHECK(kind == 1);
  CHECK(st.tokens_per_s == 3.0);
}
