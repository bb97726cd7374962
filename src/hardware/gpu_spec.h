// A GPU as the estimator and the performance model see it: memory as the driver reports it,
// dense tensor throughput per dtype and bandwidths. Figures come from vendor datasheets
// (presets/gpus/*.json, each with its sources).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace memfit {

/// How the GPUs of one node are linked to each other (nvlink_topology.h).
enum class IntraNodeTopology {
  kUniform,              // every pair at the full per-GPU bandwidth (NVSwitch, or not stated)
  kDgx1HybridCubeMesh,   // DGX-1 V100's hybrid cube mesh: 6 NVLinks per GPU to 4 of the 7 others
};

struct GpuSpec {
  std::string id;                          // "H100-80GB"
  std::string name;
  std::string vendor;
  std::string architecture;
  double memory_nominal_gb = 0;            // the datasheet's number
  std::int64_t memory_total_bytes = 0;     // what the driver reports as total device memory
  std::string memory_type;
  double memory_bandwidth_gb_per_s = 0;
  double dense_tflops_fp32 = 0, dense_tflops_tf32 = 0, dense_tflops_bf16 = 0, dense_tflops_fp16 = 0,
         dense_tflops_fp8 = 0;             // 0: not supported
  double intra_node_bandwidth_gb_per_s = 0;  // per GPU, per direction
  std::string intra_node_link;
  /// The links between the GPUs of a node of 8 (nodes of other sizes: kUniform).
  IntraNodeTopology intra_node_topology = IntraNodeTopology::kUniform;
  double pcie_bandwidth_gb_per_s = 0;      // host link, per direction
  double tdp_w = 0;
  std::int64_t sm_count = 0;               // streaming multiprocessors (AMD: compute units); 0: not stated
  /// CPU memory of the node the preset names as its reference system (a DGX, a cloud instance of
  /// 8 GPUs); 0: none given. Requests override it (cluster.host_memory_gib_per_node).
  std::int64_t host_memory_bytes_per_node = 0;
  /// The inter-node fabric of that reference system (a cluster.network preset id); "": none given.
  /// A request without cluster.network or inter_node_bandwidth_gb_per_s runs over its bandwidth.
  std::string reference_network;
  std::vector<std::string> sources;
};

/// GPUs of one kind in a cluster that mixes kinds, in rank order (a node holds one kind).
struct GpuGroup {
  GpuSpec gpu;
  std::int64_t count = 0;
};

}  // namespace memfit
