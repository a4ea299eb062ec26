// The machine model: for each host, a graph of GPUs, NVSwitches, PCI switches, CPUs (NUMA nodes)
// and NICs joined by typed links; hosts reach each other through their NICs.
//
//   host "node0"
//     cpu0 ==cpu== cpu1                     CPU interconnect between sockets
//      |            |
//     pci0         pci1                     PCIe switches (gen, width on every PCIe link)
//     /  |          |
//   gpu0 gpu1      nic0 ...net...           NICs reach the other hosts
//     |   |
//      nvs0                                  NVLink (count of links) to an NVSwitch, or GPU to GPU
//
// Links are undirected and symmetric: `bandwidth` is GB/s in each direction. A link's bandwidth
// and latency come from the constant table (links.h) for its type, unless a topology file gives
// them. Node ids are unique within their host ("gpu0", "cpu1", "pci2", "nic0", "nvs0").
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace braid::topology {

enum class NodeKind { kGpu, kNvSwitch, kPciSwitch, kCpu, kNic };
enum class LinkKind { kNvLink, kPcie, kCpu, kNet };

const char* nodeKindName(NodeKind kind);  // "gpu", "nvswitch", "pci", "cpu", "nic"
const char* linkKindName(LinkKind kind);  // "nvlink", "pcie", "cpu", "net"
bool parseNodeKind(const std::string& text, NodeKind* out);
bool parseLinkKind(const std::string& text, LinkKind* out);

struct Node {
  NodeKind kind = NodeKind::kCpu;
  std::string id;
  int index = -1;        // GPU: CUDA device ordinal; CPU: NUMA node; others: -1
  std::string busId;     // PCI address ("0000:18:00.0") of GPUs, NICs and switches; "" if unknown
  std::string name;      // GPU model, CPU model, NIC interface ("eth0", "mlx5_0")
  double speedGbps = 0;  // NIC: line rate in Gb/s
  int sm = 0;            // GPU: compute capability x 10 (90 for Hopper); 0 if unknown
};

struct Link {
  int a = -1;  // node indices in the host
  int b = -1;
  LinkKind kind = LinkKind::kPcie;
  int count = 1;    // NVLink: links between the two ends
  int pcieGen = 0;  // PCIe: generation (3, 4, 5, ...) and lane count
  int pcieWidth = 0;
  double bandwidth = 0;         // GB/s each way
  double latencyUs = 0;         // one hop
  bool bandwidthGiven = false;  // from a file, not the table (kept on dump)
  bool latencyGiven = false;
};

struct Host {
  std::string id;          // host identity (BRAID_HOSTID, or host name + boot id)
  bool completes = false;  // from a file: adds to discovery instead of replacing it (use="complete")
  std::vector<Node> nodes;
  std::vector<Link> links;

  int find(const std::string& nodeId) const;  // -1 if absent
  int count(NodeKind kind) const;
  /// Indices of the nodes of `kind`, in file order.
  std::vector<int> nodesOf(NodeKind kind) const;
};

struct System {
  std::vector<Host> hosts;

  int gpuCount() const;
};

/// Adds what `extra` (a file's host) knows to `host` (discovered): nodes matched by bus id, else by
/// id, get the fields they lack; other nodes are added; links between ends that have no link of
/// that kind yet are added, and links the file gives replace their count, bandwidth and latency.
void completeHost(const Host& extra, Host* host);

/// Fills every link's bandwidth and latency that was not given, from the table (links.h).
void applyLinkTable(System* system);

/// Checks the model: unique node ids per host, links between existing distinct nodes, kinds that
/// fit (NVLink joins GPUs and NVSwitches, a net link has a NIC at one end), positive counts. Errors
/// name the host and the node or link.
Status validate(const System& system);

/// A readable multi-line description: one line per node and per link.
std::string describe(const System& system);

}  // namespace braid::topology
