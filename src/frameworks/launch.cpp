// Launch configurations (see launch.h). The writers are in their frameworks' folders
// (frameworks/<key>/launch.cpp), each headed by the documentation its option names follow; this
// file runs them in the order the answer lists them and marks the request's framework's.
#include "frameworks/launch.h"

#include <string_view>
#include <utility>

#include "frameworks/capabilities.h"
#include "frameworks/launch_common.h"
#include "training/setup_names.h"

namespace memfit {

namespace {

// The framework each framework-specific format launches: a method outside that framework's
// capabilities (its profile.cpp, e.g. Axolotl's lora / qlora / dora and full) has no spelling in it.
constexpr std::pair<std::string_view, Framework> kFormatFrameworks[] = {
    {"axolotl_yaml", Framework::kAxolotl},       {"llamafactory_yaml", Framework::kLlamaFactory},
    {"torchtune_command", Framework::kTorchtune}, {"unsloth_python", Framework::kUnsloth},
    {"megatron_args", Framework::kMegatron},      {"torchtitan_toml", Framework::kTorchtitan},
    {"fsdp_qlora_command", Framework::kFsdpQlora}};

/// A format whose framework cannot train the method is unsupported, said, instead of a file that
/// silently trains something else.
void refuse_untrained_method(LaunchFormat& f, Method method) {
  for (const auto& [format, framework] : kFormatFrameworks) {
    if (format != f.format || !f.supported) continue;
    const FrameworkCapabilities caps = framework_capabilities(framework);
    if (caps.methods[static_cast<int>(method)]) return;
    std::string trained;
    for (const auto& [name, m] : kMethodNames) {
      if (caps.methods[static_cast<int>(m)]) trained += (trained.empty() ? "" : ", ") + std::string(name);
    }
    f.supported = false;
    f.text.clear();
    f.notes.assign({f.file_name + " cannot train " + name_of(method, kMethodNames) + ": its framework trains " + trained});
    return;
  }
}

}  // namespace

std::vector<LaunchFormat> launch_configs(const LaunchInput& in) {
  using namespace launch_files;
  // Every writer, in the order the answer lists the formats a framework does not claim (a new
  // writer: one entry here, declared in launch_common.h).
  std::vector<LaunchFormat> all = {deepspeed(in),     accelerate(in),     megatron(in),        torchtitan(in),
                                   torchtune(in),     trl_sft(in),        unsloth_script(in),  python_script(in),
                                   fsdp_qlora(in),    axolotl_yaml(in),   llamafactory_yaml(in)};
  for (LaunchFormat& f : all) refuse_untrained_method(f, in.setup.method);
  const std::vector<std::string> own = framework_capabilities(in.framework).launch_formats;
  // The framework's own formats first, in the order its capabilities list them (its main file first).
  std::vector<LaunchFormat> ordered;
  ordered.reserve(all.size());
  for (const std::string& name : own) {
    for (LaunchFormat& f : all) {
      if (f.format == name && !f.for_framework) {
        f.for_framework = true;
        ordered.push_back(f);
      }
    }
  }
  for (LaunchFormat& f : all) {
    if (!f.for_framework) ordered.push_back(std::move(f));
  }
  // BAdam's BlockOptimizer (pip badam) is a setting of LLaMA-Factory only.
  if (in.setup.method == Method::kFull && in.setup.badam_active_layer >= 0) {
    for (LaunchFormat& f : ordered) {
      if (f.format != "llamafactory_yaml") f.notes.emplace_back("BAdam is not a setting here: this trains every layer at once (llamafactory.yaml has use_badam)");
    }
  }
  return ordered;
}

}  // namespace memfit
