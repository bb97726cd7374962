// Timeline replay of one training step (see timeline.h).
#include "memory/timeline.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <optional>

#include "common/units.h"
#include "block/activations.h"
#include "block/loss_kernels.h"
#include "memory/caching_allocator.h"

namespace memfit {

namespace {

struct GroupActs {
  std::int64_t first_layer = 0, layers = 0;
  LayerActivations acts;
  std::int64_t saved_bytes = 0;       // one layer, this micro-batch
  std::int64_t kept_bytes = 0;        // what forward leaves alive per layer (saved or checkpoint; mean)
  bool recomputed = false;            // some of its layers are recomputed in backward
  bool trains = false;                // its base weights train (its last layer's)
};

// Per-token activations of a layer group, by (inventory group, whether its weights train): the
// same for every cut of the group in one layout (a stage's model chunks, every rank kind).
struct ActsMemo {
  struct Entry {
    std::size_t inventory_group;
    bool trains;
    LayerActivations acts;
  };
  std::vector<Entry> entries;
  LayerActivationsMemo* shared = nullptr;  // layer activations shared across layouts (the search's), when given
};

class Replay {
 public:
  // `states`: this rank's model states when already known (rank_model_states), else computed.
  // `memo`: the layout's layer activations, shared by its rank kinds' replays.
  Replay(const ModelArchitecture& a, const TensorInventory& inv, const TrainingSetup& t, const RuntimeProfile& rt,
         const RankPlan& plan, const RankContext& rank, bool record_timeline = true, const ModelStates* states = nullptr,
         ActsMemo* memo = nullptr)
      : a_(a), t_(t), rt_(rt), plan_(plan), rank_(rank), record_timeline_(record_timeline),
        owned_states_(states ? std::nullopt : std::optional<ModelStates>(compute_model_states(a, inv, t, rank.shard))),
        states_(states ? *states : *owned_states_) {
    tokens_ = plan.tokens_per_micro_batch;
    seq_div_ = plan.sequence_split();
    // Layer- and op-level selective checkpointing read the unchecked layer (a copy holds the LoRA
    // target list: made only when needed).
    std::optional<TrainingSetup> unchecked;
    if (policy_reads_unchecked_layer(t)) {
      unchecked = t;
      unchecked->checkpointing = Checkpointing::kNone;
    }
    const std::int64_t positions = plan.positions;
    groups_.reserve(2 * rank.kind.layers.size() * inv.groups.size());
    ActsMemo own;
    ActsMemo& acts = memo ? *memo : own;
    // Freeze (the top layers train) and BAdam (one layer trains): the frozen layers below the first
    // trained one are a group of their own. Without checkpointing (which makes the embedding output
    // require a gradient) no gradient reaches them, so autograd records nothing there: they save
    // nothing and have no backward. Frozen layers above BAdam's active one pass the gradient down.
    const bool decoder_freeze = trains_block_range(t) && a.kind == ArchKind::kDecoder;
    const std::int64_t first_trained = decoder_freeze ? first_trained_layer(t, a.num_layers) : 0;
    const std::int64_t badam_above = decoder_freeze && t.method == Method::kFull ? first_trained + 1 : 0;
    const bool frozen_without_graph = decoder_freeze && t.checkpointing == Checkpointing::kNone;
    // PEFT adapters over a frozen embedding, without checkpointing: the first layer's input needs
    // no gradient, so what a matmul saves only for that gradient is not saved there.
    const bool first_input_without_grad = is_adapter_method(t.method) && a.kind == ArchKind::kDecoder &&
                                          t.checkpointing == Checkpointing::kNone;
    // LLaMA-Adapter: layers below adapter_start_layer attend to no prefix. In LitGPT's v1 and PEFT's
    // nothing below it needs a gradient, so autograd records nothing there (with checkpointing too:
    // no saved tensor keeps a checkpoint's frame), and the first adapted layer's input needs none
    // either. v2's biases and norms train in every layer; under the HF Trainer's checkpointing
    // PEFT's enable_input_require_grads makes every layer's input need a gradient.
    const bool llama_adapter = is_llama_adapter(t.method) && a.kind == ArchKind::kDecoder;
    const bool adapter_graph_from_start = llama_adapter && (t.method == Method::kAdapter ||
                                          (t.method == Method::kAdaptionPrompt && t.checkpointing == Checkpointing::kNone));
    const std::int64_t adapter_first = llama_adapter ? std::min(t.adapter_start_layer, a.num_layers) : 0;
    auto add_group = [&](std::size_t gi, const LayerGroup& g, std::int64_t lo, std::int64_t hi) {
      if (hi <= lo) return;
      GroupActs& ga = groups_.emplace_back();  // filled in place (a chunk per interleaved stage)
      ga.first_layer = lo;
      ga.layers = hi - lo;
      ga.trains = layer_trains(t, hi - 1, a.num_layers);  // its last layer
      // Every cut of an inventory group that trains alike has the same per-token activations
      // (a stage's model chunks, the layout's other rank kinds).
      const LayerActivations* same = nullptr;
      for (const ActsMemo::Entry& e : acts.entries) {
        if (e.inventory_group == gi && e.trains == ga.trains) same = &e.acts;
      }
      if (same) {
        ga.acts = *same;
      } else {
        const TrainingSetup& setup = unchecked ? *unchecked : t;
        const bool cross_attention = g.stack == Stack::kDecoder && a.kind == ArchKind::kEncoderDecoder;
        ga.acts = acts.shared ? acts.shared->get(a, setup, g.moe, cross_attention, ga.trains, plan.split)
                              : layer_activations(a, setup, g.moe, cross_attention, ga.trains, plan.split);
        acts.entries.push_back({gi, ga.trains, ga.acts});
      }
      if (frozen_without_graph && hi <= first_trained) ga.acts = LayerActivations{};
      if (llama_adapter && hi <= adapter_first) {
        if (adapter_graph_from_start) ga.acts = LayerActivations{};
        else ga.acts.saved_per_token -= ga.acts.adapter_prompt_per_token;
      }
      if (adapter_graph_from_start && lo == adapter_first) ga.acts.saved_per_token -= ga.acts.entry_layer_unsaved_per_token;
      if (first_input_without_grad && lo == 0) {
        ga.acts.saved_per_layer -= ga.acts.saved_per_layer_for_input_grad;
        ga.acts.saved_per_layer_for_input_grad = 0;
      }
      ga.saved_bytes = checked_add(checked_add(checked_mul(ga.acts.saved_per_token, tokens_, "activation bytes"),
                                   checked_mul(checked_mul(ga.acts.saved_per_token_per_position, tokens_, "activation bytes"),
                                               positions, "activation bytes"), "activation bytes"),
                                   ga.acts.saved_per_layer, "activation bytes");
      const LayerKeep keep = layer_keep(ga.acts, t, lo, hi);
      ga.kept_bytes = keep.bytes_per_layer(tokens_, positions);
      ga.recomputed = keep.recomputes;
      kept_activation_bytes_ = checked_add(kept_activation_bytes_, checked_mul(ga.kept_bytes, ga.layers, "activation bytes"),
                                           "activation bytes");
    };
    for (const LayerRange& r : rank.kind.layers) {
      for (std::size_t gi = 0; gi < inv.groups.size(); ++gi) {
        const LayerGroup& g = inv.groups[gi];
        const std::int64_t lo = std::max(g.first_layer, r.first);
        const std::int64_t hi = std::min(g.first_layer + g.layer_count, r.first + r.count);
        // Cuts where what a layer saves changes: the first trained layer (freeze), the first
        // layer (adapters without a gradient into it), the LitGPT adapter's first and entry layers.
        std::int64_t cuts[] = {first_trained, first_input_without_grad ? 1 : 0, adapter_first,
                               adapter_graph_from_start ? adapter_first + 1 : 0, badam_above};
        std::sort(std::begin(cuts), std::end(cuts));
        std::int64_t from = lo;
        for (const std::int64_t c : cuts) {
          const std::int64_t to = std::clamp(c, from, std::max(from, hi));
          add_group(gi, g, from, to);
          from = to;
        }
        add_group(gi, g, from, hi);
      }
    }
    comm_layer_ = attention_exchange_bytes();
    if (t.offload == Offload::kActivations) {
      // Saved tensors go to pinned host memory as forward produces them and come back one layer
      // ahead of backward (torchtune OffloadActivations): two layers' worth stay on the device.
      for (GroupActs& g : groups_) {
        offload_window_ = std::max(offload_window_, checked_mul(g.kept_bytes, 2, "activation bytes"));
        g.kept_bytes = 0;
      }
    }
  }

