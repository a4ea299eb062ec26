#include "net/socket_address.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>

#include <cctype>
#include <cstring>

#include "core/param.h"

namespace braid::net {
namespace {

void putU16(unsigned char* p, uint16_t v) {
  p[0] = static_cast<unsigned char>(v >> 8);
  p[1] = static_cast<unsigned char>(v);
}

void putU32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (24 - 8 * i));
}

uint16_t getU16(const unsigned char* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }

uint32_t getU32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

bool allZero(const unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

Status parsePort(const std::string& text, const std::string& whole, uint16_t* port) {
  if (text.empty() || text.size() > 5 || text.find_first_not_of("0123456789") != std::string::npos) {
    return invalidArgument("'" + whole + "' has no valid port after the last ':' (expected host:port)");
  }
  unsigned long v = std::stoul(text);
  if (v < 1 || v > 65535) return invalidArgument("port " + text + " in '" + whole + "' is not in 1..65535");
  *port = static_cast<uint16_t>(v);
  return Status::ok();
}

const char* familyName(int family) {
  return family == AF_INET ? "AF_INET" : family == AF_INET6 ? "AF_INET6" : "any family";
}

}  // namespace

uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(addr.v4.sin_port);
  if (family() == AF_INET6) return ntohs(addr.v6.sin6_port);
  return 0;
}

void SocketAddress::setPort(uint16_t port) {
  if (family() == AF_INET) addr.v4.sin_port = htons(port);
  if (family() == AF_INET6) addr.v6.sin6_port = htons(port);
}

bool SocketAddress::isLoopback() const {
  if (family() == AF_INET) return (ntohl(addr.v4.sin_addr.s_addr) >> 24) == 127;
  if (family() == AF_INET6) return IN6_IS_ADDR_LOOPBACK(&addr.v6.sin6_addr);
  return false;
}

socklen_t SocketAddress::sockaddrLength() const {
  if (family() == AF_INET) return sizeof(sockaddr_in);
  if (family() == AF_INET6) return sizeof(sockaddr_in6);
  return 0;
}

std::string SocketAddress::hostString() const {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &addr.v4.sin_addr, buf, sizeof(buf));
    return buf;
  }
  if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &addr.v6.sin6_addr, buf, sizeof(buf));
    std::string text = buf;
    if (addr.v6.sin6_scope_id != 0) {
      char name[IF_NAMESIZE] = {0};
      text += "%";
      text += if_indextoname(addr.v6.sin6_scope_id, name) ? std::string(name) : std::to_string(addr.v6.sin6_scope_id);
    }
    return text;
  }
  return "(no address)";
}

std::string SocketAddress::toString() const {
  if (family() == AF_INET) return hostString() + ":" + std::to_string(port());
  if (family() == AF_INET6) return "[" + hostString() + "]:" + std::to_string(port());
  return "(no address)";
}

Status SocketAddress::fromSockaddr(const sockaddr* sa, socklen_t length, SocketAddress* out) {
  *out = SocketAddress();
  if (sa != nullptr && sa->sa_family == AF_INET && length >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    std::memcpy(&out->addr.v4, sa, sizeof(sockaddr_in));
    return Status::ok();
  }
  if (sa != nullptr && sa->sa_family == AF_INET6 && length >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    std::memcpy(&out->addr.v6, sa, sizeof(sockaddr_in6));
    return Status::ok();
  }
  return invalidArgument("not an IPv4 or IPv6 socket address (family " +
                         std::to_string(sa == nullptr ? -1 : sa->sa_family) + ")");
}

SocketAddress SocketAddress::any(int family, uint16_t port) {
  SocketAddress a;
  if (family == AF_INET6) {
    a.addr.v6.sin6_family = AF_INET6;
    a.addr.v6.sin6_addr = in6addr_any;
  } else {
    a.addr.v4.sin_family = AF_INET;
    a.addr.v4.sin_addr.s_addr = htonl(INADDR_ANY);
  }
  a.setPort(port);
  return a;
}

bool SocketAddress::operator==(const SocketAddress& other) const {
  if (family() != other.family()) return false;
  if (family() == AF_INET) {
    return addr.v4.sin_port == other.addr.v4.sin_port && addr.v4.sin_addr.s_addr == other.addr.v4.sin_addr.s_addr;
  }
  if (family() == AF_INET6) {
    return addr.v6.sin6_port == other.addr.v6.sin6_port && addr.v6.sin6_scope_id == other.addr.v6.sin6_scope_id &&
           std::memcmp(&addr.v6.sin6_addr, &other.addr.v6.sin6_addr, sizeof(in6_addr)) == 0;
  }
  return true;
}

