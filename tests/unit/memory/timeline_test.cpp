// The single-GPU timeline: hand-worked model states on a toy model, and relations the
// mechanisms imply (monotone in batch and sequence, checkpointing lowers activations, LoRA below
// full fine-tuning, the optimizer states appear only from the first step on).
#include <catch2/catch.hpp>

#include "hf_config/parse_hf_config.h"
#include "block/activations.h"
#include "memory/timeline.h"
#include "presets/registry.h"
#include "../test_support.h"

using namespace memfit;
using memfit_test::preset;

namespace {

ModelArchitecture toy() {
  // 2 layers, h 8, 2 heads (d 4), f 16, vocab 32, untied: every count is small enough to check by hand.
  return parse_hf_config_text(R"({"model_type":"llama","vocab_size":32,"hidden_size":8,
    "num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":2,"intermediate_size":16})");
}

Estimate run(const ModelArchitecture& a, const TrainingSetup& t) {
  return estimate_single_gpu(a, build_tensor_inventory(a), t);
}

// Rank-2 adapters on q and v of the toy model.
TrainingSetup lora_qv(Method method) {
  TrainingSetup t;
  t.method = method;
  t.lora_rank = 2;
  t.lora_targets = {"q", "v"};
  return t;
}

}  // namespace

TEST_CASE("full bf16 AdamW model states: 2 + 2 + 4 bytes per parameter", "[memory][states]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  // embed 32*8 + head 32*8 + 2 layers * (2 norms*8 + 4*64 + 3*128) + final norm 8
  REQUIRE(inv.total_params == 256 + 256 + 2 * (16 + 256 + 384) + 8);
  TrainingSetup t;
  t.precision = Precision::kBf16;
  t.optimizer = Optimizer::kAdamW;
  t.optimizer_impl = OptimizerImpl::kFused;
  const ModelStates m = compute_model_states(a, inv, t);
  CHECK(m.weights_bytes == 2 * inv.total_params);
  CHECK(m.gradients_bytes == 2 * inv.total_params);
  CHECK(m.optimizer_states_bytes == 4 * inv.total_params);
  CHECK(m.optimizer_step_temp_bytes == 0);
  t.optimizer_impl = OptimizerImpl::kForeach;  // foreach: a copy of exp_avg_sq at the step
  CHECK(compute_model_states(a, inv, t).optimizer_step_temp_bytes == 2 * inv.total_params);
}

TEST_CASE("LoRA trains r*(in+out) per targeted linear in fp32", "[memory][states]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  const ModelStates m = compute_model_states(a, inv, lora_qv(Method::kLora));
  CHECK(m.adapter_params == 2 * 2 * 2 * (8 + 8));       // 2 layers x {q, v} x r x (in + out)
  CHECK(m.trainable_params == m.adapter_params);
  CHECK(m.gradients_bytes == 4 * m.adapter_params);
  CHECK(m.weights_bytes == 2 * inv.total_params + 4 * m.adapter_params);
}

TEST_CASE("QLoRA stores block linears as NF4 with double-quantised absmax", "[memory][states]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  const TensorInventory inv = build_tensor_inventory(a);
  TrainingSetup t;
  t.method = Method::kQlora;
  t.lora_targets = {};
  const ModelStates m = compute_model_states(a, inv, t);
  const std::int64_t linear = inv.params_by_kind[static_cast<int>(ModuleKind::kAttention)] +
                              inv.params_by_kind[static_cast<int>(ModuleKind::kMlp)];
  const std::int64_t other = inv.total_params - linear;
  CHECK(m.weights_bytes == Approx(linear * 0.515869 + other * 4.0).epsilon(1e-6));
}

TEST_CASE("peak never falls with micro-batch or sequence length", "[memory][timeline]") {
  // Non-decreasing rather than increasing: at short sequences the optimizer step, which does not
  // depend on tokens, is the peak.
  const ModelArchitecture a = preset("Qwen/Qwen2.5-7B");
  TrainingSetup t;
  std::int64_t last = 0;
  for (std::int64_t b : {1, 2, 4, 8}) {
    t.micro_batch = b;
    const std::int64_t p = run(a, t).peak_allocated_bytes;
    CHECK(p >= last);
    last = p;
  }
  t.micro_batch = 1;
  t.seq_len = 256;
  const std::int64_t short_seq = run(a, t).peak_allocated_bytes;
  last = 0;
  for (std::int64_t s : {256, 1024, 4096, 8192}) {
    t.seq_len = s;
    const std::int64_t p = run(a, t).peak_allocated_bytes;
    CHECK(p >= last);
    last = p;
  }
  CHECK(last > short_seq);
}

