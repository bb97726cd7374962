// `other`, plain PyTorch: its profile (PyTorch's defaults; no distributed behaviours or dated
// history of its own). Registered in frameworks/registry.h (kFrameworks).
#include "frameworks/registry.h"

namespace memfit {

FrameworkProfile other_profile() {
  FrameworkProfile p{.id = Framework::kOther, .key = "other", .name = "other (PyTorch defaults)"};
  p.defaults.optimizer_impl = OptimizerImpl::kForeach;
  p.sources = {"pytorch/pytorch: torch/optim/optimizer.py (_default_to_fused_or_foreach)"};
  return p;
}

}  // namespace memfit
