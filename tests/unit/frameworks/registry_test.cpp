// The framework registry (src/frameworks/registry.h): every Framework value is registered once, the
// profile list follows kFrameworks, each entry's profile and capabilities are its own, and every
// launch format a framework names is one the launch dispatcher writes.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "frameworks/launch.h"
#include "frameworks/registry.h"
#include "../test_support.h"

using namespace memfit;
using namespace memfit_test;

TEST_CASE("every framework is registered once, in the order of framework_profiles", "[frameworks][registry]") {
  const std::vector<FrameworkProfile>& profiles = framework_profiles();
  REQUIRE(profiles.size() == std::size(kFrameworks));
  std::set<std::string> keys;
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    INFO(profiles[i].key);
    CHECK(profiles[i].id == kFrameworks[i].id);                // the profile function is the entry's own
    CHECK(keys.insert(profiles[i].key).second);                // request keys are unique
    CHECK(find_framework(profiles[i].key) == &profiles[i]);
    CHECK(&framework_profile(profiles[i].id) == &profiles[i]);
    CHECK(!profiles[i].sources.empty());                       // every default cites its code
  }
  for (int f = 0; f <= static_cast<int>(Framework::kOther); ++f) {
    int entries = 0;
    for (const FrameworkEntry& e : kFrameworks) entries += static_cast<int>(e.id) == f;
    INFO("Framework value " << f);
    CHECK(entries == 1);
  }
}

TEST_CASE("a framework's launch formats are formats the dispatcher writes", "[frameworks][registry][launch]") {
  const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  LaunchInput in;
  in.arch = &a;
  in.model_id = "meta-llama/Llama-3.1-8B";
  in.setup = bf16(1, 2048);
  std::set<std::string> written;
  for (const LaunchFormat& f : launch_configs(in)) written.insert(f.format);
  for (const FrameworkEntry& e : kFrameworks) {
    const FrameworkCapabilities caps = framework_capabilities(e.id);
    INFO(framework_profile(e.id).key);
    CHECK((e.capabilities == nullptr) == runs_everything(caps));  // no entry: no limit known
    for (const std::string& format : caps.launch_formats) CHECK(written.count(format) == 1);
    // The dispatcher marks exactly the framework's own formats, its main file first.
    in.framework = e.id;
    const std::vector<LaunchFormat> out = launch_configs(in);
    for (std::size_t i = 0; i < out.size(); ++i) {
      CHECK(out[i].for_framework == (i < caps.launch_formats.size()));
      if (i < caps.launch_formats.size()) CHECK(out[i].format == caps.launch_formats[i]);
    }
  }
}
