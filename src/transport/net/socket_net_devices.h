// braid's socket network (socket_net.h), the part that is not about connections: how it logs and
// reports errors, and its devices (the interfaces BRAID_SOCKET_IFNAME selects, found once per
// process). Internal to src/transport/net.
#pragma once

#include <string>

#include "core/status.h"
#include "net/socket_address.h"
#include "transport/net/net_abi.h"

namespace braid::network::socketnet {

/// The logger of the latest init (communicators may init concurrently); braid's own log before any.
void setLogger(NetLogger logger);
/// One line through that logger, at `level` (kNetLogWarn, kNetLogInfo, ...).
void logLine(int level, const std::string& text);
/// Logs `what` as a warning and returns `code`: how every error leaves this network.
ncclResult_t fail(ncclResult_t code, const std::string& what);
/// A peer that went away is ncclRemoteError, a message that disagrees with its receive
/// ncclInvalidUsage, anything else of the system ncclSystemError.
ncclResult_t resultOf(const Status& st);
ncclResult_t failStatus(const Status& st);

/// One interface the network sends through.
struct Device {
  std::string ifname;
  braid::net::SocketAddress address;
  std::string name;       // what getProperties reports (the interface name)
  std::string pciPath;    // the interface's sysfs device folder; empty for virtual ones
  int speedMbps = 10000;  // when /sys does not say
};

/// Finds the devices once per process (later calls return at once); an interface spec that matches
/// nothing is ncclInvalidUsage saying what exists.
ncclResult_t discover();
/// Device `dev`, or an error naming the range (before discover(): an error).
ncclResult_t deviceAt(int dev, Device** out);
int deviceCount();
/// The address (without port) of device `dev` ("" when there is none).
std::string deviceAddress(int dev);

}  // namespace braid::network::socketnet
