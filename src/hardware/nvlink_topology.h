// Bandwidth of a group of GPUs inside one node whose GPUs are not all linked alike.
#pragma once
#include <cstdint>

#include "hardware/gpu_spec.h"

namespace memfit {

/// NVLinks between GPUs i and j of a DGX-1 with V100 (0, 1 or 2), as `nvidia-smi topo -m` prints
/// them (NV1 / NV2; SYS: none) on such a node (Oneflow-Inc/DLPerf Megatron-LM/README.md @01e43de4,
/// 8 x V100-SXM2-16GB; the hybrid cube mesh of NVIDIA's "DGX-1 with Tesla V100 System
/// Architecture" white paper, 2017, Figure 3). Every GPU has 6 links.
std::int64_t dgx1_nvlinks(std::int64_t i, std::int64_t j);

/// Per-GPU, per-direction bandwidth (GB/s) of a collective among `group` ranks `stride` apart
/// inside one node of `gpus_per_node` GPUs: ranks are placed in order, so the node holds
/// gpus_per_node / (stride x group) x stride such groups. Uniformly linked nodes: the GPU's
/// intra_node_bandwidth_gb_per_s. A DGX-1 node of 8 V100s: each GPU can move its share only over
/// its NVLinks to the group's other GPUs (NCCL's rings follow NVLink; NCCL 2.8 had no path through
/// an intermediate GPU), each link 1/6 of the GPU's bandwidth; the slowest group of the node sets
/// the pace. Pairs 0-1 and 4-5 share one link (25 GB/s), the quads 0-3 and 4-7 give each GPU 4
/// links to the other three (100 GB/s), all 8 use all 6 (150 GB/s).
double dgx1_group_gb_per_s(const GpuSpec& gpu, std::int64_t gpus_per_node, std::int64_t stride, std::int64_t group);
/// Inline: the step time asks it of every link it times, nearly always of uniform nodes.
inline double intra_node_group_gb_per_s(const GpuSpec& gpu, std::int64_t gpus_per_node, std::int64_t stride, std::int64_t group) {
  if (gpu.intra_node_topology == IntraNodeTopology::kUniform) return gpu.intra_node_bandwidth_gb_per_s;
  return dgx1_group_gb_per_s(gpu, gpus_per_node, stride, group);
}

}  // namespace memfit
