#include "topology/topo_xml.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "topology/xml.h"

namespace braid::topology {
namespace {

// The shortest text that reads back as the same double.
std::string formatNumber(double v) {
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

// Reads the attributes of one element, checking that each is known and well-formed.
class Attributes {
 public:
  Attributes(const XmlElement& e, const std::string& source, std::set<std::string> known)
      : e_(e), source_(source), known_(std::move(known)) {}

  Status checkKnown() const {
    for (const auto& kv : e_.attributes) {
      if (known_.count(kv.first) == 0) return error("unknown attribute '" + kv.first + "'");
    }
    return Status::ok();
  }
  Status required(const char* name, std::string* out) const {
    const std::string* v = e_.attribute(name);
    if (v == nullptr || v->empty()) return error(std::string("missing attribute '") + name + "'");
    *out = *v;
    return Status::ok();
  }
  void text(const char* name, std::string* out) const {
    if (const std::string* v = e_.attribute(name)) *out = *v;
  }
  Status integer(const char* name, int* out, bool* given = nullptr) const {
    const std::string* v = e_.attribute(name);
    if (given != nullptr) *given = v != nullptr;
    if (v == nullptr) return Status::ok();
    char* end = nullptr;
    errno = 0;
    long x = std::strtol(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || errno != 0 || x < -1 || x > 1000000)
      return error(std::string("attribute '") + name + "' is not a valid integer: '" + *v + "'");
    *out = static_cast<int>(x);
    return Status::ok();
  }
  Status number(const char* name, double* out, bool* given) const {
    const std::string* v = e_.attribute(name);
    *given = v != nullptr;
    if (v == nullptr) return Status::ok();
    char* end = nullptr;
    double x = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || !(x >= 0) || x > 1e12)
      return error(std::string("attribute '") + name + "' is not a valid non-negative number: '" + *v + "'");
    *out = x;
    return Status::ok();
  }
  Status error(const std::string& what) const {
    return invalidArgument(source_ + ":" + std::to_string(e_.line) + ": <" + e_.name + "> " + what);
  }

 private:
  const XmlElement& e_;
  const std::string& source_;
  std::set<std::string> known_;
};

Status readNode(const XmlElement& e, const std::string& source, NodeKind kind, Node* node) {
  Attributes a(e, source, {"id", "dev", "numa", "busid", "name", "speed", "sm"});
  BRAID_RETURN_IF_ERROR(a.checkKnown());
  node->kind = kind;
  BRAID_RETURN_IF_ERROR(a.required("id", &node->id));
  bool given = false;
  if (kind == NodeKind::kGpu) BRAID_RETURN_IF_ERROR(a.integer("dev", &node->index));
  if (kind == NodeKind::kCpu) BRAID_RETURN_IF_ERROR(a.integer("numa", &node->index));
  if (kind != NodeKind::kGpu && e.attribute("dev") != nullptr) return a.error("'dev' belongs to <gpu> only");
  if (kind != NodeKind::kCpu && e.attribute("numa") != nullptr) return a.error("'numa' belongs to <cpu> only");
  if (kind != NodeKind::kNic && e.attribute("speed") != nullptr) return a.error("'speed' belongs to <nic> only");
  if (kind != NodeKind::kGpu && e.attribute("sm") != nullptr) return a.error("'sm' belongs to <gpu> only");
  a.text("busid", &node->busId);
  a.text("name", &node->name);
  BRAID_RETURN_IF_ERROR(a.number("speed", &node->speedGbps, &given));
  return a.integer("sm", &node->sm);
}

Status readLink(const XmlElement& e, const std::string& source, const Host& host, Link* link) {
  Attributes a(e, source, {"a", "b", "type", "count", "gen", "width", "bw", "lat"});
  BRAID_RETURN_IF_ERROR(a.checkKnown());
  std::string ends[2], type;
  BRAID_RETURN_IF_ERROR(a.required("a", &ends[0]));
  BRAID_RETURN_IF_ERROR(a.required("b", &ends[1]));
  BRAID_RETURN_IF_ERROR(a.required("type", &type));
  if (!parseLinkKind(type, &link->kind)) return a.error("unknown link type '" + type + "' (nvlink, pcie, cpu)");
  int* index[2] = {&link->a, &link->b};
  for (int i = 0; i < 2; ++i) {
    *index[i] = host.find(ends[i]);
    if (*index[i] < 0) return a.error("names node '" + ends[i] + "', which host '" + host.id + "' does not have (yet)");
  }
  BRAID_RETURN_IF_ERROR(a.integer("count", &link->count));
  BRAID_RETURN_IF_ERROR(a.integer("gen", &link->pcieGen));
  BRAID_RETURN_IF_ERROR(a.integer("width", &link->pcieWidth));
  BRAID_RETURN_IF_ERROR(a.number("bw", &link->bandwidth, &link->bandwidthGiven));
  return a.number("lat", &link->latencyUs, &link->latencyGiven);
}

Status readHost(const XmlElement& e, const std::string& source, Host* host) {
  Attributes a(e, source, {"id", "use"});
  BRAID_RETURN_IF_ERROR(a.checkKnown());
  BRAID_RETURN_IF_ERROR(a.required("id", &host->id));
  std::string use = "replace";
  a.text("use", &use);
  if (use != "replace" && use != "complete") return a.error("'use' is '" + use + "', not replace or complete");
  host->completes = use == "complete";
  for (const XmlElement& c : e.children) {
    NodeKind kind;
    if (c.name == "link") {
      Link link;
      BRAID_RETURN_IF_ERROR(readLink(c, source, *host, &link));
      host->links.push_back(link);
    } else if (parseNodeKind(c.name, &kind)) {
      Node node;
      BRAID_RETURN_IF_ERROR(readNode(c, source, kind, &node));
      host->nodes.push_back(node);
    } else {
      return invalidArgument(source + ":" + std::to_string(c.line) + ": unknown element <" + c.name +
                             "> in <host> (cpu, pci, gpu, nvswitch, nic, link)");
    }
  }
  return Status::ok();
}

XmlElement nodeElement(const Node& n) {
  XmlElement e;
  e.name = nodeKindName(n.kind);
  e.set("id", n.id);
  if (n.kind == NodeKind::kGpu && n.index >= 0) e.set("dev", std::to_string(n.index));
  if (n.kind == NodeKind::kCpu && n.index >= 0) e.set("numa", std::to_string(n.index));
  if (!n.busId.empty()) e.set("busid", n.busId);
  if (n.kind == NodeKind::kGpu && n.sm > 0) e.set("sm", std::to_string(n.sm));
  if (n.kind == NodeKind::kNic && n.speedGbps > 0) e.set("speed", formatNumber(n.speedGbps));
  if (!n.name.empty()) e.set("name", n.name);
  return e;
}

XmlElement linkElement(const Host& host, const Link& l) {
  XmlElement e;
  e.name = "link";
  e.set("a", host.nodes[l.a].id);
  e.set("b", host.nodes[l.b].id);
  e.set("type", linkKindName(l.kind));
  if (l.count != 1) e.set("count", std::to_string(l.count));
  if (l.pcieGen > 0) e.set("gen", std::to_string(l.pcieGen));
  if (l.pcieWidth > 0) e.set("width", std::to_string(l.pcieWidth));
  if (l.bandwidthGiven) e.set("bw", formatNumber(l.bandwidth));
  if (l.latencyGiven) e.set("lat", formatNumber(l.latencyUs));
  return e;
}

}  // namespace

Status readTopology(const std::string& text, const std::string& source, System* out) {
  XmlElement root;
  BRAID_RETURN_IF_ERROR(parseXml(text, source, &root));
  if (root.name != "system") {
    return invalidArgument(source + ":" + std::to_string(root.line) + ": the root element must be <system>, not <" +
                           root.name + ">");
  }
  Attributes a(root, source, {"version"});
  BRAID_RETURN_IF_ERROR(a.checkKnown());
  const std::string* version = root.attribute("version");
  if (version != nullptr && *version != "1") return a.error("version '" + *version + "' is not supported (1)");
  System system;
  for (const XmlElement& c : root.children) {
    if (c.name != "host") {
      return invalidArgument(source + ":" + std::to_string(c.line) + ": unknown element <" + c.name +
                             "> in <system> (host)");
    }
    Host host;
    BRAID_RETURN_IF_ERROR(readHost(c, source, &host));
    system.hosts.push_back(std::move(host));
  }
  applyLinkTable(&system);
  BRAID_RETURN_IF_ERROR(validate(system).withContext(source));
  *out = std::move(system);
  return Status::ok();
}

Status readTopologyFile(const std::string& path, System* out) {
  std::ifstream in(path);
  if (!in) return invalidArgument("cannot read topology file '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return readTopology(text.str(), path, out);
}

std::string writeTopology(const System& system) {
  XmlElement root;
  root.name = "system";
  root.set("version", "1");
  for (const Host& host : system.hosts) {
    XmlElement h;
    h.name = "host";
    h.set("id", host.id);
    if (host.completes) h.set("use", "complete");
    for (const Node& n : host.nodes) h.children.push_back(nodeElement(n));
    for (const Link& l : host.links) h.children.push_back(linkElement(host, l));
    root.children.push_back(std::move(h));
  }
  return writeXml(root);
}

Status writeTopologyFile(const std::string& path, const System& system) {
  std::ofstream out(path);
  if (!out) return invalidArgument("cannot write topology file '" + path + "'");
  out << writeTopology(system);
  out.close();
  if (!out) return systemError("writing topology file '" + path + "' failed");
  return Status::ok();
}

}  // namespace braid::topology
