// Layout rules and rank kinds (see layout.h).
#include "parallel/layout.h"

#include <algorithm>

namespace memfit {

std::int64_t ParallelLayout::expert_shard() const {
  const std::int64_t ranks = dense_shard() * tp;
  return std::max<std::int64_t>(1, ranks / std::max<std::int64_t>(1, std::min(ep * expert_tp(), ranks)));
}

namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

// The first rule `l` breaks, as `make(field, code, unsupported, message)` makes it, or Result{}
// if none; `message()` builds the rule's text, for the makers that want it (the search counts
// codes only). (Result is named, not deduced through a lambda in decltype, which crashes the
// Debian clang 14 that emscripten 3.1.6 drives.)
template <typename Result, typename Make>
Result first_broken_rule(const ParallelLayout& l, const ModelArchitecture& a, const TrainingSetup& t, Make&& make) {
  auto text = [](const char* s) { return [s] { return std::string(s); }; };
  const std::int64_t heads = a.attention.num_heads;
  const std::int64_t kv = a.attention.layout == QkvLayout::kLowRank ? heads : a.attention.num_kv_heads;
  const std::int64_t layers = a.num_layers + a.num_encoder_layers;
  if (l.behaviour.tp_row_linears) {
    // Row-split linears slice their inputs: hidden size and MLP width must divide by tp.
    const std::int64_t ffn = a.is_moe() ? a.moe.expert_intermediate_size : a.mlp.intermediate_size;
    if (a.hidden_size % l.tp != 0 || ffn % l.tp != 0) {
      return make("tp", "tp_divides_linear_inputs", false, [&] {
        return "tp = " + str(l.tp) + " must divide the hidden size (" + str(a.hidden_size) + ") and the MLP width (" +
               str(ffn) + ") that row-split linears slice";
      });
    }
  } else if (heads % l.tp != 0) {
    // Megatron splits attention by heads (ColumnParallelLinear over heads; GQA groups must split
    // evenly or be replicated: num_query_groups % tp == 0 in arguments.py).
    return make("tp", "tp_divides_heads", false,
                [&] { return "tp = " + str(l.tp) + " must divide the " + str(heads) + " attention heads"; });
  } else if (kv % l.tp != 0 && l.tp % kv != 0) {
    return make("tp", "tp_kv_heads", false, [&] {
      return "tp = " + str(l.tp) + " and the " + str(kv) + " key/value heads must divide one another";
    });
  }
  if (l.behaviour.tp_row_linears && l.sequence_parallel) {
    return make("sequence_parallel", "sequence_parallel_unsupported", true,
                text("this framework's tensor parallelism (row-split linears) has no sequence parallelism"));
  }
  if (l.sequence_parallel && l.tp == 1) {
    return make("sequence_parallel", "sequence_parallel_needs_tp", false,
                text("sequence parallelism splits the tp group's activations: it needs tp > 1"));
  }
  if (l.vpp > 1 && l.pp == 1) {
    return make("vpp", "vpp_needs_pp", false, text("virtual pipeline stages interleave pipeline ranks: they need pp > 1"));
  }
  if (l.pp > 1 && a.kind == ArchKind::kEncoderDecoder) {
    return make("pp", "encoder_decoder_pp", true,
                text("pipeline parallelism of encoder-decoder models is not modelled (pp must be 1)"));
  }
  if (l.pp * l.vpp > layers) {
    return make(l.vpp > 1 ? "vpp" : "pp", "pp_vpp_exceeds_layers", false, [&] {
      return "pp x vpp = " + str(l.pp * l.vpp) + " model chunks but the model has only " + str(layers) + " layers";
    });
  }
  // badam 1.4 block_optim.py: the single-GPU path (an fp32 clone per active parameter) also runs
  // under DDP; under ZeRO-3 DeepSpeed's own partitions replace it (_switch_trainable_params_zero3).
  const bool plain_layout = l.sharding == Sharding::kNone && l.tp == 1 && l.pp == 1 && l.cp == 1 && l.ep == 1;
  if (t.method == Method::kFull && t.badam_active_layer >= 0 && !plain_layout) {
    return make("training/badam", "badam_layout", true,
                text("BAdam is modelled on one GPU or plain data parallelism (no sharding, tp, pp, cp or ep)"));
  }
  if (l.vpp > 1 && t.grad_accum % l.pp != 0) {
    // Megatron schedules.py: the interleaved schedule runs micro-batches in groups of pp.
    return make("training/grad_accum", "interleaved_grad_accum", false, [&] {
      return "the interleaved schedule needs the micro-batches per step (grad_accum = " + str(t.grad_accum) +
             ") to be a multiple of pp = " + str(l.pp);
    });
  }
  if (!l.stage_layers.empty()) {
    if (static_cast<std::int64_t>(l.stage_layers.size()) != l.pp) {
      return make("stage_layers", "stage_layers", false,
                  [&] { return "stage_layers needs one entry per pipeline stage (pp = " + str(l.pp) + ")"; });
    }
    if (l.vpp > 1) return make("stage_layers", "stage_layers", false, text("stage_layers cannot be combined with vpp > 1"));
    std::int64_t sum = 0;
    for (std::int64_t n : l.stage_layers) {
      if (n < 1) return make("stage_layers", "stage_layers", false, text("every pipeline stage needs at least one layer"));
      sum += n;
    }
    if (sum != layers) {
      return make("stage_layers", "stage_layers", false,
                  [&] { return "stage_layers sum to " + str(sum) + " but the model has " + str(layers) + " layers"; });
    }
  }
  if (l.cp > 1 && l.cp_kind == ContextParallelKind::kUlysses) {
    // ulysses_sp.py UlyssesSPAttentionHF.__init__: heads divisible by sp, kv heads and sp dividing
    // one another (kv heads replicated when sp exceeds them); the data-loader adapter splits each
    // sequence into sp equal shards.
    if (heads % (l.tp * l.cp) != 0) {
      return make("cp", "ulysses_divides_heads", false, [&] {
        return "Ulysses scatters heads: tp x cp = " + str(l.tp * l.cp) + " must divide the " + str(heads) + " attention heads";
      });
    }
    const std::int64_t kv_local = std::max<std::int64_t>(1, kv / l.tp);
    if (kv_local % l.cp != 0 && l.cp % kv_local != 0) {
      return make("cp", "ulysses_kv_heads", false, [&] {
        return "Ulysses: cp = " + str(l.cp) + " and the " + str(kv_local) + " key/value heads per tp rank must divide one another";
      });
    }
    if (t.seq_len % l.cp != 0) {
      return make("cp", "cp_divides_sequence", false, [&] {
        return "seq_len = " + str(t.seq_len) + " must divide into cp = " + str(l.cp) + " equal shards";
      });
    }
  } else if (l.cp > 1 && t.seq_len % (2 * l.cp) != 0) {
    // Load-balanced context parallelism cuts the sequence into 2 x cp chunks (Liu et al. ring
    // attention as in torch context_parallel and Megatron's CP).
    return make("cp", "cp_divides_sequence", false, [&] {
      return "seq_len = " + str(t.seq_len) + " must divide into 2 x cp = " + str(2 * l.cp) + " equal chunks";
    });
  }
  if (l.etp > 0 && l.etp != l.tp) {
    if (!a.is_moe()) return make("etp", "ep_needs_moe", false, text("expert tensor parallelism needs a mixture-of-experts model"));
    if (!l.behaviour.moe_parallel_folding) {
      return make("etp", "etp_needs_folding", true,
                  text("an expert tensor-parallel degree other than tp needs MoE parallel folding (Megatron-Core from 2024-11)"));
    }
    if (a.moe.expert_intermediate_size % l.etp != 0) {
      return make("etp", "etp_divides_expert_width", false, [&] {
        return "etp = " + str(l.etp) + " must divide the experts' width (" + str(a.moe.expert_intermediate_size) + ")";
      });
    }
  }
  if (l.ep > 1) {
    if (!a.is_moe()) return make("ep", "ep_needs_moe", false, text("expert parallelism needs a mixture-of-experts model"));
    if (a.moe.num_experts % l.ep != 0) {
      return make("ep", "ep_divides_experts", false,
                  [&] { return "ep = " + str(l.ep) + " must divide the " + str(a.moe.num_experts) + " experts"; });
    }
  }
  if (l.ep > 1 && l.behaviour.moe_parallel_folding) {
    // Megatron parallel_state.py: etp x ep x pp must divide the world (expert_data_parallel_size).
    if ((l.tp * l.dp * l.cp) % (l.ep * l.expert_tp()) != 0) {
      return make("ep", "ep_etp_divide_tp_dp_cp", false, [&] {
        return "expert layers fold ep x etp = " + str(l.ep * l.expert_tp()) + " into the tp x dp x cp = " +
               str(l.tp * l.dp * l.cp) + " ranks of a stage: it must divide them";
      });
    }
  } else if (l.ep > 1) {
    if ((l.dp * l.cp) % l.ep != 0) {
      return make("ep", "ep_divides_dp_cp", false, [&] {
        return "expert-parallel ranks come from the data- and context-parallel ranks: ep = " + str(l.ep) +
               " must divide dp x cp = " + str(l.dp * l.cp);
      });
    }
  }
  if (l.shard_degree > 0) {
    if (l.sharding == Sharding::kNone) {
      return make("shard_degree", "shard_degree", false, text("shard_degree (HSDP) needs sharding zero1, zero2 or zero3"));
    }
    if ((l.dp * l.cp) % l.shard_degree != 0) {
      return make("shard_degree", "shard_degree", false, [&] {
        return "shard_degree = " + str(l.shard_degree) + " must divide dp x cp = " + str(l.dp * l.cp);
      });
    }
  }
  if (t.offload == Offload::kParamsOptimizer && l.sharding != Sharding::kZero3) {
    // ZeRO-Infinity parameter offload and FSDP CPUOffload(offload_params) both shard parameters.
    return make("sharding", "offload_params_needs_zero3", false,
                text("parameter offload moves parameter shards to the CPU: it needs sharding zero3"));
  }
  return Result{};
}

}  // namespace

