// Native driver of the api facade, for development and benchmarks (the user-facing CLI is the
// Node one, cli/memfit.js, running the same core as WebAssembly).
// Usage: memfit_native estimate|inspect|search|launch <request.json | ->   (prints the envelope)
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

#include "api/api.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: memfit_native estimate|inspect|search|launch <request.json | ->\n");
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
  std::string out;
  if (command == "estimate") out = memfit::api::estimate(text);
  else if (command == "inspect") out = memfit::api::inspect(text);
  else if (command == "search") out = memfit::api::search(text);
  else if (command == "launch") out = memfit::api::launch(text);
  else {
    std::fprintf(stderr, "memfit_native: unknown command %s\n", command.c_str());
    return 2;
  }
  std::puts(out.c_str());
  return out.rfind("{\"ok\":true", 0) == 0 ? 0 : 2;
}