  Estimate run() {
    Estimate est;
    est.states = states_;
    est.tokens_per_micro_batch = tokens_;
    PeakEvent first_at, at;
    if (!record_timeline_) {
      // Peaks only: event by event, the steady step holds what the first one does plus the
      // optimizer states, and an accumulating micro-batch what the steady one does with every
      // gradient live from the start, so the dominating step alone gives every peak.
      const bool accumulating = t_.grad_accum > 1;
      const Breakdown peak = step(/*states_live=*/true, accumulating, nullptr, &at);
      const Breakdown wrap = wrap_event();
      if (wrap.total() > peak.total()) {
        finish(est, wrap, PeakEvent{"wrap", Label{kWrapLabel}, -1}, "", /*first_step_bytes=*/0);
      } else {
        finish(est, peak, at, accumulating ? " (accumulating micro-batch)" : "", /*first_step_bytes=*/0);
      }
      return est;
    }
    // The first micro-batch of the first step: no optimizer state, no gradients yet (never above
    // the steady step, reported for the lazily created states).
    const Breakdown first = step(/*states_live=*/false, /*grads_live=*/false, nullptr, &first_at);
    // Steady state: optimizer states live; with accumulation, later micro-batches find all grads.
    Breakdown peak = step(true, false, &est.timeline, &at);
    const char* suffix = "";
    if (t_.grad_accum > 1) {
      PeakEvent acc_at;
      const Breakdown acc = step(true, true, nullptr, &acc_at);
      if (acc.total() > peak.total()) {
        peak = acc;
        at = acc_at;
        suffix = " (accumulating micro-batch)";
      }
    }
    const Breakdown wrap = wrap_event();
    if (wrap.total() > 0) {
      est.timeline.insert(est.timeline.begin(), TimelineEvent{"wrap", kWrapLabel, -1, wrap, StepPart::kStart});
      if (wrap.total() > peak.total()) {
        peak = wrap;
        at = PeakEvent{"wrap", Label{kWrapLabel}, -1};
        suffix = "";
      }
    }
    finish(est, peak, at, suffix, first.total());
    return est;
  }

  // Before the first step: FSDP2 sharding a 4-bit model loaded whole on the GPU holds every
  // loaded weight and the shards made from them (DistributedBehaviour::fsdp2_wraps_loaded_4bit_model).
  static constexpr const char* kWrapLabel = "sharding the loaded model";
  Breakdown wrap_event() const {
    Breakdown b;
    if (!rank_.behaviour().fsdp2_wraps_loaded_4bit_model || effective_base_quant(t_) != BaseQuant::kNf4) return b;
    if (states_.loaded_weights_bytes == 0) return b;
    b.weights_bytes = checked_add(states_.loaded_weights_bytes, states_.weights_bytes, "wrap bytes");
    return b;
  }

 private:
  // Activation tensors alive at the peak, each a separate allocation with its own rounding.
  std::int64_t live_tensor_estimate() const {
    std::int64_t layers = 0;
    for (const GroupActs& g : groups_) layers += g.layers;
    const std::int64_t per_layer =
        t_.checkpointing == Checkpointing::kFull ? rt_.live_tensors_per_checkpointed_layer : rt_.live_tensors_per_layer;
    const std::int64_t chunks = std::max<std::int64_t>(1, rank_.kind.chunks);
    return layers * per_layer * std::max(chunks, rank_.kind.chunks_in_flight) / chunks;
  }

  // What the compute stream's pool holds when FSDP1's wrap from host memory returns (torch FSDP1,
  // DistributedBehaviour::fsdp1_wrap_from_host): the rank's weights and the segments the wrap's
  // transients left cached (memory/caching_allocator.h fsdp1_wrap_cached_bytes; with expandable
  // segments the freed pages stay mapped too, and the same bytes bound them). 0 otherwise.
  std::int64_t wrap_reserved_bytes() const {
    const RankShard& sh = rank_.shard;
    if (!sh.behaviour.fsdp1_wrap_from_host || !(sh.embedding && sh.head)) return 0;
    const bool sharded = sh.sharding == Sharding::kZero2 || sh.sharding == Sharding::kZero3;
    const std::int64_t cached =
        fsdp1_wrap_cached_bytes(states_.unit_root_bytes, states_.unit_head_bytes, states_.unit_layer_bytes, sh.dense_shard,
                                sharded, t_.offload == Offload::kParamsOptimizer);
    return cached > 0 ? checked_add(states_.weights_bytes, cached, "reserved bytes") : 0;
  }

  // Logits and cross-entropy, per token of the micro-batch (v = vocabulary, e = logit dtype):
  //  standard, upcast (HF ForCausalLMLoss, torchtitan, Megatron: logits.float()):
  //    forward e·v logits + 4v fp32 copy + 4v log-probs saved; backward 4v saved + 4v nll grad
  //    + 4v log_softmax grad = 12v.
  //  standard without upcast (CE in the logits dtype): forward 2e·v, backward 3e·v.
  //  torch.compile fuses softmax and its backward: the kernel saves its input (the upcast
  //    logits) instead of log-probs and writes the gradient in the same dtype: forward e·v + 4v,
  //    backward 4v saved + 4v gradient.
  //  chunked (torchtune CEWithChunkedOutputLoss / LinearCrossEntropyLoss, litgpt chunked CE):
  //    each chunk's saved tensors stay until backward; one chunk's transients at a time.
  //  fused (Liger / cut cross-entropy): only fused_loss_chunk_tokens of logits at a time.
  // cached: at the loss backward, the freed 16-bit logits' block stays in the allocator's cache
  // and is too small for the fp32 gradient buffers of the same shape, which take new segments
  // (the caching allocator serves a request only from a free block at least its size).
  // grad: the logits' gradient as the output layer's backward reads it, in the logits dtype (a
  // fused kernel materialises one chunk of it at a time).
  // logits: the output projection's output, every chunk's (not materialised by a fused kernel).
  // buffer, buffers: the loss backward's logit-sized buffers live at once (each its own segment in
  // the first step: memory/caching_allocator.h); a chunked or fused loss has none that large.
  struct LossBytes {
    std::int64_t forward = 0, backward = 0, held = 0, cached = 0, grad = 0, logits = 0;
    std::int64_t buffer = 0, buffers = 0;
    std::int64_t head_saved = 0;  // the output layer's own saved output, freed by its backward
  };
  LossBytes loss_bytes() const {
    // Megatron / torchtitan loss parallel: each tp rank holds logits of its vocabulary slice.
    const std::int64_t v = ceil_div(std::max(a_.vocab_size, rank_.shard.padded_vocab), std::max<std::int64_t>(1, plan_.split.tp));
    const std::int64_t e = activation_bytes(t_.precision);
    const std::int64_t up = t_.logits_upcast && e != 4 ? 4 : 0;  // the fp32 copy
    const std::int64_t sm = t_.logits_upcast ? 4 : e;             // softmax / grad element bytes
    const std::int64_t T = tokens_;
    auto tv = [&](std::int64_t tokens, std::int64_t bytes_per_v) {
      return checked_mul(checked_mul(tokens, v, "logit bytes"), bytes_per_v, "logit bytes");
    };
    LossBytes l;
    l.logits = t_.loss == LossKernel::kFused ? 0 : tv(T, e);
    // LitGPT adapter v2's lm_head is an AdapterV2Linear: adapter_scale * (linear(x) + adapter_bias)
    // saves the sum, 16-bit logits, for the scale's gradient (litgpt v0.5.13 adapter_v2.py GPT).
    if (t_.method == Method::kAdapterV2) l.head_saved = tv(T, e);
    l.grad = tv(t_.loss == LossKernel::kFused ? std::min(T, rt_.fused_loss_chunk_tokens) : T, e);
    // A loop that keeps its (upcast) logits referenced holds them through the whole backward; one
    // that keeps the model's output holds the logits as the model returned them.
    if (t_.loss_input_held && t_.loss == LossKernel::kStandard) l.held = tv(T, sm);
    else if (t_.outputs_held_across_steps && (t_.loss == LossKernel::kStandard || t_.loss == LossKernel::kChunked)) {
      l.held = tv(T, t_.logits_upcast_in_model ? 4 : e);
    }
    // A model that upcasts inside its forward drops the 16-bit projection output before the loss.
    const std::int64_t e_kept = t_.logits_upcast_in_model && up > 0 ? 0 : e;
    // Final logit softcapping (cap · tanh(logits / cap)) keeps tanh's output from the forward to
    // its backward, after the loss's (transformers Gemma2ForCausalLM.forward).
    const std::int64_t softcap = a_.final_logit_softcapping > 0 ? tv(T, e) : 0;
    switch (t_.loss) {
      case LossKernel::kStandard:
        if (plan_.split.tp > 1 && rank_.behaviour().loss_parallel_decomposed && !(t_.compile && t_.compile_loss)) {
          // torch loss_parallel (DTensor): the log-softmax runs as the decomposition with an
          // all-reduce inserted, in fp32: the fp32 input, the shifted logits and exp(shifted) or
          // the result live together; the result is saved. Backward (the nll and log-softmax
          // backward fused): zeros_like(result), exp(result), their sum and the product with
          // the loss gradient, beside the saved result.
          l.forward = tv(T, e + (e == 4 ? 0 : 4) + 8);
          l.backward = tv(T, 4 * sm);
          l.buffer = tv(T, sm);
          l.buffers = 4;
          if (up > 0 && t_.logits_freed_before_backward) l.cached = tv(T, e);
        } else if (t_.loss_softmax_in_place) {
          // Megatron vocab_parallel_cross_entropy: logits.float() is the one fp32 copy; max,
          // exp and normalisation run in place and it is saved as the softmax, which backward
          // turns into the gradient in place before the cast back to the logits dtype.
          l.forward = tv(T, e + up);
          l.backward = tv(T, sm + e);
          l.buffer = tv(T, sm);
          l.buffers = 1;
        } else if (t_.compile && t_.compile_loss && t_.compile_fuses_upcast) {
          // cross_entropy(pred.float()) compiled as one kernel: the fp32 copy is never stored;
          // it saves the 16-bit logits and writes their gradient in that dtype.
          l.forward = tv(T, e);
          l.backward = tv(T, 2 * e);
          l.buffer = tv(T, e);
          l.buffers = 2;
        } else if (t_.compile && t_.compile_loss) {  // the fused kernel saves its (upcast) input, writes its grad in that dtype
          l.forward = tv(T, e + up);
          l.backward = tv(T, 2 * sm);
          l.buffer = tv(T, sm);
          l.buffers = 2;
        } else {
          // The shifted slice of [1, S, V] logits is contiguous already: .contiguous() copies at micro-batch > 1 only.
          l.forward = tv(T, e_kept + up + sm + (t_.loss_shift_copy && t_.micro_batch > 1 ? sm : 0));
          l.backward = tv(T, 3 * sm);
          l.buffer = tv(T, sm);
          l.buffers = 3;  // the saved log-probs, the nll's gradient, log_softmax's gradient
          if (up > 0 && t_.logits_freed_before_backward) l.cached = tv(T, e);
        }
        l.forward += softcap;
        l.backward += softcap;
        break;
      case LossKernel::kChunked: {
        const std::int64_t c = t_.loss_chunk_tokens > 0 ? std::min(T, t_.loss_chunk_tokens) : ceil_div(T, t_.loss_chunks);
        // The chunks' logits (e·v per token) are produced first. Eager: each chunk's upcast
        // copy is transient and its log-probs (sm·v) stay; the logits themselves are not saved
        // and are dropped before backward. Compiled: the chunk function saves its own input,
        // the logits, and nothing else.
        if (t_.compile && t_.compile_loss && t_.compile_fuses_chunk_upcast) {
          // The upcast inside the compiled function is read in registers, never stored; the
          // chunk's backward kernel writes its gradient in the logits dtype.
          l.forward = tv(T, e);
          l.backward = tv(T, e) + tv(c, e);
        } else if (t_.compile && t_.compile_loss) {
          l.forward = tv(T, e) + tv(c, up);
          l.backward = tv(T, e) + tv(c, 2 * e);
        } else if (t_.logits_upcast_in_model && up > 0) {
          // The logits reach the loss in fp32 already (LitGPT: Fabric's bf16-true plugin casts the
          // model's output, lightning/fabric/plugins/precision/half.py convert_output): all chunks'
          // fp32 logits and their log-probs; whole shifted logits at a micro-batch above 1 are not
          // contiguous, and reshape copies them (litgpt/utils.py chunked_cross_entropy).
          l.forward = tv(T, 4 + sm + (t_.loss_shift_copy && t_.micro_batch > 1 ? 4 : 0));
          l.backward = tv(T, sm) + tv(c, 3 * sm);
        } else {
          l.forward = tv(T, e + sm) + tv(c, up);
          l.backward = tv(T, sm) + tv(c, 3 * sm);
        }
        break;
      }
      case LossKernel::kFused: {
        const std::int64_t c = std::min(T, rt_.fused_loss_chunk_tokens);
        l.forward = tv(c, e + 4);
        l.backward = tv(c, 12);
        break;
      }
      default: {  // the logits-free kernels (block/loss_kernels.h)
        const LossKernelBytes k = logits_free_loss_bytes(t_.loss, loss_kernel_input());
        l.logits = 0;
        l.forward = k.forward;
        l.backward = k.backward;
        l.grad = k.grad;
        break;
      }
    }
    return l;
  }

