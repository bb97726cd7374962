#include "hardware/nvlink_topology.h"

#include <algorithm>

namespace memfit {

namespace {
constexpr std::int64_t kDgx1Gpus = 8;
constexpr std::int64_t kDgx1LinksPerGpu = 6;
// nvidia-smi topo -m of a DGX-1 V100 node (the source in nvlink_topology.h): NV1 = 1, NV2 = 2.
constexpr std::int64_t kDgx1Links[kDgx1Gpus][kDgx1Gpus] = {
    {0, 1, 1, 2, 2, 0, 0, 0},  // GPU0
    {1, 0, 2, 1, 0, 2, 0, 0},  // GPU1
    {1, 2, 0, 2, 0, 0, 1, 0},  // GPU2
    {2, 1, 2, 0, 0, 0, 0, 1},  // GPU3
    {2, 0, 0, 0, 0, 1, 1, 2},  // GPU4
    {0, 2, 0, 0, 1, 0, 2, 1},  // GPU5
    {0, 0, 1, 0, 1, 2, 0, 2},  // GPU6
    {0, 0, 0, 1, 2, 1, 2, 0},  // GPU7
};
}  // namespace

std::int64_t dgx1_nvlinks(std::int64_t i, std::int64_t j) {
  if (i < 0 || j < 0 || i >= kDgx1Gpus || j >= kDgx1Gpus) return 0;
  return kDgx1Links[i][j];
}

double dgx1_group_gb_per_s(const GpuSpec& gpu, std::int64_t gpus_per_node, std::int64_t stride, std::int64_t group) {
  const double full = gpu.intra_node_bandwidth_gb_per_s;
  stride = std::max<std::int64_t>(stride, 1);
  group = std::max<std::int64_t>(group, 1);
  if (gpu.intra_node_topology != IntraNodeTopology::kDgx1HybridCubeMesh || gpus_per_node != kDgx1Gpus || group < 2 ||
      stride * group > kDgx1Gpus) {
    return full;
  }
  // Groups of the node: {outer x stride x group + inner + m x stride}, m < group, inner < stride.
  std::int64_t fewest = kDgx1LinksPerGpu;
  for (std::int64_t outer = 0; outer < kDgx1Gpus / (stride * group); ++outer) {
    for (std::int64_t inner = 0; inner < stride; ++inner) {
      const std::int64_t first = outer * stride * group + inner;
      for (std::int64_t a = 0; a < group; ++a) {
        std::int64_t links = 0;
        for (std::int64_t b = 0; b < group; ++b) links += dgx1_nvlinks(first + a * stride, first + b * stride);
        fewest = std::min(fewest, links);
      }
    }
  }
  // A GPU with no NVLink to the others of its group reaches them over PCIe.
  if (fewest == 0) return std::min(full, gpu.pcie_bandwidth_gb_per_s);
  return full * static_cast<double>(fewest) / static_cast<double>(kDgx1LinksPerGpu);
}

}  // namespace memfit
