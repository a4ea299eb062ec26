// Synthetic clusters for braid-sim: N GPUs, G per node, an intra-node fabric and a network, built
// as a topology System so that the same search and cost model as a real machine apply.
#pragma once

#include <string>

#include "core/status.h"
#include "topology/graph.h"

namespace braid::tune {

struct ClusterSpec {
  int ranks = 8;  // GPUs in all
  int gpusPerNode = 8;
  std::string intra = "nvswitch";  // nvswitch (18 NVLink 4 links per GPU), nvlink (GPU pairs), pcie (gen5 switches)
  double nicGbps = 400;            // each NIC's line rate
  int nicsPerNode = 0;             // 0: one NIC per two GPUs (per PCIe switch)
};

/// The System for `spec`: ceil(ranks / gpusPerNode) hosts (the last may be partly filled).
Status buildCluster(const ClusterSpec& spec, topology::System* out);

}  // namespace braid::tune