  // What a logits-free loss kernel sees on this rank: the whole vocabulary (none of them splits
  // it), the hidden states in the residual stream's dtype, the output projection as stored.
  LossKernelInput loss_kernel_input() const {
    LossKernelInput in;
    in.tokens = tokens_;
    in.vocab = std::max(a_.vocab_size, rank_.shard.padded_vocab);
    in.hidden = a_.hidden_size;
    in.compute_bytes = activation_bytes(t_.precision);
    in.autocast = fp32_residual_stream(t_);  // AMP, or autocast over fp32 embeddings (Axolotl)
    in.stream_bytes = in.autocast ? 4 : in.compute_bytes;
    in.weight_bytes = in.autocast || t_.precision == Precision::kFp32 ? 4 : 2;
    in.weight_trains = head_weight_trains(t_, a_.num_layers);
    return in;
  }

  // Autocast's 16-bit weight casts live at the end of the forward: every cast a matmul saved, and
  // the cache's (trainable weights'). Fully checkpointed layers save none, so only their trainable
  // weights' casts are there, in the cache.
  std::int64_t amp_casts_at_forward_end() const {
    return states_.amp_weight_cast_bytes - (all_layers_checkpointed() ? states_.amp_uncached_layer_weight_cast_bytes : 0);
  }
  // ... and once the autocast region has exited with the forward (its cache cleared): the casts
  // the saved graph holds, none of a checkpointed layer's.
  std::int64_t amp_casts_after_forward() const {
    return states_.amp_weight_cast_bytes - (all_layers_checkpointed() ? states_.amp_layer_weight_cast_bytes : 0);
  }
  bool all_layers_checkpointed() const { return t_.checkpointing == Checkpointing::kFull; }
  // torch FSDP: the gradients (sharded, and a block's unsharded ones until its reduce-scatter) are
  // in the reduce-scatter stream's pool, not the compute stream's (DistributedBehaviour).
  bool grads_in_reduce_pool() const {
    return rank_.behaviour().sharded_grads_on_reduce_stream && !t_.optimizer_in_backward &&
           (states_.gather_layer_bytes > 0 || states_.gather_root_bytes > 0);
  }

  // Bytes per token the output projection keeps of its input until its backward: the 16-bit
  // input of a linear, or what a logits-free kernel keeps instead.
  std::int64_t head_linear_input_per_token() const {
    return is_logits_free_kernel(t_.loss) ? logits_free_loss_bytes(t_.loss, loss_kernel_input()).saved_input_per_token
                                          : 2 * a_.hidden_size;
  }

  // An event's label, rendered only when it is shown (the timeline, or the peak): the search
  // replays thousands of steps and needs the peak bytes alone.
  struct Label {
    const char* text;
    std::int64_t from = -1, to = -1;  // "layers from-to" or "layer from"
    std::string render() const {
      std::string s = text;
      if (from < 0) return s;
      s += std::to_string(from);
      if (to >= 0) s.append("-").append(std::to_string(to));
      return s;
    }
  };
  struct PeakEvent {
    const char* phase = "";
    Label label{""};
    std::int64_t layer = -1;
  };

  void finish(Estimate& est, const Breakdown& peak, const PeakEvent& at, const char* suffix,
              std::int64_t first_step_bytes) const {
    est.peak_phase = at.phase;
    if (record_timeline_) est.peak_label = at.label.render() + suffix;
    est.peak_layer = at.layer;
    est.at_peak = peak;
    est.peak_tensor_bytes = peak.total();
    const Peaks p = peaks_over(est.peak_tensor_bytes);
    est.peak_allocated_bytes = p.allocated_bytes;
    est.first_step_peak_allocated_bytes = first_step_bytes > 0 ? first_step_bytes + rt_.cublas_workspace_bytes : 0;
    est.peak_reserved_bytes = p.reserved_bytes;
    est.loss_segments_remapped_bytes = remapped_bytes_;
    est.peak_active_bytes = est.peak_allocated_bytes;
    est.runtime_bytes = rt_.cuda_context_bytes + rt_.cublas_workspace_bytes;
    est.nccl_bytes = p.nccl_bytes;
    est.device_total_bytes = p.device_total_bytes;
    est.activations_peak_bytes = act_peak_;
    est.kept_activation_bytes_per_micro_batch = kept_activation_bytes_;
  }

 public:
  struct Peaks {
    std::int64_t allocated_bytes = 0, reserved_bytes = 0, device_total_bytes = 0, nccl_bytes = 0;
  };
  // The step's end of forward less that moment's transients (the layer's workspace, gathered
  // blocks, logits): model states, the gradients and buffers the step holds, and every
  // activation saved for the backward, this micro-batch's and those in flight. The replay
  // passes an event at least this large (the loss, or the send to the next stage), so the
  // device total over it bounds peaks()' from below, without the replay.
  // `activation_bytes`, when given, receives the floor's part that depends on neither sharding
  // nor offload: those activations and the pipeline buffers (forward_floor_lower_bound).
  Peaks forward_floor(std::int64_t* activation_bytes = nullptr) const {
    const StepBase sb = step_base(/*states_live=*/true, /*grads_live=*/t_.grad_accum > 1);
    const std::int64_t activations = checked_add(sb.in_flight, sb.stage_kept, "activation bytes");
    if (activation_bytes) *activation_bytes = checked_add(activations, sb.p2p, "activation bytes");
    return peaks_over(checked_add(sb.base.total(), activations, "device bytes"));
  }

  // The peaks of run() without a timeline, without building an Estimate or keeping the peak's
  // breakdown (the search's question).
  Peaks peaks() {
    totals_only_ = true;
    PeakEvent at;
    step(/*states_live=*/true, /*grads_live=*/t_.grad_accum > 1, nullptr, &at);
    return peaks_over(std::max(step_peak_, wrap_event().total()));
  }

