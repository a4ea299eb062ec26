#include "net/interface.h"

#include <ifaddrs.h>
#include <net/if.h>

#include <cerrno>

#include "core/log.h"
#include "core/param.h"

namespace braid::net {
namespace {

// Bridges and virtual links of containers and VMs: usable on this host only.
constexpr const char* kVirtualPrefixes[] = {"docker", "virbr", "veth"};

bool isVirtual(const std::string& name) {
  for (const char* prefix : kVirtualPrefixes) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

bool isLinkLocalV6(const SocketAddress& a) {
  return a.family() == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&a.addr.v6.sin6_addr);
}

// Usable at all: up, of the family asked for, and not an IPv6 link-local address (those need a
// scope id that means nothing on the peer's host).
bool usable(const InterfaceAddress& c, int family) {
  return c.up && (family == AF_UNSPEC || c.address.family() == family) && !isLinkLocalV6(c.address);
}

// Every usable candidate that `keep` accepts, the first address of each interface name.
template <class Keep>
std::vector<InterfaceAddress> allWhere(const std::vector<InterfaceAddress>& candidates, int family, Keep keep) {
  std::vector<InterfaceAddress> out;
  for (const InterfaceAddress& c : candidates) {
    if (!usable(c, family) || !keep(c)) continue;
    bool seen = false;
    for (const InterfaceAddress& o : out) seen = seen || o.name == c.name;
    if (!seen) out.push_back(c);
  }
  return out;
}

// "lo (127.0.0.1, ::1, up, loopback), eth0 (192.0.2.2, down)"
std::string describe(const std::vector<InterfaceAddress>& candidates) {
  std::string out;
  for (size_t i = 0; i < candidates.size(); ++i) {
    bool seen = false;
    for (size_t j = 0; j < i; ++j) seen = seen || candidates[j].name == candidates[i].name;
    if (seen) continue;
    const InterfaceAddress& c = candidates[i];
    std::string item = c.name + " (";
    for (const InterfaceAddress& d : candidates) {
      if (d.name == c.name) item += d.address.hostString() + ", ";
    }
    item += c.up ? "up" : "down";
    if (c.loopback) item += ", loopback";
    out += (out.empty() ? "" : ", ") + item + ")";
  }
  return out.empty() ? "none with an IPv4 or IPv6 address" : out;
}

}  // namespace

IfnameFilter parseIfnameFilter(const std::string& text) {
  IfnameFilter f;
  size_t pos = 0;
  if (pos < text.size() && text[pos] == '^') {
    f.exclude = true;
    ++pos;
  }
  if (pos < text.size() && text[pos] == '=') {
    f.exact = true;
    ++pos;
  }
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    size_t end = comma == std::string::npos ? text.size() : comma;
    std::string name = text.substr(pos, end - pos);
    size_t b = name.find_first_not_of(" \t");
    size_t e = name.find_last_not_of(" \t");
    if (b != std::string::npos) f.names.push_back(name.substr(b, e - b + 1));
    pos = end + 1;
  }
  return f;
}

bool ifnameMatches(const IfnameFilter& filter, const std::string& name) {
  bool listed = false;
  for (const std::string& n : filter.names) {
    listed = listed || (filter.exact ? name == n : name.rfind(n, 0) == 0);
  }
  return filter.exclude ? !listed : listed;
}

std::vector<InterfaceAddress> selectInterfaces(const std::vector<InterfaceAddress>& candidates,
                                               const std::string& ifname, int family) {
  if (!ifname.empty()) {
    IfnameFilter filter = parseIfnameFilter(ifname);
    return allWhere(candidates, family, [&](const InterfaceAddress& c) { return ifnameMatches(filter, c.name); });
  }
  std::vector<InterfaceAddress> out =
      allWhere(candidates, family, [](const InterfaceAddress& c) { return !c.loopback && !isVirtual(c.name); });
  if (out.empty()) out = allWhere(candidates, family, [](const InterfaceAddress& c) { return c.loopback; });
  return out;
}

Status selectInterface(const std::vector<InterfaceAddress>& candidates, const std::string& ifname, int family,
                       InterfaceAddress* out) {
  std::vector<InterfaceAddress> picks = selectInterfaces(candidates, ifname, family);
  if (picks.empty()) {
    std::string asked = ifname.empty() ? std::string("no BRAID_SOCKET_IFNAME (default: an interface that is up)")
                                       : "BRAID_SOCKET_IFNAME='" + ifname + "'";
    if (family != AF_UNSPEC) asked += family == AF_INET ? " with BRAID_SOCKET_FAMILY=AF_INET" : " with AF_INET6";
    return invalidArgument(asked + " matches no usable interface address; interfaces: " + describe(candidates));
  }
  *out = picks.front();
  return Status::ok();
}

Status listInterfaces(std::vector<InterfaceAddress>* out) {
  out->clear();
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return errnoError("getifaddrs", errno);
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    InterfaceAddress c;
    c.name = i->ifa_name;
    socklen_t length = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (!SocketAddress::fromSockaddr(i->ifa_addr, length, &c.address).isOk()) continue;
    c.address.setPort(0);
    c.up = (i->ifa_flags & IFF_UP) != 0;
    c.loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
    out->push_back(c);
  }
  freeifaddrs(list);
  return Status::ok();
}

Status chooseInterfaceAddress(SocketAddress* out) {
  int family = AF_UNSPEC;
  BRAID_RETURN_IF_ERROR(socketFamilyFromEnv(&family));
  std::vector<InterfaceAddress> candidates;
  BRAID_RETURN_IF_ERROR(listInterfaces(&candidates));
  InterfaceAddress pick;
  BRAID_RETURN_IF_ERROR(selectInterface(candidates, param::getString(param::Id::kSocketIfname), family, &pick));
  BRAID_INFO(log::Subsys::kBootstrap, "bootstrap interface ", pick.name, " ", pick.address.hostString());
  *out = pick.address;
  return Status::ok();
}

}  // namespace braid::net
