// What is trained and how: method, dtypes, optimizer, batch shape, kernels, and the behaviours a
// training framework fixes in its code (logit upcast, adapter dtype, which counter it logs).
// Plain data, no JSON; the api resolves a request and a framework profile into this.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace memfit {

/// ia3 .. vera: PEFT's other adapters on frozen linears; prompt_tuning / prefix_tuning: PEFT's
/// virtual tokens (extra input embeddings / extra keys and values per layer); adapter /
/// adapter_v2: LitGPT's LLaMA-Adapter and its v2 (a gated prefix attention in the top layers; v2
/// adds a bias and scale to every linear and trains the norms); adaption_prompt: PEFT's LLaMA-Adapter;
/// p_tuning: PEFT's P-tuning (prompt tuning whose virtual tokens an MLP or LSTM encoder makes);
/// oft / boft: PEFT's orthogonal fine-tuning (a block-diagonal rotation of each adapted linear's
/// input; BOFT's butterfly form builds the full in x in rotation); ln_tuning: PEFT's LN tuning
/// (trainable copies of the block and final norms); miss: PEFT's MiSS (a shard shared across each
/// adapted linear's input blocks), glora: PEFT's GLoRA (the weight scaled and shifted by trained
/// paths, training/peft_bench.h).
/// fourierft .. peanut, road .. unilora: PEFT's newer adapters on linears (training/peft_linear_adapters.h):
/// weight-space and FFT ones (FourierFT, WaveFT, HiRA, SHiRA, C3A, PEANUT), low-rank variants (DeLoRA,
/// GraLoRA, DEFT, UniLoRA), an SVD split (OSF), output-side ones (RoAd's rotation, BEFT's bias) and
/// PVeRA (VeRA's frozen projections with a sampled middle), AdaLoRA (SVD-form LoRA with a rank
/// allocator), PSOFT (an r x r orthogonal map between frozen SVD factors) and RandLoRA (trained
/// scales of shared random bases); trainable_tokens: PEFT's trainable rows of
/// the frozen token embedding. lily .. adamss: PEFT's shared-bank / shared-projection adapters
/// (training/peft_shared_adapters.h): LiLy, TinyLoRA, VB-LoRA, FRoD, AdaMSS.
enum class Method { kFull, kLora, kQlora, kDora, kFreeze, kIa3, kLoha, kLokr, kVera, kPromptTuning, kPrefixTuning,
                    kAdapter, kAdapterV2, kAdaptionPrompt, kPTuning, kOft, kBoft, kLnTuning,
                    kMiss, kGlora,
                    kFourierFt, kWaveFt, kHira, kShira, kC3a, kDelora, kGralora, kPeanut,
                    kLily, kTinyLora, kVblora, kFrod, kAdamss,
                    kRoad, kOsf, kDeft, kBeft, kTrainableTokens, kPvera, kUnilora,
                    kAdalora, kPsoft, kRandlora };
