// The parsers of braid's environment variables, each given the input as its value: BRAID_ALGO and
// BRAID_PROTO (and config->algorithm/protocol), BRAID_SOCKET_IFNAME, BRAID_DEBUG and
// BRAID_DEBUG_SUBSYS, BRAID_DEBUG_FILE's %h/%p, every integer parameter, BRAID_SOCKET_FAMILY,
// BRAID_TIMEOUT_ACTION, BRAID_NET_PLUGIN's list, and BRAID_COMM_ID's host:port (host names
// resolve only when numeric: numeric_resolver.cc). The launcher's variables: fuzz_launcher_env.
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/log.h"
#include "core/param.h"
#include "core/watchdog.h"
#include "net/interface.h"
#include "net/socket_address.h"
#include "transport/net/network.h"
#include "tune/tuner.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  braid::tune::Allowed allowed;
  braid::tune::restrictAlgorithms(text, "BRAID_ALGO", &allowed).ignore();
  braid::tune::restrictProtocols(text, "BRAID_PROTO", &allowed).ignore();
  braid::net::IfnameFilter filter = braid::net::parseIfnameFilter(text);
  braid::net::ifnameMatches(filter, "eth0");
  braid::net::ifnameMatches(filter, text);
  braid::log::Level level;
  braid::log::parseLevel(text, &level);
  uint32_t mask = 0;
  braid::log::parseSubsys(text, &mask);
  int64_t value = 0;
  braid::param::parseInt(text, &value);
  int family = 0;
  braid::net::parseSocketFamily(text, &family).ignore();
  bool abortOnStall = false;
  braid::core::parseTimeoutAction(text, &abortOnStall).ignore();
  bool optional = false;
  braid::network::pluginCandidates(text, &optional);
  braid::log::expandFileName(text, "host", 4242);
  for (int f : {AF_UNSPEC, AF_INET, AF_INET6}) {
    braid::net::SocketAddress address;
    braid::net::parseHostPort(text, f, &address).ignore();
  }
  return 0;
}