std::optional<LayoutViolation> check_layout(const ParallelLayout& l, const ModelArchitecture& a, const TrainingSetup& t) {
  return first_broken_rule<std::optional<LayoutViolation>>(l, a, t, [](const char* field, const char* code, bool unsupported, auto message) {
    return std::optional<LayoutViolation>(LayoutViolation{field, message(), unsupported, code});
  });
}

const char* broken_layout_rule(const ParallelLayout& l, const ModelArchitecture& a, const TrainingSetup& t) {
  return first_broken_rule<const char*>(l, a, t, [](const char*, const char* code, bool, auto) { return code; });
}

std::vector<std::int64_t> chunk_layers(const ParallelLayout& l, std::int64_t num_layers) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < l.pp * l.vpp; ++i) out.push_back(chunk_range(l, num_layers, i).count);
  return out;
}


std::int64_t chunks_in_flight(const ParallelLayout& l, std::int64_t stage, std::int64_t micro_batches) {
  const std::int64_t p = l.pp, v = l.vpp, m = std::max<std::int64_t>(1, micro_batches);
  if (p == 1) return 1;
  switch (l.schedule) {
    case PipelineSchedule::kGpipe: return m * v;
    case PipelineSchedule::k1F1B:
    case PipelineSchedule::kInterleaved:
      if (v == 1) return std::min(m, p - stage);
      // Megatron forward_backward_pipelining_with_interleaving: (p - r - 1) * 2 + (v - 1) * p
      // warm-up forwards, then one more before the first backward.
      return std::min(m * v, (p - stage - 1) * 2 + (v - 1) * p + 1);
  }
  return 1;
}