TEST_CASE("checkpointing lowers the activation peak; LoRA stays below full fine-tuning", "[memory][timeline]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  TrainingSetup t;
  t.seq_len = 4096;
  const Estimate none = run(a, t);
  t.checkpointing = Checkpointing::kFull;
  const Estimate full = run(a, t);
  CHECK(full.peak_allocated_bytes < none.peak_allocated_bytes);
  t.method = Method::kLora;
  CHECK(run(a, t).peak_allocated_bytes < full.peak_allocated_bytes);
}

TEST_CASE("optimizer states are absent until the first step", "[memory][timeline]") {
  const ModelArchitecture a = preset("Qwen/Qwen2-0.5B-Instruct");
  TrainingSetup t;
  t.seq_len = 128;
  const Estimate e = run(a, t);
  CHECK(e.first_step_peak_allocated_bytes <= e.peak_allocated_bytes);
  CHECK(e.at_peak.total() == e.peak_tensor_bytes);
  CHECK(e.peak_reserved_bytes > e.peak_allocated_bytes);
  CHECK(e.device_total_bytes > e.peak_reserved_bytes);
  bool saw_optimizer = false;
  for (const TimelineEvent& ev : e.timeline) saw_optimizer = saw_optimizer || ev.phase == "optimizer";
  CHECK(saw_optimizer);
}

TEST_CASE("a large vocabulary puts the peak at the loss", "[memory][timeline]") {
  // Llama-3 (v = 128,256) at 8192 tokens without checkpointing: 12v bytes per token at the loss
  // backward dominate (research: the usual global peak for large-vocabulary models).
  const ModelArchitecture a = preset("meta-llama/Llama-3.2-1B-Instruct");
  TrainingSetup t;
  t.seq_len = 8192;
  t.checkpointing = Checkpointing::kFull;
  const Estimate e = run(a, t);
  CHECK(e.peak_phase == "backward");
  CHECK(e.peak_label == "loss backward");
  t.loss = LossKernel::kFused;
  CHECK(run(a, t).peak_allocated_bytes < e.peak_allocated_bytes);
}

TEST_CASE("DoRA adds a magnitude vector per adapted linear; int8 bases store 1 byte + a row scale", "[memory][states]") {
  const ModelArchitecture a = toy();
  const TensorInventory inv = build_tensor_inventory(a);
  const ModelStates dora = compute_model_states(a, inv, lora_qv(Method::kDora));
  CHECK(dora.adapter_params == 2 * 2 * (2 * (8 + 8) + 8));  // 2 layers x {q, v} x (r(in+out) + out)
  TrainingSetup t = lora_qv(Method::kLora);
  t.base_quant = BaseQuant::kInt8;
  const ModelStates int8 = compute_model_states(a, inv, t);
  // Block linears: 2 layers x (4 x 64 + 3 x 128) = 1280 weights, in 8 or 16 features per row.
  const std::int64_t attn = 2 * 4 * 64, mlp = 2 * (2 * 128 + 128);
  const std::int64_t quantised = attn * 1 + attn * 4 / 8 + (2 * 2 * 128) + (2 * 2 * 128) * 4 / 8 + (2 * 128) + (2 * 128) * 4 / 16;
  CHECK(mlp == 768);
  const std::int64_t others = (inv.total_params - attn - mlp) * 4;  // kbit prep: fp32
  CHECK(int8.weights_bytes == quantised + others + 4 * int8.adapter_params);
}

