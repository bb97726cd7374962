// Which parameters train and the bytes a parameter and its optimizer states take: facts of the
// training setup that the memory replay and the step-time model both read.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "model/tensor_inventory.h"
#include "training/training_setup.h"

namespace memfit {

/// NF4 with block size 64 and double-quantised absmax: 4 bits per weight + 8-bit absmax per
/// 64 weights + one fp32 scale per 256 absmax blocks (bitsandbytes Linear4bit, Dettmers et al.
/// 2023 §3). In millionths of a byte per parameter, to keep integer arithmetic exact enough.
inline constexpr std::int64_t kNf4MicroBytesPerParam = 515'869;  // 0.5 + 1/64 + 4/(64*256)
/// GPTQ 4-bit, group size 128: packed int4 weights + one fp16 scale and one packed 4-bit zero
/// point per group of 128 input features (AutoGPTQ/optimum QuantLinear qweight/scales/qzeros).
inline constexpr std::int64_t kGptq4MicroBytesPerParam = 519'531;  // 0.5 + 2/128 + 0.5/128
/// bitsandbytes LLM.int8 (Linear8bitLt): int8 weights + one fp32 absmax (SCB) per output row.
inline constexpr std::int64_t kInt8RowScaleBytes = 4;

/// Whether the base weights of block `layer` (-1: embeddings, final norm, head) train:
/// full = all (under BAdam the active block only), freeze = the last k blocks, lora/qlora/dora = none.
bool layer_trains(const TrainingSetup& t, std::int64_t layer, std::int64_t num_layers) noexcept;
/// Freeze and BAdam train a range of decoder blocks: its first block, or 0 for other methods.
/// Below it no gradient is needed; above it frozen blocks still pass the gradient down.
bool trains_block_range(const TrainingSetup& t) noexcept;
std::int64_t first_trained_layer(const TrainingSetup& t, std::int64_t num_layers) noexcept;
/// A linear weight inside the transformer blocks (not the output layer or a router).
bool is_linear_in_block(const TensorSpec& s);
/// PEFT's modules_to_save copies this global tensor (the token embedding or the output layer) and
/// trains the copy: ModulesToSaveWrapper.update deep-copies the original module, which stays
/// frozen (peft v0.21.2 utils/other.py); a tied output layer's copy is its own storage (PEFT
/// reties it only with ensure_weight_tying, default false: tuners/lora/config.py).
bool peft_saves_module(const TrainingSetup& t, const TensorSpec& s);
/// Whether the tensors outside the blocks (embeddings, final norm, output layer) train: under full
/// fine-tuning only. Freeze tuning trains the last blocks alone (LLaMA-Factory
/// model/adapter.py _setup_freeze_tuning names "layers.{i}" modules); BAdam steps one block.
bool globals_train(const TrainingSetup& t, std::int64_t num_layers) noexcept;
/// Whether the output layer's weight trains: with the tensors outside the blocks, or PEFT's copy.
bool head_weight_trains(const TrainingSetup& t, std::int64_t num_layers) noexcept;
/// LoRA targets a linear weight of this role ("all-linear" = every linear in the blocks).
bool lora_targets_role(const TrainingSetup& t, const TensorSpec& spec);
/// Whether `t`'s adapter targets name a block linear of inventory role `role` (q k v o gate up
/// down; "all-linear" names every one; a fused projection carries the adapter when any of its
/// parts is named: qkv for q, k or v, gate_up for gate or up, MLA's q_a / q_b for q and kv_a /
/// kv_b for k or v). The one rule for the inventory's linears and the block program's matmuls.
bool adapter_targets_role(const TrainingSetup& t, std::string_view role);

/// PEFT LoKr's split of a dimension into m <= n with m·n = dim, m the largest divisor with m + n
/// shrinking (peft v0.21.2 tuners/lokr/layer.py factorization, factor -1).
std::pair<std::int64_t, std::int64_t> lokr_factorization(std::int64_t dim);
/// IA3 scales a feed-forward linear's input (PEFT feedforward_modules: down by default), the
/// others' output (peft v0.21.2 tuners/ia3/layer.py: ia3_l of (1, in) or (out, 1)).
inline bool ia3_scales_input(const std::string& role) { return role == "down" || role == "fc2"; }
/// Trainable parameters of one adapter of `t.method` on an (out x in) linear of `role`:
/// LoRA r(in+out) (+ out for DoRA's magnitude); IA3 one vector; LoHa two Hadamard-multiplied
/// LoRA pairs 2r(in+out) (tuners/loha/layer.py hada_w1_a/b, hada_w2_a/b); LoKr w1 (out_l x in_m)
/// and w2 (out_k x in_n), w2 as r-factors when r < max(out_k, in_n) / 2 (tuners/lokr/layer.py
/// update_layer, decompose_both false); VeRA lambda_d (r) and lambda_b (out) (tuners/vera/layer.py).
std::int64_t adapter_params(const TrainingSetup& t, const std::string& role, std::int64_t in, std::int64_t out);
/// P-tuning's prompt encoder on an h-wide model (peft v0.21.2 tuners/p_tuning/model.py
/// PromptEncoder, encoder_hidden_size = token_dim = h): the n x h embedding, then the MLP's three
/// h x h linears with biases, or a two-layer bidirectional LSTM (encoder_num_layers 2; per direction
/// 4h x input and 4h x h weights and two 4h biases; the second layer's input is 2h) and its
/// mlp_head Linear(2h, 2h), Linear(2h, h).
std::int64_t p_tuning_encoder_params(const TrainingSetup& t, std::int64_t h);
/// `wanted` when it divides `in`, else the nearest divisor of `in`, the lower on a tie (peft v0.21.2
/// tuners/oft/layer.py adjust_oft_parameters).
std::int64_t nearest_divisor(std::int64_t wanted, std::int64_t in);
/// OFT's / BOFT's block size on a linear with `in` inputs: from the block count (PEFT OFTConfig r)
/// or the block size, adjusted to divide `in` as OFTLayer.update_layer does.
std::int64_t orthogonal_block_for(const TrainingSetup& t, std::int64_t in);

/// Optimizer state bytes per trainable parameter whose own dtype has `elem` bytes (Adafactor's
/// factored rows and columns are added per tensor: 0 here).
std::int64_t state_bytes_per_param(Optimizer o, std::int64_t elem);
/// State tensors the optimizer keeps per parameter tensor (AdamW: exp_avg and exp_avg_sq).
std::int64_t optimizer_state_tensors(Optimizer o);
/// Elements GaLore / APOLLO keep for one rows x cols matrix at `rank`: exp_avg and exp_avg_sq of
/// the projected gradient (rank x the longer side) and the projector (rank x the shorter side),
/// the rank capped at the shorter side (galore_torch galore_projector.py proj_type "std").
std::int64_t projected_state_elems(std::int64_t rank, std::int64_t rows, std::int64_t cols);
/// Bytes of the temporaries of one projected matrix's step, elements of `elem` bytes: the update
/// (three rank x longer-side tensors, the projected-back m x n gradient and its scaled copy), or
/// for GaLore (`svd`) the fp32 torch.linalg.svd of the gradient at a projector refresh.
std::int64_t projected_step_temp_bytes(std::int64_t rank, std::int64_t rows, std::int64_t cols, std::int64_t elem, bool svd);

}  // namespace memfit
