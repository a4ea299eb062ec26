// The link table: bandwidth (GB/s each way) and one-hop latency of each link type, each constant
// with where it comes from. A topology file may override both for any link.
#pragma once

#include "topology/graph.h"

namespace braid::topology {

struct LinkSpec {
  double bandwidth = 0;     // GB/s each way
  double latencyUs = 0;     // one hop
  const char* source = "";  // where the numbers come from
};

/// NVLink, per link, by GPU architecture (compute capability x 10 of the GPU end; 0: unknown).
LinkSpec nvlinkPerLink(int sm);
/// PCIe of a generation and width (unknown: gen 3, x16).
LinkSpec pcie(int gen, int width);
/// Between CPU sockets (UPI / xGMI class).
LinkSpec cpuInterconnect();
/// A NIC of `gbps` line rate to the network (0: unknown, taken as 100 Gb/s).
LinkSpec network(double gbps);

/// The table's values for `link` in `host` (NVLink counts multiply the per-link figure).
LinkSpec specFor(const Host& host, const Link& link);

}  // namespace braid::topology