TEST_CASE("paged optimizer states sit outside the allocator; offloaded ones on the host", "[memory][states]") {
  const ModelArchitecture a = preset("Qwen/Qwen2-0.5B-Instruct");
  TrainingSetup t;
  t.seq_len = 256;
  t.optimizer = Optimizer::kPagedAdamW32bit;
  const Estimate paged = run(a, t);
  CHECK(paged.states.optimizer_states_bytes == 0);
  CHECK(paged.states.unmanaged_optimizer_states_bytes == 8 * paged.states.trainable_params);
  t.optimizer = Optimizer::kAdamW;
  t.precision = Precision::kFp32;
  const Estimate plain = run(a, t);
  CHECK(paged.device_total_bytes - paged.peak_reserved_bytes >=
        paged.states.unmanaged_optimizer_states_bytes);  // counted by nvidia-smi only
  // bitsandbytes steps the paged states with its own in-place kernel: no foreach temporaries,
  // whatever torch implementation the framework picks for its AdamW.
  for (const OptimizerImpl impl : {OptimizerImpl::kForeach, OptimizerImpl::kFused, OptimizerImpl::kForLoop}) {
    TrainingSetup q = t;
    q.optimizer = Optimizer::kPagedAdamW32bit;
    q.precision = Precision::kBf16;
    q.offload = Offload::kNone;
    q.optimizer_impl = impl;
    CHECK(run(a, q).states.optimizer_step_temp_bytes == 0);
  }
  t.offload = Offload::kOptimizer;
  const Estimate offloaded = run(a, t);
  CHECK(offloaded.states.optimizer_states_bytes == 0);
  // The fp32 states, and the CPU optimizer's fp32 gradient partition (4 bytes per parameter).
  CHECK(offloaded.states.host_bytes == plain.states.optimizer_states_bytes + 4 * plain.states.trainable_params);
  CHECK(offloaded.peak_allocated_bytes < plain.peak_allocated_bytes);
}

TEST_CASE("the optimizer in backward never holds every gradient", "[memory][timeline]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.2-1B-Instruct");
  TrainingSetup t;
  t.seq_len = 512;
  t.checkpointing = Checkpointing::kFull;
  const Estimate normal = run(a, t);
  t.optimizer_in_backward = true;
  const Estimate fused = run(a, t);
  CHECK(fused.peak_allocated_bytes < normal.peak_allocated_bytes);
  // At most one layer's gradients, the head's, and (tied) the output layer's contribution to the
  // shared table, which waits for the embedding's before its step runs.
  CHECK(a.tie_word_embeddings);
  CHECK(fused.at_peak.gradients_bytes <= fused.states.largest_layer_gradient_bytes + fused.states.head_gradient_bytes +
                                             fused.states.embedding_grad_bytes);
  CHECK(fused.at_peak.gradients_bytes < fused.states.gradients_bytes);
  for (const TimelineEvent& ev : fused.timeline) CHECK(ev.phase != "optimizer");
}

TEST_CASE("activation offload and selective recompute lower what stays on the device", "[memory][timeline]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.2-1B-Instruct");
  TrainingSetup t;
  t.seq_len = 8192;
  t.micro_batch = 8;  // 16 layer inputs of 64k tokens outweigh the model states
  t.loss = LossKernel::kFused;
  t.checkpointing = Checkpointing::kFull;
  const Estimate kept = run(a, t);
  t.offload = Offload::kActivations;
  CHECK(run(a, t).peak_allocated_bytes < kept.peak_allocated_bytes);
  t.offload = Offload::kNone;
  t.attention = AttentionKernel::kEager;
  t.checkpointing = Checkpointing::kNone;
  const LayerActivations eager = layer_activations(a, t, false, false, true);
  CHECK(eager.saved_per_token_per_position > 0);
  t.checkpointing = Checkpointing::kSelective;
  const LayerActivations selective = layer_activations(a, t, false, false, true);
  CHECK(selective.saved_per_token_per_position == 0);  // the s x s scores are recomputed
  CHECK(selective.saved_per_token == eager.saved_per_token);
}

TEST_CASE("torch.compile saves less per layer: fused RMSNorm and SwiGLU", "[memory][activations]") {
  const ModelArchitecture a = toy();  // h 8, f 16, two RMSNorms per layer, pure bf16
  TrainingSetup t;
  const LayerActivations eager = layer_activations(a, t, false, false, true);
  t.compile = true;
  const LayerActivations compiled = layer_activations(a, t, false, false, true);
  // Per norm the fp32 input copy (4h) goes; the MLP keeps gate and up, not the activation (2f).
  CHECK(eager.saved_per_token - compiled.saved_per_token == 2 * 4 * 8 + 2 * 16);
}

