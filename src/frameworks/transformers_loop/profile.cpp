// `transformers_loop`, a transformers model in a plain PyTorch loop: its profile (the defaults it
// runs with, its distributed behaviours and its dated history); no capabilities entry (nothing
// memfit knows it cannot run) and no launch file. Registered in frameworks/registry.h
// (kFrameworks).
#include "frameworks/registry.h"

namespace memfit {

FrameworkProfile transformers_loop_profile() {
  FrameworkProfile p = hf_trainer_profile();
  p.id = Framework::kTransformersLoop;
  p.key = "transformers_loop";
  p.name = "transformers model in a plain PyTorch loop";
  // torch.optim.AdamW picks the foreach implementation on CUDA when neither flag is given.
  p.defaults.optimizer_impl = OptimizerImpl::kForeach;
  p.defaults.logits_freed_before_backward = false;  // the loop keeps `outputs` through backward
  p.defaults.bnb8_embedding_states_fp32 = false;    // the loop builds its optimizer: no Trainer overrides
  p.defaults.outputs_held_across_steps = true;      // ... and the step, until the next forward rebinds it
  p.sources.push_back("pytorch/pytorch: torch/optim/optimizer.py (_default_to_fused_or_foreach)");
  p.sources.push_back("huggingface/accelerate: examples/nlp_example.py (outputs = model(**batch); loss.backward(); "
                      "optimizer.step()); the oracle's records: the previous logits live at the step and the next forward");
  return p;
}

}  // namespace memfit