inline constexpr int kMethodCount = 43;
static_assert(static_cast<int>(Method::kRandlora) + 1 == kMethodCount, "kMethodCount counts Method (the last value)");
/// The shapes of PEFT's shared-bank adapters (peft v0.21.2 tuners/<method>/config.py defaults):
/// LilyConfig stride_A / num_B, TinyLoraConfig u / weight_tying, VBLoRAConfig num_vectors /
/// vector_length / topk, FrodConfig sparse_rate / runtime_offload_base_weight, AdamssConfig
/// num_subspaces / subspace_rank. Their r is lora_rank.
struct SharedAdapterShape {
  std::int64_t lily_stride_a = 1;
  std::int64_t lily_num_b = 2;
  std::int64_t tinylora_u = 64;
  double tinylora_weight_tying = 0.0;
  std::int64_t vblora_num_vectors = 256;
  std::int64_t vblora_vector_length = 256;
  std::int64_t vblora_topk = 2;
  double frod_sparse_rate = 0.01;
  bool frod_offload_base = false;
  std::int64_t adamss_subspaces = 5;
  std::int64_t adamss_subspace_rank = 1;
  friend bool operator==(const SharedAdapterShape&, const SharedAdapterShape&) = default;
};
/// RoAd's variant (peft v0.21.2 tuners/road/config.py variant, default road_1): angles and scales
/// per output pair (out/2 each), per output (out), or two per output (2 out).
enum class RoadVariant { kRoad1, kRoad2, kRoad4 };
/// MiSS's shard shape (peft v0.21.2 tuners/miss/config.py init_weights): default True (r x out),
/// "bat" (out/r blocks of r x r, merged into the weight each forward), "mini" (r x mini_r, repeated).
enum class MissShape { kDefault, kBat, kMini };
/// GLoRA's path for the weight's scale A and shift B (peft v0.21.2 tuners/glora/config.py
/// config_A_B): rank-r factors, an out-wide column, or one scalar.
enum class GloraPath { kLora, kVector, kConstant };
/// P-tuning's prompt encoder (peft v0.21.2 tuners/p_tuning/config.py encoder_reparameterization_type).
enum class PromptEncoder { kMlp, kLstm };
/// LoRA's initialisation (PEFT init_lora_weights): PiSSA and OLoRA set A and B from an SVD / QR of
/// the base weight and subtract them from it at load; training then runs as LoRA's.
enum class LoraInit { kDefault, kGaussian, kPissa, kOlora };
enum class BaseQuant { kNone, kNf4, kInt8, kGptq4 };
/// amp_*: fp32 weights with 16-bit autocast compute; bf16/fp16: pure 16-bit; fp8: fp8 linears
/// (Transformer Engine style) on top of pure bf16.
enum class Precision { kFp32, kAmpBf16, kAmpFp16, kBf16, kFp16, kFp8 };
/// galore_adamw / apollo_adamw / apollo_mini: AdamW moments of a rank-r projection of each block
/// linear's gradient plus the projector (parameters.h projected_state_elems); adam_mini: one
/// first moment per element, one second moment per output row (Adam-mini's blocks).
enum class Optimizer { kAdamW, kAdamW8bit, kPagedAdamW8bit, kPagedAdamW32bit, kAdamW4bit, kSgd,
                       kSgdMomentum, kAdafactor, kLion, kMuon, kGaloreAdamW, kApolloAdamW, kApolloMini, kAdamMini };
inline constexpr int kOptimizerCount = 14;
static_assert(static_cast<int>(Optimizer::kAdamMini) + 1 == kOptimizerCount, "kOptimizerCount counts Optimizer (the last value)");
enum class OptimizerImpl { kForeach, kFused, kForLoop };
/// full: every block recomputed from its input; selective: the attention core recomputed
/// (Megatron `--recompute-activations`, core_attn).
enum class Checkpointing { kNone, kFull, kSelective };
/// flash_triton: FlashAttention's Triton kernel (flash_attn/flash_attn_triton.py of 2022-2023, run by
/// llm-foundry's attn_impl "triton"): the flash kernel's memory, at its own rates (perf_model.cpp).
enum class AttentionKernel { kEager, kSdpa, kFlash, kFlashTriton };
/// chunked: torchtune / litgpt (every chunk's logits kept until backward); fused: a generic fused
/// linear + CE (RuntimeProfile::fused_loss_chunk_tokens at a time); the logits-free kernels
/// (block/loss_kernels.h): TRL chunked_nll and fused LM head, Liger fused linear CE, Cut Cross-Entropy, Unsloth's.
enum class LossKernel { kStandard, kChunked, kFused, kChunkedNll, kTrlFusedHead, kLigerFlce, kCutCe, kUnslothFusedCe };
enum class Offload { kNone, kOptimizer, kParamsOptimizer, kActivations };
/// The allocator counter a framework's own memory log prints (docs/frameworks.md).
enum class MemoryCounter { kMaxAllocated, kPeakActive, kMaxReserved, kNvidiaSmi };
/// Where AMP keeps its 16-bit compute weights. autocast: fp32 parameters cast per use (torch.amp);
/// master_in_optimizer: a 16-bit model plus an fp32 master copy inside the optimizer (Megatron
/// Float16OptimizerWithFloat16Params / DistributedOptimizer, DeepSpeed bf16 and fp16 optimizers);
/// gathered_16bit: fp32 parameter shards gathered as 16-bit for compute (FSDP
/// MixedPrecisionPolicy(param_dtype=bfloat16)).
enum class AmpWeights { kAutocast, kMasterInOptimizer, kGathered16bit };