TEST_CASE("PEFT fp32 adapters keep one fp32 input copy per adapted linear", "[memory][activations]") {
  const ModelArchitecture a = toy();
  TrainingSetup t = lora_qv(Method::kLora);
  t.adapters_fp32 = false;  // bf16 adapters share the block input (2h) and keep r bf16 values each
  const LayerActivations shared = layer_activations(a, t, false, false, false);
  t.adapters_fp32 = true;   // each adapter: 4h fp32 copy + r fp32 values; the shared input goes
  const LayerActivations own = layer_activations(a, t, false, false, false);
  CHECK(own.saved_per_token - shared.saved_per_token == 2 * (4 * 8 + 4 * 2) - (2 * 8 + 2 * 2 * 2));
}

TEST_CASE("chunked and fused losses bound the logits", "[memory][timeline]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.2-1B-Instruct");
  TrainingSetup t;
  t.seq_len = 8192;
  t.checkpointing = Checkpointing::kFull;
  const std::int64_t standard = run(a, t).peak_allocated_bytes;
  t.loss = LossKernel::kChunked;
  const std::int64_t chunked = run(a, t).peak_allocated_bytes;
  t.loss = LossKernel::kFused;
  const std::int64_t fused = run(a, t).peak_allocated_bytes;
  CHECK(chunked < standard);
  CHECK(fused < chunked);
  // Standard, eager, upcast: the loss backward holds 12 bytes per token per vocabulary entry.
  t.loss = LossKernel::kStandard;
  const Estimate e = run(a, t);
  CHECK(e.peak_label == "loss backward");
  CHECK(e.at_peak.logits_loss_bytes == 12LL * 8192 * 128256);
}

// Llama-3.2-1B (tied, vocabulary 128,256) in bf16 at 8192 tokens, fully checkpointed, with a
// compiled chunked loss.
namespace {
TrainingSetup compiled_chunked_1b() {
  TrainingSetup t;
  t.precision = Precision::kBf16;
  t.seq_len = 8192;
  t.checkpointing = Checkpointing::kFull;
  t.loss = LossKernel::kChunked;
  t.compile = true;
  return t;
}
}  // namespace

TEST_CASE("a compiled chunked loss that upcasts inside the compiled function stores no fp32 chunk", "[memory][timeline]") {
  // torchtune's CEWithChunkedOutputLoss: compile_loss compiles compute_cross_entropy, i.e.
  // cross_entropy(chunk.float()). Forward: only the 8 bf16 logit chunks; the loss backward: the
  // chunks plus one chunk's bf16 gradient. With the upcast outside the compiled function the fp32
  // copy of one chunk is stored in the forward.
  const ModelArchitecture a = preset("meta-llama/Llama-3.2-1B-Instruct");
  TrainingSetup t = compiled_chunked_1b();
  t.loss_chunks = 8;
  t.logits_upcast = true;
  t.compile_fuses_chunk_upcast = true;
  const std::int64_t logits = 8192LL * 128256;
  auto logits_at = [&](const Estimate& e, const char* label) {
    for (const TimelineEvent& ev : e.timeline)
      if (ev.label == label) return ev.live.logits_loss_bytes;
    FAIL("no event " << label);
    return std::int64_t{0};
  };
  const Estimate fused = run(a, t);
  CHECK(logits_at(fused, "logits and cross-entropy") == 2 * logits);
  CHECK(logits_at(fused, "loss backward") == 2 * logits + 2 * logits / 8);
  t.compile_fuses_chunk_upcast = false;
  const Estimate outside = run(a, t);
  CHECK(logits_at(outside, "logits and cross-entropy") == 2 * logits + 4 * logits / 8);
  CHECK(logits_at(outside, "loss backward") == 2 * logits + 4 * logits / 8);
  CHECK(fused.peak_allocated_bytes <= outside.peak_allocated_bytes);
}