 private:
  // Allocated (the workspaces added), reserved and device total over a peak of tensor bytes, after
  // the replay has noted its events.
  Peaks peaks_over(std::int64_t allocated) const {
    Peaks p;
    p.allocated_bytes = allocated + rt_.cublas_workspace_bytes;
    const std::int64_t slack = checked_mul(states_.weight_tensor_count, rt_.weight_tensor_slack_bytes, "slack") +
                               checked_mul(live_tensor_estimate(), rt_.large_block_slack_bytes, "slack");
    // Blocks of the collective streams' pools are not reused by the compute stream: the pools
    // peak separately (equal to the allocated peak without such streams).
    // The second step holds what the first step reserved (its peak, or what its loss mapped above the
    // forward's) plus the loss segments it maps again.
    const std::int64_t first_step_reserved = std::max(first_step_peak_, first_step_loss_reserved_);
    const std::int64_t history = checked_add(first_step_reserved, remapped_bytes_, "reserved bytes");
    std::int64_t pooled = std::max({allocated, compute_pool_peak_ + side_pool_peak_, cached_peak_, history});
    // FSDP1's wrap from host memory leaves large segments cached on the compute stream
    // (wrap_reserved_bytes). The step's large compute-stream blocks reuse them; the pools that cannot
    // add to them: the unshard stream's (the gathered blocks and the root unit, whose unsharded flat
    // parameter FSDP1 allocates there: _runtime_utils.py _unshard), the reduce-scatter stream's
    // gradients, and the small pool, where the optimizer states of tensors up to 1 MiB and their
    // step's temporaries live (CUDACachingAllocator.cpp: requests <= kSmallSize take small blocks only).
    const std::int64_t wrapped = wrap_reserved_bytes();
    std::int64_t wrap_floor = 0;
    if (wrapped > 0) {
      const std::int64_t root = states_.gather_root_bytes;
      const std::int64_t small_states = states_.optimizer_states_bytes - std::min(states_.optimizer_states_bytes, states_.large_pool_state_bytes);
      const std::int64_t small_temp = states_.optimizer_states_bytes > 0
                                          ? static_cast<std::int64_t>(static_cast<double>(states_.optimizer_step_temp_bytes) *
                                                                      static_cast<double>(small_states) /
                                                                      static_cast<double>(states_.optimizer_states_bytes))
                                          : 0;
      const std::int64_t large_compute = std::max<std::int64_t>(0, grads_apart_compute_peak_ - root - small_states);
      wrap_floor = checked_add(std::max(wrapped, large_compute), grads_apart_side_peak_ + root + small_states + small_temp,
                               "reserved bytes");
    }
    // What building the model on the GPU reserved stays cached into the step (a QLoRA base
    // quantised there: ModelStates::init_quantize_workspace_bytes beside the built weights).
    if (states_.init_quantize_workspace_bytes > 0) {
      pooled = std::max(pooled, checked_add(states_.weights_bytes, states_.init_quantize_workspace_bytes, "reserved bytes"));
    }
    p.nccl_bytes = nccl_device_bytes(rank_.nccl, rt_);
    const std::int64_t beside_reserved = rt_.cuda_context_bytes + states_.unmanaged_optimizer_states_bytes + p.nccl_bytes;
    const std::int64_t beside_pools = rt_.cublas_workspace_bytes + slack + beside_reserved;
    // torch FSDP's gradients in the reduce-scatter stream's pool: their segments stay cached while
    // the compute stream peaks, up to the GPU's memory (released and retried before an OOM).
    // So do the segments FSDP1's wrap left cached.
    const std::int64_t grads_apart = std::max(grads_apart_compute_peak_ + grads_apart_side_peak_, wrap_floor);
    if (grads_apart > pooled) {
      const std::int64_t room = rt_.gpu_memory_bytes > 0 ? rt_.gpu_memory_bytes - beside_pools : grads_apart;
      pooled = std::max(pooled, std::min(grads_apart, room));
    }
    p.reserved_bytes = pooled + rt_.cublas_workspace_bytes + slack;
    p.device_total_bytes = p.reserved_bytes + beside_reserved;
    return p;
  }

  void note(PeakEvent* at, std::vector<TimelineEvent>* tl, Breakdown& best, const Breakdown& b,
            const char* phase, const Label& label, std::int64_t layer, StepPart part) const {
    if (tl) tl->push_back({phase, label.render(), layer, b, part});
    // Stored activations: what forward leaves for backward (backward's transient gradients are
    // not "activation memory" in the papers' sense).
    const std::int64_t total = b.total();  // once (the writes below may alias b)
    if (phase[0] != 'b' && phase[0] != 'o') act_peak_ = std::max(act_peak_, b.activations_bytes);
    compute_pool_peak_ = std::max(compute_pool_peak_, total - b.side_stream_bytes);
    side_pool_peak_ = std::max(side_pool_peak_, b.side_stream_bytes);
    const std::int64_t side = b.side_stream_bytes + (grads_in_reduce_pool() ? b.gradients_bytes : 0);
    grads_apart_compute_peak_ = std::max(grads_apart_compute_peak_, total - side);
    grads_apart_side_peak_ = std::max(grads_apart_side_peak_, side);
    cached_peak_ = std::max(cached_peak_, total + b.cached_unusable_bytes);
    // The same event in the first step, before the optimizer creates its states lazily.
    const bool states_lazy = !t_.optimizer_in_backward && phase[0] != 'o';
    first_step_peak_ = std::max(first_step_peak_, total - (states_lazy ? b.optimizer_states_bytes : 0));
    if (total > step_peak_) {
      step_peak_ = total;
      if (totals_only_) return;  // peaks(): the bytes alone
      best = b;
      *at = PeakEvent{phase, label, layer};
    }
  }

  // Transient bytes of the attention's collectives in one layer's forward (backward: twice,
  // with the K/V gradients). Context parallel: the K/V of the whole sequence gathered
  // (all-gather rotation), a send and a receive chunk (ring), or Ulysses' q/k/v all-to-alls. Sequence parallel: the
  // all-gathered input of the column-parallel linears (Megatron's global memory buffer).
  std::int64_t attention_exchange_bytes() const {
    const std::int64_t e = activation_bytes(t_.precision);
    std::int64_t bytes = 0;
    if (plan_.cp > 1) {
      const std::int64_t kv_heads = kernel_kv_heads(a_, t_);
      const std::int64_t kvh = std::max<std::int64_t>(1, kv_heads / std::max<std::int64_t>(1, plan_.split.tp));
      const AttentionDims dims = attention_dims(a_);
      const std::int64_t d = dims.qk_head_dim + dims.v_head_dim;
      if (plan_.cp_kind == ContextParallelKind::kUlysses) {
        // Ulysses (ulysses_sp.py _combine_local_sequences): q, k and v leave as contiguous send
        // copies and arrive as the whole sequence over heads / cp heads; k/v heads are repeated
        // up to one per rank first (repeat_interleave when cp > kv heads).
        const std::int64_t heads = std::max<std::int64_t>(1, a_.attention.num_heads / std::max<std::int64_t>(1, plan_.split.tp));
        const std::int64_t per_token = e * (heads * dims.qk_head_dim + std::max(kvh, plan_.cp) * d);
        bytes += checked_mul(checked_mul(per_token, tokens_, "exchange bytes"), 2, "exchange bytes");
      } else {
        const std::int64_t kv_per_token = e * kvh * d;
        const std::int64_t chunks = rank_.behaviour().cp_gather_kv ? plan_.cp : 2;
        bytes += checked_mul(checked_mul(kv_per_token, tokens_, "exchange bytes"), chunks, "exchange bytes");
      }
    }
    if (plan_.split.sequence_parallel) bytes += checked_mul(tokens_, e * a_.hidden_size, "exchange bytes");
    return bytes;
  }

  // What every event of a step holds (model states, the step's gradients, buffers) and the
  // activations the forward leaves for the backward: shared by step() and forward_floor().
  struct StepBase {
    Breakdown base;
    bool zero3 = false;
    std::int64_t root_gathered = 0, head_unit = 0, embedding_unit = 0;
    std::int64_t model_level = 0;  // token ids (and an embedding dropout mask) on the first stage
    std::int64_t stage_kept = 0;   // one micro-batch's saved set over this rank's layers
    std::int64_t in_flight = 0;    // the saved sets of the micro-batches waiting for their backward
    std::int64_t p2p = 0;          // pipeline send/receive buffers (in base.communication_bytes)
  };
  StepBase step_base(bool states_live, bool grads_live) const {
    StepBase sb;
    const bool in_backward_step = t_.optimizer_in_backward;
    const bool grads_persistent = states_.gradients_at_init;  // Megatron main_grad buffer
    const DistributedBehaviour& beh = rank_.behaviour();
    sb.zero3 = states_.gather_layer_bytes > 0 || states_.gather_root_bytes > 0;
    Breakdown& base = sb.base;
    base.weights_bytes = states_.weights_bytes;
    base.optimizer_states_bytes = states_live || in_backward_step ? states_.optimizer_states_bytes : 0;
    base.gradients_bytes = (grads_live || grads_persistent) && !in_backward_step ? states_.gradients_bytes : 0;
    base.communication_bytes = states_.ddp_bucket_bytes;  // allocated when DDP wraps the model
    base.communication_bytes += states_.persistent_reduce_bucket_bytes;  // DeepSpeed ZeRO-3's, from engine init
    // ZeRO-3: the root unit (embeddings, head) stays gathered through the step (FSDP2 root).
    sb.root_gathered = sb.zero3 && beh.root_unit_gathered ? states_.gather_root_bytes : 0;
    // Embeddings and head as units of their own: gathered only around their own compute.
    sb.head_unit = sb.zero3 && !beh.root_unit_gathered ? states_.gather_head_bytes : 0;
    sb.embedding_unit = sb.zero3 && !beh.root_unit_gathered ? states_.gather_root_bytes - states_.gather_head_bytes : 0;
    base.weights_bytes += sb.root_gathered;
    const std::int64_t e = activation_bytes(t_.precision);
    // Model-level tensors: token ids (int64) and, with embedding dropout, its 1-byte mask. The
    // embedding output (or the activation a later pipeline stage receives) is the first layer's
    // input, which that layer's saved set already holds.
    const std::int64_t embed_mask = a_.embedding_dropout > 0 ? ceil_div(a_.hidden_size, seq_div_) : 0;
    sb.model_level = rank_.kind.embedding ? checked_mul(tokens_, 8 + embed_mask, "activation bytes") : 0;
    // Pipeline parallelism: micro-batches that wait for their backward while this one runs.
    sb.stage_kept = sb.model_level;
    for (const GroupActs& g : groups_) {
      sb.stage_kept = checked_add(sb.stage_kept, checked_mul(g.kept_bytes, g.layers, "activation bytes"), "activation bytes");
    }
    const std::int64_t chunks = std::max<std::int64_t>(1, rank_.kind.chunks);
    const std::int64_t waiting = std::max<std::int64_t>(0, rank_.kind.chunks_in_flight - chunks);
    sb.in_flight = checked_mul(sb.stage_kept / chunks, waiting, "activation bytes");
    // Pipeline send/receive buffers: one activation and one gradient of a micro-batch.
    const std::int64_t p2p = rank_.kind.chunks_in_flight > 1 || !rank_.kind.embedding || !rank_.kind.head
        ? checked_mul(2 * tokens_, ceil_div(e * a_.hidden_size, seq_div_), "p2p bytes") : 0;
    base.communication_bytes += p2p;
    sb.p2p = p2p;
    return sb;
  }

