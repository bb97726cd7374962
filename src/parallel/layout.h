// How a training run is split over GPUs: the degrees of each parallelism, what data-parallel
// ranks shard, the pipeline schedule, and the behaviours of the framework's distributed code
// that decide memory (bucket copies, prefetch depth, resharding). Plain data, no JSON.
//
// Rank kinds: ranks that hold the same tensors and see the same schedule have the same memory;
// with pipeline parallelism the first, middle and last stages differ (embedding, in-flight
// micro-batches, head and loss). Every other split (dp, tp, cp, ep) is symmetric.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "block/activations.h"
#include "model/architecture.h"
#include "training/training_setup.h"

namespace memfit {

/// What data-parallel ranks shard (ZeRO stages, Rajbhandari et al. 2020; FSDP strategies).
enum class Sharding { kNone, kZero1, kZero2, kZero3 };
/// gpipe: all forwards, then all backwards; 1f1b: PipeDream-flush (Narayanan et al. 2021);
/// interleaved: 1f1b over vpp model chunks per rank (Megatron schedules.py).
enum class PipelineSchedule { k1F1B, kGpipe, kInterleaved };
/// How cp ranks share a sequence. ring: every rank keeps its sequence chunk through attention and
/// the K/V travel (ring attention, Liu et al. 2023; torch context_parallel, Megatron CP).
/// ulysses: all-to-alls trade the sequence split for a head split around attention, so each rank
/// attends over the whole sequence with heads / cp heads (DeepSpeed Ulysses, Jacobs et al. 2023;
/// deepspeedai/DeepSpeed @ edaa7221 deepspeed/runtime/sequence_parallel/ulysses_sp.py,
/// UlyssesSPAttentionHF); outside attention both keep seq_len / cp tokens per rank
/// (UlyssesSPDataLoaderAdapter shards every batch tensor on the sequence).
enum class ContextParallelKind { kRing, kUlysses };

/// Behaviours fixed by a framework's distributed code (set by its profile, each cited in
/// frameworks/<key>/profile.cpp; docs/frameworks.md lists them).
struct DistributedBehaviour {
  /// torch DDP with gradient_as_bucket_view=False (its default): the reducer's flat buckets are
  /// a second copy of every gradient, allocated when DDP wraps the model.
  bool ddp_bucket_copy = true;
  /// Megatron DDP: one contiguous main_grad buffer for all parameters, allocated at model
  /// construction (live from the first forward).
  bool grad_buffer_at_init = false;
  /// ZeRO-2 / DeepSpeed: gradients are reduced through buckets of this many bytes.
  std::int64_t reduce_bucket_bytes = 0;
  /// DeepSpeed ZeRO-3 allocates its flat 16-bit gradient partition and its reduce bucket when the
  /// engine is built (v0.19.8 runtime/zero/stage3.py: grad_partitions_flat_buffer, ipg bucket
  /// buffers under contiguous_gradients): both live from the first forward (measured on an H200:
  /// tests/validation/measured_h200_trainers, TG-14).
  bool zero3_grad_partition_at_init = false;
  /// DeepSpeed's ZeRO optimizers step on fp32 copies of the 16-bit gradient partition: stage 1/2
  /// all groups' copies at once, each made from a flattened 16-bit copy of the group
  /// (stage_1_and_2.py step: flatten(averaged_gradients).to(fp32); TD-16); stage 3 one sub-group's
  /// copy at a time (stage3.py _prepare_fp32_grad_for_sub_group, sub_group_size elements; TG-14).
  bool fp32_grads_at_step = false;
  std::int64_t fp32_grad_sub_group_elements = 0;
  /// DeepSpeed ZeRO-2 with the optimizer offloaded to the CPU (stage_1_and_2.py cpu_offload,
  /// v0.12.6, v0.14.2 and v0.19.8 alike): no gradient partition on the device; each reduced
  /// gradient of the rank's partition goes straight to the pinned fp32 partition on the host
  /// (copy_grads_in_partition returns before grads_in_partition), and the engine keeps a buffer of
  /// the largest parameter in the model dtype from its construction (temp_grad_buffer_for_gpu_offload).
  bool zero_offload_grads_on_host = false;
  /// ... and the device bytes per gradient element of the checks made as each of the partition's
  /// gradients is reduced (set_norm_for_param_grad_in_gpu, update_overflow_tracker_for_param_grad):
  /// 8 for the fp64 copy the norm is taken of; 11 where the inf/nan check also makes an fp32 copy,
  /// three boolean masks and an fp32 cast of the last beside it (_has_inf_or_nan, v0.13.5 to
  /// v0.19.5). One parameter at a time, the largest binding on the rank that owns it. 0: none.
  std::int64_t zero_offload_grad_check_bytes_per_element = 0;
  /// Megatron-LM keeps the main_grad buffer it all-reduces in fp32 only under --bf16 or
  /// --accumulate-allreduce-grads-in-fp32; with --fp16 it holds and reduces the parameters' fp16
  /// (megatron/model/distributed.py _get_buffer_type @ 3d718bfc, 2021-08; before the buffer,
  /// @ 8aa4619f (2021-03) the fp16 param.grad tensors were flattened and all-reduced; at HEAD
  /// d98e8a64 arguments.py still forces fp32 for bf16 only). The data-parallel reduction of an
  /// amp_fp16 run then moves 2 bytes per gradient.
  bool fp16_grads_reduce_in_fp16 = false;
  /// ZeRO-3 / FSDP: units (transformer blocks) gathered ahead of the one computing (FSDP2:
  /// the previous group's all-gather output stays until the next unshard, one unit).
  std::int64_t prefetch_units = 1;
  /// DeepSpeed ZeRO-3 prefetches by bytes instead (stage3_prefetch_bucket_size); 0: use units.
  std::int64_t prefetch_bytes = 0;
  /// DeepSpeed ZeRO-3 (stage3_max_live_parameters, elements; 0: not DeepSpeed): once the trace is
  /// recorded (second step on), gathered parameters the trace uses again are not released while
  /// they fit in this many elements (v0.18.9 runtime/zero/partitioned_param_coordinator.py
  /// __params_to_release). From the forward's end the output layer and the top blocks that fit
  /// beside it stay gathered until their backward. Executed (tools/oracle/zero3_gathered_probe.py):
  /// a lower stage3_max_reuse_distance keeps the same blocks, so the live-parameter limit binds.
  std::int64_t zero3_max_live_elements = 0;
  /// DeepSpeed ZeRO-3 on a model built outside deepspeed.zero.Init (parallel.zero3_init false:
  /// e.g. from_pretrained before the HF TrainingArguments that register the DeepSpeed config):
  /// torch.nn.functional.linear stays unpatched, because only Init.__enter__ installs
  /// LinearFunctionForZeroStage3 (v0.14.2 runtime/zero/partition_parameters.py
  /// patch_init_and_builtins; the engine converts such a model with Init(module=...) without
  /// entering it, parameter_offload.py _convert_to_zero_parameters). Autograd then saves each
  /// linear's weight.t() view, which keeps the gathered buffer alive after ZeRO-3 releases the
  /// parameter (param.data = empty) until that linear's backward (runtime/zero/linear.py's header:
  /// the patch exists so that the gathered weight can be freed after the forward). Holds only
  /// where a gather copies (more than one rank) and the forward saves tensors (not under full
  /// activation checkpointing, whose forward runs without saving).
  bool zero3_autograd_holds_gathered = false;
  /// ZeRO-3 / FSDP: a block's gathered parameters are freed after its forward (FSDP2
  /// reshard_after_forward=True); false keeps every block gathered until its backward.
  bool reshard_after_forward = true;
  /// ... but not under pipeline parallelism (torchtitan: no per-micro-batch all-gathers).
  bool reshard_after_forward_with_pp = true;
  /// The last block is not resharded after forward: backward needs it first (torchtitan).
  bool last_unit_kept = false;
  /// Pipeline parallel over ZeRO-3 / FSDP2 (torch.distributed.pipelining stage.py,
  /// backward_maybe_with_nosync): backwards before the last micro-batch skip the reduce-scatter,
  /// so the stage's unsharded gradients accumulate in the reduce dtype through the step.
  bool pp_defers_grad_sync = false;
  /// FSDP2: the root unit (embeddings, final norm, head) stays gathered from its forward
  /// through the backward.
  bool root_unit_gathered = true;
  /// FSDP2: the loss is one of the root module's outputs (transformers models given labels), so
  /// the root's pre-backward hook, which prefetches the top block's all-gather, fires at the loss
  /// backward; otherwise it fires when the logits' gradient arrives.
  bool root_outputs_include_loss = false;
  /// Sharded training with AMP computes with 16-bit gathered parameters (FSDP
  /// MixedPrecisionPolicy param_dtype=bf16): no autocast weight copies, 16-bit activations.
  bool sharded_params_16bit = true;
  /// Unsharded gradients are cast to fp32 before the reduce-scatter (reduce_dtype=float32).
  bool reduce_in_fp32 = true;
  /// FSDP2: each all-gather's output is copied into the unit's per-parameter tensors on the
  /// compute stream (torch _fsdp_param_group.py wait_for_unshard -> _fsdp_collectives.py
  /// foreach_all_gather_copy_out, torch.split_with_sizes_copy); FSDP1, DeepSpeed and Megatron
  /// use views of the gathered flat buffer.
  bool gather_copy_out = false;
  /// torch FSDP: a block's reduce-scatter output, which the sharded gradients are views or casts of,
  /// is allocated on the reduce-scatter stream (FSDP2 _fsdp_collectives.py foreach_reduce:
  /// reduce_output under `with device_handle.stream(reduce_scatter_stream)`; FSDP1
  /// _runtime_utils.py _reduce_grad under _post_backward_stream), and the caching allocator serves
  /// a stream only from its own blocks: the gradients reserve a pool of their own, beside the
  /// compute stream's (measured on an H200: tests/validation/measured_h200_trainers, TG-01).
  bool sharded_grads_on_reduce_stream = false;
  /// Context parallel: K/V of the whole sequence are all-gathered for attention (torch
  /// context_parallel all-gather rotation) rather than passed around a ring two chunks at a time.
  bool cp_gather_kv = true;
  /// Sequence parallel keeps the all-gathered inputs of column-parallel linears for backward
  /// (DTensor tensor parallelism) rather than the local shard (Megatron).
  bool sp_saves_gathered_inputs = false;
  /// DTensor sequence parallelism shards [batch, sequence, hidden] activations on the sequence
  /// (dim 1) while NCCL gathers and scatters on dim 0, so PyTorch's functional collectives copy
  /// each all-gather's output into sequence order (torch.cat of its chunks) and each reduce-
  /// scatter's input into rank order, reading and writing the whole tensor on the compute stream
  /// (torch/distributed/_functional_collectives.py all_gather_tensor, reduce_scatter_tensor; the
  /// gather's chunk + cat since pytorch/pytorch #113324, 2023-11). Megatron keeps activations as
  /// [sequence, batch, hidden] and gathers on dim 0 in place.
  bool sp_collective_copies = false;
  /// ... except an all-gather whose dims before the sequence are all 1 (micro-batch 1), which
  /// is a view (torch/_utils.py _maybe_view_chunk_cat).
  bool sp_gather_view_at_batch_1 = false;
  /// The framework's tensor-parallel plan always shards the sequence between blocks (torchtitan
  /// apply_tp, torchtune's training plans: SequenceParallel norms): the search offers no tensor
  /// parallelism without sequence parallelism.
  bool tp_sequence_parallel_only = false;
  /// Column-parallel linears launch their backward collectives asynchronously: the input
  /// gradient's all-reduce (reduce-scatter under sequence parallelism) runs beside the weight-
  /// gradient GEMM and the re-gather of the saved input shard beside the input-gradient GEMM
  /// (Megatron-LM @ d98e8a64 core/tensor_parallel/layers.py
  /// LinearWithGradAccumulationAndAsyncCommunication.backward; Transformer Engine @ d0067d0d
  /// pytorch/module/layernorm_linear.py, linear.py backward, async_op=True; ordered by
  /// CUDA_DEVICE_MAX_CONNECTIONS=1). DTensor's collectives block the backward.
  bool tp_backward_overlap = false;
  /// The distributed optimizer's parameter all-gather after the step runs bucket by bucket
  /// beside the next step's first forward (Megatron --overlap-param-gather,
  /// core/distributed/distributed_data_parallel.py forward pre-hooks); otherwise it is waited on.
  bool param_gather_overlaps_forward = false;
  /// The data-parallel gradient reduction (all-reduce, or ZeRO-1/2's reduce-scatter) runs bucket
  /// by bucket beside the last micro-batch's backward; otherwise it starts when the backward
  /// has ended (Megatron-LM before --overlap-grad-reduce, e801b2bb, 2023-09).
  bool dp_reduce_overlaps_backward = true;
  /// Each micro-batch's weight gradients are added into the gradient buffer by a kernel of their
  /// own, on the compute stream: the new 16-bit gradient read, the buffer read and written
  /// (Megatron-LM's local DDP before gradient accumulation fusion: param_hook's
  /// `param.main_grad.add_(param.grad.data)`, megatron/model/distributed.py @ 3d718bfc; fused into
  /// the weight-gradient GEMM by 9c5a830f, 2022-02-22).
  bool grad_add_per_micro_batch = false;
  /// Without sequence parallelism, each tp rank sends 1/tp of a pipeline stage's activation (or
  /// its gradient) and the receiving stage all-gathers the pieces in its tp group (Megatron-LM
  /// 2021-02 to 2023-03, split_tensor_into_1d_equal_chunks / gather_split_1d_tensor).
  bool pp_scatter_gather = false;
  /// Under tp > 1 the vocabulary-parallel cross-entropy runs as DTensor's decomposed
  /// log-softmax and nll backward (torch loss_parallel): more fp32 temporaries than one kernel.
  bool loss_parallel_decomposed = false;
  /// Colossal-AI Gemini writes each 16-bit gradient into its parameter's chunk and
  /// reduce-scatters the chunk in place (gemini_ddp.py grad_handle, chunk.py reduce): gradients
  /// have no storage of their own.
  bool grads_in_param_chunks = false;
  /// ZeRO-3: gathering a unit frees its local shard, which the gathered copy contains (Gemini
  /// Chunk.__gather: cuda_shard = None), so a gathered unit adds (n - 1) / n of its bytes.
  bool gather_replaces_shard = false;
  /// Colossal-AI ColoTensor 1D tensor parallelism (ComputeSpec TP1D, LLMem's tp_real.py): every
  /// linear is row-split (its weight on the input dimension); the input is sliced locally, the
  /// partial output all-reduced in the forward and the input gradient all-gathered in the
  /// backward. Every tp rank holds and computes the full activations, logits included; the
  /// linears' input widths must divide by tp, the heads need not.
  bool tp_row_linears = false;
  /// Megatron pads the vocabulary to a multiple of this times tp (make-vocab-size-divisible-by).
  std::int64_t vocab_multiple = 1;
  /// FSDP2 through accelerate shards a bitsandbytes 4-bit model where it was loaded, whole, on
  /// every GPU (no move to meta for Params4bit: "bypassing the move to meta will still cause the
  /// VRAM spike"), while `original_sd = model.state_dict()`, taken before the first fully_shard,
  /// keeps every original tensor alive beside the shards (huggingface/accelerate PR #3546,
  /// v1.7.0, 2025-05, utils/fsdp_utils.py fsdp2_prepare_model; axolotl @ 904c6051e
  /// monkeypatch/accelerate/fsdp2.py, the same).
  bool fsdp2_wraps_loaded_4bit_model = false;
  /// torch FSDP1 builds each unit's flat parameter on the GPU from a copy in host memory (device_id
  /// given, the model loaded on rank 0's CPU, sync_module_states): per unit, in the auto-wrap's
  /// post-order, its parameters are copied to the device one by one, broadcast in 250 MiB buckets
  /// (a bucket of several tensors flattened into a new buffer), concatenated into the unsharded
  /// flat parameter and the rank's chunk cloned; then the flat storage and the copies are freed
  /// (torch/distributed/fsdp/_init_utils.py _init_param_handle_from_module, the same from 2.2 to
  /// 2.7; flat_param.py FlatParamHandle.shard). Nothing empties the cache after the wrap, so those
  /// segments stay reserved into training on the compute stream, where the step reuses them
  /// (memory/caching_allocator.h fsdp1_wrap_cached_bytes; Answer.AI fsdp_qlora train.py @ 4cd6923:
  /// low_memory=True, reset_peak_memory_stats before the first step).
  bool fsdp1_wrap_from_host = false;
  /// Megatron-Core MoE parallel folding: expert layers form their own etp x ep x edp grid over a
  /// stage's tp x cp x dp ranks (parallel_state.py expert rank generator), so ep need not divide
  /// dp x cp and the experts' tensor parallelism (etp) may differ from tp. Without it experts take
  /// tp and ep divides dp x cp.
  bool moe_parallel_folding = false;
  /// The group that shards over dp x cp is a process group of its own, not the world's default
  /// one, even where it spans every rank, and the default group stays in use: NCCL builds a
  /// communicator for each (NVIDIA/nccl issue #986: "more communicators = more memory used").
  /// DeepSpeed reduces over groups._clone_world_group() without an mpu and over Ulysses'
  /// sequence-data-parallel group with one (deepspeedai/DeepSpeed v0.18.9 utils/groups.py
  /// _clone_world_group, _get_sequence_data_parallel_group; runtime/engine.py dp_process_group =
  /// seq_data_parallel_group; runtime/sequence_parallel/parallel_state_sp.py dist.new_group), while
  /// parameters built under zero.Init gather over the default group (runtime/zero/
  /// partition_parameters.py Init: ds_process_group = dist.get_world_group()) and the HF trainers
  /// gather their metrics over it every step (huggingface/trl @ 26ecea7ba trl/trainer/
  /// sft_trainer.py compute_loss: accelerator.gather_for_metrics). Not so for a device mesh: a
  /// 1-D mesh, flattened ones included, over every rank takes the default group (torch 2.7.1
  /// distributed/device_mesh.py _init_process_groups), so accelerate's dp_shard_cp does not count.
  bool shard_group_apart_from_world = false;
  friend bool operator==(const DistributedBehaviour&, const DistributedBehaviour&) = default;
};

struct ParallelLayout {
  std::int64_t dp = 1, tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1;
  ContextParallelKind cp_kind = ContextParallelKind::kRing;
  /// Expert tensor parallelism (Megatron --expert-tensor-parallel-size); 0: tp, Megatron's default.
  std::int64_t etp = 0;
  bool sequence_parallel = false;
  Sharding sharding = Sharding::kNone;
  /// HSDP: parameters and states are sharded over this many ranks and replicated across the
  /// groups; 0 shards over the whole data-parallel group (dp x cp).
  std::int64_t shard_degree = 0;
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
  /// Explicit layers per pipeline stage (pp entries, summing to the layer count); empty: even
  /// split, the remainder going to the earliest stages.
  std::vector<std::int64_t> stage_layers;
  std::int64_t gpus_per_node = 8;
  DistributedBehaviour behaviour;

