// The block's op program (block/block_program.h) folded for shapes, FLOPs and saved matmul inputs,
// against widths written out by hand for a dense Llama, an MoE with a shared expert and MLA.
#include <catch2/catch.hpp>

#include <vector>

#include "block/block_program.h"
#include "hf_config/parse_hf_config.h"
#include "model/tensor_inventory.h"
#include "training/parameters.h"
#include "../test_support.h"
#include "toy_models.h"

using namespace memfit;

namespace {

// Llama-3-8B's block: h 4096, 32 heads and 8 K/V heads of 128, MLP 14336.
ModelArchitecture llama3_8b() {
  return parse_hf_config_text(R"({"model_type":"llama","vocab_size":128256,"hidden_size":4096,
    "num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336})");
}

// DeepSeek-V2-Lite-like MLA toy: h 16, 4 heads, q/k heads 6 + 2 wide, v heads 4, plain q_proj.
ModelArchitecture mla_toy() {
  return parse_hf_config_text(R"({"model_type":"deepseek_v2","vocab_size":32,"hidden_size":16,
    "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":4,"intermediate_size":24,
    "q_lora_rank":null,"kv_lora_rank":8,"qk_nope_head_dim":6,"qk_rope_head_dim":2,"v_head_dim":4,
    "n_routed_experts":4,"num_experts_per_tok":2,"moe_intermediate_size":6,"n_shared_experts":1})");
}

struct Mm {
  std::int64_t in, out;
  bool column;
};

void check_matmuls(const std::vector<BlockMatmul>& got, const std::vector<Mm>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("matmul " << i);
    CHECK(got[i].in == want[i].in);
    CHECK(got[i].out == want[i].out);
    CHECK(got[i].column == want[i].column);
  }
}

// One part's saved matmul inputs at tp (routed experts at the same tp).
MatmulInputSaves inputs_of(const BlockProgram& p, BlockPart part, std::int64_t tp) {
  return saved_matmul_inputs(p, tp, tp)[static_cast<std::size_t>(part)];
}

double program_flops(const BlockProgram& p, std::int64_t tp) {
  double flops = 0;
  p.for_each_matmul(tp, tp, [&](const BlockOp& op, std::int64_t split) { flops += op.flops_per_token(split); });
  return flops;
}

}  // namespace

TEST_CASE("a dense Llama block is q k v o gate up down, split by Megatron's column and row rules", "[block]") {
  const ModelArchitecture a = llama3_8b();
  check_matmuls(block_matmuls(a, false, 1), {{4096, 4096, true}, {4096, 1024, true}, {4096, 1024, true}, {4096, 4096, false},
                                             {4096, 14336, true}, {4096, 14336, true}, {14336, 4096, false}});
  check_matmuls(block_matmuls(a, false, 8), {{4096, 512, true}, {4096, 128, true}, {4096, 128, true}, {512, 4096, false},
                                             {4096, 1792, true}, {4096, 1792, true}, {1792, 4096, false}});
  // tp 16: 2 query heads per rank; the 8 K/V heads are replicated, one per rank.
  check_matmuls(block_matmuls(a, false, 16), {{4096, 256, true}, {4096, 128, true}, {4096, 128, true}, {256, 4096, false},
                                              {4096, 896, true}, {4096, 896, true}, {896, 4096, false}});
  const BlockProgram p = block_program(a, false);
  CHECK(p.matmul_count() == 7);
  CHECK(program_flops(p, 1) == 2.0 * (2 * 4096.0 * 4096 + 2 * 4096.0 * 1024 + 3 * 4096.0 * 14336));
}

