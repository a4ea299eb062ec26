#include "tune/cluster.h"

namespace braid::tune {
namespace {

int addNode(topology::Host* h, topology::NodeKind kind, const std::string& id, int index = -1) {
  topology::Node n;
  n.kind = kind;
  n.id = id;
  n.index = index;
  if (kind == topology::NodeKind::kGpu) n.sm = 90;
  h->nodes.push_back(n);
  return static_cast<int>(h->nodes.size()) - 1;
}

void addLink(topology::Host* h, int a, int b, topology::LinkKind kind, int count = 1) {
  topology::Link l;
  l.a = a;
  l.b = b;
  l.kind = kind;
  l.count = count;
  if (kind == topology::LinkKind::kPcie) l.pcieGen = 5, l.pcieWidth = 16;
  h->links.push_back(l);
}

}  // namespace

Status buildCluster(const ClusterSpec& spec, topology::System* out) {
  if (spec.ranks < 1 || spec.gpusPerNode < 1 || spec.ranks > 65536 || spec.nicsPerNode < 0 || spec.nicsPerNode > 64)
    return invalidArgument("a cluster needs 1..65536 ranks, at least one GPU per node and 0..64 NICs per node");
  if (spec.intra != "nvswitch" && spec.intra != "nvlink" && spec.intra != "pcie")
    return invalidArgument("unknown intra-node fabric '" + spec.intra + "' (nvswitch, nvlink, pcie)");
  topology::System system;
  int nodes = (spec.ranks + spec.gpusPerNode - 1) / spec.gpusPerNode;
  for (int n = 0; n < nodes; ++n) {
    topology::Host h;
    h.id = "node" + std::to_string(n);
    int gpus = std::min(spec.gpusPerNode, spec.ranks - n * spec.gpusPerNode);
    int cpu = addNode(&h, topology::NodeKind::kCpu, "cpu0", 0);
    int nvs = spec.intra == "nvswitch" ? addNode(&h, topology::NodeKind::kNvSwitch, "nvs0") : -1;
    std::vector<int> gpu, switches;
    for (int g = 0; g < gpus; ++g) {
      if (g % 2 == 0) {
        switches.push_back(addNode(&h, topology::NodeKind::kPciSwitch, "pci" + std::to_string(g / 2)));
        addLink(&h, cpu, switches.back(), topology::LinkKind::kPcie);
      }
      gpu.push_back(addNode(&h, topology::NodeKind::kGpu, "gpu" + std::to_string(g), g));
      addLink(&h, gpu.back(), h.find("pci" + std::to_string(g / 2)), topology::LinkKind::kPcie);
      if (nvs >= 0) addLink(&h, gpu.back(), nvs, topology::LinkKind::kNvLink, 18);
    }
    // The NICs, spread evenly over the PCIe switches (by default one per switch).
    const int nics = spec.nicsPerNode > 0 ? spec.nicsPerNode : static_cast<int>(switches.size());
    for (int j = 0; j < nics; ++j) {
      int nic = addNode(&h, topology::NodeKind::kNic, "nic" + std::to_string(j));
      h.nodes[nic].speedGbps = spec.nicGbps;
      addLink(&h, nic, switches[j * switches.size() / nics], topology::LinkKind::kPcie);
    }
    if (spec.intra == "nvlink") {  // GPU pairs joined by NVLink (18 links), no switch
      for (int g = 0; g + 1 < gpus; g += 2) addLink(&h, gpu[g], gpu[g + 1], topology::LinkKind::kNvLink, 18);
    }
    system.hosts.push_back(std::move(h));
  }
  topology::applyLinkTable(&system);
  BRAID_RETURN_IF_ERROR(topology::validate(system));
  *out = std::move(system);
  return Status::ok();
}

}  // namespace braid::tune
