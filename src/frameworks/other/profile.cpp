// other: PyTorch defaults: its profile (the defaults it runs with, its distributed behaviours and
// its dated history). Registered in frameworks/registry.h (kFrameworks).
#include "frameworks/registry.h"

namespace memfit {

FrameworkProfile other_profile() {
  FrameworkProfile p{Framework::kOther, "other", "other (PyTorch defaults)", {}, {}, {}, {}};
  p.defaults.optimizer_impl = OptimizerImpl::kForeach;
  p.sources = {"pytorch/pytorch: torch/optim/optimizer.py (_default_to_fused_or_foreach)"};
  return p;
}

}  // namespace memfit
