// Cluster fabric presets (network.h). Bandwidths are the vendors' figures for the NICs the GPUs
// use (storage and management NICs left out).
#include "hardware/network.h"

#include <array>

namespace memfit {
namespace {

constexpr std::array kNetworks = {
    NetworkPreset{"dgx-a100", "NVIDIA DGX A100 / HGX A100 with HDR InfiniBand", 8 * 200.0, 8,
                  "DGX A100 datasheet: 8x single-port ConnectX-6 VPI, 200 Gb/s HDR InfiniBand"},
    NetworkPreset{"dgx-1", "NVIDIA DGX-1 with V100 (EDR InfiniBand)", 4 * 100.0, 8,
                  "DGX-1 with Tesla V100 datasheet: 4x InfiniBand EDR 100 Gb/s for 8 GPUs"},
    NetworkPreset{"dgx-h100", "NVIDIA DGX H100 / HGX H100 with NDR InfiniBand", 8 * 400.0, 8,
                  "DGX H100 datasheet: 8x single-port ConnectX-7 VPI, 400 Gb/s InfiniBand/Ethernet"},
    NetworkPreset{"dgx-b200", "NVIDIA DGX B200 / HGX B200", 8 * 400.0, 8,
                  "DGX B200 datasheet: 8x single-port ConnectX-7 VPI, 400 Gb/s InfiniBand/Ethernet"},
    NetworkPreset{"gb200-nvl72", "NVIDIA GB200 NVL72 (72-GPU NVLink domain)", 72 * 400.0, 72,
                  "DGX GB200 datasheet: 72x OSFP single-port ConnectX-7 VPI, 400 Gb/s InfiniBand per rack"},
    NetworkPreset{"aws-p4d", "AWS p4d.24xlarge (8x A100 40GB, EFA)", 400.0, 8,
                  "aws.amazon.com/ec2/instance-types/p4: 400 Gbps EFA networking per instance"},
    NetworkPreset{"aws-p5", "AWS p5.48xlarge (8x H100, EFAv2)", 3200.0, 8,
                  "aws.amazon.com/ec2/instance-types/p5: 3,200 Gbps EFAv2 networking per instance"},
    NetworkPreset{"azure-nd-a100-v4", "Azure ND A100 v4 (8x A100, HDR InfiniBand)", 8 * 200.0, 8,
                  "learn.microsoft.com ND A100 v4-series: 8x 200 Gb/s HDR InfiniBand, 1.6 Tb/s per VM"},
    NetworkPreset{"azure-nd-h100-v5", "Azure ND H100 v5 (8x H100, NDR InfiniBand)", 8 * 400.0, 8,
                  "learn.microsoft.com ND H100 v5-series: 8x 400 Gb/s NDR InfiniBand, 3.2 Tb/s per VM"},
    NetworkPreset{"gcp-a3-high", "Google Cloud a3-highgpu-8g (8x H100, GPUDirect-TCPX)", 4 * 200.0, 8,
                  "cloud.google.com/compute/docs/gpus A3 High: four 200 Gbps GPU NICs (1,000 Gbps with the host NIC)"},
    NetworkPreset{"gcp-a3-mega", "Google Cloud a3-megagpu-8g (8x H100, GPUDirect-TCPXO)", 8 * 200.0, 8,
                  "cloud.google.com/compute/docs/gpus A3 Mega: eight 200 Gbps GPU NICs (1,800 Gbps with the host NIC)"},
    NetworkPreset{"hdr-200g-node", "One 200 Gb/s HDR InfiniBand adapter per 8-GPU node", 200.0, 8,
                  "a common academic/cloud layout: one ConnectX-6 HDR port shared by the node's GPUs"},
    NetworkPreset{"ethernet-100g", "One 100 Gb/s Ethernet port per 8-GPU node", 100.0, 8,
                  "one 100 GbE NIC shared by the node's GPUs (no GPUDirect RDMA assumed faster)"},
    NetworkPreset{"ethernet-25g", "One 25 Gb/s Ethernet port per 8-GPU node", 25.0, 8,
                  "one 25 GbE NIC shared by the node's GPUs"},
};

}  // namespace

std::span<const NetworkPreset> network_presets() { return kNetworks; }

const NetworkPreset* find_network(std::string_view id) {
  for (const NetworkPreset& n : kNetworks) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

}  // namespace memfit
