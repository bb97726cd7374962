// PEFT's shared-bank adapters: per-linear and per-model trained entries from PEFT's layer shapes
// (checked against PEFT's own num_trainable_params in the MetaMathQA results), and what each forward
// keeps (peft v0.21.2 tuners/{lily,tinylora,vblora,frod,adamss}/layer.py).
#include <catch2/catch.hpp>

#include <vector>

#include "training/parameters.h"
#include "training/peft_shared_adapters.h"
#include "../test_support.h"

using namespace memfit;

namespace {

TrainingSetup setup(Method m, std::int64_t rank) { return memfit_test::peft_setup(m, rank); }

// Llama-3.2-3B: h 3072, kv width 1024, intermediate 8192, 28 layers.
const AdaptedRole kQ{"q", 3072, 3072, 28}, kV{"v", 3072, 1024, 28};
const AdaptedRole kGate{"gate", 3072, 8192, 28}, kUp{"up", 3072, 8192, 28}, kDown{"down", 8192, 3072, 28};

std::int64_t total_params(const TrainingSetup& t, const std::vector<AdaptedRole>& roles) {
  std::int64_t n = shared_adapter_model_params(t, roles);
  for (const AdaptedRole& r : roles) n += r.layers * adapter_params(t, r.role, r.in, r.out);
  return n;
}

}  // namespace

TEST_CASE("LiLy trains a router per linear, A per stride_A layers and B once per target", "[training][peft]") {
  TrainingSetup t = setup(Method::kLily, 140);
  t.shared_adapter.lily_stride_a = 14;
  t.shared_adapter.lily_num_b = 2;
  CHECK(adapter_params(t, "gate", 3072, 8192) == 140 * 2);  // the router Linear(r, num_B)
  // lily--llama-3.2-3B-rank140-mlp-a2-b2-s8.0: PEFT reports 9,485,280 trainable parameters.
  CHECK(total_params(t, {kGate, kUp, kDown}) == 9'485'280);
  const AdaptedLinearTerms l = shared_adapter_terms(t, 3072, 8192, 4, 2);
  CHECK(l.saved_per_token == 4 * (3072 + 140 + 2));  // fp32 input copy, hidden, softmax output
  CHECK(l.saved_weight == 4 * 140 * 8192);           // combined_B
  CHECK(l.saved_weight_for_input_grad == 0);
  CHECK(l.backward_transient == 3 * 4 * 140 * 8192);
}

TEST_CASE("TinyLoRA trains u-vectors per group and keeps fp32 SVD factors", "[training][peft]") {
  TrainingSetup t = setup(Method::kTinyLora, 2);
  CHECK(adapter_params(t, "q", 3072, 3072) == 0);
  CHECK(total_params(t, {kQ, kV}) == 56 * 64);  // weight_tying 0: one v per linear
  t.shared_adapter.tinylora_weight_tying = 1.0;
  CHECK(total_params(t, {kQ, kV}) == 64);
  t.shared_adapter.tinylora_weight_tying = 0.5;
  CHECK(tinylora_groups(t, 56) == 28);
  CHECK(tinylora_groups(t, 5) == 2);  // round(2.5): Python rounds half to even
  const AdaptedLinearTerms l = shared_adapter_terms(t, 3072, 1024, 4, 2);
  CHECK(l.buffer_bytes == 4 * 2 * (3072 + 1024) + 4 * 64 * 2 * 2);
  CHECK(l.saved_per_token == 4 * 2);  // only h, for R's gradient
  CHECK(l.saved_weight_for_input_grad == 0);
}

TEST_CASE("VB-LoRA trains logits per linear and one bank, keeps the gathered vectors", "[training][peft]") {
  TrainingSetup t = setup(Method::kVblora, 4);
  CHECK(adapter_params(t, "q", 3072, 3072) == 4 * 12 * 256 + 12 * 4 * 256);
  CHECK(adapter_params(t, "v", 3072, 1024) == 4 * 12 * 256 + 4 * 4 * 256);
  CHECK(shared_adapter_model_params(t, {kQ, kV}) == 256 * 256);
  const AdaptedLinearTerms l = shared_adapter_terms(t, 3072, 1024, 4, 2);
  const std::int64_t picked = 2 * 4 * (3072 + 1024) / 256;  // topk per sub-vector
  CHECK(l.saved_per_token == 4 * (3072 + 4));
  CHECK(l.saved_weight == 4 * 1024 * 4 + picked * (4 * 256 + 4 + 8));
  CHECK(l.saved_weight_for_input_grad == 4 * 4 * 3072);
}

TEST_CASE("FRoD trains the sparse core and lambda, keeps device copies of U, V and the dense core", "[training][peft]") {
  TrainingSetup t = setup(Method::kFrod, 0);
  CHECK(frod_nonzeros(t, 3072) == 94'371);  // int(3072² · 0.01)
  // frod--llama-3.2-3B-default (q, v): PEFT reports 5,456,808 trainable parameters.
  CHECK(total_params(t, {kQ, kV}) == 5'456'808);
  t.shared_adapter.frod_sparse_rate = 1.0;
  CHECK(frod_nonzeros(t, 4) == 12);  // at most the off-diagonal entries
  t.shared_adapter.frod_sparse_rate = 0.01;
  const AdaptedLinearTerms l = shared_adapter_terms(t, 3072, 1024, 4, 2);
  CHECK(l.saved_per_token == 2 * 3072);  // z in the model dtype
  CHECK(l.saved_weight == 2 * 1024 * 3072 + 36 * 94'371 + 2 * 3072);
  CHECK(l.saved_weight_for_input_grad == 2 * 2 * 3072 * 3072);
  CHECK(l.buffer_bytes == 0);  // U, V and the indices stay on the CPU
  CHECK_FALSE(offloads_adapted_base_weight(t));
  t.shared_adapter.frod_offload_base = true;
  CHECK(offloads_adapted_base_weight(t));
}

TEST_CASE("AdaMSS's trained entries are bounded by its subspaces", "[training][peft]") {
  TrainingSetup t = setup(Method::kAdamss, 100);
  t.shared_adapter.adamss_subspaces = 32;
  CHECK(adapter_params(t, "v", 3072, 1024) == 32 * 100 + 1024);  // subspace_rank 1
  t.shared_adapter.adamss_subspace_rank = 2;
  CHECK(adamss_params_bound(t, 1024) == 2 * (32 * 100 + 1024));
  t.shared_adapter.adamss_subspace_rank = 1;
  const AdaptedLinearTerms l = shared_adapter_terms(t, 3072, 1024, 4, 2);
  CHECK(l.buffer_bytes == 4 * 100 * 3072);      // the fp32 PCA projection newB
  CHECK(l.saved_per_token == 2 * (100 + 32));   // the projection and each subspace's r_i outputs
  CHECK(l.saved_weight_for_input_grad == 2 * 100 * (3072 + 32));
}