  Breakdown step(bool states_live, bool grads_live, std::vector<TimelineEvent>* tl, PeakEvent* at_peak) const {
    PeakEvent& at = *at_peak;
    step_peak_ = 0;
    const bool in_backward_step = t_.optimizer_in_backward;
    const bool grads_persistent = states_.gradients_at_init;  // Megatron main_grad buffer
    const DistributedBehaviour& beh = rank_.behaviour();
    const StepBase sb = step_base(states_live, grads_live);
    Breakdown base = sb.base;
    const bool zero3 = sb.zero3;
    // Gradients the backward makes before the model's (AdaLoRA's regulariser), where gradients are
    // not already whole; spread over the layers that accumulate into them.
    std::int64_t rank_layers = 0;
    for (const GroupActs& g : groups_) rank_layers += g.layers;
    const std::int64_t early_grads =
        grads_live || grads_persistent || in_backward_step ? 0 : states_.regularizer_gradient_bytes;
    const std::int64_t early_grads_per_layer = early_grads / std::max<std::int64_t>(1, rank_layers);
    const std::int64_t root_gathered = sb.root_gathered, head_unit = sb.head_unit, embedding_unit = sb.embedding_unit;
    // Without reshard-after-forward a pipeline stage keeps its blocks gathered across all its
    // micro-batches; a single stage gathers them one by one in forward and frees them in backward.
    const bool pipelined = !(rank_.kind.embedding && rank_.kind.head);
    // DeepSpeed ZeRO-3 without zero.Init: autograd holds each block's gathered weights from its
    // forward to its backward, where the block is gathered again beside them.
    const bool held_to_backward = zero3 && states_.gathered_held_to_backward;
    const bool progressive = zero3 && (!beh.reshard_after_forward || held_to_backward) && !pipelined;
    if (zero3 && !beh.reshard_after_forward && pipelined) {
      std::int64_t stage_layers = 0;
      for (const GroupActs& g : groups_) stage_layers += g.layers;
      base.weights_bytes += checked_mul(states_.gather_layer_bytes, stage_layers, "gather bytes");
    }
    // Gathered blocks around the one computing: itself and the prefetched ones.
    const std::int64_t gathered_window =
        states_.gather_layer_bytes + (beh.prefetch_bytes > 0 ? std::min(beh.prefetch_bytes, states_.gather_layer_bytes)
                                                             : checked_mul(states_.gather_layer_bytes, beh.prefetch_units, "gather bytes"));
    Breakdown best;
    const std::int64_t model_level = sb.model_level, in_flight = sb.in_flight;
    // Per-layer transients of the kernels: a QLoRA weight dequantised for its matmul, DoRA's
    // W + BA for the weight norm (forward only).
    const std::int64_t fwd_layer_temp = states_.dequant_workspace_bytes + states_.dora_norm_workspace_bytes;
    const std::int64_t bwd_layer_temp = states_.dequant_workspace_bytes;

    // Forward.
    Breakdown b = base;
    b.activations_bytes = in_flight + model_level;
    // The previous micro-batch's output, when the loop holds it, lives until this forward returns.
    const std::int64_t previous_outputs = rank_.kind.head && states_live && t_.outputs_held_across_steps ? loss_bytes().held : 0;
    b.logits_loss_bytes = previous_outputs;
    b.weights_bytes += embedding_unit;
    b.temporaries_bytes += states_.token_table_copy_bytes;  // trainable tokens: the table copy F.embedding reads
    note(&at, tl, best, b, "forward", {rank_.kind.embedding ? "embedding" : "receive activations"}, -1, StepPart::kStart);
    b.temporaries_bytes -= states_.token_table_copy_bytes;
    b.weights_bytes -= embedding_unit;
    if (zero3 && beh.root_unit_gathered && beh.gather_copy_out && beh.reshard_after_forward && rank_.kind.embedding &&
        !groups_.empty()) {
      // FSDP2 frees a group's all-gather output only when the next group's all-gather is waited on
      // (_fsdp_param_group.py wait_for_unshard, comm_ctx.all_gather_state): the root's flat output
      // (beside its copied-out parameters) meets the first block's.
      Breakdown first = b;
      first.communication_bytes += checked_add(states_.gather_root_bytes, states_.gather_layer_bytes, "gather bytes");
      note(&at, tl, best, first, "forward", {"all-gather of layer ", groups_.front().first_layer}, groups_.front().first_layer, StepPart::kStart);
    }
    // DeepSpeed ZeRO-3 (recorded trace): the top blocks that fit in stage3_max_live_parameters
    // stay gathered from their forward (ModelStates::live_kept_layers); at the top
    // block's forward the others are gathered beside it.
    const std::int64_t live_kept =
        zero3 && rank_.kind.head ? checked_mul(states_.gather_layer_bytes, states_.live_kept_layers, "gather bytes") : 0;
    const std::int64_t live_beside_top = live_kept > 0 ? live_kept - states_.gather_layer_bytes : 0;
    std::int64_t all_kept = b.activations_bytes;
    std::int64_t gathered_layers = 0;  // without reshard-after-forward, blocks stay gathered
    for (const GroupActs& g : groups_) {
      // The last layer of a group is the group's high point; record its end.
      b.activations_bytes = all_kept + checked_mul(g.kept_bytes, g.layers, "activation bytes");
      if (progressive) gathered_layers += g.layers;
      // Inside the layer its own saved set is live (under checkpointing only until it ends) and
      // the offload window holds the layers in flight to the host.
      Breakdown inside = b;
      inside.activations_bytes += g.saved_bytes - g.kept_bytes + offload_window_;
      inside.temporaries_bytes = fwd_layer_temp;
      inside.communication_bytes += comm_layer_;
      if (zero3 && beh.reshard_after_forward && !held_to_backward) {
        inside.weights_bytes += gathered_window;
        inside.side_stream_bytes = gathered_window;
      }
      if (progressive) {
        const std::int64_t gathered = checked_mul(states_.gather_layer_bytes, gathered_layers + beh.prefetch_units, "gather bytes");
        inside.weights_bytes += gathered;
        // DeepSpeed gathers on its allgather stream (v0.14.2 partitioned_param_coordinator.py
        // __all_gather_params under __allgather_stream; stage 3's overlap_comm defaults to true,
        // zero/config.py): the blocks autograd holds stay in that stream's pool.
        if (held_to_backward) inside.side_stream_bytes = gathered;
      }
      if (&g == &groups_.back()) inside.weights_bytes += live_beside_top;
      note(&at, tl, best, inside, "forward", {"layers ", g.first_layer, g.first_layer + g.layers - 1}, g.first_layer + g.layers - 1, StepPart::kLayerForward);
      all_kept = b.activations_bytes;
    }
    if (progressive) b.weights_bytes += checked_mul(states_.gather_layer_bytes, gathered_layers, "gather bytes");
    // The held blocks in the allgather stream's pool, until each one's backward releases it.
    std::int64_t held_side = held_to_backward ? checked_mul(states_.gather_layer_bytes, gathered_layers, "gather bytes") : 0;
    b.side_stream_bytes = held_side;
    const std::int64_t last_kept = zero3 && beh.reshard_after_forward && beh.last_unit_kept ? states_.gather_layer_bytes : 0;
    // FSDP2's root pre-backward hook prefetches the top block's all-gather (torch
    // _fully_shard/_fsdp_param_group.py pre_backward -> _backward_prefetch): its flat output is
    // live from the first gradient at a root output (the loss or the logits) to that block's backward.
    const std::int64_t top_prefetched = zero3 && beh.root_unit_gathered && beh.gather_copy_out && beh.reshard_after_forward &&
                                                !beh.last_unit_kept && rank_.kind.head && rank_.kind.embedding && !groups_.empty()
                                            ? states_.gather_layer_bytes
                                            : 0;
    b.weights_bytes += last_kept;
    b.weights_bytes += live_kept;
    // AMP: autocast's 16-bit weight copies live from their forward use to the backward.
    b.temporaries_bytes = amp_casts_at_forward_end();
    // DeepSpeed ZeRO-1/2 under contiguous_gradients allocates its ipg bucket as its backward()
    // starts, before the loss's backward, and releases it in the epilogue after the last hook
    // (v0.14.2 stage_1_and_2.py backward, independent_gradient_partition_epilogue): live at the loss
    // backward, the output layer's and the embedding's (the blocks' events count it already).
    const std::int64_t ipg_bucket =
        (rank_.shard.sharding == Sharding::kZero1 || rank_.shard.sharding == Sharding::kZero2) &&
                states_.persistent_reduce_bucket_bytes == 0
            ? beh.reduce_bucket_bytes
            : 0;
    LossBytes loss;
    if (rank_.kind.head) {
      // The final norm's saved tensors (the fp32 input copy 4h, and for a trained weight the
      // normalised 2h) and, for a trained output layer, its input (2h); DTensor sequence
      // parallelism all-gathers the latter before the matmul, which saves it whole.
      const std::int64_t head_linear_div = plan_.split.gathered_linear_inputs ? 1 : seq_div_;
      const std::int64_t head_trained = states_.head_gradient_bytes > 0 ? 2 : 0;
      // A logits-free loss kernel keeps what it needs of the head's input whether the head trains or not.
      // Trainable tokens on a tied table (peft v0.21.2 tuners/trainable_tokens/model.py inject_adapter):
      // the output layer runs F.linear(x, table copy with the trained rows), which saves x and the copy.
      const std::int64_t tied_table_copy = a_.tie_word_embeddings ? states_.token_table_copy_bytes : 0;
      const std::int64_t head_linear_input = is_logits_free_kernel(t_.loss)
                                                 ? head_linear_input_per_token()
                                                 : (head_trained + (tied_table_copy > 0 ? 2 : 0)) * a_.hidden_size;
      const std::int64_t head_input = checked_add(
          checked_mul(tokens_, ceil_div((4 + head_trained) * a_.hidden_size, seq_div_) + ceil_div(head_linear_input, head_linear_div),
                      "activation bytes"),
          tied_table_copy, "activation bytes");
      b.activations_bytes = all_kept + head_input + offload_window_;
      loss = loss_bytes();
      remapped_bytes_ = second_step_loss_segment_bytes(loss.buffer, loss.buffers, states_.large_pool_state_bytes,
                                                       t_.expandable_segments);
      // The first step's forward peak (no states created yet, no previous outputs held) stays
      // reserved: the blocks its freed temporaries leave are too small for a loss buffer.
      const std::int64_t forward_peak =
          step_peak_ - (t_.optimizer_in_backward ? 0 : b.optimizer_states_bytes) - previous_outputs;
      first_step_loss_reserved_ = std::max(
          first_step_loss_reserved_,
          checked_add(forward_peak,
                      first_step_loss_segment_bytes(loss.logits, loss.buffer, loss.buffers, loss.held > 0,
                                                    t_.expandable_segments),
                      "reserved bytes"));
      // A head unit of its own is resharded after its forward (FSDP2 post-forward hook): gathered
      // while the output projection writes the logits, not through the loss, unless a fused
      // kernel computes the projection inside the loss.
      const std::int64_t head_in_loss = loss_computes_projection(t_.loss) ? head_unit : 0;
      if (head_unit > 0 && head_in_loss == 0) {
        Breakdown projection = b;
        projection.weights_bytes += head_unit;
        projection.logits_loss_bytes = loss.logits + previous_outputs;
        note(&at, tl, best, projection, "forward", {"output layer"}, -1, StepPart::kHeadForward);
      }
      // A chunked loss runs outside the model's forward (torchtune, LitGPT): a loop that holds the
      // output rebinds it as the forward returns, before the loss (litgpt/finetune/lora.py fit()).
      const bool rebound_before_loss = t_.loss == LossKernel::kChunked && t_.outputs_held_across_steps;
      if (rebound_before_loss && t_.logits_upcast_in_model) {
        // The wrapper's cast of the returned logits: the 16-bit ones beside their fp32 copies,
        // and the previous step's still bound.
        Breakdown cast = b;
        cast.logits_loss_bytes = previous_outputs + loss.logits + loss.held + loss.head_saved;
        note(&at, tl, best, cast, "forward", {"output cast to fp32"}, -1, StepPart::kForwardEnd);
      }
      b.logits_loss_bytes = loss.forward + loss.head_saved + (rebound_before_loss ? 0 : previous_outputs);
      b.weights_bytes += head_in_loss;
      note(&at, tl, best, b, "loss", {"logits and cross-entropy"}, -1, StepPart::kLoss);
      // The autocast region ends with the forward (the loss inside it), and with it the weight-cast
      // cache (torch.autocast.__exit__ -> clear_autocast_cache, torch/amp/autocast_mode.py).
      b.temporaries_bytes -= amp_casts_at_forward_end() - amp_casts_after_forward();
      b.logits_loss_bytes = loss.backward + loss.held + loss.head_saved;
      b.gradients_bytes += early_grads;
      b.cached_unusable_bytes = loss.cached;
      b.communication_bytes += (beh.root_outputs_include_loss ? top_prefetched : 0) + ipg_bucket;
      note(&at, tl, best, b, "backward", {"loss backward"}, -1, StepPart::kLossBackward);
      b.communication_bytes -= (beh.root_outputs_include_loss ? top_prefetched : 0) + ipg_bucket;
      b.weights_bytes -= head_in_loss;
      b.cached_unusable_bytes = 0;
      b.logits_loss_bytes = loss.held;
      b.gradients_bytes -= early_grads;
    } else {
      b.activations_bytes = all_kept + offload_window_;
      note(&at, tl, best, b, "forward", {"send activations"}, -1, StepPart::kForwardEnd);
    }

    // Backward: head gradients first, then layers from the top. With the optimizer in backward
    // each gradient is consumed by its step as soon as it is complete: one layer's worth is live.
    const bool grads_full = grads_live || grads_persistent;
    // FSDP2 root (fully_shard on the model, its blocks wrapped apart): the root's gradients are
    // reduce-scattered together by its post-backward at the end of backward (torch
    // _fully_shard/_fsdp_state.py _root_post_backward_final_callback); until then the head's
    // unsharded gradient waits, and no root shard exists on a first micro-batch.
    const bool root_reduced_last = zero3 && beh.root_unit_gathered && beh.gather_copy_out && !in_backward_step &&
                                   rank_.kind.head && rank_.kind.embedding;
    const std::int64_t head_waiting = root_reduced_last ? states_.root_head_unsharded_gradient_bytes : 0;
    const std::int64_t root_shards = root_reduced_last && !grads_full ? states_.root_sharded_gradient_bytes : 0;
    // FSDP2 keeps the last reduce-scatter's input until the next group's reduce-scatter
    // (_fsdp_param_group.py post_backward: comm_ctx.reduce_scatter_state): one block's, from the
    // first block reduced on.
    const std::int64_t reduced_held = zero3 && beh.gather_copy_out && !in_backward_step ? states_.reduce_layer_input_bytes : 0;
    std::int64_t held_now = 0;
    b.gradients_bytes = in_backward_step ? states_.head_gradient_bytes
                                         : (grads_full ? states_.gradients_bytes
                                                       : (root_reduced_last ? 0 : states_.head_gradient_bytes) + early_grads);
    // A tied output layer's gradient contribution to the shared table waits in autograd's input
    // buffer for the embedding's, from the output layer's backward to the embedding backward
    // (the table's accumulation node runs once both have arrived).
    const std::int64_t tied_held =
        rank_.kind.head && rank_.kind.embedding && a_.tie_word_embeddings ? states_.embedding_grad_bytes : 0;
    if (rank_.kind.head) {
      // The output layer's backward: the logits' gradient (every chunk's: the loss backward runs
      // before any output projection's) meets the output layer's weight gradient and its input.
      Breakdown head = b;
      head.gradients_bytes += tied_held + head_waiting;
      head.logits_loss_bytes = checked_add(loss.held + loss.head_saved, loss.grad, "logit bytes");
      head.weights_bytes += head_unit;
      head.communication_bytes += top_prefetched + ipg_bucket;
      // Trainable tokens on a tied table: the copy's dense gradient beside the saved copy.
      if (a_.tie_word_embeddings) head.temporaries_bytes += states_.token_table_copy_bytes;
      // A chunked loss projects each chunk on its own (torchtune TransformerDecoder.chunked_output):
      // the weight's gradient arrives once per chunk, and autograd sums the first two out of place
      // (torch/csrc/autograd/input_buffer.cpp accumulate): two contributions beside their sum.
      const bool several_chunks = t_.loss_chunk_tokens > 0 ? tokens_ > t_.loss_chunk_tokens : t_.loss_chunks > 1;
      if (t_.loss == LossKernel::kChunked && several_chunks) {
        head.temporaries_bytes += 2 * (tied_held > 0 ? tied_held : states_.head_gradient_bytes);
      }
      // DeepSpeed's offloaded ZeRO-2: the output layer's gradient, reduced and checked in its hook
      // (ModelStates::offload_grad_check_head_bytes) on the rank whose partition holds it.
      head.temporaries_bytes += states_.offload_head_gradient_bytes + states_.offload_grad_check_head_bytes;
      note(&at, tl, best, head, "backward", {"output layer backward"}, -1, StepPart::kHeadBackward);
    }
    b.weights_bytes -= last_kept;  // the top block is gathered again below
    // The kept blocks are released one by one after their backward: at the top block's backward
    // the others are still gathered (the top one counts in the gathered window).
    b.weights_bytes -= live_kept;
    std::int64_t live_kept_left = live_beside_top;
    std::int64_t below = all_kept;
    for (auto it = groups_.rbegin(); it != groups_.rend(); ++it) {
      const GroupActs& g = *it;
      const std::int64_t flowing = checked_add(checked_mul(g.acts.residual_grad_per_token + g.acts.backward_transient_per_token,
                                                           tokens_, "activation bytes"),
                                               g.acts.backward_transient_per_layer, "activation bytes");
      const std::int64_t recompute = g.recomputed ? g.saved_bytes : 0;
      // Top layer of the group: everything below still saved, its own set live.
      below -= checked_mul(g.kept_bytes, g.layers, "activation bytes");
      Breakdown top = b;
      const std::int64_t live_at_top = live_kept_left;
      top.weights_bytes += live_at_top;
      live_kept_left = 0;
      top.activations_bytes = below + checked_mul(g.kept_bytes, g.layers, "activation bytes") + recompute + flowing +
                              offload_window_;
      // A recomputed layer casts its weights again and saves the casts until its backward ends.
      const bool recast = g.recomputed && all_layers_checkpointed();
      top.temporaries_bytes += bwd_layer_temp + (recast ? states_.amp_largest_layer_weight_cast_bytes : 0);
      top.temporaries_bytes += states_.offload_grad_check_layer_bytes;  // a block gradient offloaded (DeepSpeed ZeRO-2)
      top.communication_bytes += 2 * comm_layer_ + (states_.persistent_reduce_bucket_bytes > 0 ? 0 : beh.reduce_bucket_bytes);
      if (zero3) {
        // The block is gathered again (with its prefetched neighbour) and its unsharded
        // gradients wait for the reduce-scatter.
        if (beh.reshard_after_forward) {
          top.weights_bytes += gathered_window;  // else still gathered
          top.side_stream_bytes = held_side + gathered_window;
        }
      }
      top.gradients_bytes += states_.reduce_layer_bytes;
      top.side_stream_bytes += zero3 ? states_.reduce_layer_bytes : 0;
      if (in_backward_step) top.gradients_bytes = states_.largest_layer_gradient_bytes;
      top.gradients_bytes += tied_held + head_waiting;
      const std::int64_t held_at_top = held_now;
      top.communication_bytes += held_at_top;
      note(&at, tl, best, top, "backward", {"layer ", g.first_layer + g.layers - 1}, g.first_layer + g.layers - 1, StepPart::kLayerBackward);
      if (g.layers > 1) held_now = reduced_held;
      // Bottom layer of the group: its gradients all allocated, only layer's own set left.
      Breakdown bottom = top;
      bottom.weights_bytes -= live_at_top;  // released after their backward
      if (!grads_full && !in_backward_step) {
        // Gradients made early (early_grads) are accumulated into in place, not allocated again.
        bottom.gradients_bytes += checked_mul(states_.layer_gradient_bytes - early_grads_per_layer, g.layers, "gradient bytes");
      }
      if (progressive) {
        bottom.weights_bytes -= checked_mul(states_.gather_layer_bytes, g.layers - 1, "gather bytes");  // resharded after backward
        if (held_to_backward) bottom.side_stream_bytes -= checked_mul(states_.gather_layer_bytes, g.layers - 1, "gather bytes");
      }
      if (zero3 && beh.reshard_after_forward && g.first_layer == 0 && rank_.kind.embedding) {
        bottom.weights_bytes -= gathered_window - states_.gather_layer_bytes;  // no block below the first to prefetch
      }
      bottom.activations_bytes = below + g.kept_bytes + recompute + flowing + offload_window_;
      bottom.communication_bytes += held_now - held_at_top;
      note(&at, tl, best, bottom, "backward", {"layer ", g.first_layer}, g.first_layer, StepPart::kLayerBackward);
      held_now = reduced_held;
      b.gradients_bytes = bottom.gradients_bytes - states_.reduce_layer_bytes - tied_held - head_waiting;
      if (progressive) b.weights_bytes -= checked_mul(states_.gather_layer_bytes, g.layers, "gather bytes");
      if (held_to_backward) held_side -= checked_mul(states_.gather_layer_bytes, g.layers, "gather bytes");
      b.side_stream_bytes = held_side;
    }
    // At the embedding backward the table's two contributions meet (the held one, the dense
    // one below); on a first micro-batch the table's gradient is not assigned yet, so the held
    // contribution stands in for it within gradients_bytes.
    b.gradients_bytes = in_backward_step ? tied_held
                                         : states_.gradients_bytes - root_shards + head_waiting + (grads_full ? tied_held : 0);
    b.activations_bytes = in_flight + model_level;
    if (rank_.kind.embedding) {
      // The embedding's dense (v, h) gradient. As the table's first gradient AccumulateGrad keeps
      // that very tensor as .grad (torch/csrc/autograd/functions/accumulate_grad.h, the steal case),
      // counted in gradients_bytes: a buffer of its own only where it meets another gradient (a
      // tied head's contribution, an accumulated or sharded gradient, the optimizer in backward).
      // A tied head's contribution and the dense one are summed out of place: three (v, h)
      // tensors at once (measured on an H200, torch 2.11: tools/oracle/gpu_checks).
      const bool stolen = !grads_full && !in_backward_step && tied_held == 0 &&
                          (rank_.shard.sharding == Sharding::kNone || rank_.shard.sharding == Sharding::kZero1);
      // Trainable tokens: the table copy's dense gradient, before index_copy's backward takes the trained rows.
      b.temporaries_bytes = (stolen ? 0 : states_.embedding_grad_bytes + tied_held) + states_.token_table_copy_bytes;
      // DeepSpeed ZeRO-1/2 reduces the table's gradient in its hook, inside the backward, while the
      // ipg bucket is still allocated (ipg_bucket above).
      // Offloaded, the gradient is then checked (ModelStates::offload_grad_check_embedding_bytes); one that
      // fits the bucket was copied into it and freed first (reduce_independent_p_g_buckets_and_remove_grads).
      if (states_.offload_grad_check_embedding_bytes > 0 && ipg_bucket > 0 && states_.embedding_grad_bytes <= ipg_bucket) {
        b.temporaries_bytes -= std::min(b.temporaries_bytes, states_.embedding_grad_bytes + tied_held);
      }
      b.temporaries_bytes += states_.offload_grad_check_embedding_bytes;
      b.communication_bytes += held_now + ipg_bucket;
      b.weights_bytes += embedding_unit;
      note(&at, tl, best, b, "backward", {"embedding backward"}, -1, StepPart::kBackwardEnd);
      b.weights_bytes -= embedding_unit;
      b.communication_bytes -= held_now + ipg_bucket;
    }
    if (root_reduced_last) {
      // The root reshards, then its reduce-scatter input (one buffer of the group's gradients in
      // the reduce dtype) is copied in while the unsharded gradients live (_fsdp_param_group.py
      // post_backward; _fsdp_collectives.py foreach_reduce, foreach_reduce_scatter_copy_in).
      Breakdown rs = b;
      rs.weights_bytes -= root_gathered;
      rs.temporaries_bytes = checked_add(rs.temporaries_bytes, states_.root_reduce_input_bytes, "gradient bytes");
      rs.communication_bytes += held_now;
      note(&at, tl, best, rs, "backward", {"root reduce-scatter"}, -1, StepPart::kBackwardEnd);
      b.gradients_bytes = states_.gradients_bytes;
    }

    // Optimizer step: states created lazily on the first step, plus the step's temporaries.
    if (!in_backward_step) {
      b.activations_bytes = 0;
      b.weights_bytes = states_.weights_bytes + root_gathered;
      b.optimizer_states_bytes = states_.optimizer_states_bytes;
      b.temporaries_bytes = states_.optimizer_step_temp_bytes;
      note(&at, tl, best, b, "optimizer", {"optimizer step"}, -1, StepPart::kOptimizer);
    }
    return best;
  }