TEST_CASE("the program's FLOPs are the inventory's block linears for llama and an MoE", "[block]") {
  for (const ModelArchitecture& a : {llama3_8b(), memfit_test::moe_toy()}) {
    const TensorInventory inv = build_tensor_inventory(a);
    for (const LayerGroup& g : inv.groups) {
      double inventory = 0;  // 2 x weights a token passes through (routed experts: top_k copies)
      for (const TensorSpec& s : g.tensors) {
        // The router and Qwen's scalar shared-expert gate (h x 1) are not among the program's matmuls.
        if (!is_linear_in_block(s) || s.role == "shared_gate") continue;
        inventory += 2.0 * static_cast<double>(s.numel()) * static_cast<double>(s.kind == ModuleKind::kExpert ? a.moe.top_k : s.copies);
      }
      CHECK(program_flops(block_program(a, g.moe), 1) == inventory);
    }
  }
}

TEST_CASE("an MoE block repeats the routed expert per top-k copy, then its shared expert", "[block]") {
  const ModelArchitecture a = memfit_test::moe_toy();
  // Routed experts 5 wide (ceil(5 / 2) = 3 per rank at tp 2), the shared expert 12.
  check_matmuls(block_matmuls(a, true, 1), {{8, 8, true}, {8, 4, true}, {8, 4, true}, {8, 8, false},
                                            {8, 5, true}, {8, 5, true}, {5, 8, false},
                                            {8, 5, true}, {8, 5, true}, {5, 8, false},
                                            {8, 12, true}, {8, 12, true}, {12, 8, false}});
  check_matmuls(block_matmuls(a, true, 2), {{8, 4, true}, {8, 4, true}, {8, 4, true}, {4, 8, false},
                                            {8, 3, true}, {8, 3, true}, {3, 8, false},
                                            {8, 3, true}, {8, 3, true}, {3, 8, false},
                                            {8, 6, true}, {8, 6, true}, {6, 8, false}});
  // Expert tensor parallelism splits only the routed copies.
  std::vector<std::int64_t> widths;
  block_program(a, true).for_each_matmul(2, 1, [&](const BlockOp& op, std::int64_t split) { widths.push_back(op.out.at(split)); });
  CHECK(widths == std::vector<std::int64_t>{4, 4, 4, 8, 5, 5, 8, 5, 5, 8, 6, 6, 8});
}

TEST_CASE("MLA's attention runs every query head with its own K/V head, nope + rope wide", "[block]") {
  const ModelArchitecture a = mla_toy();
  const AttentionDims d = attention_dims(a);
  CHECK(d.heads == 4);
  CHECK(d.kv_heads == 4);
  CHECK(d.qk_head_dim == 8);
  CHECK(d.v_head_dim == 4);
  // q and k 4 x 8, v 4 x 4, o from 4 x 4; experts 6 wide (top 2), the shared expert 1 x 6.
  check_matmuls(block_matmuls(a, true, 1), {{16, 32, true}, {16, 32, true}, {16, 16, true}, {16, 16, false},
                                            {16, 6, true}, {16, 6, true}, {6, 16, false},
                                            {16, 6, true}, {16, 6, true}, {6, 16, false},
                                            {16, 6, true}, {16, 6, true}, {6, 16, false}});
  check_matmuls(block_matmuls(a, false, 4), {{16, 8, true}, {16, 8, true}, {16, 4, true}, {4, 16, false},
                                             {16, 6, true}, {16, 6, true}, {6, 16, false}});
}

TEST_CASE("a fused qkv is one column-parallel matmul over the query and K/V heads", "[block]") {
  const ModelArchitecture a = parse_hf_config_text(R"({"model_type":"phi3","vocab_size":32,"hidden_size":8,
    "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":6})");
  // qkv: 4 heads x 2 + 2 x (2 K/V heads x 2); gate_up: 2 x 6.
  check_matmuls(block_matmuls(a, false, 1), {{8, 16, true}, {8, 8, false}, {8, 12, true}, {6, 8, false}});
  // tp 4: one query head, one (replicated) K/V head, gate_up 2 x ceil(6 / 4).
  check_matmuls(block_matmuls(a, false, 4), {{8, 2 + 4, true}, {2, 8, false}, {8, 4, true}, {2, 8, false}});
}