struct TrainingSetup {
  Method method = Method::kFull;
  BaseQuant base_quant = BaseQuant::kNone;   // qlora implies nf4
  std::int64_t lora_rank = 16;
  std::vector<std::string> lora_targets = {"q", "v"};  // short roles; "all-linear" expands
  double lora_dropout = 0.0;
  /// PEFT's modules_to_save: full trainable copies of the token embedding / the output layer
  /// beside the frozen originals (peft v0.21.2 utils/other.py ModulesToSaveWrapper).
  bool lora_saves_embedding = false;
  bool lora_saves_head = false;
  LoraInit lora_init = LoraInit::kDefault;
  std::int64_t virtual_tokens = 20;  // prompt_tuning / prefix_tuning: PEFT num_virtual_tokens
  PromptEncoder prompt_encoder = PromptEncoder::kMlp;  // p_tuning
  /// oft / boft: the rotation's block size (PEFT OFTConfig oft_block_size 32, BOFTConfig
  /// boft_block_size 4; 0: the method's default).
  std::int64_t orthogonal_block_size = 0;
  std::int64_t oft_blocks = 0;  // oft: PEFT's r, the blocks per linear (block size in / r); 0: by block size
  MissShape miss_shape = MissShape::kDefault;  // miss: init_weights
  std::int64_t miss_mini_r = 1;                // miss "mini": the shard's columns (PEFT mini_r)
  GloraPath glora_a_b = GloraPath::kLora;      // glora: config_A_B
  SharedAdapterShape shared_adapter;           // lily .. adamss (training/peft_shared_adapters.h)
  RoadVariant road_variant = RoadVariant::kRoad1;  // road: variant
  bool deft_para = false;                          // deft: PaRa (P only, no injection R)
  /// trainable_tokens: how many rows of the embedding train (PEFT token_indices; no default).
  std::int64_t trainable_token_count = 0;
  /// fourierft / waveft: trained spectrum entries per linear (PEFT n_frequency); c3a: the circulant
  /// block size (PEFT block_size); 0: PEFT's default (training/peft_linear_adapters.h).
  std::int64_t spectral_frequencies = 0;
  std::int64_t circulant_block_size = 0;
  /// adapter / adapter_v2 / adaption_prompt: the learned prefix's length and the first layer that
  /// attends to it (litgpt v0.5.13 adapter.py Config: adapter_prompt_length 10, adapter_start_layer
  /// 2; PEFT AdaptionPromptConfig adapter_len, and adapter_layers counted from the top).
  std::int64_t adapter_prompt_length = 10;
  std::int64_t adapter_start_layer = 2;
  Precision precision = Precision::kBf16;
  Optimizer optimizer = Optimizer::kAdamW;
  OptimizerImpl optimizer_impl = OptimizerImpl::kForeach;
  bool optimizer_in_backward = false;        // step per parameter inside backward, grads freed
  /// galore_adamw / apollo_adamw: the projection's rank and how many steps it is kept
  /// (transformers' defaults rank 128, update_proj_gap 200); apollo_mini is rank 1.
  std::int64_t projection_rank = 128;
  std::int64_t projection_update_gap = 200;
  std::int64_t micro_batch = 1;
  std::int64_t seq_len = 2048;
  std::int64_t grad_accum = 1;
  bool packed = true;                        // false: padded, lengths vary from batch to batch
  Checkpointing checkpointing = Checkpointing::kNone;
  /// Hidden-size inputs a checkpointed block keeps: 1 when the block is one checkpoint region;
  /// more when each of its children is one (block_child_inputs; accelerate's FSDP2 plugin, api/request.cpp).
  std::int64_t checkpoint_saved_inputs_per_block = 1;
  Offload offload = Offload::kNone;
  AttentionKernel attention = AttentionKernel::kSdpa;
  LossKernel loss = LossKernel::kStandard;
  std::int64_t loss_chunks = 8;              // chunked loss: logits materialised 1/chunks at a time
  std::int64_t loss_chunk_tokens = 0;        // > 0: chunks of this many tokens instead (litgpt)
  bool compile = false;                      // torch.compile: fused elementwise ops save less
  /// torch.compile's reach: the whole model (torch.compile(model): the loss the model computes in its
  /// own forward is compiled with it) or its regions (accelerate's use_regional_compilation,
  /// utils/other.py compile_regions @ v1.13.0 3a2230ac: each repeated block and each leaf child is
  /// compiled, the forward of a module holding repeated blocks, where a causal LM computes its loss,
  /// stays eager; so compile_loss does not hold).
  bool compile_regions = false;
  /// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the caching allocator grows one segment
  /// per stream instead of mapping a segment per large request, so blocks freed by the loss are not
  /// left in pieces for the next step's loss (memory/caching_allocator.h). Off: PyTorch's default.
  bool expandable_segments = false;
  /// CUDA_LAUNCH_BLOCKING=1: every kernel launch returns only when the kernel has finished (CUDA C++
  /// Programming Guide, "Asynchronous Concurrent Execution"), so the GPU idles while the host issues
  /// the next one; the step time only (src/perf). Off: CUDA's default.
  bool cuda_launch_blocking = false;
  bool compile_loss = true;                  // ... and the loss is compiled too (not: per-block compile)
  bool compile_fuses_upcast = false;         // the compiled loss takes the 16-bit logits and upcasts inside the kernel
  bool compile_fuses_chunk_upcast = false;   // a chunked loss's compiled chunk function upcasts inside the kernel
  /// fp8 linears save their inputs as fp8 (Transformer Engine); torchao's Float8Linear saves the
  /// high-precision input and weight and casts again in backward
  /// (torchao/float8/float8_linear.py, matmul_with_hp_or_float8_args.forward).
  bool fp8_saves_fp8_inputs = true;
  /// fp8 linears on top of AMP: fp32 parameters, gradients and optimizer states as with amp_bf16
  /// (torchtitan: FSDP2 mixed precision over an fp32 model; Megatron: fp32 main params).
  bool fp8_over_amp = false;
  /// The framework's own modules fuse q, k and v into one linear (Megatron-Core
  /// attention.py linear_qkv; LitGPT model.py attn qkv) and a gated MLP's gate and up into one
  /// (Megatron-Core mlp.py linear_fc1, doubled for gated_linear_unit): one read of the input
  /// per fused matmul (the step-time model's per-matmul traffic). Same FLOPs and saved tensors.
  bool fused_qkv_linear = false;
  bool fused_gate_up_linear = false;
  /// The model repeats each K/V head for its query group before the attention kernel, so the
  /// kernel saves, and a context-parallel ring passes on, K/V at the width of every query head
  /// (torchtitan models/llama/model.py repeat_kv before F.scaled_dot_product_attention, until
  /// ff0829c1 "GQA without kv repeats", 2026-01).
  bool attention_repeats_kv = false;
  /// Selective checkpointing by layer: every period-th block fully recomputed, the others keep
  /// everything (torchtitan selective_ac_option "2"); 0: op-level (attention core recomputed).
  std::int64_t selective_layer_period = 0;
  /// Op-level selective checkpointing keeps every other matmul output and the attention outputs
  /// (torchtitan "op"); false: only the attention core is recomputed (Megatron selective).
  bool selective_every_other_mm = false;
  std::int64_t freeze_trainable_layers = 2;  // method freeze: the last k blocks train
  /// BAdam (Luo et al. 2024), layer mode, on method full: the one decoder layer that trains in this
  /// block period, stepped by AdamW on an fp32 copy (badam 1.4 block_optim.py BlockOptimizer); -1: off.
  std::int64_t badam_active_layer = -1;

