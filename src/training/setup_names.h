// The request/result names of every training-setup enum, one table per enum, read both ways:
// the api parses requests with them and the exporter prints the resolved setup with them.
#pragma once
#include <cstddef>

#include "parallel/layout.h"
#include "training/training_setup.h"

namespace memfit {

template <typename E>
struct EnumName {
  const char* name;
  E value;
};

inline constexpr EnumName<Method> kMethodNames[] = {{"full", Method::kFull}, {"lora", Method::kLora},
                                                    {"qlora", Method::kQlora}, {"dora", Method::kDora},
                                                    {"freeze", Method::kFreeze}, {"ia3", Method::kIa3},
                                                    {"loha", Method::kLoha},     {"lokr", Method::kLokr},
                                                    {"vera", Method::kVera},     {"prompt_tuning", Method::kPromptTuning},
                                                    {"prefix_tuning", Method::kPrefixTuning}, {"adapter", Method::kAdapter},
                                                    {"adapter_v2", Method::kAdapterV2}, {"adaption_prompt", Method::kAdaptionPrompt},
                                                    {"p_tuning", Method::kPTuning}, {"oft", Method::kOft},
                                                    {"boft", Method::kBoft}, {"ln_tuning", Method::kLnTuning},
                                                    {"miss", Method::kMiss}, {"glora", Method::kGlora},
                                                    {"fourierft", Method::kFourierFt}, {"waveft", Method::kWaveFt},
                                                    {"hira", Method::kHira}, {"shira", Method::kShira}, {"c3a", Method::kC3a},
                                                    {"delora", Method::kDelora}, {"gralora", Method::kGralora},
                                                    {"peanut", Method::kPeanut},
                                                    {"lily", Method::kLily}, {"tinylora", Method::kTinyLora},
                                                    {"vblora", Method::kVblora}, {"frod", Method::kFrod},
                                                    {"adamss", Method::kAdamss},
                                                    {"road", Method::kRoad},
                                                    {"osf", Method::kOsf}, {"deft", Method::kDeft}, {"beft", Method::kBeft},
                                                    {"trainable_tokens", Method::kTrainableTokens},
                                                    {"pvera", Method::kPvera}, {"unilora", Method::kUnilora},
                                                    {"adalora", Method::kAdalora}, {"psoft", Method::kPsoft},
                                                    {"randlora", Method::kRandlora}};
inline constexpr EnumName<RoadVariant> kRoadVariantNames[] = {{"road_1", RoadVariant::kRoad1}, {"road_2", RoadVariant::kRoad2},
                                                              {"road_4", RoadVariant::kRoad4}};
inline constexpr EnumName<MissShape> kMissShapeNames[] = {{"default", MissShape::kDefault}, {"bat", MissShape::kBat},
                                                          {"mini", MissShape::kMini}};
inline constexpr EnumName<GloraPath> kGloraPathNames[] = {{"lora", GloraPath::kLora}, {"vector", GloraPath::kVector},
                                                          {"constant", GloraPath::kConstant}};
inline constexpr EnumName<PromptEncoder> kPromptEncoderNames[] = {{"mlp", PromptEncoder::kMlp}, {"lstm", PromptEncoder::kLstm}};
inline constexpr EnumName<LoraInit> kLoraInitNames[] = {{"default", LoraInit::kDefault}, {"gaussian", LoraInit::kGaussian},
                                                        {"pissa", LoraInit::kPissa}, {"olora", LoraInit::kOlora}};
inline constexpr EnumName<BaseQuant> kBaseQuantNames[] = {{"none", BaseQuant::kNone}, {"nf4", BaseQuant::kNf4},
                                                          {"int8", BaseQuant::kInt8}, {"gptq4", BaseQuant::kGptq4}};
inline constexpr EnumName<Precision> kPrecisionNames[] = {
    {"fp32", Precision::kFp32}, {"amp_bf16", Precision::kAmpBf16}, {"amp_fp16", Precision::kAmpFp16},
    {"bf16", Precision::kBf16}, {"fp16", Precision::kFp16},        {"fp8", Precision::kFp8}};
inline constexpr EnumName<Optimizer> kOptimizerNames[] = {
    {"adamw", Optimizer::kAdamW},          {"adamw_8bit", Optimizer::kAdamW8bit},
    {"paged_adamw_8bit", Optimizer::kPagedAdamW8bit}, {"paged_adamw_32bit", Optimizer::kPagedAdamW32bit},
    {"adamw_4bit", Optimizer::kAdamW4bit}, {"sgd", Optimizer::kSgd},
    {"sgd_momentum", Optimizer::kSgdMomentum}, {"adafactor", Optimizer::kAdafactor},
    {"lion", Optimizer::kLion},            {"muon", Optimizer::kMuon},
    {"galore_adamw", Optimizer::kGaloreAdamW}, {"apollo_adamw", Optimizer::kApolloAdamW},
    {"apollo_mini", Optimizer::kApolloMini}, {"adam_mini", Optimizer::kAdamMini}};
inline constexpr EnumName<OptimizerImpl> kOptimizerImplNames[] = {
    {"foreach", OptimizerImpl::kForeach}, {"fused", OptimizerImpl::kFused}, {"forloop", OptimizerImpl::kForLoop}};
inline constexpr EnumName<Checkpointing> kCheckpointingNames[] = {
    {"none", Checkpointing::kNone}, {"full", Checkpointing::kFull}, {"selective", Checkpointing::kSelective}};
inline constexpr EnumName<Offload> kOffloadNames[] = {{"none", Offload::kNone}, {"optimizer", Offload::kOptimizer},
                                                      {"params_optimizer", Offload::kParamsOptimizer},
                                                      {"activations", Offload::kActivations}};
inline constexpr EnumName<AttentionKernel> kAttentionNames[] = {
    {"eager", AttentionKernel::kEager}, {"sdpa", AttentionKernel::kSdpa}, {"flash", AttentionKernel::kFlash},
    {"flash_triton", AttentionKernel::kFlashTriton}};
inline constexpr EnumName<LossKernel> kLossNames[] = {
    {"standard", LossKernel::kStandard}, {"chunked", LossKernel::kChunked}, {"fused", LossKernel::kFused},
    {"chunked_nll", LossKernel::kChunkedNll}, {"trl_fused_head", LossKernel::kTrlFusedHead}, {"liger_flce", LossKernel::kLigerFlce}, {"cut_ce", LossKernel::kCutCe},
    {"unsloth_fused_ce", LossKernel::kUnslothFusedCe}};
inline constexpr EnumName<MemoryCounter> kMemoryCounterNames[] = {
    {"max_allocated", MemoryCounter::kMaxAllocated}, {"peak_active", MemoryCounter::kPeakActive},
    {"max_reserved", MemoryCounter::kMaxReserved}, {"nvidia_smi", MemoryCounter::kNvidiaSmi}};
inline constexpr EnumName<AmpWeights> kAmpWeightsNames[] = {
    {"autocast", AmpWeights::kAutocast}, {"master_in_optimizer", AmpWeights::kMasterInOptimizer},
    {"gathered_16bit", AmpWeights::kGathered16bit}};
inline constexpr EnumName<Sharding> kShardingNames[] = {
    {"none", Sharding::kNone}, {"zero1", Sharding::kZero1}, {"zero2", Sharding::kZero2}, {"zero3", Sharding::kZero3}};
inline constexpr EnumName<ContextParallelKind> kCpKindNames[] = {
    {"ring", ContextParallelKind::kRing}, {"ulysses", ContextParallelKind::kUlysses}};
inline constexpr EnumName<PipelineSchedule> kScheduleNames[] = {
    {"1f1b", PipelineSchedule::k1F1B}, {"gpipe", PipelineSchedule::kGpipe}, {"interleaved", PipelineSchedule::kInterleaved}};

template <typename E, std::size_t N>
constexpr const char* name_of(E value, const EnumName<E> (&table)[N]) {
  for (const EnumName<E>& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return table[0].name;
}

}  // namespace memfit
