// DGX-1's hybrid cube mesh: the bandwidth of a group of V100s is the NVLinks among its members.
#include <catch2/catch.hpp>

#include "hardware/nvlink_topology.h"
#include "presets/registry.h"

using namespace memfit;
using memfit::presets::find_gpu;

TEST_CASE("the DGX-1 link matrix gives every GPU 6 NVLinks, symmetric", "[hardware]") {
  for (std::int64_t i = 0; i < 8; ++i) {
    std::int64_t links = 0;
    for (std::int64_t j = 0; j < 8; ++j) {
      CHECK(dgx1_nvlinks(i, j) == dgx1_nvlinks(j, i));
      links += dgx1_nvlinks(i, j);
    }
    CHECK(links == 6);
  }
}

TEST_CASE("a group of V100s in a DGX-1 moves data over the links among its members", "[hardware]") {
  const GpuSpec* v100 = find_gpu("V100-16GB");
  REQUIRE(v100 != nullptr);
  REQUIRE(v100->intra_node_topology == IntraNodeTopology::kDgx1HybridCubeMesh);
  // Tensor-parallel groups (consecutive ranks): pairs 0-1 and 4-5 have one link, quads give each
  // GPU 4 links to the other three, all 8 use all 6.
  CHECK(intra_node_group_gb_per_s(*v100, 8, 1, 2) == Approx(25.0));
  CHECK(intra_node_group_gb_per_s(*v100, 8, 1, 4) == Approx(100.0));
  CHECK(intra_node_group_gb_per_s(*v100, 8, 1, 8) == Approx(150.0));
  // Data-parallel groups across tp 2 ({0,2,4,6}: GPUs 2 and 6 reach two links) and tp 4 ({2,6}: one).
  CHECK(intra_node_group_gb_per_s(*v100, 8, 2, 4) == Approx(50.0));
  CHECK(intra_node_group_gb_per_s(*v100, 8, 4, 2) == Approx(25.0));
  // Nodes of another size, and switched GPUs, run at the full per-GPU bandwidth.
  CHECK(intra_node_group_gb_per_s(*v100, 4, 1, 2) == Approx(150.0));
  const GpuSpec* a100 = find_gpu("A100-80GB");
  REQUIRE(a100 != nullptr);
  CHECK(intra_node_group_gb_per_s(*a100, 8, 1, 2) == Approx(a100->intra_node_bandwidth_gb_per_s));
}