  // Behaviours of the framework's code (set by its profile, src/frameworks/<key>/profile.cpp).
  bool logits_upcast = true;        // the loss runs on logits.float() (a full fp32 copy)
  bool loss_shift_copy = false;     // the loss copies the shifted logits (logits[..., :-1, :].contiguous())
  /// The loop drops its reference to the 16-bit logits before backward (torchtitan `del pred`):
  /// their freed block stays cached, too small for the fp32 gradients that follow.
  bool logits_freed_before_backward = false;
  bool loss_input_held = false;     // the training loop keeps the (upcast) logits alive through backward
  /// The loop keeps the model's output, and so its logits, referenced until the next forward
  /// returns (`outputs = model(...)` rebinds the name only then): through backward, the optimizer
  /// step and the next micro-batch's forward and loss.
  bool outputs_held_across_steps = false;
  /// The model's forward upcasts its logits (logits.float()) and returns the fp32 tensor; the
  /// 16-bit projection output is dropped at once.
  bool logits_upcast_in_model = false;
  /// Each model's forward computes its own loss (transformers before 4.46): whether and where the
  /// logits are upcast is the model's (apply_model_loss_code, frameworks/profile.h).
  bool model_computes_loss = false;
  // transformers 4.46-4.47: the model types that had not moved to self.loss_function yet (GPT-2
  // style) still compute their cross-entropy in the logits dtype (apply_model_code).
  bool own_loss_in_logits_dtype = false;
  /// Rotary cos/sin caches as buffers of every attention layer, over max_position_embeddings in
  /// the model dtype (transformers before 4.45; apply_model_code says for which models).
  bool rotary_cache_per_layer = false;
  /// One fp32 rotary cos/sin cache per model, shared by its layers, over max_position_embeddings:
  /// this many values per position and rotated dimension (torchtune's RoPE modules; 0: none).
  std::int64_t model_rotary_cache_values_per_dim = 0;
  bool model_rotary_cache_per_layer = false;  // each attention layer builds its own
  /// LoRA on fused expert stacks (transformers 5's 3-d gate_up_proj/down_proj, PEFT ParamWrapper)
  /// materialises W + s·B·A per stack for the grouped matmul, which saves it for backward.
  bool lora_merges_fused_experts = false;
  /// No LoRA-like adapter reaches the routed experts' fused stacks: PEFT retargets MLP names onto
  /// them only for the model types transformers maps to a conversion pattern (apply_model_code).
  bool lora_routed_experts_unadapted = false;
  bool softmax_fused_16bit = false;    // eager attention softmax fused in the compute dtype (Megatron FusedScaleMaskSoftmax)
  /// The block's elementwise chains run as hand-fused kernels that read their inputs once and
  /// write once: layer norm, bias + dropout + residual add, bias + activation, rotary (Megatron-LM:
  /// apex / Transformer Engine fused layer norm, --bias-dropout-fusion, --bias-gelu-fusion /
  /// --bias-swiglu-fusion, --apply-rope-fusion; Narayanan et al. 2021 §4.2). Step time only.
  bool fused_elementwise = false;
  /// Liger's RMSNorm and SwiGLU replace the model's block norms and MLP (transformers
  /// apply_liger_kernel patches the instance; q/k norms stay HF's): RMSNorm saves its input and the
  /// fp32 rstd per row, SwiGLU the gate and up outputs (silu recomputed) (linkedin/Liger-Kernel @
  /// ead96b61: ops/rms_norm.py LigerRMSNormFunction, ops/swiglu.py LigerSiLUMulFunction,
  /// transformers/monkey_patch.py). Liger's RoPE saves only cos and sin, as HF's does: no change.
  bool liger_kernels = false;
  bool loss_softmax_in_place = false;  // one fp32 copy becomes the softmax, then its gradient (Megatron vocab-parallel CE)
  /// The input embedding and the output projection are upcast to fp32 over a 16-bit model, and
  /// so the residual stream that leaves the embedding runs in fp32 with 16-bit autocast casts per
  /// linear (Axolotl's _configure_embedding_dtypes outside FSDP). Block norms' weights (also
  /// upcast there) are not counted: a few kilobytes.
  bool embeddings_fp32 = false;
  bool adapters_fp32 = true;        // PEFT autocast_adapter_dtype: fp32 adapters, fp32 input copies
  /// QLoRA: peak bytes per parameter while one NF4 weight is dequantised for its matmul (16-bit
  /// base): bitsandbytes' dequantize_4bit writes the 16-bit weight (2).
  std::int64_t nf4_dequant_bytes_per_param = 2;
  /// QLoRA: bytes per parameter that quantising one base weight on the GPU holds while the model
  /// is built and loaded (0: the base arrives quantised, or is quantised off the GPU). The
  /// allocator keeps those segments, so the reserved counter of every later window starts there.
  std::int64_t nf4_quantize_at_init_bytes_per_param = 0;
  bool kbit_prep_fp32 = true;       // PEFT prepare_model_for_kbit_training: non-quantised params fp32
  /// bitsandbytes' 8-bit optimizers keep 32-bit states for every nn.Embedding weight: the HF
  /// Trainer registers GlobalOptimManager overrides {"optim_bits": 32} for them (transformers
  /// v4.52.0 trainer.py create_optimizer; before v4.52 only a class named "Adam8bit" matched,
  /// which the Trainer never builds). A tied output layer is the same parameter.
  bool bnb8_embedding_states_fp32 = false;
  MemoryCounter logged_counter = MemoryCounter::kMaxAllocated;
  AmpWeights amp_weights = AmpWeights::kAutocast;
  std::int64_t main_grad_bytes = 4; // master_in_optimizer: element bytes of the gradient buffer
  friend bool operator==(const TrainingSetup&, const TrainingSetup&) = default;
};