TEST_CASE("the matmuls save their inputs where their weights or adapters need them", "[block]") {
  const ModelArchitecture a = llama3_8b();
  TrainingSetup t;  // pure bf16, full fine-tuning
  SECTION("trained weights keep the shared q/k/v input, o's, the MLP's and down's") {
    const BlockProgram p = block_program(a, t, false, true);
    const MatmulInputSaves attn = inputs_of(p, BlockPart::kAttention, 8);
    const MatmulInputSaves mlp = inputs_of(p, BlockPart::kMlp, 8);
    CHECK(attn.full_width == 2 * 4096);
    CHECK(attn.split == 2 * 512);
    CHECK(mlp.full_width == 2 * 4096);
    CHECK(mlp.split == 2 * 1792);
  }
  SECTION("AMP keeps a 16-bit autocast copy per separate projection") {
    t.precision = Precision::kAmpBf16;
    const BlockProgram p = block_program(a, t, false, true);
    CHECK(inputs_of(p, BlockPart::kAttention, 1).full_width == 3 * 2 * 4096);
    CHECK(inputs_of(p, BlockPart::kMlp, 1).full_width == 2 * 2 * 4096);
  }
  SECTION("fp8 linears keep 1-byte casts") {
    t.precision = Precision::kFp8;
    t.fp8_saves_fp8_inputs = true;
    const BlockProgram p = block_program(a, t, false, true);
    CHECK(inputs_of(p, BlockPart::kAttention, 1).full_width == 4096);
    CHECK(inputs_of(p, BlockPart::kMlp, 1).split == 14336);
  }
  SECTION("a frozen block keeps only what its adapters read") {
    t.method = Method::kLora;
    t.lora_targets = {"q", "v"};
    t.adapters_fp32 = false;  // adapters in the model dtype share the base input
    const BlockProgram p = block_program(a, t, false, false);
    CHECK(inputs_of(p, BlockPart::kAttention, 1).full_width == 2 * 4096);
    CHECK(inputs_of(p, BlockPart::kMlp, 1).full_width == 0);
    CHECK(inputs_of(p, BlockPart::kMlp, 1).split == 0);
    t.adapters_fp32 = true;  // fp32 adapters keep their own copies (counted with the adapters)
    CHECK(inputs_of(block_program(a, t, false, false), BlockPart::kAttention, 1).full_width == 0);
  }
}

TEST_CASE("merged LoRA expert stacks make the routed matmuls save their inputs, not the shared expert's", "[block]") {
  const ModelArchitecture a = memfit_test::moe_toy();
  TrainingSetup t;
  t.method = Method::kLora;
  t.lora_targets = {"down"};
  t.lora_merges_fused_experts = true;
  const BlockProgram p = block_program(a, t, true, false);
  const MatmulInputSaves routed = inputs_of(p, BlockPart::kRoutedExpert, 2);
  CHECK(routed.full_width == 2 * 8);  // one copy's gate/up input
  CHECK(routed.split == 2 * 3);       // its down input, ceil(5 / 2) wide
  // The shared expert is an ordinary module: its adapted down keeps down's input (fp32 adapters
  // keep their own copy instead).
  CHECK(inputs_of(p, BlockPart::kSharedExpert, 2).full_width == 0);
  CHECK(inputs_of(p, BlockPart::kSharedExpert, 2).split == 0);
}

