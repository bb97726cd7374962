// The memory timeline in time (src/pipeline/step_times.cpp): every event placed where the
// step-time model runs its part, the micro-batch's parts adding up to the step time's.
#include <catch2/catch.hpp>

#include "../test_support.h"
#include "model/tensor_inventory.h"
#include "pipeline/evaluate.h"

using namespace memfit;

namespace {

using memfit_test::Model;

Problem problem(const Model& m, const char* gpu, std::int64_t gpus, std::int64_t micro_batch, std::int64_t grad_accum) {
  Problem p;
  p.arch = &m.arch;
  p.inv = &m.inv;
  p.training = memfit_test::bf16(micro_batch, 4096, grad_accum);
  p.cluster = memfit_test::cluster(gpu, gpus);
  p.search_max_micro_batch = false;
  return p;
}

// Events in the step's order never go back in time, and each lies within the step.
void check_in_order(const std::vector<TimelineEvent>& timeline, double step_s) {
  double at = 0;
  for (const TimelineEvent& e : timeline) {
    INFO(e.phase << ": " << e.label);
    CHECK(e.start_s >= at);
    CHECK(e.end_s >= e.start_s);
    CHECK(e.end_s <= step_s * (1 + 1e-12));
    at = e.start_s;
  }
}

const TimelineEvent& event(const std::vector<TimelineEvent>& timeline, const char* phase, const std::string& label) {
  for (const TimelineEvent& e : timeline) {
    if (e.phase == phase && e.label == label) return e;
  }
  FAIL("no event " << phase << ": " << label);
  return timeline.front();
}

}  // namespace

TEST_CASE("step times: one GPU's micro-batch adds up to the step time's, the optimizer ends the step", "[pipeline]") {
  const Model m("meta-llama/Llama-3.1-8B");
  const Evaluation ev = evaluate(problem(m, "H100-80GB", 1, 1, 1));
  const std::vector<TimelineEvent>& tl = ev.peak().timeline;
  check_in_order(tl, ev.step.step_s);
  // The micro-batch's spans cover it back to back from 0; their sum is the model's micro-batch.
  double at = 0, micro_batch_s = 0;
  for (const StepSpan& s : ev.step_spans) {
    INFO(s.phase << ": " << s.label);
    CHECK(s.start_s == Approx(at).margin(1e-15));
    CHECK(s.end_s > s.start_s);
    at = s.end_s;
    if (s.phase != "rest" && s.phase != "optimizer") micro_batch_s = s.end_s;
  }
  CHECK(micro_batch_s == Approx(ev.step.per_micro_batch_s).epsilon(1e-9));
  CHECK(at == Approx(ev.step.step_s).epsilon(1e-9));
  // One run of 32 identical layers each way.
  REQUIRE(ev.step_spans.front().phase == "forward");
  CHECK(ev.step_spans.front().layers == 32);
  CHECK(ev.step_spans.front().first_layer == 0);
  const TimelineEvent& optimizer = tl.back();
  REQUIRE(optimizer.phase == "optimizer");
  CHECK(optimizer.end_s == Approx(ev.step.step_s).epsilon(1e-12));
  CHECK(optimizer.end_s - optimizer.start_s == Approx(ev.step.optimizer_s).epsilon(1e-12));
  // The forward event of the group is its last layer: 31 layers' forward before it, one inside.
  const TimelineEvent& forward = event(tl, "forward", "layers 0-31");
  const double layer_fwd_s = forward.end_s - forward.start_s;
  CHECK(layer_fwd_s > 0);
  CHECK(forward.start_s == Approx(31 * layer_fwd_s).epsilon(1e-9));
  // Backward: layer 31 first, layer 0 last; a layer's backward (with its weight gradients)
  // takes longer than its forward.
  const TimelineEvent& top = event(tl, "backward", "layer 31");
  const TimelineEvent& bottom = event(tl, "backward", "layer 0");
  const double layer_bwd_s = top.end_s - top.start_s;
  CHECK(layer_bwd_s > 1.5 * layer_fwd_s);
  CHECK(bottom.start_s - top.start_s == Approx(31 * layer_bwd_s).epsilon(1e-9));
  CHECK(event(tl, "loss", "logits and cross-entropy").start_s >= forward.end_s);
}

TEST_CASE("step times: with accumulation the other micro-batches lie between the first and the optimizer", "[pipeline]") {
  const Model m("meta-llama/Llama-3.2-1B-Instruct");
  const Evaluation ev = evaluate(problem(m, "H100-80GB", 1, 1, 4));
  check_in_order(ev.peak().timeline, ev.step.step_s);
  REQUIRE(ev.step_spans.size() >= 3);
  const StepSpan& rest = ev.step_spans[ev.step_spans.size() - 2];
  CHECK(rest.phase == "rest");
  CHECK(rest.start_s == Approx(ev.step.per_micro_batch_s).epsilon(1e-9));
  CHECK(rest.end_s - rest.start_s >= 3 * ev.step.per_micro_batch_s * (1 - 1e-9));
}

TEST_CASE("step times: a pipeline stage times its own layers, the last one its loss", "[pipeline]") {
  const Model m("meta-llama/Llama-3.1-8B");
  Problem p = problem(m, "H100-80GB", 2, 1, 4);
  p.parallel.pp = 2;
  const Evaluation ev = evaluate(p);
  REQUIRE(ev.distributed.ranks.size() == 2);
  for (const RankEstimate& r : ev.distributed.ranks) {
    INFO(r.context.kind.name);
    check_in_order(r.estimate.timeline, ev.step.step_s);
    for (const TimelineEvent& e : r.estimate.timeline) {
      if (e.part == StepPart::kLayerForward || e.part == StepPart::kLayerBackward) CHECK(e.end_s > e.start_s);
    }
  }
  const std::vector<TimelineEvent>& last = ev.distributed.ranks.back().estimate.timeline;
  CHECK(event(last, "forward", "layers 16-31").start_s == Approx(15 * (event(last, "forward", "layers 16-31").end_s -
                                                                         event(last, "forward", "layers 16-31").start_s)).epsilon(1e-9));
}

TEST_CASE("step times: an encoder-decoder's stacks, each numbered from 0, run encoder first", "[pipeline]") {
  const Model m("google-t5/t5-small");
  const Evaluation ev = evaluate(problem(m, "H100-80GB", 1, 8, 1));
  const std::vector<TimelineEvent>& tl = ev.peak().timeline;
  check_in_order(tl, ev.step.step_s);
  // Every layer's pass takes time, the decoder's after the encoder's.
  std::vector<double> forward_starts;
  for (const TimelineEvent& e : tl) {
    if (e.part == StepPart::kLayerForward || e.part == StepPart::kLayerBackward) CHECK(e.end_s > e.start_s);
    if (e.part == StepPart::kLayerForward) forward_starts.push_back(e.start_s);
  }
  REQUIRE(forward_starts.size() >= 2);
  CHECK(forward_starts.back() > forward_starts.front());
  double at = 0;
  for (const StepSpan& s : ev.step_spans) {
    CHECK(s.start_s == Approx(at).margin(1e-15));
    at = s.end_s;
  }
  CHECK(at == Approx(ev.step.step_s).epsilon(1e-9));
}
