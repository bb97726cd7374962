// libFuzzer target for one api entry point, chosen at build time by MEMFIT_FUZZ_TARGET
// (inspect_config, inspect, estimate, search, launch: one binary each, CMakeLists.txt).
// Arbitrary bytes go in as the entry's text; a problem with the answer aborts (a finding).
#include <cstdio>

#include "envelope_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string envelope = memfit::fuzz::answer(MEMFIT_FUZZ_TARGET, {reinterpret_cast<const char*>(data), size});
  if (const std::string problem = memfit::fuzz::envelope_problem(envelope); !problem.empty()) {
    std::fprintf(stderr, "memfit fuzz finding: %s\n%.2000s\n", problem.c_str(), envelope.c_str());
    std::abort();
  }
  return 0;
}
