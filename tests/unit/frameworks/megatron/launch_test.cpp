// Megatron-LM's launch arguments follow the overlaps the framework version has: the step-time
// model's dated behaviours, not today's flags.
#include <catch2/catch.hpp>

#include <string>

#include "frameworks/launch.h"
#include "frameworks/profile.h"
#include "../../test_support.h"

using namespace memfit;
using namespace memfit_test;

namespace {

std::string megatron_args(std::int64_t yyyymm, Precision precision = Precision::kBf16, bool fp16_main_grad = true) {
  static const ModelArchitecture a = preset("meta-llama/Llama-3.1-8B");
  LaunchInput in;
  in.arch = &a;
  in.model_id = "meta-llama/Llama-3.1-8B";
  in.layout.dp = 4;
  in.layout.tp = 2;
  in.layout.sharding = Sharding::kZero1;  // the distributed optimizer
  in.layout.behaviour = framework_behaviour(framework_profile(Framework::kMegatron), yyyymm);
  in.setup = bf16(1, 4096, 8);
  in.setup.precision = precision;
  in.layout.behaviour.fp16_grads_reduce_in_fp16 = fp16_main_grad;
  in.framework = Framework::kMegatron;
  for (const LaunchFormat& f : launch_configs(in)) {
    if (f.format == "megatron_args") return f.text;
  }
  FAIL("no megatron_args format");
  return "";
}

}  // namespace

TEST_CASE("Megatron's overlap flags from their merges on: grad reduce e801b2bb (2023-09), param gather 3b417268 (2023-11)",
          "[launch][megatron]") {
  const std::string before = megatron_args(202308);
  CHECK(before.find("--overlap-grad-reduce") == std::string::npos);
  CHECK(before.find("--overlap-param-gather") == std::string::npos);
  CHECK(before.find("--use-distributed-optimizer") != std::string::npos);
  const std::string between = megatron_args(202310);
  CHECK(between.find("--overlap-grad-reduce") != std::string::npos);
  CHECK(between.find("--overlap-param-gather") == std::string::npos);
  const std::string after = megatron_args(202311);
  CHECK(after.find("--overlap-grad-reduce") != std::string::npos);
  CHECK(after.find("--overlap-param-gather") != std::string::npos);
  const std::string unknown_date = megatron_args(0);  // no version: the profile's current behaviour
  CHECK(unknown_date.find("--overlap-grad-reduce") != std::string::npos);
}

TEST_CASE("Megatron's --fp16 launch asks for an fp32 main_grad exactly when the layout keeps one", "[launch][megatron]") {
  const std::string fp16_grads = megatron_args(0, Precision::kAmpFp16, true);
  CHECK(fp16_grads.find("--fp16") != std::string::npos);
  CHECK(fp16_grads.find("--accumulate-allreduce-grads-in-fp32") == std::string::npos);
  CHECK(megatron_args(0, Precision::kAmpFp16, false).find("--accumulate-allreduce-grads-in-fp32") != std::string::npos);
  // --bf16 keeps an fp32 buffer by itself.
  CHECK(megatron_args(0, Precision::kAmpBf16, false).find("--accumulate-allreduce-grads-in-fp32") == std::string::npos);
}
