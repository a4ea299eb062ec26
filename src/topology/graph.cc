#include "topology/graph.h"

#include <set>
#include <sstream>

#include "topology/links.h"

namespace braid::topology {
namespace {

struct KindName {
  NodeKind kind;
  const char* name;
};
const KindName kNodeKinds[] = {{NodeKind::kGpu, "gpu"},
                               {NodeKind::kNvSwitch, "nvswitch"},
                               {NodeKind::kPciSwitch, "pci"},
                               {NodeKind::kCpu, "cpu"},
                               {NodeKind::kNic, "nic"}};

struct LinkName {
  LinkKind kind;
  const char* name;
};
const LinkName kLinkKinds[] = {
    {LinkKind::kNvLink, "nvlink"}, {LinkKind::kPcie, "pcie"}, {LinkKind::kCpu, "cpu"}, {LinkKind::kNet, "net"}};

}  // namespace

const char* nodeKindName(NodeKind kind) {
  for (const KindName& k : kNodeKinds) {
    if (k.kind == kind) return k.name;
  }
  return "?";
}

const char* linkKindName(LinkKind kind) {
  for (const LinkName& k : kLinkKinds) {
    if (k.kind == kind) return k.name;
  }
  return "?";
}

bool parseNodeKind(const std::string& text, NodeKind* out) {
  for (const KindName& k : kNodeKinds) {
    if (text == k.name) {
      *out = k.kind;
      return true;
    }
  }
  return false;
}

bool parseLinkKind(const std::string& text, LinkKind* out) {
  for (const LinkName& k : kLinkKinds) {
    if (text == k.name) {
      *out = k.kind;
      return true;
    }
  }
  return false;
}

int Host::find(const std::string& nodeId) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].id == nodeId) return static_cast<int>(i);
  }
  return -1;
}

int Host::count(NodeKind kind) const { return static_cast<int>(nodesOf(kind).size()); }

std::vector<int> Host::nodesOf(NodeKind kind) const {
  std::vector<int> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].kind == kind) out.push_back(static_cast<int>(i));
  }
  return out;
}

int System::gpuCount() const {
  int n = 0;
  for (const Host& h : hosts) n += h.count(NodeKind::kGpu);
  return n;
}

void completeHost(const Host& extra, Host* host) {
  std::vector<int> map(extra.nodes.size(), -1);
  for (size_t i = 0; i < extra.nodes.size(); ++i) {
    const Node& e = extra.nodes[i];
    int found = -1;
    for (size_t j = 0; j < host->nodes.size() && found < 0; ++j) {
      const Node& d = host->nodes[j];
      if (d.kind == e.kind && ((!e.busId.empty() && d.busId == e.busId) || (e.busId.empty() && d.id == e.id)))
        found = static_cast<int>(j);
    }
    if (found < 0) {
      Node added = e;
      if (host->find(added.id) >= 0) added.id += "-file";
      host->nodes.push_back(added);
      found = static_cast<int>(host->nodes.size()) - 1;
    } else {
      Node& d = host->nodes[found];
      if (d.index < 0) d.index = e.index;
      if (d.name.empty()) d.name = e.name;
      if (d.sm == 0) d.sm = e.sm;
      if (d.speedGbps <= 0) d.speedGbps = e.speedGbps;
    }
    map[i] = found;
  }
  for (const Link& l : extra.links) {
    Link mapped = l;
    mapped.a = map[l.a];
    mapped.b = map[l.b];
    bool replaced = false;
    for (Link& d : host->links) {
      bool same = (d.a == mapped.a && d.b == mapped.b) || (d.a == mapped.b && d.b == mapped.a);
      if (same && d.kind == mapped.kind) {
        d = mapped;
        replaced = true;
      }
    }
    if (!replaced) host->links.push_back(mapped);
  }
}

void applyLinkTable(System* system) {
  for (Host& host : system->hosts) {
    for (Link& link : host.links) {
      LinkSpec spec = specFor(host, link);
      if (!link.bandwidthGiven) link.bandwidth = spec.bandwidth;
      if (!link.latencyGiven) link.latencyUs = spec.latencyUs;
    }
  }
}

