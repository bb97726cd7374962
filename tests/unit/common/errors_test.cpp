// Bad input gives a coded error with the JSON Pointer of the field and a one-line message:
// checked exactly (code, path, message), as the README's "Error codes" table promises.
#include <catch2/catch.hpp>

#include "api/api.h"
#include "common/units.h"
#include "hf_config/parse_hf_config.h"
#include "model/tensor_inventory.h"

using namespace memfit;

namespace {

struct Caught {
  std::string code, path, message;
};

Caught parse_error(const std::string& text) {
  try {
    build_tensor_inventory(parse_hf_config_text(text));
    throw_if_beyond_exact();  // the inventory flags a size past 2^53 (units.h)
  } catch (const Error& e) {
    return {std::string(error_code_name(e.code())), e.path(), e.what()};
  }
  FAIL("no error for: " << text);
  return {};
}

const char* kLlama = R"("model_type":"llama","vocab_size":32000,"hidden_size":4096,"num_attention_heads":32,"intermediate_size":11008)";

std::string llama_with(const std::string& extra) { return std::string("{") + kLlama + "," + extra + "}"; }

}  // namespace

TEST_CASE("malformed json names the position", "[errors]") {
  const Caught c = parse_error(R"({"model_type": "llama", "hidden_size": 4096,)");
  CHECK(c.code == "invalid_json");
  CHECK(c.path == "");
  CHECK_THAT(c.message, Catch::StartsWith("invalid json: - invalid literal") ||
                            Catch::StartsWith("invalid json: at line 1"));
}

TEST_CASE("a missing required key names its pointer", "[errors]") {
  const Caught c = parse_error(std::string("{") + kLlama + "}");
  CHECK(c.code == "missing_field");
  CHECK(c.path == "/num_hidden_layers");
  CHECK(c.message == "missing required field num_hidden_layers");
}

TEST_CASE("wrong types are rejected with the field", "[errors]") {
  const Caught c = parse_error(llama_with(R"("num_hidden_layers":"32")"));
  CHECK(c.code == "invalid_type");
  CHECK(c.path == "/num_hidden_layers");
  CHECK(c.message == "num_hidden_layers must be an integer, got string");
  const Caught b = parse_error(llama_with(R"("num_hidden_layers":true)"));
  CHECK(b.message == "num_hidden_layers must be an integer, got boolean");
}

TEST_CASE("zero, negative, fractional and absurd values are rejected", "[errors]") {
  CHECK(parse_error(llama_with(R"("num_hidden_layers":0)")).message ==
        "num_hidden_layers must be at least 1, got 0");
  CHECK(parse_error(llama_with(R"("num_hidden_layers":-3)")).code == "out_of_range");
  const Caught frac = parse_error(llama_with(R"("num_hidden_layers":2.5)"));
  CHECK(frac.code == "invalid_value");
  CHECK(frac.message == "num_hidden_layers must be an integer, got 2.5");
  const Caught huge = parse_error(llama_with(R"("num_hidden_layers":1000000000000)"));
  CHECK(huge.code == "out_of_range");
  CHECK(huge.path == "/num_hidden_layers");
  CHECK(huge.message == "num_hidden_layers must be at most 10,000, got 1,000,000,000,000");
  const Caught u64 = parse_error(llama_with(R"("num_hidden_layers":18446744073709551615)"));
  CHECK(u64.code == "out_of_range");
  CHECK(u64.message == "num_hidden_layers must be at most 10,000, got 18446744073709551615");
  CHECK(parse_error(llama_with(R"("num_hidden_layers":1e300)")).code == "out_of_range");
}

TEST_CASE("hidden size not divisible by heads without head_dim", "[errors]") {
  const Caught c = parse_error(R"({"model_type":"llama","vocab_size":10,"hidden_size":100,
    "num_hidden_layers":2,"num_attention_heads":3,"intermediate_size":8})");
  CHECK(c.code == "invalid_value");
  CHECK(c.path == "/num_attention_heads");
  CHECK(c.message == "hidden size (100) is not divisible by num_attention_heads (3) and head_dim is not given");
}

TEST_CASE("kv heads must divide heads", "[errors]") {
  const Caught c = parse_error(llama_with(R"("num_hidden_layers":2,"num_key_value_heads":5)"));
  CHECK(c.path == "/num_key_value_heads");
  CHECK(c.message == "num_key_value_heads (5) does not divide the number of attention heads (32)");
}

TEST_CASE("unknown model types list the supported ones", "[errors]") {
  const Caught c = parse_error(R"({"model_type":"wav2vec2","hidden_size":16})");
  CHECK(c.code == "unsupported_model_type");
  CHECK(c.path == "/model_type");
  CHECK_THAT(c.message, Catch::StartsWith("model_type 'wav2vec2' is not supported (supported: gpt2, opt,"));
}

TEST_CASE("deep nesting and multi-megabyte input are rejected before parsing", "[errors]") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const Caught d = parse_error(deep);
  CHECK(d.code == "too_deep");
  CHECK(d.message == "json nesting deeper than 64 levels");
  std::string big = R"({"model_type":"llama","pad":")" + std::string(3u << 20, 'x') + "\"}";
  const Caught b = parse_error(big);
  CHECK(b.code == "input_too_large");
  CHECK_THAT(b.message, Catch::EndsWith("bytes; the limit is 2,097,152"));
}

TEST_CASE("a document that is not an object is rejected", "[errors]") {
  const Caught c = parse_error("[1, 2, 3]");
  CHECK(c.code == "invalid_type");
  CHECK(c.message == "expected a json object, got array");
}

TEST_CASE("parameter totals beyond 2^53 are an error, not a wrapped number", "[errors]") {
  // Within every per-field bound, the product is astronomically large.
  const Caught c = parse_error(R"({"model_type":"mixtral","vocab_size":16777216,"hidden_size":1048576,
    "num_hidden_layers":10000,"num_attention_heads":16,"intermediate_size":4194304,
    "num_local_experts":65536,"num_experts_per_tok":2})");
  CHECK(c.code == "out_of_range");
  CHECK_THAT(c.message, Catch::EndsWith("exceeds 2^53"));
}