TEST_CASE("a Llama block's steps: its two norms, rotary, the attention core, the activation and two residual adds", "[block]") {
  const ModelArchitecture a = llama3_8b();
  const BlockProgram p = block_program(a, false);
  std::vector<StepKind> kinds;
  double wide_eager = 0, split_eager = 0, wide_compiled = 0;
  ByRuntime kernels;
  for (std::size_t i = 0; i < p.step_count; ++i) {
    const BlockStep& s = p.steps[i];
    kinds.push_back(s.kind);
    const double elems = static_cast<double>(s.elems.at(1));
    (s.sequence_split ? wide_eager : split_eager) += s.hbm_bytes_per_elem.eager * elems;
    if (s.sequence_split) wide_compiled += s.hbm_bytes_per_elem.compiled * elems;
    kernels.eager += s.kernels.eager;
    kernels.compiled += s.kernels.compiled;
    kernels.fused += s.kernels.fused;
    CHECK(s.saved.at(1) == 0);  // the setup-free program saves nothing
  }
  CHECK(kinds == std::vector<StepKind>{StepKind::kNorm, StepKind::kRotary, StepKind::kAttentionCore, StepKind::kActivation,
                                       StepKind::kResidual});
  // Eager: 36 bytes per norm element and 6 per residual add on the hidden width; SwiGLU's 10 per
  // MLP column, rotary's 24 per rotated q and k element (32 + 8 heads of 128).
  CHECK(wide_eager == 2 * 36.0 * 4096 + 2 * 6.0 * 4096);
  CHECK(split_eager == 10.0 * 14336 + 24.0 * (32 + 8) * 128);
  CHECK(wide_compiled == 2 * 6.0 * 4096);  // the residual add fused into the norm's kernel
  CHECK(kernels.eager == 2 * 8 + 10 + 2 + 2 + 2);
  CHECK(kernels.compiled == 2 + 1 + 1 + 1);
  CHECK(kernels.fused == 2 + 1 + 2 + 2 + 1);
}

TEST_CASE("the steps save the norms' fp32 copies and the flash kernel's q, k, v and logsumexp, split by tp", "[block]") {
  const ModelArchitecture a = llama3_8b();
  TrainingSetup t;
  t.precision = Precision::kBf16;
  t.attention = AttentionKernel::kFlash;
  t.method = Method::kLora;  // frozen norm weights: no normalised copy
  auto saved = [&](StepKind kind, std::int64_t tp) {
    const BlockProgram p = block_program(a, t, false, false);
    std::int64_t bytes = 0;
    for (std::size_t i = 0; i < p.step_count; ++i) {
      if (p.steps[i].kind == kind) bytes += p.steps[i].saved.at(tp);
    }
    return bytes;
  };
  CHECK(saved(StepKind::kNorm, 1) == 2 * (4 * 4096 + 4));  // fp32 input copy and rsqrt, per norm
  // q (32 heads) and the fp32 logsumexp, k and v (8 heads of 128) in bf16.
  CHECK(saved(StepKind::kAttentionCore, 1) == 32 * (2 * 128 + 4) + 8 * 2 * 256);
  CHECK(saved(StepKind::kAttentionCore, 8) == 4 * (2 * 128 + 4) + 1 * 2 * 256);
  CHECK(saved(StepKind::kAttentionCore, 16) == 2 * (2 * 128 + 4) + 1 * 2 * 256);  // a K/V head per rank
  // Selective checkpointing recomputes the core: the logsumexp goes, q, k, v stay.
  t.checkpointing = Checkpointing::kSelective;
  CHECK(saved(StepKind::kAttentionCore, 1) == 32 * 2 * 128 + 8 * 2 * 256);
}

TEST_CASE("an MoE block's activation runs per routed copy and in the shared expert, its launches once", "[block]") {
  const BlockProgram p = block_program(memfit_test::moe_toy(), true);
  double elems = 0, eager_kernels = 0;
  int activations = 0;
  for (std::size_t i = 0; i < p.step_count; ++i) {
    const BlockStep& s = p.steps[i];
    if (s.kind != StepKind::kActivation) continue;
    ++activations;
    elems += static_cast<double>(s.elems.at(1)) * (s.part == BlockPart::kRoutedExpert ? static_cast<double>(p.routed_copies) : 1.0);
    eager_kernels += s.kernels.eager;
  }
  CHECK(activations == 2);
  CHECK(elems == 2 * 5 + 12);       // top 2 experts of width 5, the shared expert's 12
  CHECK(eager_kernels == 2);        // SiLU and the gate product, once per block
  // SwiGLU saves gate out, act out and up out per column of a rank (bf16): the routed expert's 5
  // columns split 2 ways round up to 3.
  TrainingSetup t;
  t.precision = Precision::kBf16;
  const BlockProgram saved = block_program(memfit_test::moe_toy(), t, true, true);
  for (std::size_t i = 0; i < saved.step_count; ++i) {
    const BlockStep& s = saved.steps[i];
    if (s.kind == StepKind::kActivation && s.part == BlockPart::kRoutedExpert) CHECK(s.saved.at(2) == 3 * 2 * 3);
    if (s.kind == StepKind::kActivation && s.part == BlockPart::kSharedExpert) CHECK(s.saved.at(2) == 3 * 2 * 6);
  }
}