namespace {

Status checkLink(const Host& host, size_t i) {
  const Link& l = host.links[i];
  std::string where = "host '" + host.id + "', link " + std::to_string(i);
  int n = static_cast<int>(host.nodes.size());
  if (l.a < 0 || l.a >= n || l.b < 0 || l.b >= n) return invalidArgument(where + ": an end is not a node of the host");
  const Node& a = host.nodes[l.a];
  const Node& b = host.nodes[l.b];
  where += " (" + a.id + " - " + b.id + ")";
  if (l.a == l.b) return invalidArgument(where + ": joins a node to itself");
  if (l.count < 1) return invalidArgument(where + ": link count must be at least 1");
  if (l.bandwidth < 0 || l.latencyUs < 0) return invalidArgument(where + ": negative bandwidth or latency");
  auto is = [](const Node& x, NodeKind k) { return x.kind == k; };
  switch (l.kind) {
    case LinkKind::kNvLink:
      if (!(is(a, NodeKind::kGpu) || is(a, NodeKind::kNvSwitch)) ||
          !(is(b, NodeKind::kGpu) || is(b, NodeKind::kNvSwitch)))
        return invalidArgument(where + ": NVLink joins GPUs and NVSwitches only");
      break;
    case LinkKind::kCpu:
      if (!is(a, NodeKind::kCpu) || !is(b, NodeKind::kCpu))
        return invalidArgument(where + ": a cpu link joins two CPUs");
      break;
    case LinkKind::kNet:
      return invalidArgument(where + ": network links are not part of a host (NICs reach the network)");
    case LinkKind::kPcie:
      if (is(a, NodeKind::kNvSwitch) || is(b, NodeKind::kNvSwitch))
        return invalidArgument(where + ": an NVSwitch is reached over NVLink, not PCIe");
      break;
  }
  return Status::ok();
}

}  // namespace

Status validate(const System& system) {
  std::set<std::string> hostIds;
  for (const Host& host : system.hosts) {
    if (!hostIds.insert(host.id).second) return invalidArgument("host '" + host.id + "' appears twice");
    std::set<std::string> ids;
    for (const Node& node : host.nodes) {
      if (node.id.empty())
        return invalidArgument("host '" + host.id + "': a " + nodeKindName(node.kind) + " has no id");
      if (!ids.insert(node.id).second)
        return invalidArgument("host '" + host.id + "': node id '" + node.id + "' appears twice");
    }
    for (size_t i = 0; i < host.links.size(); ++i) BRAID_RETURN_IF_ERROR(checkLink(host, i));
  }
  return Status::ok();
}

std::string describe(const System& system) {
  std::ostringstream out;
  for (const Host& host : system.hosts) {
    out << "host " << host.id << ": " << host.count(NodeKind::kGpu) << " GPU(s), " << host.count(NodeKind::kCpu)
        << " CPU(s), " << host.count(NodeKind::kNic) << " NIC(s)\n";
    for (const Node& n : host.nodes) {
      out << "  " << n.id << " " << nodeKindName(n.kind);
      if (n.index >= 0) out << " #" << n.index;
      if (!n.busId.empty()) out << " bus " << n.busId;
      if (!n.name.empty()) out << " '" << n.name << "'";
      if (n.kind == NodeKind::kNic && n.speedGbps > 0) out << " " << n.speedGbps << " Gb/s";
      if (n.kind == NodeKind::kGpu && n.sm > 0) out << " sm" << n.sm;
      out << "\n";
    }
    for (const Link& l : host.links) {
      out << "  " << host.nodes[l.a].id << " -- " << host.nodes[l.b].id << " " << linkKindName(l.kind);
      if (l.kind == LinkKind::kNvLink) out << " x" << l.count;
      if (l.kind == LinkKind::kPcie && l.pcieGen > 0) out << " gen" << l.pcieGen << " x" << l.pcieWidth;
      out << ", " << l.bandwidth << " GB/s, " << l.latencyUs << " us\n";
    }
  }
  return out.str();
}

}  // namespace braid::topology
