// Timeline replay of one training step (see timeline.h).
#include "memory/timeline.h"

#include <algorithm>

#include "common/units.h"
#include "memory/activations.h"

namespace memfit {

namespace {

struct GroupActs {
  std::int64_t first_layer = 0, layers = 0;
  LayerActivations acts;
  std::int64_t saved_bytes = 0;       // one layer, this micro-batch
  std::int64_t kept_bytes = 0;        // what forward leaves alive per layer (saved or checkpoint)
};

class Replay {
 public:
  Replay(const ModelArchitecture& a, const TensorInventory& inv, const TrainingSetup& t, const RuntimeProfile& rt)
      : a_(a), t_(t), rt_(rt) {
    states_ = compute_model_states(a, inv, t);
    tokens_ = checked_mul(t.micro_batch, t.seq_len, "tokens per micro-batch");
    const bool ckpt = t.checkpointing == Checkpointing::kFull;
    for (const LayerGroup& g : inv.groups) {
      GroupActs ga;
      ga.first_layer = g.first_layer;
      ga.layers = g.layer_count;
      const bool trains = layer_trains(t, g.first_layer + g.layer_count - 1, a.num_layers);  // its last layer
      ga.acts = layer_activations(a, t, g.moe, g.stack == Stack::kDecoder && a.kind == ArchKind::kEncoderDecoder, trains);
      ga.saved_bytes = checked_add(checked_mul(ga.acts.saved_per_token, tokens_, "activation bytes"),
                                   checked_mul(checked_mul(ga.acts.saved_per_token_per_position, tokens_, "activation bytes"),
                                               t.seq_len, "activation bytes"), "activation bytes");
      ga.kept_bytes = ckpt ? checked_mul(ga.acts.checkpoint_per_token, tokens_, "activation bytes") : ga.saved_bytes;
      groups_.push_back(ga);
    }
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
    // The first micro-batch of the first step: no optimizer state, no gradients yet.
    Estimate first_scratch;
    const Breakdown first = step(/*states_live=*/false, /*grads_live=*/false, &first_scratch);
    first_scratch.timeline.clear();
    // Steady state: optimizer states live; with accumulation, later micro-batches find all grads.
    Breakdown peak = step(true, false, &est);
    if (t_.grad_accum > 1) {
      Estimate scratch;
      const Breakdown acc = step(true, true, &scratch);
      if (acc.total() > peak.total()) {
        peak = acc;
        est.peak_phase = scratch.peak_phase;
        est.peak_label = scratch.peak_label + " (accumulating micro-batch)";
        est.peak_layer = scratch.peak_layer;
      }
    }
    if (first.total() > peak.total()) {  // e.g. AMP or lazily created state outweighs the steady step
      peak = first;
      est.peak_phase = first_scratch.peak_phase;
      est.peak_label = first_scratch.peak_label + " (first step)";
      est.peak_layer = first_scratch.peak_layer;
    }
    est.at_peak = peak;
    est.peak_allocated_bytes = peak.total();
    est.first_step_peak_allocated_bytes = first.total();
    const std::int64_t slack = checked_mul(states_.weight_tensor_count, rt_.large_block_slack_bytes / 4, "slack") +
                               checked_mul(live_tensor_estimate(), rt_.large_block_slack_bytes, "slack");
    est.peak_reserved_bytes = est.peak_allocated_bytes + rt_.cublas_workspace_bytes + slack;
    est.peak_active_bytes = est.peak_allocated_bytes;
    est.runtime_bytes = rt_.cuda_context_bytes + rt_.cublas_workspace_bytes;
    est.device_total_bytes = est.peak_reserved_bytes + rt_.cuda_context_bytes + states_.unmanaged_optimizer_states_bytes;
    return est;
  }

