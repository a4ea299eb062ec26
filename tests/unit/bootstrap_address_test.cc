// Socket addresses (parsing, formatting, wire form), a socket connected to itself, and the choice
// of interface.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/net.h"

namespace braid::bootstrap {
namespace {

SocketAddress parsed(const std::string& text, int family = AF_UNSPEC) {
  SocketAddress a;
  Status st = parseHostPort(text, family, &a);
  EXPECT_TRUE(st.isOk()) << text << ": " << st.message();
  return a;
}

TEST(BootstrapAddress, ParsesAndFormatsIpv4) {
  SocketAddress a = parsed("10.1.2.3:4242");
  EXPECT_EQ(a.family(), AF_INET);
  EXPECT_EQ(a.port(), 4242);
  EXPECT_EQ(a.toString(), "10.1.2.3:4242");
  EXPECT_EQ(a.hostString(), "10.1.2.3");
  EXPECT_FALSE(a.isLoopback());
  EXPECT_TRUE(parsed("127.0.0.1:1").isLoopback());
}

TEST(BootstrapAddress, ParsesAndFormatsIpv6InBrackets) {
  SocketAddress a = parsed("[::1]:5");
  EXPECT_EQ(a.family(), AF_INET6);
  EXPECT_EQ(a.port(), 5);
  EXPECT_EQ(a.toString(), "[::1]:5");
  EXPECT_TRUE(a.isLoopback());
  EXPECT_EQ(parsed("[fd00::2]:65535").toString(), "[fd00::2]:65535");
}

TEST(BootstrapAddress, ResolvesHostNamesWithinTheAskedFamily) {
  SocketAddress v4 = parsed("localhost:80", AF_INET);
  EXPECT_EQ(v4.family(), AF_INET);
  EXPECT_EQ(v4.toString(), "127.0.0.1:80");
  SocketAddress a;
  Status st = parseHostPort("127.0.0.1:80", AF_INET6, &a);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("127.0.0.1:80"), std::string::npos) << st.message();
}

TEST(BootstrapAddress, RejectsBadTextNamingIt) {
  const char* bad[] = {
      "",         "10.0.0.1",  "10.0.0.1:", "10.0.0.1:0", "10.0.0.1:65536", "10.0.0.1:x",     ":4242",
      "::1:4242", "[::1]4242", "[::1",      "[nope]:1",   "10.0.0.1:-1",    "10.0.0.1:99999", "no.such.host.invalid:1"};
  for (const char* text : bad) {
    SocketAddress a;
    Status st = parseHostPort(text, AF_UNSPEC, &a);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << "'" << text << "' was accepted";
    if (text[0] != '\0') {
      EXPECT_NE(st.message().find(text), std::string::npos) << st.message();
    }
  }
  SocketAddress a;
  Status st = parseHostPort("::1:4242", AF_UNSPEC, &a);
  EXPECT_NE(st.message().find("brackets"), std::string::npos) << st.message();
}

TEST(BootstrapAddress, SocketFamilyNames) {
  int f = -1;
  EXPECT_TRUE(parseSocketFamily("", &f).isOk());
  EXPECT_EQ(f, AF_UNSPEC);
  EXPECT_TRUE(parseSocketFamily("AF_INET", &f).isOk());
  EXPECT_EQ(f, AF_INET);
  EXPECT_TRUE(parseSocketFamily("af_inet6", &f).isOk());
  EXPECT_EQ(f, AF_INET6);
  Status st = parseSocketFamily("AF_UNIX", &f);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("AF_UNIX"), std::string::npos);
}

TEST(BootstrapAddress, WireFormRoundTripsAndRejectsGarbage) {
  for (const char* text : {"192.0.2.7:29500", "[fd00::2]:1", "[::1]:65535"}) {
    SocketAddress a = parsed(text), b;
    unsigned char wire[kWireAddressBytes];
    encodeAddress(a, wire);
    ASSERT_TRUE(decodeAddress(wire, &b).isOk());
    EXPECT_EQ(a, b);
    EXPECT_EQ(b.toString(), text);
  }
  unsigned char wire[kWireAddressBytes] = {0};
  wire[0] = 5;  // no such family
  SocketAddress out;
  EXPECT_EQ(decodeAddress(wire, &out).code(), Code::kInvalidArgument);
  encodeAddress(parsed("1.2.3.4:5"), wire);
  wire[20] = 1;  // IPv4 padding must stay zero
  EXPECT_EQ(decodeAddress(wire, &out).code(), Code::kInvalidArgument);
}

TEST(BootstrapAddress, EqualityComparesFamilyAddressAndPort) {
  EXPECT_EQ(parsed("1.2.3.4:5"), parsed("1.2.3.4:5"));
  EXPECT_NE(parsed("1.2.3.4:5"), parsed("1.2.3.4:6"));
  EXPECT_NE(parsed("1.2.3.4:5"), parsed("1.2.3.5:5"));
  EXPECT_NE(parsed("[::1]:5"), parsed("127.0.0.1:5"));
}