  const ModelArchitecture& a_;
  const TrainingSetup& t_;
  const RuntimeProfile& rt_;
  const RankPlan& plan_;
  const RankContext& rank_;
  bool record_timeline_ = true;  // false: peaks only (the search)
  std::optional<ModelStates> owned_states_;  // computed here when the caller has none
  const ModelStates& states_;
  std::int64_t tokens_ = 0;
  std::int64_t seq_div_ = 1;          // sequence parallel splits full-width tensors by tp
  std::int64_t comm_layer_ = 0;       // attention collectives' staging in one layer's forward
  mutable std::int64_t act_peak_ = 0;
  mutable std::int64_t compute_pool_peak_ = 0, side_pool_peak_ = 0, cached_peak_ = 0;
  mutable std::int64_t grads_apart_compute_peak_ = 0, grads_apart_side_peak_ = 0;  // the pools, FSDP gradients apart
  mutable std::int64_t step_peak_ = 0;  // the largest total of this step's events so far
  mutable std::int64_t first_step_peak_ = 0;  // the largest event without the lazily created states
  mutable std::int64_t remapped_bytes_ = 0;   // loss segments the second step maps again
  mutable std::int64_t first_step_loss_reserved_ = 0;  // the first step's forward peak plus its loss's segments
  bool totals_only_ = false;            // peaks(): no breakdown or label of the peak kept
  std::int64_t offload_window_ = 0;   // activation offload: layers in flight to or from the host
  std::int64_t kept_activation_bytes_ = 0;  // every held layer's kept set for one micro-batch
  std::vector<GroupActs> groups_;
};

}  // namespace

Estimate estimate_single_gpu(const ModelArchitecture& arch, const TensorInventory& inv,
                             const TrainingSetup& t, const RuntimeProfile& rt) {
  RankContext whole;
  whole.kind.name = "single GPU";
  whole.kind.layers = {{0, arch.num_layers + arch.num_encoder_layers}};
  return Replay(arch, inv, t, rt, plan_single_gpu(t), whole).run();
}

Estimate estimate_rank(const ModelArchitecture& arch, const TensorInventory& inv, const TrainingSetup& t,
                       const RankPlan& plan, const RankContext& rank, const RuntimeProfile& rt) {
  return Replay(arch, inv, t, rt, plan, rank).run();
}

namespace {
// FSDP with a 16-bit mixed-precision policy gathers 16-bit parameters: no autocast copies; a
// Megatron --fp16 gradient buffer is fp16. The setup as the layout runs it (resolve_distributed_setup), copied into `storage` only when
// the layout changes it (a copy holds the LoRA target list).
const TrainingSetup& resolved_setup(const ParallelLayout& l, const TrainingSetup& t,
                                    std::optional<TrainingSetup>& storage) {
  if (!setup_changes_as_run(l, t)) return t;
  storage = resolve_distributed_setup(l, t);
  return *storage;
}
}  // namespace

DistributedEstimate estimate_distributed(const ModelArchitecture& arch, const TensorInventory& inv,
                                         const TrainingSetup& t, const ParallelLayout& l, const RuntimeProfile& rt,
                                         bool timeline) {
  DistributedEstimate d;
  d.layout = l;
  d.setup = resolve_distributed_setup(l, t);
  d.plan = plan_rank(l, d.setup);
  for (RankContext& c : plan_ranks(l, arch, d.setup)) {
    RankEstimate r{std::move(c), {}};
    r.estimate = Replay(arch, inv, d.setup, rt, d.plan, r.context, timeline).run();
    if (!d.ranks.empty() && r.estimate.device_total_bytes > d.peak().device_total_bytes) d.peak_rank = d.ranks.size();
    d.ranks.push_back(std::move(r));
  }
  return d;
}

std::vector<ModelStates> rank_model_states(const ModelArchitecture& arch, const TensorInventory& inv,
                                           const TrainingSetup& t, const ParallelLayout& l, ModelStatesMemo* memo) {
  std::optional<TrainingSetup> storage;
  const TrainingSetup& setup = resolved_setup(l, t, storage);
  std::vector<ModelStates> out;
  const std::vector<RankContext> ranks = plan_ranks(l, arch, setup);
  out.reserve(ranks.size());
  for (const RankContext& rank : ranks) {
    out.push_back(memo ? memo->get(arch, inv, setup, rank.shard) : compute_model_states(arch, inv, setup, rank.shard));
  }
  return out;
}

namespace {
// Replays every rank kind of `l` for its peaks only and hands each to `f(k, rank, peaks)`.
// With a limit, stops and returns false at the first rank kind whose forward floor's device
// total passes it (that kind's peak does too).
// `first_activation_bytes`, when given, receives the first kind's forward-floor activations.
template <typename F>
bool for_each_rank_peak(const ModelArchitecture& arch, const TensorInventory& inv, const TrainingSetup& t,
                        const ParallelLayout& l, const RuntimeProfile& rt, const std::vector<ModelStates>* states, F&& f,
                        std::int64_t oom_above_bytes = kNoMemoryLimit, std::int64_t* first_activation_bytes = nullptr,
                        LayerActivationsMemo* layers = nullptr) {
  std::optional<TrainingSetup> storage;
  const TrainingSetup& setup = resolved_setup(l, t, storage);
  std::vector<RankContext> ranks = plan_ranks(l, arch, setup);
  const RankPlan plan = plan_rank(l, setup);
  if (states && states->size() != ranks.size()) throw Error(ErrorCode::kInternal, "", "model states of another layout");
  ActsMemo acts;  // the rank kinds share the layout's layer activations
  acts.shared = layers;
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    const ModelStates* known = states ? &(*states)[k] : nullptr;
    Replay replay(arch, inv, setup, rt, plan, ranks[k], /*record_timeline=*/false, known, &acts);
    std::int64_t* activations = k == 0 ? first_activation_bytes : nullptr;
    if ((oom_above_bytes != kNoMemoryLimit || activations) &&
        replay.forward_floor(activations).device_total_bytes > oom_above_bytes) {
      return false;
    }
    f(k, ranks[k], replay.peaks());
  }
  return true;
}

PeakSummary most_loaded(const ModelArchitecture& arch, const TensorInventory& inv, const TrainingSetup& t,
                        const ParallelLayout& l, const RuntimeProfile& rt, const std::vector<ModelStates>* states,
                        std::int64_t oom_above_bytes, bool& within, std::int64_t* first_activation_bytes = nullptr,
                        LayerActivationsMemo* layers = nullptr) {
  PeakSummary p;
  within = for_each_rank_peak(arch, inv, t, l, rt, states, [&](std::size_t k, RankContext& rank, const Replay::Peaks& e) {
    if (k == 0 || e.device_total_bytes > p.device_total_bytes) {
      p.peak_allocated_bytes = e.allocated_bytes;
      p.peak_reserved_bytes = e.reserved_bytes;
      p.device_total_bytes = e.device_total_bytes;
      p.peak_rank = k;
      p.rank_kind = std::move(rank.kind.name);
    }
  }, oom_above_bytes, first_activation_bytes, layers);
  return p;
}

bool rank_peaks_into(const ModelArchitecture& arch, const TensorInventory& inv, const TrainingSetup& t,
                     const ParallelLayout& l, const RuntimeProfile& rt, const std::vector<ModelStates>* states,
                     std::int64_t oom_above_bytes, std::vector<RankPeak>& out, std::int64_t* first_activation_bytes = nullptr,
                     LayerActivationsMemo* layers = nullptr) {
  return for_each_rank_peak(arch, inv, t, l, rt, states, [&](std::size_t, RankContext& rank, const Replay::Peaks& e) {
    out.push_back(RankPeak{e.allocated_bytes, e.reserved_bytes, e.device_total_bytes, rank.kind.ranks, std::move(rank.kind.name)});
  }, oom_above_bytes, first_activation_bytes, layers);
}
}  // namespace

