// `peft_bench`, PEFT's method-comparison benchmark (MetaMathQA): its profile (the defaults it runs
// with, its distributed behaviours and its dated history); no capabilities entry (nothing memfit
// knows it cannot run) and no launch file. Registered in frameworks/registry.h (kFrameworks).
#include "frameworks/registry.h"

namespace memfit {

FrameworkProfile peft_bench_profile() {
  FrameworkProfile p = hf_trainer_profile();
  p.id = Framework::kPeftBench;
  p.key = "peft_bench";
  p.name = "PEFT method-comparison benchmark (MetaMathQA)";
  TrainingSetup& t = p.defaults;
  t.precision = Precision::kBf16;                // default_training_params.json: bfloat16, use_amp false
  t.optimizer_impl = OptimizerImpl::kForeach;    // torch AdamW with default flags
  t.checkpointing = Checkpointing::kNone;
  t.packed = false;                              // length-bucketed dynamic padding
  t.logits_freed_before_backward = false;        // run.py keeps `outputs` through loss.backward()
  t.logged_counter = MemoryCounter::kMaxReserved;  // accelerator_memory_max = max_memory_reserved - init
  p.sources = {"huggingface/peft @ 5d602fdb: method_comparison/MetaMathQA/default_training_params.json",
               "huggingface/peft @ 5d602fdb: method_comparison/MetaMathQA/run.py, utils.py (max_memory_reserved)",
               "huggingface/transformers: src/transformers/loss/loss_utils.py (ForCausalLMLoss upcasts logits)"};
  return p;
}

}  // namespace memfit
