// Inter-node fabrics of common clusters: what a request names as cluster.network. Each gives the
// GPU-facing network bandwidth of one node and the GPUs that share it; the per-GPU figure the
// step-time model uses is their quotient, per direction (cluster.inter_node_bandwidth_gb_per_s
// overrides it).
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

namespace memfit {

struct NetworkPreset {
  std::string_view id;
  std::string_view name;
  double node_gbit_per_s = 0;     // the node's GPU-facing NICs together, per direction
  std::int64_t gpus_per_node = 8;
  std::string_view source;
  double gb_per_s_per_gpu() const { return node_gbit_per_s / 8.0 / static_cast<double>(gpus_per_node); }
};

std::span<const NetworkPreset> network_presets();
/// The preset of that id, or nullptr.
const NetworkPreset* find_network(std::string_view id);

}  // namespace memfit