PeakSummary estimate_peak(const ModelArchitecture& arch, const TensorInventory& inv, const TrainingSetup& t,
                          const ParallelLayout& l, const RuntimeProfile& rt, const std::vector<ModelStates>* states) {
  bool within = true;
  return most_loaded(arch, inv, t, l, rt, states, kNoMemoryLimit, within);
}

std::int64_t forward_floor_device_total_bytes(const ModelArchitecture& arch, const TensorInventory& inv,
                                              const TrainingSetup& t, const ParallelLayout& l, const RuntimeProfile& rt) {
  std::optional<TrainingSetup> storage;
  const TrainingSetup& setup = resolved_setup(l, t, storage);
  std::int64_t floor = 0;
  ActsMemo acts;
  const RankPlan plan = plan_rank(l, setup);
  for (const RankContext& rank : plan_ranks(l, arch, setup)) {
    floor = std::max(floor, Replay(arch, inv, setup, rt, plan, rank, /*record_timeline=*/false, nullptr, &acts).forward_floor().device_total_bytes);
  }
  return floor;
}

std::vector<RankPeak> estimate_rank_peaks(const ModelArchitecture& arch, const TensorInventory& inv, const TrainingSetup& t,
                                          const ParallelLayout& l, const RuntimeProfile& rt,
                                          const std::vector<ModelStates>* states) {
  std::vector<RankPeak> out;
  rank_peaks_into(arch, inv, t, l, rt, states, kNoMemoryLimit, out);
  return out;
}

