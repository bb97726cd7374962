#include "pipeline/step_times.h"

#include <algorithm>
#include <utility>

namespace memfit {

namespace {

struct Span {
  double start_s = 0, end_s = 0;
};

// One micro-batch on a rank kind, part by part from the step's start, and its spans. Layers run
// as the replay walks them (memory/timeline.cpp): each of the rank's ranges, each layer group
// within it (an encoder-decoder numbers each stack's layers from 0, so a layer index alone does
// not name a layer; events are matched in order).
class MicroBatchSchedule {
 public:
  MicroBatchSchedule(const RankKind& rank, const MicroBatchTimes& mb) {
    start_ = take(rank.embedding ? mb.embedding_forward_s : 0, "forward", "embedding");
    for (const LayerRange& r : rank.layers) {
      for (const LayerPassTimes& g : mb.layers) {
        const std::int64_t lo = std::max(g.first_layer, r.first), hi = std::min(g.first_layer + g.count, r.first + r.count);
        if (hi > lo) take_layers(forward_, lo, hi, g.forward_s, "forward");
      }
    }
    head_ = take(rank.head ? mb.head_forward_s : 0, "forward", "output layer");
    forward_end_ = Span{at_, at_};
    loss_ = take(rank.head ? mb.loss_forward_s : 0, "loss", "cross-entropy");
    loss_backward_ = take(rank.head ? mb.loss_backward_s : 0, "backward", "loss backward");
    head_backward_ = take(rank.head ? mb.head_backward_s : 0, "backward", "output layer backward");
    for (auto r = rank.layers.rbegin(); r != rank.layers.rend(); ++r) {
      for (auto g = mb.layers.rbegin(); g != mb.layers.rend(); ++g) {
        const std::int64_t lo = std::max(g->first_layer, r->first), hi = std::min(g->first_layer + g->count, r->first + r->count);
        if (hi > lo) take_layers(backward_, lo, hi, g->backward_s, "backward");
      }
    }
    backward_end_ = take(rank.embedding ? mb.embedding_backward_s : 0, "backward", "embedding backward");
  }

  double end_s() const { return at_; }
  std::vector<StepSpan>& spans() { return spans_; }

  // Where an event's bytes are live; events come in the replay's order.
  Span locate(const TimelineEvent& e) {
    switch (e.part) {
      case StepPart::kStart: return start_;
      case StepPart::kLayerForward: return forward_.find(e.layer, forward_end_);
      case StepPart::kHeadForward: return head_;
      case StepPart::kForwardEnd: return forward_end_;
      case StepPart::kLoss: return loss_;
      case StepPart::kLossBackward: return loss_backward_;
      case StepPart::kHeadBackward: return head_backward_;
      case StepPart::kLayerBackward: return backward_.find(e.layer, backward_end_);
      case StepPart::kBackwardEnd:
      case StepPart::kOptimizer: break;
    }
    return backward_end_;
  }

 private:
  // One pass over the layers in its order, and the next layer an event may name.
  struct Pass {
    std::vector<std::pair<std::int64_t, Span>> layers;
    std::size_t next = 0;
    // The first layer `index` from the last one found on (an event of the same layer may follow).
    Span find(std::int64_t index, Span otherwise) {
      for (std::size_t j = next; j < layers.size(); ++j) {
        if (layers[j].first == index) {
          next = j;
          return layers[j].second;
        }
      }
      return otherwise;
    }
  };

  // The next `length` seconds, listed as a span of their own when they take time.
  Span take(double length, const char* phase, const char* label) {
    const Span s{at_, at_ + length};
    at_ = s.end_s;
    if (length > 0) spans_.push_back({phase, label, -1, 0, s.start_s, s.end_s});
    return s;
  }
  // Layers lo .. hi - 1 of one group, `layer_s` each, in the pass's order (backward: top first).
  void take_layers(Pass& pass, std::int64_t lo, std::int64_t hi, double layer_s, const char* phase) {
    const bool forward = phase[0] == 'f';
    const double start_s = at_;
    for (std::int64_t k = 0; k < hi - lo; ++k) {
      pass.layers.push_back({forward ? lo + k : hi - 1 - k, Span{at_, at_ + layer_s}});
      at_ += layer_s;
    }
    if (at_ > start_s) {
      spans_.push_back({phase, hi - lo > 1 ? "layers " + std::to_string(lo) + "-" + std::to_string(hi - 1) : "layer " + std::to_string(lo),
                        lo, hi - lo, start_s, at_});
    }
  }

  double at_ = 0;
  std::vector<StepSpan> spans_;
  Span start_, head_, forward_end_, loss_, loss_backward_, head_backward_, backward_end_;
  Pass forward_, backward_;
};

}  // namespace

std::vector<StepSpan> place_in_step(std::vector<TimelineEvent>& timeline, const RankKind& rank,
                                    const MicroBatchTimes& mb, const StepTime& step) {
  MicroBatchSchedule schedule(rank, mb);
  // The optimizer step ends the step (never before this micro-batch's end: a launch-bound
  // pipeline's stages are stretched alike).
  const double optimizer_start_s = std::max(step.step_s - step.optimizer_s, schedule.end_s());
  const bool optimizer = std::any_of(timeline.begin(), timeline.end(), [](const TimelineEvent& e) { return e.part == StepPart::kOptimizer; });
  const Span optimizer_span{optimizer_start_s, optimizer ? optimizer_start_s + step.optimizer_s : optimizer_start_s};
  for (TimelineEvent& e : timeline) {
    const Span s = e.part == StepPart::kOptimizer ? optimizer_span : schedule.locate(e);
    e.start_s = s.start_s;
    e.end_s = s.end_s;
  }
  std::vector<StepSpan> spans = std::move(schedule.spans());
  // With the optimizer inside the backward, the rest runs to the step's end.
  const double rest_end_s = optimizer ? optimizer_start_s : std::max(step.step_s, schedule.end_s());
  if (rest_end_s > schedule.end_s()) {
    spans.push_back({"rest", "other micro-batches, pipeline bubble, exposed communication and offload", -1, 0, schedule.end_s(), rest_end_s});
  }
  if (optimizer_span.end_s > optimizer_span.start_s) {
    spans.push_back({"optimizer", "optimizer step", -1, 0, optimizer_span.start_s, optimizer_span.end_s});
  }
  return spans;
}

}  // namespace memfit