TEST_CASE("the output layer's backward holds the logits' gradient with the output layer's weight gradient", "[memory][timeline]") {
  // Llama-3.2-1B, tied: a trained head's gradient is the embedding table's (v x h). With a chunked
  // compiled loss and the optimizer in backward, the output layer's backward holds every chunk's
  // bf16 logits gradient (the loss backward runs before any output projection's) and the head's
  // weight gradient.
  const ModelArchitecture a = preset("meta-llama/Llama-3.2-1B-Instruct");
  TrainingSetup t = compiled_chunked_1b();
  t.optimizer_in_backward = true;
  const Estimate e = run(a, t);
  const TimelineEvent* loss = nullptr;
  const TimelineEvent* head = nullptr;
  for (const TimelineEvent& ev : e.timeline) {
    if (ev.label == "loss backward") loss = &ev;
    if (ev.label == "output layer backward") head = &ev;
  }
  REQUIRE(loss);
  REQUIRE(head);
  const std::int64_t logits = 8192LL * 128256;
  CHECK(head->live.logits_loss_bytes == 2 * logits);  // the gradient in bf16; nothing else held
  // Tied: the output layer's gradient is a contribution to the shared table (v x h, bf16), held
  // from here to the embedding backward, with the final norm's gradient.
  REQUIRE(a.tie_word_embeddings);
  CHECK(e.states.embedding_grad_bytes == 128256LL * 2048 * 2);
  CHECK(head->live.gradients_bytes == e.states.head_gradient_bytes + e.states.embedding_grad_bytes);
  // The 8 chunks' contributions to the table are summed, the first two out of place: two more (v x h).
  CHECK(head->live.temporaries_bytes - loss->live.temporaries_bytes == 2 * e.states.embedding_grad_bytes);
  CHECK(head->live.total() - loss->live.total() ==
        head->live.gradients_bytes + 2 * logits - loss->live.logits_loss_bytes +
            2 * e.states.embedding_grad_bytes);  // the rest unchanged
  for (const TimelineEvent& ev : e.timeline) {
    if (ev.phase == "backward" && ev.label.rfind("layer ", 0) == 0) CHECK(ev.live.gradients_bytes >= e.states.embedding_grad_bytes);
  }
  // A fused kernel never materialises the whole gradient: one chunk of it.
  t.loss = LossKernel::kFused;
  for (const TimelineEvent& ev : run(a, t).timeline) {
    if (ev.label == "output layer backward") CHECK(ev.live.logits_loss_bytes == 2LL * RuntimeProfile{}.fused_loss_chunk_tokens * 128256);
  }
}

TEST_CASE("eager attention of models that take QK^T in fp32 saves fp32 q and k", "[memory][activations]") {
  ModelArchitecture a = toy();  // h 8: 2 heads of 4 in bf16
  TrainingSetup t;
  t.attention = AttentionKernel::kEager;
  const LayerActivations plain = layer_activations(a, t, false, false, true);
  a.attention.upcast_qk = true;
  const LayerActivations upcast = layer_activations(a, t, false, false, true);
  // q and k (h values each per token) go from 2 to 4 bytes; the scores are unchanged.
  CHECK(upcast.saved_per_token - plain.saved_per_token == 2 * 2 * a.attention.num_heads * a.attention.head_dim);
  CHECK(upcast.saved_per_token_per_position == plain.saved_per_token_per_position);
  t.attention = AttentionKernel::kSdpa;  // fused kernels take q and k as they are
  const LayerActivations fused_upcast = layer_activations(a, t, false, false, true);
  a.attention.upcast_qk = false;
  CHECK(layer_activations(a, t, false, false, true).saved_per_token == fused_upcast.saved_per_token);
}

namespace {

const TimelineEvent& event(const Estimate& e, const std::string& label) {
  for (const TimelineEvent& ev : e.timeline) {
    if (ev.label == label) return ev;
  }
  FAIL("no event " << label);
  return e.timeline.front();
}

// Toy-model bf16 full fine-tuning of one sequence of 64 tokens (vocab 32: 64 x 32 logits).
TrainingSetup toy_bf16() {
  TrainingSetup t;
  t.precision = Precision::kBf16;
  t.seq_len = 64;
  t.logits_upcast = true;
  return t;
}

}  // namespace