std::vector<RankKind> rank_kinds(const ParallelLayout& l, const ModelArchitecture& a, std::int64_t micro_batches) {
  const std::int64_t layers = a.num_layers + a.num_encoder_layers;
  const std::int64_t per_stage = l.tp * l.dp * l.cp;
  if (l.pp == 1) {
    RankKind k;
    k.name = "all ranks";
    k.ranks = per_stage;
    k.layers = {{0, layers}};
    std::vector<RankKind> one;
    one.push_back(std::move(k));  // (a braced list would copy it)
    return one;
  }
  auto stage_kind = [&](std::int64_t stage, const char* name) {
    RankKind k;
    k.name = name;
    k.stage = stage;
    k.ranks = per_stage;
    k.chunks = l.vpp;
    k.layers.reserve(static_cast<std::size_t>(l.vpp));
    for (std::int64_t c = 0; c < l.vpp; ++c) k.layers.push_back(chunk_range(l, layers, c * l.pp + stage));
    k.embedding = stage == 0;
    k.head = stage == l.pp - 1;
    k.chunks_in_flight = chunks_in_flight(l, stage, micro_batches);
    return k;
  };
  std::vector<RankKind> kinds;
  kinds.reserve(l.stage_layers.empty() ? 3 : static_cast<std::size_t>(l.pp));
  kinds.push_back(stage_kind(0, "first stage"));
  if (l.pp > 2) {
    // Stage 1 holds at least as many layers (the remainder goes to early stages) and
    // micro-batches as any later middle stage; explicit uneven splits list every middle stage.
    const std::int64_t last_middle = l.stage_layers.empty() ? 1 : l.pp - 2;
    for (std::int64_t s = 1; s <= last_middle; ++s) {
      RankKind k = stage_kind(s, "middle stage");
      if (l.stage_layers.empty()) k.ranks = per_stage * (l.pp - 2);
      else k.name = "stage " + std::to_string(s);
      kinds.push_back(std::move(k));
    }
  }
  kinds.push_back(stage_kind(l.pp - 1, "last stage"));
  return kinds;
}

}  // namespace memfit
