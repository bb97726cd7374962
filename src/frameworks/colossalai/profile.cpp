// `colossalai`, Colossal-AI (Gemini): its profile (the defaults it runs with, its distributed
// behaviours and its dated history); no capabilities entry (nothing memfit knows it cannot run) and
// no launch file. Registered in frameworks/registry.h (kFrameworks).
#include "frameworks/registry.h"

namespace memfit {

FrameworkProfile colossalai_profile() {
  FrameworkProfile p{.id = Framework::kColossalai, .key = "colossalai", .name = "Colossal-AI (Gemini)"};
  TrainingSetup& t = p.defaults;
  t.precision = Precision::kAmpFp16;             // precision="fp16", master_weights=True
  t.optimizer = Optimizer::kAdamW;
  t.optimizer_impl = OptimizerImpl::kFused;      // HybridAdam
  // model.half() under the Gemini plugin: fp16 parameter chunks, the fp32 master copy in
  // chunks of its own that only the optimizer touches, fp16 gradients reduced in place.
  t.amp_weights = AmpWeights::kMasterInOptimizer;
  t.main_grad_bytes = 2;
  t.logged_counter = MemoryCounter::kMaxAllocated;  // max_memory_allocated / 1024**2
  // placement_policy "cuda": a chunk gathered for the forward is never evicted
  // (CUDAPlacementPolicy.evict_tensors returns 0; GeminiZeROHook.post_op only marks HOLD); it is
  // scattered once its gradients are reduce-scattered in the backward (Chunk.reduce).
  p.dist.reshard_after_forward = false;
  p.dist.grads_in_param_chunks = true;
  p.dist.gather_replaces_shard = true;             // Chunk.__gather frees cuda_shard
  p.dist.reduce_in_fp32 = false;
  p.dist.ddp_bucket_copy = false;
  // ColoTensor 1D TP as LLMem's tp_real.py applies it (init_colo_module, ComputeSpec TP1D):
  // nn.Linear row mode (weight split on its input dimension, lm_head included), nn.Embedding col
  // mode; every tp rank holds whole activations and logits.
  p.dist.tp_row_linears = true;
  p.sources = {"hpcaitech/ColossalAI @ 4f9953be: colossalai/booster/plugin/gemini_plugin.py",
               "hpcaitech/ColossalAI @ 4f9953be: examples/language/llama/benchmark.py (memory report)",
               "taehokim20/LLMem @ 3d289b46: dp_real.py, tp_real.py (GeminiPlugin placement_policy='cuda', model.half())",
               "taehokim20/LLMem @ 3d289b46: colossalai/zero/gemini/{gemini_ddp.py, gemini_hook.py, placement_policy.py, chunk/chunk.py}",
               "taehokim20/LLMem @ 3d289b46: colossalai/nn/_ops/linear.py (colo_linear_1drow), nn/_ops/embedding.py, "
               "nn/parallel/layers/{linear.py, embedding.py} (default modes row / col), zero/gemini/colo_init_context.py"};
  return p;
}

}  // namespace memfit
