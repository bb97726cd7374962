// Native driver of the api facade, for development, benchmarks and the native/WASM parity test
// (the user-facing CLI is the Node one, cli/memfit.js, running the same core as WebAssembly).
// Usage: memfit_native estimate|inspect|search|launch|inspect_config <request.json | ->
//        memfit_native batch   (stdin: one "<entry> <text>" per line; stdout: one envelope per line)
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>

#include "api/api.h"

namespace {

// The envelope of entry `command` for `text`, or nullopt for an unknown entry.
std::optional<std::string> answer(const std::string& command, const std::string& text) {
  if (command == "estimate") return memfit::api::estimate(text);
  if (command == "inspect") return memfit::api::inspect(text);
  if (command == "search") return memfit::api::search(text);
  if (command == "launch") return memfit::api::launch(text);
  if (command == "inspect_config") return memfit::api::inspect_config(text, false);
  return std::nullopt;
}

// Batch: requests are single-line JSON texts (JSON.stringify's), envelopes are too.
int batch() {
  std::string line;
  while (std::getline(std::cin, line)) {
    const auto space = line.find(' ');
    const std::optional<std::string> out =
        answer(line.substr(0, space), space == std::string::npos ? "" : line.substr(space + 1));
    if (!out) {
      std::fprintf(stderr, "memfit_native: unknown entry in line: %.80s\n", line.c_str());
      return 2;
    }
    std::fwrite(out->data(), 1, out->size(), stdout);
    std::fputc('\n', stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "batch") return batch();
  if (argc != 3) {
    std::fprintf(stderr, "usage: memfit_native estimate|inspect|search|launch|inspect_config <request.json | ->\n"
                         "       memfit_native batch\n");
    return 2;
  }
  const std::string command = argv[1];
  const std::string file = argv[2];
  std::string text;
  if (file == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "memfit_native: cannot read %s\n", file.c_str());
      return 2;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  const std::optional<std::string> out = answer(command, text);
  if (!out) {
    std::fprintf(stderr, "memfit_native: unknown command %s\n", command.c_str());
    return 2;
  }
  std::puts(out->c_str());
  return out->rfind("{\"ok\":true", 0) == 0 ? 0 : 2;
}