/// Bytes of one element of the compute (activation) dtype: 4 for fp32, else 2.
inline std::int64_t activation_bytes(Precision p) { return p == Precision::kFp32 ? 4 : 2; }
/// Bytes of one stored weight of a trainable tensor (fp32 master copy under AMP and fp32).
inline std::int64_t weight_bytes(Precision p) {
  return p == Precision::kBf16 || p == Precision::kFp16 || p == Precision::kFp8 ? 2 : 4;
}
inline bool is_amp(Precision p) { return p == Precision::kAmpBf16 || p == Precision::kAmpFp16; }
/// fp32 parameters with 16-bit compute: AMP, or fp8 linears on top of AMP.
inline bool amp_like(const TrainingSetup& t) {
  return is_amp(t.precision) || (t.precision == Precision::kFp8 && t.fp8_over_amp);
}
/// Bytes of one stored weight of a trainable tensor, fp8-over-AMP included.
inline std::int64_t stored_weight_bytes(const TrainingSetup& t) { return amp_like(t) ? 4 : weight_bytes(t.precision); }
/// AMP through torch.autocast: fp32 parameters and residual stream, 16-bit casts per matmul.
inline bool autocast_amp(const TrainingSetup& t) { return amp_like(t) && t.amp_weights == AmpWeights::kAutocast; }
/// The optimizer keeps AdamW moments of a low-rank projection of each block linear's gradient.
inline bool projects_gradients(Optimizer o) {
  return o == Optimizer::kGaloreAdamW || o == Optimizer::kApolloAdamW || o == Optimizer::kApolloMini;
}
/// The residual stream is fp32 with 16-bit casts per linear: AMP by autocast, or fp32 embeddings.
inline bool fp32_residual_stream(const TrainingSetup& t) {
  return autocast_amp(t) || (t.embeddings_fp32 && t.precision != Precision::kFp32 && t.precision != Precision::kFp8);
}
inline bool is_lora_like(Method m) { return m == Method::kLora || m == Method::kQlora || m == Method::kDora; }
/// PEFT adapters on the frozen linears named by lora_targets: LoRA and its kin, IA3, LoHa, LoKr,
/// VeRA, OFT, BOFT, MiSS, GLoRA, PEFT's newer ones (FourierFT .. PEANUT, RoAd .. UniLoRA:
/// peft_linear_adapters.h) and the shared-bank ones (LiLy .. AdaMSS: peft_shared_adapters.h).
inline bool is_adapter_method(Method m) {
  return is_lora_like(m) || m == Method::kIa3 || m == Method::kLoha || m == Method::kLokr || m == Method::kVera ||
         m == Method::kOft || m == Method::kBoft || m == Method::kMiss || m == Method::kGlora ||
         m == Method::kFourierFt || m == Method::kWaveFt || m == Method::kHira || m == Method::kShira ||
         m == Method::kC3a || m == Method::kDelora || m == Method::kGralora || m == Method::kPeanut ||
         m == Method::kLily || m == Method::kTinyLora || m == Method::kVblora || m == Method::kFrod || m == Method::kAdamss ||
         m == Method::kRoad || m == Method::kOsf || m == Method::kDeft || m == Method::kBeft || m == Method::kPvera ||
         m == Method::kUnilora || m == Method::kAdalora || m == Method::kPsoft || m == Method::kRandlora;
}
inline bool is_orthogonal(Method m) { return m == Method::kOft || m == Method::kBoft; }
/// The rotation's block size: the request's, else PEFT's default for the method.
inline std::int64_t orthogonal_block(const TrainingSetup& t) {
  return t.orthogonal_block_size > 0 ? t.orthogonal_block_size : (t.method == Method::kBoft ? 4 : 32);
}
/// PEFT's prompt learning: the whole model frozen, only virtual-token embeddings train.
inline bool is_prompt_method(Method m) {
  return m == Method::kPromptTuning || m == Method::kPrefixTuning || m == Method::kPTuning;
}
/// LitGPT's LLaMA-Adapter (v1 or v2).
inline bool is_litgpt_adapter(Method m) { return m == Method::kAdapter || m == Method::kAdapterV2; }
/// LLaMA-Adapter (Zhang et al. 2023): a gated attention to a learned prefix in the top layers.
inline bool is_llama_adapter(Method m) { return is_litgpt_adapter(m) || m == Method::kAdaptionPrompt; }
/// The base model is frozen: every PEFT method.
inline bool base_frozen(Method m) {
  return is_adapter_method(m) || is_prompt_method(m) || is_llama_adapter(m) || m == Method::kLnTuning ||
         m == Method::kTrainableTokens;
}
/// Positions the model runs per sequence: prompt tuning puts its virtual tokens before the input
/// embeddings, and the labels gain as many ignored positions (peft v0.21.2 peft_model.py
/// PeftModelForCausalLM.forward: torch.cat((prompts, inputs_embeds), dim=1)), so every layer, the
/// logits and the loss run seq_len + virtual_tokens positions; so does P-tuning.
inline std::int64_t model_positions(const TrainingSetup& t) {
  return t.method == Method::kPromptTuning || t.method == Method::kPTuning ? t.seq_len + t.virtual_tokens : t.seq_len;
}
/// The frozen base linears are stored quantised.
inline BaseQuant effective_base_quant(const TrainingSetup& t) {
  return t.method == Method::kQlora && t.base_quant == BaseQuant::kNone ? BaseQuant::kNf4 : t.base_quant;
}

}  // namespace memfit
