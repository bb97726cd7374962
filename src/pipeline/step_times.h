// The memory timeline in time: each event of a rank kind's steady-state step placed where the
// step-time model runs its part (perf/perf_model.h micro_batch_times), so that a chart can draw
// live bytes against seconds instead of event numbers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "memory/timeline.h"
#include "parallel/layout.h"
#include "perf/perf_model.h"

namespace memfit {

/// A part of the step in time: a run of identical layers (`layers` from `first_layer`, in the
/// pass's order), the output layer, the loss, the rest of the step, the optimizer step.
struct StepSpan {
  std::string phase;  // forward, loss, backward, rest, optimizer
  std::string label;
  std::int64_t first_layer = -1, layers = 0;
  double start_s = 0, end_s = 0;
};

/// Sets start_s and end_s of every event of `timeline` (a rank kind's, `rank`): its micro-batch
/// runs from the step's start, the rank's layers forward in order, the output layer and the loss
/// (a head rank), the layers backward in reverse, each part as long as `mb` says; the optimizer
/// step ends the step (`step`), after the step's other micro-batches, the pipeline bubble and
/// the exposed communication ("rest"). Events at the step's start, the forward's end or the
/// backward's end take no time of their own. Returns the step's spans that take time, in order.
std::vector<StepSpan> place_in_step(std::vector<TimelineEvent>& timeline, const RankKind& rank,
                                    const MicroBatchTimes& mb, const StepTime& step);

}  // namespace memfit