TEST_CASE("a loop that holds its outputs keeps the logits through the step and the next forward", "[memory][timeline]") {
  const ModelArchitecture a = toy();
  TrainingSetup t = toy_bf16();
  const Estimate freed = run(a, t);
  t.outputs_held_across_steps = true;
  const Estimate held = run(a, t);
  const std::int64_t logits = 64 * 32 * 2;  // bf16, as the model returns them
  for (const char* label : {"embedding", "layers 0-1", "logits and cross-entropy", "loss backward", "layer 0", "optimizer step"}) {
    CHECK(event(held, label).live.total() - event(freed, label).live.total() == logits);
  }
  // A model that upcasts inside its forward returns, and so leaves held, the fp32 logits; its
  // 16-bit projection output is gone before the loss.
  t.logits_upcast_in_model = true;
  const Estimate fp32 = run(a, t);
  CHECK(event(fp32, "optimizer step").live.logits_loss_bytes == 64 * 32 * 4);
  CHECK(event(fp32, "logits and cross-entropy").live.logits_loss_bytes ==
        event(held, "logits and cross-entropy").live.logits_loss_bytes - logits + 64 * 32 * 2);
}

TEST_CASE("the embedding's dense gradient becomes the table's gradient unless it meets another", "[memory][timeline]") {
  ModelArchitecture a = toy();
  TrainingSetup t = toy_bf16();
  const Estimate untied = run(a, t);
  CHECK(event(untied, "embedding backward").live.temporaries_bytes == 0);  // AccumulateGrad keeps it
  a.tie_word_embeddings = true;  // the head's contribution waits for it; their sum is a third (v, h)
  const Estimate tied = run(a, t);
  CHECK(event(tied, "embedding backward").live.temporaries_bytes == 2 * 32 * 8 * 2);
}

TEST_CASE("final logit softcapping keeps tanh's output through the loss", "[memory][timeline]") {
  ModelArchitecture a = toy();
  const TrainingSetup t = toy_bf16();
  const Estimate plain = run(a, t);
  a.final_logit_softcapping = 30;
  const Estimate capped = run(a, t);
  for (const char* label : {"logits and cross-entropy", "loss backward"}) {
    CHECK(event(capped, label).live.logits_loss_bytes - event(plain, label).live.logits_loss_bytes == 64 * 32 * 2);
  }
}

TEST_CASE("transformers' gelu_new saves four 4h tensors where GELU saves one", "[memory][activations]") {
  ModelArchitecture a = parse_hf_config_text(
      R"({"model_type":"gpt2","vocab_size":32,"n_embd":8,"n_layer":2,"n_head":2,"n_positions":64})");
  REQUIRE(a.mlp.activation == "gelu_new");
  TrainingSetup t = toy_bf16();
  const LayerActivations new_gelu = layer_activations(a, t, false, false, true);
  a.mlp.activation = "gelu";
  const LayerActivations gelu = layer_activations(a, t, false, false, true);
  CHECK(new_gelu.saved_per_token - gelu.saved_per_token == 3 * 2 * 32);  // tanh, 0.5x, 1 + tanh at 4h
  t.compile = true;  // compiled, one fused kernel either way
  const LayerActivations compiled_gelu = layer_activations(a, t, false, false, true);
  a.mlp.activation = "gelu_new";
  CHECK(layer_activations(a, t, false, false, true).saved_per_token == compiled_gelu.saved_per_token);
}

TEST_CASE("Falcon's multi-query SDPA takes the math kernel and saves the probabilities", "[memory][activations]") {
  ModelArchitecture a = parse_hf_config_text(
      R"({"model_type":"falcon","vocab_size":32,"hidden_size":8,"num_hidden_layers":2,"num_attention_heads":2,"multi_query":true})");
  REQUIRE(a.attention.sdpa_unexpanded_kv);
  REQUIRE(a.attention.num_kv_heads == 1);
  TrainingSetup t = toy_bf16();
  const LayerActivations math = layer_activations(a, t, false, false, true);
  CHECK(math.saved_per_token_per_position == 2 * 4);  // fp32 probabilities of each head
  a.attention.sdpa_unexpanded_kv = false;  // a model that expands K/V (or passes enable_gqa)
  const LayerActivations flash = layer_activations(a, t, false, false, true);
  CHECK(flash.saved_per_token_per_position == 0);
  // math: fp32 copies of the scaled q (2 heads x 4) and of the one K/V head; flash: bf16 q, k, v and the lse
  CHECK(math.saved_per_token - flash.saved_per_token == 4 * (2 * 4 + 4 + 4) - (2 * (2 * 4 + 4 + 4) + 4 * 2));
}

