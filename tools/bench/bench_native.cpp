// Native benchmark: time per api call for representative requests. Prints numbers; asserts nothing.
// Usage: build-native/memfit_bench [iterations]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "api/api.h"

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 2000;
  const char* requests[] = {
      R"({"model":{"preset":"meta-llama/Llama-3.1-70B-Instruct"}})",
      R"({"model":{"preset":"meta-llama/Llama-3.1-405B-Instruct"}})",
      R"({"model":{"preset":"deepseek-ai/DeepSeek-V3"}})",
  };
  for (const char* r : requests) {
    std::string out;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) out = memfit::api::inspect(r);
    const auto t1 = std::chrono::steady_clock::now();
    const double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / iters;
    std::printf("inspect %-60s %8.1f us/call (%zu bytes out)\n", r, us, out.size());
  }
  return 0;
}
