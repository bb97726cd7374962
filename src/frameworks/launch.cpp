// Launch configurations (see launch.h). The writers are in their frameworks' folders
// (frameworks/<key>/launch.cpp), each headed by the documentation its option names follow; this
// file runs them in the order the answer lists them and marks the request's framework's.
#include "frameworks/launch.h"

#include <iterator>
#include <optional>
#include <string_view>
#include <utility>

#include "frameworks/capabilities.h"
#include "frameworks/launch_common.h"
#include "training/setup_names.h"

namespace memfit {

namespace {

// Every writer, in the order the answer lists the formats a framework does not claim (a new
// writer: one row here, declared in launch_common.h). `trains_only` names the framework a format
// launches, whose capabilities bound the methods it can spell (e.g. Axolotl's lora / qlora / dora
// and full); a format without one launches whatever the method.
struct LaunchWriter {
  LaunchFormat (*write)(const LaunchInput&);
  std::optional<Framework> trains_only;
};
constexpr LaunchWriter kLaunchWriters[] = {
    {launch_files::deepspeed, std::nullopt},
    {launch_files::accelerate, std::nullopt},
    {launch_files::megatron, Framework::kMegatron},
    {launch_files::torchtitan, Framework::kTorchtitan},
    {launch_files::torchtune, Framework::kTorchtune},
    {launch_files::trl_sft, std::nullopt},
    {launch_files::unsloth_script, Framework::kUnsloth},
    {launch_files::python_script, std::nullopt},
    {launch_files::fsdp_qlora, Framework::kFsdpQlora},
    {launch_files::axolotl_yaml, Framework::kAxolotl},
    {launch_files::llamafactory_yaml, Framework::kLlamaFactory},
};

/// A format whose framework cannot train the method is unsupported, said, instead of a file that
/// silently trains something else.
void refuse_untrained_method(LaunchFormat& f, const LaunchWriter& writer, Method method) {
  if (!writer.trains_only || !f.supported) return;
  const FrameworkCapabilities caps = framework_capabilities(*writer.trains_only);
  if (caps.methods[static_cast<int>(method)]) return;
  std::string trained;
  for (const auto& [name, m] : kMethodNames) {
    if (caps.methods[static_cast<int>(m)]) trained += (trained.empty() ? "" : ", ") + std::string(name);
  }
  f.supported = false;
  f.text.clear();
  f.notes.assign({f.file_name + " cannot train " + name_of(method, kMethodNames) + ": its framework trains " + trained});
}

}  // namespace

std::vector<LaunchFormat> launch_configs(const LaunchInput& in) {
  std::vector<LaunchFormat> all;
  all.reserve(std::size(kLaunchWriters));
  for (const LaunchWriter& writer : kLaunchWriters) {
    all.push_back(writer.write(in));
    refuse_untrained_method(all.back(), writer, in.setup.method);
  }
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