TEST_CASE("LoRA on fused expert stacks keeps W + BA of each stack per layer", "[memory][activations]") {
  const ModelArchitecture a = parse_hf_config_text(
      R"({"model_type":"mixtral","vocab_size":32,"hidden_size":8,"num_hidden_layers":2,"num_attention_heads":2,
          "num_key_value_heads":2,"intermediate_size":16,"num_local_experts":4,"num_experts_per_tok":2})");
  TrainingSetup t = toy_bf16();
  t.method = Method::kLora;
  t.lora_targets = {"all-linear"};
  const LayerActivations beside = layer_activations(a, t, true, false, false);
  CHECK(beside.saved_per_layer == 0);
  t.lora_merges_fused_experts = true;
  const LayerActivations merged = layer_activations(a, t, true, false, false);
  const std::int64_t down = 4 * 16 * 8 * 2;  // 4 experts x (16 x 8) in bf16
  CHECK(merged.saved_per_layer == 3 * down);  // gate_up (2 x down) and down
  CHECK(merged.backward_transient_per_layer == down);
  // Only attention targeted: the experts are untouched.
  t.lora_targets = {"q", "v"};
  CHECK(layer_activations(a, t, true, false, false).saved_per_layer == 0);
  // The replay keeps them per layer from forward to backward, beside the per-token set (where
  // the experts' fp32 adapter input copies give way to the grouped matmuls' own inputs).
  t.lora_targets = {"all-linear"};
  const Estimate with = estimate_single_gpu(a, build_tensor_inventory(a), t);
  t.lora_merges_fused_experts = false;
  const Estimate without = estimate_single_gpu(a, build_tensor_inventory(a), t);
  CHECK(event(with, "logits and cross-entropy").live.activations_bytes -
            event(without, "logits and cross-entropy").live.activations_bytes ==
        2 * (3 * down + 64 * (merged.saved_per_token - beside.saved_per_token)));
}

TEST_CASE("per-layer rotary caches are buffers over the position table", "[memory][states]") {
  const ModelArchitecture a = parse_hf_config_text(R"({"model_type":"qwen2","vocab_size":32,"hidden_size":8,
    "num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":2,"intermediate_size":16,
    "max_position_embeddings":64})");
  const TensorInventory inv = build_tensor_inventory(a);
  TrainingSetup t = toy_bf16();
  const ModelStates plain = compute_model_states(a, inv, t);
  t.rotary_cache_per_layer = true;
  // cos and sin, 64 positions x head dim 4, bf16, in each of 2 layers.
  CHECK(compute_model_states(a, inv, t).weights_bytes - plain.weights_bytes == 2 * (2 * 64 * 4 * 2));
}

TEST_CASE("the shifted-logits copy is made at micro-batch > 1 only", "[memory][timeline]") {
  const ModelArchitecture a = toy();
  TrainingSetup t = toy_bf16();
  t.loss_shift_copy = true;
  const std::int64_t fp32_logits = 64 * 32 * 4;  // toy: 64 tokens a micro-batch, vocabulary 32
  const Estimate one = run(a, t);
  t.loss_shift_copy = false;
  CHECK(event(run(a, t), "logits and cross-entropy").live.logits_loss_bytes ==
        event(one, "logits and cross-entropy").live.logits_loss_bytes);  // [1, S-1, V] is contiguous already
  t.micro_batch = 2;
  t.seq_len /= 2;
  const Estimate two_plain = run(a, t);
  t.loss_shift_copy = true;
  CHECK(event(run(a, t), "logits and cross-entropy").live.logits_loss_bytes -
        event(two_plain, "logits and cross-entropy").live.logits_loss_bytes == fp32_logits);
}