 private:
  // Activation tensors alive at the peak, each a separate allocation with its own rounding.
  std::int64_t live_tensor_estimate() const {
    std::int64_t layers = 0;
    for (const GroupActs& g : groups_) layers += g.layers;
    const std::int64_t per_layer = t_.checkpointing == Checkpointing::kFull ? 1 : 12;
    return layers * per_layer;
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
  struct LossBytes { std::int64_t forward = 0, backward = 0, held = 0; };
  LossBytes loss_bytes() const {
    const std::int64_t v = a_.vocab_size;
    const std::int64_t e = activation_bytes(t_.precision);
    const std::int64_t up = t_.logits_upcast && e != 4 ? 4 : 0;  // the fp32 copy
    const std::int64_t sm = t_.logits_upcast ? 4 : e;             // softmax / grad element bytes
    const std::int64_t T = tokens_;
    auto tv = [&](std::int64_t tokens, std::int64_t bytes_per_v) {
      return checked_mul(checked_mul(tokens, v, "logit bytes"), bytes_per_v, "logit bytes");
    };
    LossBytes l;
    // A loop that keeps its (upcast) logits referenced holds them through the whole backward.
    if (t_.loss_input_held && t_.loss == LossKernel::kStandard) l.held = tv(T, sm);
    switch (t_.loss) {
      case LossKernel::kStandard:
        if (t_.compile) {  // the fused kernel saves its (upcast) input, writes its grad in that dtype
          l.forward = tv(T, e + up);
          l.backward = tv(T, 2 * sm);
        } else {
          l.forward = tv(T, e + up + sm + (t_.loss_shift_copy ? sm : 0));
          l.backward = tv(T, 3 * sm);
        }
        break;
      case LossKernel::kChunked: {
        const std::int64_t c = t_.loss_chunk_tokens > 0 ? std::min(T, t_.loss_chunk_tokens) : ceil_div(T, t_.loss_chunks);
        // The chunks' logits (e·v per token) are produced first. Eager: each chunk's upcast
        // copy is transient and its log-probs (sm·v) stay; the logits themselves are not saved
        // and are dropped before backward. Compiled: the chunk function saves its own input,
        // the logits, and nothing else.
        if (t_.compile) {
          l.forward = tv(T, e) + tv(c, up);
          l.backward = tv(T, e) + tv(c, 2 * e);
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
    }
    return l;
  }

  void note(Estimate* est, std::vector<TimelineEvent>* tl, Breakdown& best, const Breakdown& b,
            const char* phase, const std::string& label, std::int64_t layer) const {
    if (tl) tl->push_back({phase, label, layer, b});
    if (b.total() > best.total()) {
      best = b;
      if (est) {
        est->peak_phase = phase;
        est->peak_label = label;
        est->peak_layer = layer;
      }
    }
  }

  Breakdown step(bool states_live, bool grads_live, Estimate* est) const {
    std::vector<TimelineEvent>* tl = est && !grads_live ? &est->timeline : nullptr;
    const bool in_backward_step = t_.optimizer_in_backward;
    Breakdown base;
    base.weights_bytes = states_.weights_bytes;
    base.optimizer_states_bytes = states_live || in_backward_step ? states_.optimizer_states_bytes : 0;
    base.gradients_bytes = grads_live && !in_backward_step ? states_.gradients_bytes : 0;
    Breakdown best;
    const std::int64_t e = activation_bytes(t_.precision);
    // Model-level tensors: token ids (int64) and the embedding output.
    const std::int64_t model_level = checked_mul(tokens_, 8 + e * a_.hidden_size, "activation bytes");
    // Per-layer transients of the kernels: a QLoRA weight dequantised for its matmul, DoRA's
    // W + BA for the weight norm (forward only).
    const std::int64_t fwd_layer_temp = states_.dequant_workspace_bytes + states_.dora_norm_workspace_bytes;
    const std::int64_t bwd_layer_temp = states_.dequant_workspace_bytes;

    // Forward.
    Breakdown b = base;
    b.activations_bytes = model_level;
    note(est, tl, best, b, "forward", "embedding", -1);
    std::int64_t all_kept = model_level;
    for (const GroupActs& g : groups_) {
      // The last layer of a group is the group's high point; record its end.
      b.activations_bytes = all_kept + checked_mul(g.kept_bytes, g.layers, "activation bytes");
      // Inside the layer its own saved set is live (under checkpointing only until it ends) and
      // the offload window holds the layers in flight to the host.
      Breakdown inside = b;
      inside.activations_bytes += g.saved_bytes - g.kept_bytes + offload_window_;
      inside.temporaries_bytes = fwd_layer_temp;
      note(est, tl, best, inside, "forward", "layers " + std::to_string(g.first_layer) + "-" +
           std::to_string(g.first_layer + g.layers - 1), g.first_layer + g.layers - 1);
      all_kept = b.activations_bytes;
    }
    // AMP: autocast's 16-bit weight copies live from their forward use to the backward.
    b.temporaries_bytes = states_.amp_weight_cast_bytes;
    const std::int64_t head_input = checked_mul(tokens_, 8 * a_.hidden_size, "activation bytes");
    b.activations_bytes = all_kept + head_input + offload_window_;
    const LossBytes loss = loss_bytes();
    b.logits_loss_bytes = loss.forward;
    note(est, tl, best, b, "loss", "logits and cross-entropy", -1);
    b.logits_loss_bytes = loss.backward + loss.held;
    note(est, tl, best, b, "backward", "loss backward", -1);
    b.logits_loss_bytes = loss.held;

    // Backward: head gradients first, then layers from the top. With the optimizer in backward
    // each gradient is consumed by its step as soon as it is complete: one layer's worth is live.
    b.gradients_bytes = in_backward_step ? states_.head_gradient_bytes
                                         : (grads_live ? states_.gradients_bytes : states_.head_gradient_bytes);
    std::int64_t below = all_kept;
    for (auto it = groups_.rbegin(); it != groups_.rend(); ++it) {
      const GroupActs& g = *it;
      const std::int64_t in_flight = checked_mul(g.acts.residual_grad_per_token + g.acts.backward_transient_per_token,
                                                 tokens_, "activation bytes");
      const std::int64_t recompute = t_.checkpointing == Checkpointing::kFull ? g.saved_bytes : 0;
      // Top layer of the group: everything below still saved, its own set live.
      below -= checked_mul(g.kept_bytes, g.layers, "activation bytes");
      Breakdown top = b;
      top.activations_bytes = below + checked_mul(g.kept_bytes, g.layers, "activation bytes") + recompute + in_flight +
                              offload_window_;
      top.temporaries_bytes += bwd_layer_temp;
      if (in_backward_step) top.gradients_bytes = states_.largest_layer_gradient_bytes;
      note(est, tl, best, top, "backward", "layer " + std::to_string(g.first_layer + g.layers - 1), g.first_layer + g.layers - 1);
      // Bottom layer of the group: its gradients all allocated, only layer's own set left.
      Breakdown bottom = top;
      if (!grads_live && !in_backward_step) {
        bottom.gradients_bytes += checked_mul(states_.layer_gradient_bytes, g.layers, "gradient bytes");
      }
      bottom.activations_bytes = below + g.kept_bytes + recompute + in_flight + offload_window_;
      note(est, tl, best, bottom, "backward", "layer " + std::to_string(g.first_layer), g.first_layer);
      b.gradients_bytes = bottom.gradients_bytes;
    }
    b.gradients_bytes = in_backward_step ? 0 : states_.gradients_bytes;
    b.activations_bytes = model_level;
    b.temporaries_bytes = states_.embedding_grad_bytes;  // dense (v, h) gradient of the embedding
    note(est, tl, best, b, "backward", "embedding backward", -1);

    // Optimizer step: states created lazily on the first step, plus the step's temporaries.
    if (!in_backward_step) {
      b.activations_bytes = 0;
      b.optimizer_states_bytes = states_.optimizer_states_bytes;
      b.temporaries_bytes = states_.optimizer_step_temp_bytes;
      note(est, tl, best, b, "optimizer", "optimizer step", -1);
    }
    return best;
  }

  const ModelArchitecture& a_;
  const TrainingSetup& t_;
  const RuntimeProfile& rt_;
  ModelStates states_;
  std::int64_t tokens_ = 0;
  std::int64_t offload_window_ = 0;   // activation offload: layers in flight to or from the host
  std::vector<GroupActs> groups_;
};

}  // namespace

Estimate estimate_single_gpu(const ModelArchitecture& arch, const TensorInventory& inv,
                             const TrainingSetup& t, const RuntimeProfile& rt) {
  return Replay(arch, inv, t, rt).run();
}

}  // namespace memfit
