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
      const bool trains = t.method == Method::kFull ||
                          (t.method == Method::kFreeze && g.first_layer + g.layer_count > a.num_layers - t.freeze_trainable_layers);
      ga.acts = layer_activations(a, t, g.moe, g.stack == Stack::kDecoder && a.kind == ArchKind::kEncoderDecoder, trains);
      ga.saved_bytes = checked_add(checked_mul(ga.acts.saved_per_token, tokens_, "activation bytes"),
                                   checked_mul(checked_mul(ga.acts.saved_per_token_per_position, tokens_, "activation bytes"),
                                               t.seq_len, "activation bytes"), "activation bytes");
      ga.kept_bytes = ckpt ? checked_mul(ga.acts.checkpoint_per_token, tokens_, "activation bytes") : ga.saved_bytes;
      groups_.push_back(ga);
    }
  }

  Estimate run() {
    Estimate est;
    est.states = states_;
    est.tokens_per_micro_batch = tokens_;
    // The first micro-batch of the first step: no optimizer state, no gradients yet.
    const Breakdown first = step(/*states_live=*/false, /*grads_live=*/false, nullptr);
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
    est.at_peak = peak;
    est.peak_allocated_bytes = std::max(peak.total(), first.total());
    est.first_step_peak_allocated_bytes = first.total();
    const std::int64_t slack = checked_mul(states_.weight_tensor_count, rt_.large_block_slack_bytes / 4, "slack") +
                               checked_mul(live_tensor_estimate(), rt_.large_block_slack_bytes, "slack");
    est.peak_reserved_bytes = est.peak_allocated_bytes + rt_.cublas_workspace_bytes + slack;
    est.runtime_bytes = rt_.cuda_context_bytes + rt_.cublas_workspace_bytes;
    est.device_total_bytes = est.peak_reserved_bytes + rt_.cuda_context_bytes;
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

  std::int64_t loss_forward_peak_bytes() const {
    const std::int64_t v = a_.vocab_size;
    const std::int64_t e = activation_bytes(t_.precision);
    switch (t_.loss) {
      case LossKernel::kStandard:  // logits (e) + fp32 upcast (4, a no-op in fp32) + fp32 log-probs
        return checked_mul(tokens_, v * (e + (e == 4 ? 0 : 4) + 4), "logit bytes");
      case LossKernel::kChunked:   // all chunks' logits stay; one chunk upcast at a time; log-probs saved
        return checked_mul(tokens_, v * (e + 4), "logit bytes") +
               checked_mul(ceil_div(tokens_, t_.loss_chunks), 8 * v, "logit bytes");
      case LossKernel::kFused:
        return checked_mul(std::min(tokens_, rt_.fused_loss_chunk_tokens), v * (e + 4), "logit bytes");
    }
    return 0;
  }

  std::int64_t loss_backward_peak_bytes() const {
    const std::int64_t v = a_.vocab_size;
    switch (t_.loss) {
      case LossKernel::kStandard:  // saved log-probs + nll grad (dense fp32) + log_softmax grad
        return checked_mul(tokens_, 12 * v, "logit bytes");
      case LossKernel::kChunked:
        return checked_mul(tokens_, v * (activation_bytes(t_.precision) + 4), "logit bytes") +
               checked_mul(ceil_div(tokens_, t_.loss_chunks), 8 * v, "logit bytes");
      case LossKernel::kFused:
        return checked_mul(std::min(tokens_, rt_.fused_loss_chunk_tokens), v * 12, "logit bytes");
    }
    return 0;
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
    Breakdown base;
    base.weights_bytes = states_.weights_bytes;
    base.optimizer_states_bytes = states_live ? states_.optimizer_states_bytes : 0;
    base.gradients_bytes = grads_live ? states_.gradients_bytes : 0;
    Breakdown best;
    const std::int64_t e = activation_bytes(t_.precision);
    // Model-level tensors: token ids (int64) and the embedding output.
    const std::int64_t model_level = checked_mul(tokens_, 8 + e * a_.hidden_size, "activation bytes");

    // Forward.
    Breakdown b = base;
    b.activations_bytes = model_level;
    note(est, tl, best, b, "forward", "embedding", -1);
    std::int64_t all_kept = model_level;
    for (const GroupActs& g : groups_) {
      // The last layer of a group is the group's high point; record its end.
      b.activations_bytes = all_kept + checked_mul(g.kept_bytes, g.layers, "activation bytes");
      // Under checkpointing the forward of each layer briefly holds its own saved set too.
      Breakdown inside = b;
      if (t_.checkpointing == Checkpointing::kFull) inside.activations_bytes += g.saved_bytes - g.kept_bytes;
      note(est, tl, best, inside, "forward", "layers " + std::to_string(g.first_layer) + "-" +
           std::to_string(g.first_layer + g.layers - 1), g.first_layer + g.layers - 1);
      all_kept = b.activations_bytes;
    }
    // AMP: autocast's 16-bit weight copies live from their forward use to the backward.
    b.temporaries_bytes = states_.amp_weight_cast_bytes;
    const std::int64_t head_input = checked_mul(tokens_, 8 * a_.hidden_size, "activation bytes");
    b.activations_bytes = all_kept + head_input;
    b.logits_loss_bytes = loss_forward_peak_bytes();
    note(est, tl, best, b, "loss", "logits and cross-entropy", -1);
    b.logits_loss_bytes = loss_backward_peak_bytes();
    note(est, tl, best, b, "backward", "loss backward", -1);
    b.logits_loss_bytes = 0;

    // Backward: head gradients first, then layers from the top.
    b.gradients_bytes = grads_live ? states_.gradients_bytes : states_.head_gradient_bytes;
    std::int64_t below = all_kept;
    for (auto it = groups_.rbegin(); it != groups_.rend(); ++it) {
      const GroupActs& g = *it;
      const std::int64_t in_flight = checked_mul(g.acts.residual_grad_per_token + g.acts.backward_transient_per_token,
                                                 tokens_, "activation bytes");
      const std::int64_t recompute = t_.checkpointing == Checkpointing::kFull ? g.saved_bytes : 0;
      // Top layer of the group: everything below still saved, its own set live.
      below -= checked_mul(g.kept_bytes, g.layers, "activation bytes");
      Breakdown top = b;
      top.activations_bytes = below + checked_mul(g.kept_bytes, g.layers, "activation bytes") + recompute + in_flight;
      note(est, tl, best, top, "backward", "layer " + std::to_string(g.first_layer + g.layers - 1), g.first_layer + g.layers - 1);
      // Bottom layer of the group: its gradients all allocated, only layer's own set left.
      Breakdown bottom = b;
      if (!grads_live) bottom.gradients_bytes += checked_mul(states_.layer_gradient_bytes, g.layers, "gradient bytes");
      bottom.activations_bytes = below + g.kept_bytes + recompute + in_flight;
      note(est, tl, best, bottom, "backward", "layer " + std::to_string(g.first_layer), g.first_layer);
      b.gradients_bytes = bottom.gradients_bytes;
    }
    b.gradients_bytes = states_.gradients_bytes;
    b.activations_bytes = model_level;
    b.temporaries_bytes = states_.embedding_grad_bytes;  // dense (v, h) gradient of the embedding
    note(est, tl, best, b, "backward", "embedding backward", -1);

    // Optimizer step: states created lazily on the first step, plus the step's temporaries.
    b.activations_bytes = 0;
    b.optimizer_states_bytes = states_.optimizer_states_bytes;
    b.temporaries_bytes = states_.optimizer_step_temp_bytes;
    note(est, tl, best, b, "optimizer", "optimizer step", -1);
    return best;
  }

  const ModelArchitecture& a_;
  const TrainingSetup& t_;
  const RuntimeProfile& rt_;
  ModelStates states_;
  std::int64_t tokens_ = 0;
  std::vector<GroupActs> groups_;
};

}  // namespace

Estimate estimate_single_gpu(const ModelArchitecture& arch, const TensorInventory& inv,
                             const TrainingSetup& t, const RuntimeProfile& rt) {
  return Replay(arch, inv, t, rt).run();
}

}  // namespace memfit