std::int64_t nccl_device_bytes(const NcclUse& n, const RuntimeProfile& rt) {
  const std::int64_t buffers = checked_mul(n.communicators, rt.nccl_communicator_bytes, "nccl bytes");
  const std::int64_t p2p = checked_mul(n.p2p_peers, rt.nccl_p2p_peer_bytes, "nccl bytes");
  const std::int64_t nvls = checked_mul(n.nvls_local_ranks, rt.nccl_nvls_bytes_per_local_rank, "nccl bytes");
  return checked_add(checked_add(buffers, p2p, "nccl bytes"), nvls, "nccl bytes");
}

bool nvls_capable(const GpuSpec& gpu) {
  const bool hopper_or_later = gpu.architecture == "hopper" || gpu.architecture == "blackwell";
  return gpu.vendor == "nvidia" && hopper_or_later && gpu.intra_node_link.find("NVSwitch") != std::string::npos;
}

RuntimeProfile runtime_for(const GpuSpec& gpu) {
  RuntimeProfile rt;
  // 16 channels x 2 (send and receive) x 8 steps x 128 KiB.
  if (nvls_capable(gpu)) rt.nccl_nvls_bytes_per_local_rank = 16 * 2 * 8 * (128LL << 10);
  rt.gpu_memory_bytes = gpu.memory_total_bytes;
  return rt;
}

std::optional<PeakSummary> estimate_peak_within(const ModelArchitecture& arch, const TensorInventory& inv,
                                                const TrainingSetup& t, const ParallelLayout& l, const RuntimeProfile& rt,
                                                const std::vector<ModelStates>* states, std::int64_t oom_above_bytes,
                                                std::int64_t* first_activation_bytes, LayerActivationsMemo* layers) {
  bool within = true;
  PeakSummary p = most_loaded(arch, inv, t, l, rt, states, oom_above_bytes, within, first_activation_bytes, layers);
  if (!within) return std::nullopt;
  return p;
}

std::optional<std::vector<RankPeak>> estimate_rank_peaks_within(const ModelArchitecture& arch, const TensorInventory& inv,
                                                                const TrainingSetup& t, const ParallelLayout& l,
                                                                const RuntimeProfile& rt, const std::vector<ModelStates>* states,
                                                                std::int64_t oom_above_bytes, std::int64_t* first_activation_bytes,
                                                                LayerActivationsMemo* layers) {
  std::vector<RankPeak> out;
  if (!rank_peaks_into(arch, inv, t, l, rt, states, oom_above_bytes, out, first_activation_bytes, layers)) return std::nullopt;
  return out;
}

}  // namespace memfit
