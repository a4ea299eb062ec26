// Choosing the network interface whose address the bootstrap listens on.
//
// BRAID_SOCKET_IFNAME follows NCCL_SOCKET_IFNAME: a comma-separated list of interface-name
// prefixes; a leading '^' turns the list into an exclusion list and a leading '=' (after the '^'
// if any) makes every name in it exact:
//
//   eth,ib      any interface whose name starts with "eth" or "ib"
//   =eth0       exactly eth0 (not eth01)
//   ^docker,lo  anything except names starting with "docker" or "lo"
//   ^=eth1      anything except exactly eth1
//
// Without it: the first interface that is up and is neither loopback nor a container/VM bridge
// (docker*, virbr*, veth*); when there is none, loopback (a single-host job). BRAID_SOCKET_FAMILY
// restricts the address family in both cases. The selection itself is a pure function over a list
// of candidates so that it can be tested without the host's interfaces.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "net/socket_address.h"

namespace braid::net {

/// One address of one interface, as getifaddrs lists it.
struct InterfaceAddress {
  std::string name;
  SocketAddress address;
  bool up = false;
  bool loopback = false;
};

/// A parsed BRAID_SOCKET_IFNAME.
struct IfnameFilter {
  bool exclude = false;            // leading '^'
  bool exact = false;              // leading '='
  std::vector<std::string> names;  // empty entries removed
};

IfnameFilter parseIfnameFilter(const std::string& text);

/// True when `name` passes the filter (prefix or exact match, inverted by '^').
bool ifnameMatches(const IfnameFilter& filter, const std::string& name);

/// Picks one address among `candidates` (in getifaddrs order) for the spec `ifname`
/// (BRAID_SOCKET_IFNAME, "" for the default preference) and `family` (AF_UNSPEC for either).
/// IPv6 link-local addresses and interfaces that are down are never chosen. When nothing matches,
/// the error names what was asked and lists what exists.
Status selectInterface(const std::vector<InterfaceAddress>& candidates, const std::string& ifname, int family,
                       InterfaceAddress* out);

/// Every interface selectInterface could pick, in getifaddrs order, one address per interface
/// name (its first usable one): the devices of braid's socket network. The same rules: with a
/// spec, every interface it matches; without one, every interface that is up and neither loopback
/// nor virtual, else loopback. Empty when nothing qualifies (selectInterface says why).
std::vector<InterfaceAddress> selectInterfaces(const std::vector<InterfaceAddress>& candidates,
                                               const std::string& ifname, int family);

/// The IPv4 and IPv6 addresses of this host's interfaces (getifaddrs), in the kernel's order.
Status listInterfaces(std::vector<InterfaceAddress>* out);

/// The address (port 0) to listen on according to BRAID_SOCKET_IFNAME and BRAID_SOCKET_FAMILY.
Status chooseInterfaceAddress(SocketAddress* out);

}  // namespace braid::net
