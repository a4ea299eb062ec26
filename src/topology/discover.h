// Discovery of this machine: CPUs (NUMA nodes) and the PCI tree from hwloc, NIC names and speeds
// from sysfs, NVLinks from NVML (libnvidia-ml.so.1 opened at run time; its absence is not an
// error), and CUDA device facts handed in by the caller (src/topology includes no CUDA header).
//
// The PCI tree is kept only where it matters: a PCI switch node stands for a bridge under which
// more GPUs/NICs sit than under the bridge below it on the path, so a GPU behind the usual
// root port -> switch upstream port -> downstream port chain hangs off one "pci" node shared with
// its siblings. A machine without GPUs (or a VM that hides its PCI tree) gives a graph of CPUs and
// NICs, which is valid; a topology file (BRAID_TOPO_FILE) can replace it.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "topology/graph.h"

namespace braid::topology {

/// What the CUDA runtime says about one device (filled by the caller when CUDA is present).
struct CudaDeviceFacts {
  int ordinal = -1;
  std::string busId;  // "0000:18:00.0", lower case
  int sm = 0;         // compute capability x 10
  std::string name;
};

/// Discovers this host as `hostId`. `cudaDevices` may be empty.
Status discoverHost(const std::string& hostId, const std::vector<CudaDeviceFacts>& cudaDevices, Host* out);

/// Normalises a PCI bus id to "dddd:bb:dd.f", lower case (NVML and CUDA write "00000000:18:00.0").
std::string normaliseBusId(const std::string& busId);

/// PCIe generation from a sysfs link speed ("16.0 GT/s PCIe" -> 4); 0 if unknown.
int pcieGenFromSpeed(const std::string& speed);

}  // namespace braid::topology
