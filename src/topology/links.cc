#include "topology/links.h"

namespace braid::topology {

LinkSpec nvlinkPerLink(int sm) {
  if (sm >= 90) {
    return {26.56, 0.69,
            "NVLink 4: 26.56 GB/s per link per direction (nvidia-smi on the H200 machine, "
            "../shared/PERFORMANCE.md); 0.69 us for a flag written into the peer GPU (measured there)"};
  }
  return {25.0, 0.7,
          "NVLink 2/3: 25 GB/s per link per direction (NVIDIA V100: 300 GB/s over 6 links, A100: 600 GB/s "
          "over 12, both directions counted); latency taken as NVLink 4's"};
}

LinkSpec pcie(int gen, int width) {
  // PCI-SIG transfer rates after line encoding, GB/s per lane each way: gen3 0.985 (8 GT/s,
  // 128b/130b), doubling per generation; times 0.85 for packet headers and flow control with
  // 256-byte payloads.
  static const double kPerLane[] = {0.25, 0.5, 0.985, 1.969, 3.938, 7.877};  // gen 1..6
  int g = gen < 1 ? 3 : gen > 6 ? 6 : gen;
  int w = width < 1 ? 16 : width;
  return {kPerLane[g - 1] * w * 0.85, 1.0,
          "PCIe: PCI-SIG rate per lane x width x 0.85 (packet overhead); ~1 us per DMA hop through "
          "a switch (typical published figure)"};
}

LinkSpec cpuInterconnect() {
  return {20.8, 0.2,
          "CPU sockets: one UPI link at 10.4 GT/s carries 20.8 GB/s each way (Intel); ~0.2 us more than "
          "a local memory access"};
}

LinkSpec network(double gbps) {
  double rate = gbps > 0 ? gbps : 100;
  return {rate / 8 * 0.9, 5.0,
          "network: NIC line rate / 8 x 0.9 (Ethernet/IB framing); 5 us per hop (RDMA-class NICs publish "
          "2-3 us; TCP more)"};
}

LinkSpec specFor(const Host& host, const Link& link) {
  switch (link.kind) {
    case LinkKind::kNvLink: {
      int sm = 0;
      for (int end : {link.a, link.b}) {
        if (end >= 0 && end < static_cast<int>(host.nodes.size()) && host.nodes[end].kind == NodeKind::kGpu)
          sm = host.nodes[end].sm;
      }
      LinkSpec s = nvlinkPerLink(sm);
      s.bandwidth *= link.count < 1 ? 1 : link.count;
      return s;
    }
    case LinkKind::kPcie: return pcie(link.pcieGen, link.pcieWidth);
    case LinkKind::kCpu: return cpuInterconnect();
    case LinkKind::kNet: {
      double gbps = 0;
      for (int end : {link.a, link.b}) {
        if (end >= 0 && end < static_cast<int>(host.nodes.size()) && host.nodes[end].kind == NodeKind::kNic)
          gbps = host.nodes[end].speedGbps;
      }
      return network(gbps);
    }
  }
  return {};
}

}  // namespace braid::topology
