// SocketAddress: an IPv4 or IPv6 address and port, small and trivially copyable so that it can be
// stored in the 128-byte unique id, sent in frames and kept in plain arrays.
//
// On the wire (unique id, Hello/Ring frames) an address takes kWireAddressBytes in a fixed layout
// that does not depend on the sockaddr layout of the host:
//
//   byte 0      1      2..3          4..7            8..23
//      +------+------+-------------+---------------+------------------------------------+
//      | 4/6  |  0   | port (BE)   | scope id (BE) | address (4 or 16 bytes, zero-padded)|
//      +------+------+-------------+---------------+------------------------------------+
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/status.h"

namespace braid::net {

struct SocketAddress {
  /// Which member is valid is told by v4.sin_family (the two share the position of the family
  /// field); AF_UNSPEC (all zero) means "no address".
  union {
    sockaddr_in v4;
    sockaddr_in6 v6;
  } addr{};

  /// AF_INET, AF_INET6 or AF_UNSPEC.
  int family() const { return addr.v4.sin_family; }
  bool empty() const { return family() == AF_UNSPEC; }
  /// Port in host byte order.
  uint16_t port() const;
  void setPort(uint16_t port);
  bool isLoopback() const;

  /// "1.2.3.4:5", "[::1]:5", "[fe80::1%eth0]:5"; "(no address)" when empty.
  std::string toString() const;
  /// The address without the port: "1.2.3.4", "::1".
  std::string hostString() const;

  const sockaddr* sockaddrPtr() const { return reinterpret_cast<const sockaddr*>(&addr); }
  socklen_t sockaddrLength() const;

  /// From a sockaddr returned by the kernel (accept, getsockname, getifaddrs, getaddrinfo).
  static Status fromSockaddr(const sockaddr* sa, socklen_t length, SocketAddress* out);
  /// The wildcard address of a family (0.0.0.0 or ::) with the given port.
  static SocketAddress any(int family, uint16_t port);

  bool operator==(const SocketAddress& other) const;
  bool operator!=(const SocketAddress& other) const { return !(*this == other); }
};
static_assert(std::is_trivially_copyable<SocketAddress>::value, "SocketAddress is copied as bytes");
static_assert(sizeof(SocketAddress) == 28, "SocketAddress must stay small for the unique id");

constexpr size_t kWireAddressBytes = 24;

void encodeAddress(const SocketAddress& address, unsigned char out[kWireAddressBytes]);
/// Rejects an unknown family or non-zero padding (the bytes came from the network).
Status decodeAddress(const unsigned char in[kWireAddressBytes], SocketAddress* out);

/// Parses a BRAID_SOCKET_FAMILY value: "" (either), "AF_INET" or "AF_INET6" (case-insensitive;
/// "INET", "INET6", "IPV4", "IPV6", "4" and "6" are accepted too).
Status parseSocketFamily(const std::string& text, int* family);

/// The family asked for by BRAID_SOCKET_FAMILY (AF_UNSPEC when unset).
Status socketFamilyFromEnv(int* family);

/// Parses "host:port", "[ipv6]:port" or "hostname:port" (resolved with getaddrinfo, restricted to
/// `family` unless it is AF_UNSPEC). The port must be 1..65535.
Status parseHostPort(const std::string& text, int family, SocketAddress* out);

/// parseHostPort with the family of BRAID_SOCKET_FAMILY.
Status parseHostPort(const std::string& text, SocketAddress* out);

}  // namespace braid::net
