// Every input the fuzzers found a problem with (tests/fuzz/regressions/<target>/) is replayed
// through its api entry point: the answer must now be a well-formed envelope with a coded error
// or a result (tests/fuzz/envelope_check.h). scripts/fuzz.sh finds new ones.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../../fuzz/envelope_check.h"

namespace fs = std::filesystem;

TEST_CASE("inputs the fuzzers found are answered with a well-formed envelope", "[fuzz]") {
  std::size_t replayed = 0;
  for (const char* target : memfit::fuzz::kTargets) {
    const fs::path dir = fs::path(MEMFIT_SOURCE_DIR) / "tests/fuzz/regressions" / target;
    if (!fs::exists(dir)) continue;
    for (const fs::directory_entry& file : fs::directory_iterator(dir)) {
      std::ifstream in(file.path(), std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      const std::string envelope = memfit::fuzz::answer(target, text.str());
      INFO(target << ": " << file.path().filename().string() << " -> " << envelope.substr(0, 400));
      CHECK(memfit::fuzz::envelope_problem(envelope).empty());
      ++replayed;
    }
  }
  CHECK(replayed > 0);
}

TEST_CASE("a json number beyond a double is an out_of_range error, not an internal one", "[fuzz][errors]") {
  for (const char* text : {"1e400", R"({"model": {"preset": 1e99999}})", "[-2e308]"}) {
    const auto env = nlohmann::json::parse(memfit::api::inspect(text));
    CHECK(env["error"]["code"] == "out_of_range");
    CHECK_THAT(env["error"]["message"].get<std::string>(), Catch::StartsWith("a json number is too large for a double: "));
  }
}