// A socket bound to a port and then connected to that same port joins itself without any
// listener (TCP simultaneous open): exactly what a retried connect to a free local port can hit.
TEST(BootstrapSocket, RecognisesASocketConnectedToItself) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(a);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length), 0);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0) << "errno " << errno;
  EXPECT_TRUE(net::connectedToItself(fd));
  close(fd);

  Socket listener, client, server;
  SocketAddress loopback = parsed("127.0.0.1:1");
  loopback.setPort(0);
  ASSERT_TRUE(Socket::listen(loopback, &listener).isOk());
  SocketAddress where, from;
  ASSERT_TRUE(listener.localAddress(&where).isOk());
  Deadline deadline = Deadline::in(10000, nullptr);
  ASSERT_TRUE(Socket::connect(where, "the listener", deadline, &client).isOk());
  ASSERT_TRUE(listener.accept(deadline, &server, &from).isOk());
  EXPECT_FALSE(net::connectedToItself(client.fd()));
  EXPECT_FALSE(net::connectedToItself(server.fd()));
}

// --- interface choice -----------------------------------------------------------------------

InterfaceAddress iface(const std::string& name, const std::string& hostPort, bool up = true, bool loopback = false) {
  return InterfaceAddress{name, parsed(hostPort), up, loopback};
}

std::vector<InterfaceAddress> host() {
  return {iface("lo", "127.0.0.1:1", true, true), iface("lo", "[::1]:1", true, true),
          iface("docker0", "172.17.0.1:1"),       iface("eth0", "10.0.0.5:1"),
          iface("eth0", "[fe80::1]:1"),           iface("eth0", "[fd00::5]:1"),
          iface("eth01", "10.0.1.5:1"),           iface("ib0", "10.1.0.5:1"),
          iface("ens1", "10.2.0.5:1", false)};
}

std::string choose(const std::vector<InterfaceAddress>& c, const std::string& spec, int family = AF_UNSPEC) {
  InterfaceAddress out;
  Status st = selectInterface(c, spec, family, &out);
  if (!st.isOk()) return "error: " + st.message();
  return out.name + " " + out.address.hostString();
}

TEST(BootstrapInterface, ParsesNcclStyleSpecs) {
  IfnameFilter f = parseIfnameFilter("^=eth0, ib0,");
  EXPECT_TRUE(f.exclude);
  EXPECT_TRUE(f.exact);
  EXPECT_EQ(f.names, (std::vector<std::string>{"eth0", "ib0"}));
  f = parseIfnameFilter("eth");
  EXPECT_FALSE(f.exclude);
  EXPECT_FALSE(f.exact);
  EXPECT_TRUE(ifnameMatches(f, "eth01"));
  EXPECT_FALSE(ifnameMatches(f, "ib0"));
}

TEST(BootstrapInterface, DefaultSkipsLoopbackVirtualAndDownInterfaces) {
  EXPECT_EQ(choose(host(), ""), "eth0 10.0.0.5");
  EXPECT_EQ(choose(host(), "", AF_INET6), "eth0 fd00::5");  // link-local fe80::1 skipped
  std::vector<InterfaceAddress> onlyLo = {iface("lo", "127.0.0.1:1", true, true), iface("docker0", "172.17.0.1:1"),
                                          iface("eth0", "10.0.0.5:1", false)};
  EXPECT_EQ(choose(onlyLo, ""), "lo 127.0.0.1");
}

TEST(BootstrapInterface, PrefixExactAndExclude) {
  EXPECT_EQ(choose(host(), "ib"), "ib0 10.1.0.5");
  EXPECT_EQ(choose(host(), "eth01"), "eth01 10.0.1.5");
  EXPECT_EQ(choose(host(), "=eth0"), "eth0 10.0.0.5");
  EXPECT_EQ(choose(host(), "=eth0", AF_INET6), "eth0 fd00::5");
  EXPECT_EQ(choose(host(), "^lo,docker,eth"), "ib0 10.1.0.5");
  // '=' is read once, for the whole list: "=docker0" is a name that matches nothing.
  EXPECT_EQ(choose(host(), "^=lo,=docker0,=eth0"), "docker0 172.17.0.1");
  EXPECT_EQ(choose(host(), "^=lo,docker0,eth0"), "eth01 10.0.1.5");
  EXPECT_EQ(choose(host(), "lo"), "lo 127.0.0.1");  // named explicitly, loopback is allowed
}

TEST(BootstrapInterface, NoMatchNamesTheSpecAndWhatExists) {
  std::string e = choose(host(), "=eth");  // exact: eth0 does not count
  EXPECT_EQ(e.rfind("error: ", 0), 0u) << e;
  EXPECT_NE(e.find("BRAID_SOCKET_IFNAME='=eth'"), std::string::npos) << e;
  EXPECT_NE(e.find("eth0 (10.0.0.5"), std::string::npos) << e;
  EXPECT_NE(e.find("ens1 (10.2.0.5, down)"), std::string::npos) << e;
  e = choose(host(), "ens");  // exists but is down
  EXPECT_EQ(e.rfind("error: ", 0), 0u) << e;
  e = choose(host(), "ib", AF_INET6);
  EXPECT_NE(e.find("AF_INET6"), std::string::npos) << e;
  e = choose({}, "");
  EXPECT_NE(e.find("none with an IPv4 or IPv6 address"), std::string::npos) << e;
}

TEST(BootstrapInterface, ThisHostHasAChoice) {
  std::vector<InterfaceAddress> mine;
  ASSERT_TRUE(listInterfaces(&mine).isOk());
  ASSERT_FALSE(mine.empty());
  SocketAddress a;
  Status st = chooseInterfaceAddress(&a);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a.port(), 0);
}

}  // namespace
}  // namespace braid::bootstrap
