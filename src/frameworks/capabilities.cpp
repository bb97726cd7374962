// The framework capability matrix (see capabilities.h). Revisions: those of docs/frameworks.md and
// the launch writers (DeepSpeed v0.16.4, accelerate d6d3e03, Megatron-LM core_v0.14.0, torchtitan
// c854924, torchtune v0.6.1, litgpt 26857050, fsdp_qlora 05ed9f2).
// The shared machinery: the lookups over the registry and the rule the search applies. Each
// framework's capabilities are in its folder (frameworks/<key>/profile.cpp).
#include "frameworks/capabilities.h"

#include <cstring>
#include <utility>

#include "frameworks/registry.h"

namespace memfit {

std::vector<DatedCapability> dated_capabilities(Framework f) {
  for (const FrameworkEntry& e : kFrameworks) {
    if (e.id == f && e.dated_capabilities) return e.dated_capabilities();
  }
  return {};
}

FrameworkCapabilities framework_capabilities(Framework f, std::int64_t yyyymm) {
  // Measurement harnesses and plain PyTorch (no capabilities in the registry): no limit memfit
  // knows of, no launch format.
  FrameworkCapabilities c;
  for (const FrameworkEntry& e : kFrameworks) {
    if (e.id == f && e.capabilities) c = e.capabilities();
  }
  for (const DatedCapability& d : dated_capabilities(f)) {
    if (yyyymm > 0 && yyyymm < d.since_yyyymm) d.revoke(c);
  }
  return c;
}

bool runs_everything(const FrameworkCapabilities& c) {
  bool all = c.optimizer_offload && c.params_offload && c.tp && c.sequence_parallel && c.tp_with_zero3 && c.tp_with_adapters &&
             c.pp && c.vpp && c.cp && c.ulysses_cp && c.ep && c.replicate_with_model_parallel && c.selective_checkpointing &&
             c.qlora_with_zero3 && c.multi_node && c.multi_gpu && !c.optimizer_offload_single_gpu_only && !c.moe_tp_needs_sequence_parallel;
  for (int s = 0; s < 4; ++s) all = all && c.sharding[s] && c.optimizer_offload_with[s];
  for (bool m : c.methods) all = all && m;
  for (int o = 0; o < kOptimizerCount; ++o) all = all && c.optimizers[o] && c.optimizer_offload_runs[o] && c.params_offload_runs[o];
  return all;
}

const char* capability_rule(const FrameworkCapabilities& c, const ParallelLayout& l, const TrainingSetup& t,
                            std::int64_t gpus_per_node, bool moe) {
  if (!c.methods[static_cast<int>(t.method)]) return "framework_method";
  if (!c.optimizers[static_cast<int>(t.optimizer)]) return "framework_optimizer";
  if (!c.multi_gpu && l.gpus() > 1) return "framework_single_gpu";
  if (!c.multi_node && l.gpus() > gpus_per_node) return "framework_single_node";
  if (l.tp > 1) {
    if (!c.tp) return "framework_no_tp";
    if (l.sharding == Sharding::kZero3 && !c.tp_with_zero3) return "framework_tp_not_with_zero3";
    if (base_frozen(t.method) && !c.tp_with_adapters) return "framework_tp_not_with_adapters";
  }
  if (l.sequence_parallel && !c.sequence_parallel) return "framework_no_sequence_parallel";
  if (moe && l.tp > 1 && !l.sequence_parallel && c.moe_tp_needs_sequence_parallel) return "framework_moe_tp_needs_sequence_parallel";
  if (l.pp > 1 && !c.pp) return "framework_no_pp";
  if (l.vpp > 1 && !c.vpp) return "framework_no_vpp";
  if (l.cp > 1 && !c.cp) return "framework_no_cp";
  if (l.cp > 1 && l.cp_kind == ContextParallelKind::kUlysses && !c.ulysses_cp) return "framework_no_ulysses";
  if (l.ep > 1 && !c.ep) return "framework_no_ep";
  const bool data_parallel = l.dp * l.cp > 1;
  if (data_parallel) {
    static constexpr const char* kNoSharding[] = {"framework_no_ddp", "framework_no_zero1", "framework_no_zero2",
                                                  "framework_no_zero3"};
    if (!c.sharding[static_cast<int>(l.sharding)]) return kNoSharding[static_cast<int>(l.sharding)];
    if (l.sharding == Sharding::kNone && !c.replicate_with_model_parallel && (l.tp > 1 || l.pp > 1 || l.cp > 1)) {
      return "framework_ddp_1d_only";
    }
  }
  if (t.offload == Offload::kOptimizer || t.offload == Offload::kParamsOptimizer) {
    const bool params = t.offload == Offload::kParamsOptimizer;
    if (params && !c.params_offload) return "framework_no_param_offload";
    if (!params) {
      if (!c.optimizer_offload) return "framework_no_optimizer_offload";
      if (c.optimizer_offload_single_gpu_only && l.gpus() > 1) return "framework_optimizer_offload_single_gpu";
      if (data_parallel && !c.optimizer_offload_with[static_cast<int>(l.sharding)]) return "framework_optimizer_offload_sharding";
    }
    const bool (&runs)[kOptimizerCount] = params ? c.params_offload_runs : c.optimizer_offload_runs;
    if (!runs[static_cast<int>(t.optimizer)]) return "framework_offload_optimizer_not_on_cpu";
  }
  if (t.checkpointing == Checkpointing::kSelective && !c.selective_checkpointing) return "framework_no_selective_checkpointing";
  if (t.method == Method::kQlora && l.sharding == Sharding::kZero3 && data_parallel && !c.qlora_with_zero3) {
    return "framework_qlora_not_with_zero3";
  }
  return nullptr;
}

std::string capability_message(const char* code) {
  static constexpr std::pair<const char*, const char*> kMessages[] = {
      {"framework_method", "the framework does not train this method"},
      {"framework_optimizer", "the framework's launch files do not set this optimizer"},
      {"framework_single_node", "the framework runs on one node only"},
      {"framework_single_gpu", "the framework's launch script trains on one GPU"},
      {"framework_no_tp", "the framework has no tensor parallelism"},
      {"framework_tp_not_with_zero3", "the framework's tensor parallelism does not run with ZeRO-3"},
      {"framework_tp_not_with_adapters", "the framework's adapter (LoRA) recipes have no tensor parallelism"},
      {"framework_moe_tp_needs_sequence_parallel", "the framework trains mixture-of-experts models with tp > 1 only under sequence parallelism"},
      {"framework_no_sequence_parallel", "the framework has no sequence parallelism"},
      {"framework_no_pp", "the framework has no pipeline parallelism"},
      {"framework_no_vpp", "the framework has no interleaved (virtual) pipeline stages"},
      {"framework_no_cp", "the framework has no context parallelism"},
      {"framework_no_ulysses", "the framework's context parallelism is a ring, not Ulysses all-to-alls"},
      {"framework_no_ep", "the framework has no expert parallelism"},
      {"framework_no_ddp", "the framework does not replicate over data-parallel ranks (DDP); it shards"},
      {"framework_no_zero1", "the framework has no ZeRO-1 (optimizer-state sharding alone)"},
      {"framework_no_zero2", "the framework has no ZeRO-2 (gradient and optimizer-state sharding)"},
      {"framework_no_zero3", "the framework has no ZeRO-3 / FSDP parameter sharding"},
      {"framework_ddp_1d_only", "the framework replicates (DDP) only without tensor, pipeline or context parallelism"},
      {"framework_no_param_offload", "the framework does not offload parameters to the CPU"},
      {"framework_no_optimizer_offload", "the framework does not offload the optimizer alone to the CPU"},
      {"framework_optimizer_offload_single_gpu", "the framework offloads the optimizer on one GPU only"},
      {"framework_optimizer_offload_sharding", "the framework offloads the optimizer only with another sharding"},
      {"framework_offload_optimizer_not_on_cpu",
       "the framework's CPU offload does not step this optimizer on the CPU (DeepSpeed's ZeRO-Offload runs its own CPU Adam / "
       "Lion only; bitsandbytes' 8-bit and paged optimizers have no CPU step): offload with AdamW, or keep the 8-bit "
       "optimizer on the GPU"},
      {"framework_no_selective_checkpointing", "the framework checkpoints whole blocks only (no selective recompute)"},
      {"framework_qlora_not_with_zero3", "this framework version cannot shard a 4-bit base with ZeRO-3 / FSDP"}};
  for (const auto& [c, m] : kMessages) {
    if (std::strcmp(c, code) == 0) return m;
  }
  return code;
}

}  // namespace memfit
