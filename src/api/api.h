// The one facade: JSON text in, JSON text out. Every entry point returns an envelope
//   {"ok": true, "schema_version": N, "result": {...}}   or
//   {"ok": false, "schema_version": N, "error": {"code", "message", "path"}}
// and never throws. This file is the only catch site of the core (docs/api.md).
#pragma once
#include <string>
#include <string_view>

namespace memfit::api {

inline constexpr int kSchemaVersion = 1;

/// {"version", "schema_version", "json_library"}.
std::string version();
/// Model and GPU presets: {"models": [...], "gpus": [...]}.
std::string presets();
/// config.json text -> architecture and exact parameter counts. Paths are relative to the config.
std::string inspect_config(std::string_view config_text, bool include_tensors = false);
/// Request {"model": {"preset": id} | {"config": {...}}, "include_tensors"?: bool}.
std::string inspect(std::string_view request_text);
/// Request {"model", "training", "cluster", "parallel"?, "options"?} -> per-GPU peak memory,
/// breakdown, timeline, verdict and the largest micro-batch that fits (docs/api.md "estimate").
std::string estimate(std::string_view request_text);
/// Request {"model", "training", "cluster", "search"?} -> every valid layout counted, the
/// fastest (or least-memory, or largest-batch) that fit, the best per method, suggestions when
/// none fits, and launch configurations for the best (docs/api.md "search").
std::string search(std::string_view request_text);
/// An estimate request (with its `parallel` layout) -> launch configurations for DeepSpeed,
/// accelerate, Megatron-LM, torchtitan and torchtune (docs/api.md "launch").
std::string launch(std::string_view request_text);

}  // namespace memfit::api