TEST_CASE("an MoE block's router and dispatch are steps: the logits per expert, each routed copy hidden wide", "[block]") {
  const ModelArchitecture a = memfit_test::moe_toy();
  const BlockProgram p = block_program(a, true);
  std::vector<StepKind> kinds;
  for (std::size_t i = 0; i < p.step_count; ++i) kinds.push_back(p.steps[i].kind);
  // Forward order: the router and the dispatch between the attention core and the experts.
  CHECK(kinds == std::vector<StepKind>{StepKind::kNorm, StepKind::kRotary, StepKind::kAttentionCore, StepKind::kRouter,
                                       StepKind::kDispatch, StepKind::kActivation, StepKind::kActivation,
                                       StepKind::kResidual});
  const BlockProgram dense = block_program(a, false);
  for (std::size_t i = 0; i < dense.step_count; ++i) {
    CHECK(dense.steps[i].kind != StepKind::kRouter);
    CHECK(dense.steps[i].kind != StepKind::kDispatch);
  }
}

TEST_CASE("the router saves 8 bytes per expert and the dispatch a hidden-wide copy per routed token, as before", "[block]") {
  // Mixtral-8x7B: h 4096, 8 experts, top 2. The formulas the program replaces (activations.cpp):
  // 8 x experts on the hidden-width side (router logits and fp32 probabilities), and e x h per
  // routed copy (the permuted token) beside the routed expert's saves.
  const ModelArchitecture a = memfit_test::preset("mistralai/Mixtral-8x7B-Instruct-v0.1");
  for (const Precision precision : {Precision::kBf16, Precision::kFp32}) {
    TrainingSetup t;
    t.precision = precision;
    const std::int64_t e = activation_bytes(precision);
    const BlockProgram p = block_program(a, t, true, true);
    CHECK(p.routed_copies == 2);
    int routers = 0, dispatches = 0;
    for (std::size_t i = 0; i < p.step_count; ++i) {
      const BlockStep& s = p.steps[i];
      for (const std::int64_t tp : {1, 2, 8}) {
        if (s.kind == StepKind::kRouter) {
          CHECK(s.sequence_split);  // replicated by tp, split by sequence parallelism
          CHECK(s.saved.at(tp) == 8 * 8);
          CHECK(s.part == BlockPart::kAttention);  // not a routed copy: once per token
        }
        if (s.kind == StepKind::kDispatch) {
          CHECK(!s.sequence_split);
          CHECK(s.part == BlockPart::kRoutedExpert);  // once per routed copy
          CHECK(s.saved.at(tp) == e * 4096);
          CHECK(s.elems.at(tp) == 4096);  // each all-to-all carries the copy's hidden width
        }
      }
      if (s.kind == StepKind::kRouter) {
        ++routers;
        CHECK(s.all_to_alls_fwd == 0);
      }
      if (s.kind == StepKind::kDispatch) {
        ++dispatches;
        CHECK(s.all_to_alls_fwd == 2);  // dispatch and combine
        // No traffic or launches of their own in the step time (the permutes are not counted).
        CHECK(s.hbm_bytes_per_elem.eager == 0);
        CHECK(s.kernels.eager == 0);
      }
    }
    CHECK(routers == 1);
    CHECK(dispatches == 1);
  }
}