  std::int64_t gpus() const { return dp * tp * pp * cp; }
  /// Ranks over which dense parameters' sharded states are split.
  std::int64_t dense_shard() const { return shard_degree > 0 ? shard_degree : dp * cp; }
  std::int64_t expert_tp() const { return etp > 0 ? etp : tp; }
  /// Expert parameters are replicated over the expert data-parallel ranks, tp x dp x cp / (ep x
  /// etp) of a stage (dp x cp / ep when etp = tp; HSDP: shard_degree in place of dp x cp).
  std::int64_t expert_shard() const;
  bool distributed() const { return gpus() > 1; }
};

/// A layout rule that the request breaks: the field that breaks it and the rule in words.
struct LayoutViolation {
  std::string field;   // "tp", "pp", "ep", "stage_layers", ...
  std::string rule;
  bool unsupported = false;  // a valid layout memfit does not model (rather than a broken rule)
  std::string code;          // stable id of the rule ("tp_divides_heads"), counted by the search
};

/// The first rule `l` breaks for this model and setup, if any (heads divisible by tp, layers
/// by pp x vpp, experts by ep, ep within dp x cp, ...).
std::optional<LayoutViolation> check_layout(const ParallelLayout& l, const ModelArchitecture& a,
                                            const TrainingSetup& t);
/// The code of the first rule `l` breaks (check_layout's `code`, a string literal), or null; builds
/// no message (the search counts rejections by code).
const char* broken_layout_rule(const ParallelLayout& l, const ModelArchitecture& a, const TrainingSetup& t);

/// A half-open range of layers [first, first + count).
struct LayerRange {
  std::int64_t first = 0, count = 0;
};

/// One kind of rank: what it holds and how many micro-batches it keeps in flight.
struct RankKind {
  std::string name;             // "all ranks", "first stage", "middle stage", "last stage"
  std::int64_t stage = 0;       // pipeline stage (representative of the kind)
  std::int64_t ranks = 1;       // GPUs of this kind
  std::vector<LayerRange> layers;  // held layers, in execution order of its model chunks
  bool embedding = true;        // token (and position) embeddings
  bool head = true;             // final norm, output layer, loss
  /// Activations alive at the forward peak, in units of one micro-batch through one model
  /// chunk (vpp chunks make up the stage): 1f1b stage r holds min(m, p - r) micro-batches.
  std::int64_t chunks_in_flight = 1;
  std::int64_t chunks = 1;      // model chunks per rank (vpp)
};

/// How the layout splits a rank's activations: heads and MLP width by tp (whole under row-split
/// linears, Colossal-AI 1D TP), full-width tensors by sequence parallelism. The memory replay and
/// the step time both read it.
inline ActivationSplit activation_split(const ParallelLayout& l) {
  return {l.behaviour.tp_row_linears ? 1 : l.tp, l.sequence_parallel,
          l.sequence_parallel && l.behaviour.sp_saves_gathered_inputs, l.behaviour.tp_row_linears ? 1 : l.expert_tp()};
}

/// Layers per pipeline chunk (pp x vpp chunks, in order).
std::vector<std::int64_t> chunk_layers(const ParallelLayout& l, std::int64_t num_layers);
/// The layers of pipeline chunk `chunk` (chunk c of stage s is chunk c x pp + s): explicit
/// stage_layers, or an even split with the remainder to the earliest chunks. The memory model's
/// rank kinds and the step time's stages both take their layers from it.
inline LayerRange chunk_range(const ParallelLayout& l, std::int64_t num_layers, std::int64_t chunk) {
  if (l.stage_layers.empty()) {
    const std::int64_t n_chunks = l.pp * l.vpp, base = num_layers / n_chunks, extra = num_layers % n_chunks;
    return {chunk * base + std::min(chunk, extra), base + (chunk < extra ? 1 : 0)};
  }
  std::int64_t first = 0;
  for (std::int64_t j = 0; j < chunk; ++j) first += l.stage_layers[static_cast<std::size_t>(j)];
  return {first, l.stage_layers[static_cast<std::size_t>(chunk)]};
}
/// Micro-batch chunks in flight at stage `stage` (Megatron schedules.py warm-up counts).
std::int64_t chunks_in_flight(const ParallelLayout& l, std::int64_t stage, std::int64_t micro_batches);
/// The rank kinds of a layout: one for pp = 1; first, middle (stage 1 stands for all middle
/// stages: it holds at least as many layers and micro-batches as any later one) and last.
std::vector<RankKind> rank_kinds(const ParallelLayout& l, const ModelArchitecture& a, std::int64_t micro_batches);

}  // namespace memfit
