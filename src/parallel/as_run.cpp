// The setup as the layout runs it (see as_run.h).
#include "parallel/as_run.h"

namespace memfit {

TrainingSetup resolve_distributed_setup(const ParallelLayout& l, const TrainingSetup& t) {
  TrainingSetup out = t;
  if (gathers_16bit_params(l, t)) out.amp_weights = AmpWeights::kGathered16bit;
  out.main_grad_bytes = main_grad_bytes_as_run(t, l.behaviour);
  return out;
}

}  // namespace memfit
