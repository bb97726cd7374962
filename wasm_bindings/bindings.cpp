// Embind surface of the WASM module: forwards strings to the api facade and nothing else
// (the facade never throws, so no exception can reach JavaScript).
#include <emscripten/bind.h>

#include <string>

#include "api/api.h"

namespace {
std::string inspect_config(const std::string& text, bool include_tensors) {
  return memfit::api::inspect_config(text, include_tensors);
}
std::string inspect(const std::string& text) { return memfit::api::inspect(text); }
std::string estimate(const std::string& text) { return memfit::api::estimate(text); }
std::string search(const std::string& text) { return memfit::api::search(text); }
std::string launch(const std::string& text) { return memfit::api::launch(text); }
}  // namespace

EMSCRIPTEN_BINDINGS(memfit) {
  emscripten::function("version", &memfit::api::version);
  emscripten::function("presets", &memfit::api::presets);
  emscripten::function("inspectConfig", &inspect_config);
  emscripten::function("inspect", &inspect);
  emscripten::function("estimate", &estimate);
  emscripten::function("search", &search);
  emscripten::function("launch", &launch);
}
