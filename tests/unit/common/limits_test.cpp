// The documented bounds (README "Limits", docs/hardening.md): every numeric field is accepted at
// its bound and refused just past it, and at the integer edges (2^31, 2^53, 2^63, 2^64), with
// out_of_range at the field's pointer and the bound in the message; derived quantities that leave
// 2^53 (huge vocabulary x hidden, sequence x micro-batch) are out_of_range errors, never a wrapped
// number; a search over a huge cluster answers within a bounded time, saying what it covered.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "api/api.h"
#include "common/units.h"
#include "hf_config/json_input.h"
#include "hf_config/parse_hf_config.h"
#include "presets/registry.h"
#include "search/search.h"

using nlohmann::json;
using namespace memfit;

namespace {

json call(std::string (*entry)(std::string_view), const json& request) { return json::parse(entry(request.dump())); }

json small_request() {
  return json{{"model", {{"preset", "meta-llama/Llama-3.2-1B-Instruct"}}},
              {"training", {{"seq_len", 1024}, {"micro_batch", 1}}},
              {"cluster", {{"gpu", {{"preset", "H100-80GB"}}}}}};
}

json small_config() {
  return json{{"model_type", "llama"}, {"vocab_size", 32000},       {"hidden_size", 256},
              {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"intermediate_size", 512}};
}

struct Field {
  const char* entry;     // "estimate", "search" or "config" (inspect of an inline config)
  const char* pointer;   // where the value goes, also where the error must point
  std::int64_t bound;    // the largest accepted value
};

// Every bounded numeric input; the value at the bound must not be refused for its size.
const Field kFields[] = {
    {"estimate", "/training/micro_batch", 1 << 16},
    {"estimate", "/training/seq_len", std::int64_t{1} << 24},
    {"estimate", "/training/grad_accum", 1 << 20},
    {"estimate", "/training/loss_chunks", 1 << 16},
    {"estimate", "/cluster/gpus", 1 << 20},
    {"estimate", "/cluster/gpus_per_node", 1024},
    {"estimate", "/parallel/tp", 1 << 16},
    {"estimate", "/parallel/pp", 1 << 16},
    {"estimate", "/parallel/cp", 1 << 16},
    {"estimate", "/parallel/dp", 1 << 16},
    {"estimate", "/parallel/ep", 1 << 16},
    {"estimate", "/parallel/vpp", 1 << 16},
    {"estimate", "/parallel/shard_degree", 1 << 16},
    {"search", "/search/top", kMaxSearchTop},
    {"search", "/search/global_batch", std::int64_t{1} << 36},
    {"search", "/search/space/max_micro_batch", 1024},
    {"config", "/vocab_size", std::int64_t{1} << 24},
    {"config", "/hidden_size", std::int64_t{1} << 20},
    {"config", "/intermediate_size", std::int64_t{1} << 22},
    {"config", "/num_hidden_layers", 10'000},
    {"config", "/num_attention_heads", 65'536},
    {"config", "/max_position_embeddings", std::int64_t{1} << 28},
};

json answer_with(const Field& f, const json& value) {
  if (std::string(f.entry) == "config") {
    json config = small_config();
    config[json::json_pointer(f.pointer)] = value;
    return call(api::inspect, json{{"model", {{"config", config}}}});
  }
  json request = small_request();
  if (std::string(f.entry) == "search") {
    request["training"].erase("micro_batch");
    request["search"] = json::object();
  }
  request[json::json_pointer(f.pointer)] = value;
  return call(std::string(f.entry) == "search" ? api::search : api::estimate, request);
}

std::string path_of(const Field& f) {
  return std::string(f.entry) == "config" ? std::string("/model/config") + f.pointer : f.pointer;
}

}  // namespace

TEST_CASE("every numeric field is accepted at its bound and refused past it with its pointer", "[limits]") {
  for (const Field& f : kFields) {
    INFO(f.entry << " " << f.pointer);
    const json at_bound = answer_with(f, f.bound);
    // At the bound the value itself is fine: any error is another rule (divisibility, memory).
    if (at_bound["ok"] == false) {
      CHECK_FALSE((at_bound["error"]["code"] == "out_of_range" && at_bound["error"]["path"] == path_of(f)));
    }
    const json past = answer_with(f, f.bound + 1);
    REQUIRE(past["ok"] == false);
    CHECK(past["error"]["code"] == "out_of_range");
    CHECK(past["error"]["path"] == path_of(f));
    CHECK_THAT(past["error"]["message"].get<std::string>(), Catch::Contains(format_count(f.bound)));
  }
}

TEST_CASE("integer edges 2^31, 2^53, 2^63 and 2^64 give out_of_range at the field", "[limits]") {
  const std::vector<json> edges = {
      json(std::int64_t{1} << 31),         json(std::int64_t{1} << 32),
      json((std::int64_t{1} << 53) + 1),  json(std::numeric_limits<std::int64_t>::max()),
      json(std::uint64_t{1} << 63),        json(std::numeric_limits<std::uint64_t>::max()),
      json(std::numeric_limits<std::int64_t>::min()), json(1e19), json(-1e300)};
  for (const Field& f : kFields) {
    for (const json& v : edges) {
      if (v.is_number_integer() && !v.is_number_unsigned() && v.get<std::int64_t>() >= 0 && v.get<std::int64_t>() <= f.bound) continue;
      INFO(f.pointer << " = " << v.dump());
      const json r = answer_with(f, v);
      REQUIRE(r["ok"] == false);
      CHECK(r["error"]["code"] == "out_of_range");
      CHECK(r["error"]["path"] == path_of(f));
      CHECK_THAT(r["error"]["message"].get<std::string>(), Catch::Contains(v.dump()) || Catch::Contains(format_count(v.is_number_float() ? 0 : v.get<std::int64_t>())));
    }
  }
}

TEST_CASE("format_count handles the int64 extremes", "[limits]") {
  CHECK(format_count(std::numeric_limits<std::int64_t>::min()) == "-9,223,372,036,854,775,808");
  CHECK(format_count(std::numeric_limits<std::int64_t>::max()) == "9,223,372,036,854,775,807");
  CHECK(format_count(0) == "0");
}

TEST_CASE("products past 2^53 are out_of_range errors at the part of the request they come from", "[limits]") {
  // Vocabulary x hidden x layers: every factor within its bound, the parameter bytes not.
  json config = small_config();
  config["vocab_size"] = std::int64_t{1} << 24;
  config["hidden_size"] = std::int64_t{1} << 20;
  config["num_attention_heads"] = 1024;
  config["intermediate_size"] = std::int64_t{1} << 22;
  config["num_hidden_layers"] = 10'000;
  const json from_config = json::parse(api::inspect_config(config.dump()));
  REQUIRE(from_config["ok"] == false);
  CHECK(from_config["error"]["code"] == "out_of_range");
  CHECK(from_config["error"]["path"] == "");
  CHECK_THAT(from_config["error"]["message"].get<std::string>(), Catch::Contains("2^53"));
  json request = small_request();
  request["model"] = {{"config", config}};
  CHECK(call(api::inspect, json{{"model", request["model"]}})["error"]["path"] == "/model/config");
  for (auto entry : {api::estimate, api::search, api::launch}) {
    const json r = call(entry, request);
    REQUIRE(r["ok"] == false);
    CHECK(r["error"]["code"] == "out_of_range");
    CHECK(r["error"]["path"] == "/model/config");
  }

  // Sequence x micro-batch: 2^24 tokens x 2^16 sequences.
  json tokens = small_request();
  tokens["training"] = {{"seq_len", std::int64_t{1} << 24}, {"micro_batch", 1 << 16}};
  const json r = call(api::estimate, tokens);
  REQUIRE(r["ok"] == false);
  CHECK(r["error"]["code"] == "out_of_range");
  CHECK(r["error"]["path"] == "/training");
  CHECK_THAT(r["error"]["message"].get<std::string>(), Catch::Contains("2^53"));

  // Pipeline stage sizes whose sum would wrap a 64-bit integer.
  json stages = small_request();
  stages["cluster"]["gpus"] = 2;
  stages["parallel"] = {{"pp", 2}, {"stage_layers", {std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::max()}}};
  const json s = call(api::estimate, stages);
  REQUIRE(s["ok"] == false);
  CHECK(s["error"]["code"] == "out_of_range");
  CHECK(s["error"]["path"] == "/parallel/stage_layers/0");
}

TEST_CASE("100,000 GPUs are accepted; one past the GPU bound is refused", "[limits]") {
  json request = small_request();
  request["model"] = {{"preset", "meta-llama/Llama-3.1-405B-Instruct"}};
  request["cluster"]["gpus"] = 100'000;
  request["parallel"] = {{"tp", 8}, {"pp", 2}, {"sharding", "zero1"}};
  const json ok = call(api::estimate, request);
  REQUIRE(ok["ok"] == true);
  CHECK(ok["result"]["parallel"]["dp"] == 6'250);
  request["cluster"]["gpus"] = (1 << 20) + 1;
  const json past = call(api::estimate, request);
  CHECK(past["error"]["code"] == "out_of_range");
  CHECK(past["error"]["path"] == "/cluster/gpus");
  CHECK_THAT(past["error"]["message"].get<std::string>(), Catch::Contains("1,048,576"));
}

TEST_CASE("a search over a huge cluster answers within a bounded time and says what it covered", "[limits][search]") {
  json request = small_request();
  request["model"] = {{"preset", "meta-llama/Llama-3.1-405B-Instruct"}};
  request["training"] = {{"seq_len", 8192}};
  for (const std::int64_t gpus : {100'000, 98'304, 1 << 20}) {
    request["cluster"]["gpus"] = gpus;
    const auto start = std::chrono::steady_clock::now();
    const json r = call(api::search, request);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO(gpus << " GPUs: " << seconds << " s");
    CHECK(seconds < 20);  // well under a second natively; generous for sanitizer builds
    if (r["ok"] == true) {
      const json& c = r["result"]["counts"];
      CHECK(c["valid"].get<std::int64_t>() == c["fit"].get<std::int64_t>() + c["oom"].get<std::int64_t>() +
                                                 c["not_needed"].get<std::int64_t>() + c["unexplored"].get<std::int64_t>());
      CHECK(r["result"]["complete"].is_boolean());
    } else {
      CHECK(r["error"]["code"] == "out_of_range");
      CHECK(r["error"]["path"] == "/search");
      CHECK_THAT(r["error"]["message"].get<std::string>(), Catch::Contains("4000000 candidates"));
    }
  }
}

TEST_CASE("at the memory-estimate bound the walk stops and reports what it left unexplored", "[limits][search]") {
  const ModelArchitecture a = parse_hf_config_text(presets::find_model("meta-llama/Llama-3.1-70B-Instruct")->config_text);
  const TensorInventory inv = build_tensor_inventory(a);
  SearchInput in;
  in.arch = &a;
  in.inv = &inv;
  in.training.precision = Precision::kBf16;
  in.training.seq_len = 8192;
  in.cluster.gpu = *presets::find_gpu("H100-80GB");
  in.cluster.gpus = 256;
  in.top = 20;
  for (const Objective objective : {Objective::kFastest, Objective::kLeastMemory, Objective::kLargestBatch}) {
    in.objective = objective;
    in.max_estimates = kMaxSearchEstimates;
    const SearchResult full = run_search(in);
    REQUIRE(full.complete);
    REQUIRE(full.memory_estimated > 8);
    in.max_estimates = 8;
    const SearchResult cut = run_search(in);
    INFO(objective_name(objective));
    CHECK_FALSE(cut.complete);
    CHECK(cut.unexplored > 0);
    CHECK(cut.valid == full.valid);
    CHECK(cut.valid == cut.fit + cut.oom + cut.not_needed + cut.unexplored);
    CHECK_THAT(cut.assumptions.back(), Catch::StartsWith("the walk stopped at the bound of 8 memory estimates"));
    if (objective == Objective::kFastest) {
      // Fastest first: whatever the cut walk found is the head of the full answer.
      REQUIRE(cut.top.size() <= full.top.size());
      for (std::size_t i = 0; i < cut.top.size(); ++i) CHECK(cut.top[i].perf.tokens_per_s == full.top[i].perf.tokens_per_s);
    }
  }
}

TEST_CASE("checked arithmetic: exact up to 2^53 either sign, saturated and flagged past it", "[limits]") {
  constexpr std::int64_t k53 = std::int64_t{1} << 53;
  take_beyond_exact();
  // The bound with the result's sign, and the first quantity named in the flag.
  auto saturates = [](auto f, std::int64_t bound) {
    const std::int64_t r = f();
    const char* what = take_beyond_exact();
    return r == bound && what != nullptr && std::string(what) == "x";
  };
  CHECK(checked_mul(std::int64_t{1} << 31, std::int64_t{1} << 22, "x") == k53);   // both factors >= 2^22
  CHECK(checked_mul(-(std::int64_t{1} << 40), std::int64_t{1} << 13, "x") == -k53);
  CHECK(checked_mul(k53, 1, "x") == k53);
  CHECK(checked_mul(0, INT64_MAX, "x") == 0);
  CHECK(checked_mul(-3, -5, "x") == 15);
  CHECK(checked_mul(46341, 46341, "x") == 46341LL * 46341LL);                     // past 2^31 as a product
  CHECK(saturates([] { return checked_mul(k53 + 1, 1, "x"); }, k53));
  CHECK(saturates([] { return checked_mul(std::int64_t{1} << 40, std::int64_t{1} << 14, "x"); }, k53));
  CHECK(saturates([] { return checked_mul((std::int64_t{1} << 31) - 1, (std::int64_t{1} << 31) - 1, "x"); }, k53));  // 2^62: no wrap
  CHECK(saturates([] { return checked_mul(INT64_MIN, 1, "x"); }, -k53));
  CHECK(saturates([] { return checked_mul(INT64_MIN, -1, "x"); }, k53));
  CHECK(saturates([] { return checked_mul(std::int64_t{1} << 32, std::int64_t{1} << 32, "x"); }, k53));  // 2^64 wraps to 0
  CHECK(checked_add(k53 - 1, 1, "x") == k53);
  CHECK(saturates([] { return checked_add(k53, 1, "x"); }, k53));
  CHECK(saturates([] { return checked_add(-k53, -1, "x"); }, -k53));
  CHECK(saturates([] { return checked_add(INT64_MAX, 1, "x"); }, k53));
  // The first quantity past the bound is the one named; the flag stays until taken.
  checked_mul(k53, 2, "first");
  checked_add(k53, k53, "second");
  CHECK(std::string(take_beyond_exact()) == "first");
  CHECK(take_beyond_exact() == nullptr);
}