void encodeAddress(const SocketAddress& address, unsigned char out[kWireAddressBytes]) {
  std::memset(out, 0, kWireAddressBytes);
  if (address.family() == AF_INET) {
    out[0] = 4;
    std::memcpy(out + 8, &address.addr.v4.sin_addr, 4);
  } else if (address.family() == AF_INET6) {
    out[0] = 6;
    putU32(out + 4, address.addr.v6.sin6_scope_id);
    std::memcpy(out + 8, &address.addr.v6.sin6_addr, 16);
  } else {
    return;
  }
  putU16(out + 2, address.port());
}

Status decodeAddress(const unsigned char in[kWireAddressBytes], SocketAddress* out) {
  *out = SocketAddress();
  if (in[1] != 0) return invalidArgument("malformed address (non-zero padding)");
  if (in[0] == 4) {
    if (!allZero(in + 4, 4) || !allZero(in + 12, 12)) return invalidArgument("malformed IPv4 address (padding)");
    out->addr.v4.sin_family = AF_INET;
    std::memcpy(&out->addr.v4.sin_addr, in + 8, 4);
  } else if (in[0] == 6) {
    out->addr.v6.sin6_family = AF_INET6;
    out->addr.v6.sin6_scope_id = getU32(in + 4);
    std::memcpy(&out->addr.v6.sin6_addr, in + 8, 16);
  } else if (in[0] == 0 && allZero(in, kWireAddressBytes)) {
    return Status::ok();  // "no address"
  } else {
    return invalidArgument("malformed address (family byte " + std::to_string(in[0]) + ")");
  }
  out->setPort(getU16(in + 2));
  return Status::ok();
}

Status parseSocketFamily(const std::string& text, int* family) {
  std::string t = upper(text);
  if (t.empty()) {
    *family = AF_UNSPEC;
  } else if (t == "AF_INET" || t == "INET" || t == "IPV4" || t == "4") {
    *family = AF_INET;
  } else if (t == "AF_INET6" || t == "INET6" || t == "IPV6" || t == "6") {
    *family = AF_INET6;
  } else {
    return invalidArgument("BRAID_SOCKET_FAMILY='" + text + "' is not AF_INET or AF_INET6");
  }
  return Status::ok();
}

Status socketFamilyFromEnv(int* family) {
  return parseSocketFamily(param::getString(param::Id::kSocketFamily), family);
}

Status parseHostPort(const std::string& text, int family, SocketAddress* out) {
  *out = SocketAddress();
  std::string host, portText;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return invalidArgument("'" + text + "' is not [ipv6]:port");
    }
    host = text.substr(1, close - 1);
    portText = text.substr(close + 2);
    in6_addr probe;
    if (inet_pton(AF_INET6, host.substr(0, host.find('%')).c_str(), &probe) != 1) {
      return invalidArgument("'" + host + "' in '" + text + "' is not an IPv6 address");
    }
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) return invalidArgument("'" + text + "' has no port (expected host:port)");
    host = text.substr(0, colon);
    portText = text.substr(colon + 1);
    if (host.find(':') != std::string::npos) {
      return invalidArgument("'" + text + "': write an IPv6 address in brackets, e.g. [::1]:port");
    }
  }
  if (host.empty()) return invalidArgument("'" + text + "' has no host before the port");
  uint16_t port = 0;
  BRAID_RETURN_IF_ERROR(parsePort(portText, text, &port));

  addrinfo hints{};
  hints.ai_family = family;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &result);
  if (rc != 0 || result == nullptr) {
    std::string why = rc == EAI_SYSTEM ? std::string(std::strerror(errno)) : std::string(gai_strerror(rc));
    return invalidArgument("cannot resolve host '" + host + "' of '" + text + "' (" + familyName(family) + "): " + why);
  }
  Status st = SocketAddress::fromSockaddr(result->ai_addr, result->ai_addrlen, out);
  freeaddrinfo(result);
  BRAID_RETURN_IF_ERROR(st.withContext("resolving '" + text + "'"));
  out->setPort(port);
  return Status::ok();
}

Status parseHostPort(const std::string& text, SocketAddress* out) {
  int family = AF_UNSPEC;
  BRAID_RETURN_IF_ERROR(socketFamilyFromEnv(&family));
  return parseHostPort(text, family, out);
}

}  // namespace braid::net
