#include "transport/net/socket_net_devices.h"

#include <limits.h>
#include <stdlib.h>

#include <atomic>
#include <climits>
#include <fstream>
#include <mutex>
#include <vector>

#include "core/log.h"
#include "core/param.h"
#include "net/interface.h"

namespace braid::network::socketnet {
namespace {

using braid::net::InterfaceAddress;

const int kDefaultSpeedMbps = Device{}.speedMbps;

// Set by every init, read by every thread that logs.
std::atomic<NetLogger> gLogger{nullptr};

std::mutex gMutex;
bool gDiscovered = false;
std::vector<Device> gDevices;

int readSpeed(const std::string& ifname) {
  std::ifstream in("/sys/class/net/" + ifname + "/speed");
  long speed = 0;
  if (in >> speed && speed > 0 && speed < INT_MAX) return static_cast<int>(speed);
  return kDefaultSpeedMbps;
}

std::string readPciPath(const std::string& ifname) {
  std::string link = "/sys/class/net/" + ifname + "/device";
  char resolved[PATH_MAX];
  if (realpath(link.c_str(), resolved) == nullptr) return std::string();
  return resolved;
}

}  // namespace

void setLogger(NetLogger logger) { gLogger.store(logger, std::memory_order_release); }

void logLine(int level, const std::string& text) {
  NetLogger logger = gLogger.load(std::memory_order_acquire);
  if (logger != nullptr) {
    logger(level, kNetLogSubsys, __FILE__, __LINE__, "%s", text.c_str());
  } else if (level == kNetLogWarn) {
    BRAID_WARN(log::Subsys::kNet, text);
  } else {
    BRAID_INFO(log::Subsys::kNet, text);
  }
}

ncclResult_t fail(ncclResult_t code, const std::string& what) {
  logLine(kNetLogWarn, "NET/BraidSocket: " + what);
  return code;
}

ncclResult_t resultOf(const Status& st) {
  if (st.code() == Code::kRemoteError) return ncclRemoteError;
  if (st.code() == Code::kInvalidUsage) return ncclInvalidUsage;
  return ncclSystemError;
}

ncclResult_t failStatus(const Status& st) { return fail(resultOf(st), st.message()); }

// The interfaces, found once per process (as NCCL's socket network does).
ncclResult_t discover() {
  std::lock_guard<std::mutex> lock(gMutex);
  if (gDiscovered) return ncclSuccess;
  int family = AF_UNSPEC;
  Status st = braid::net::socketFamilyFromEnv(&family);
  if (!st.isOk()) return fail(ncclInvalidUsage, st.message());
  std::vector<InterfaceAddress> candidates;
  st = braid::net::listInterfaces(&candidates);
  if (!st.isOk()) return failStatus(st);
  std::string spec = param::getString(param::Id::kSocketIfname);
  std::vector<InterfaceAddress> picks = braid::net::selectInterfaces(candidates, spec, family);
  if (picks.empty()) {
    InterfaceAddress unused;
    return fail(ncclInvalidUsage, braid::net::selectInterface(candidates, spec, family, &unused).message());
  }
  for (const InterfaceAddress& pick : picks) {
    Device d;
    d.ifname = pick.name;
    d.address = pick.address;
    d.name = pick.name;
    d.pciPath = readPciPath(pick.name);
    d.speedMbps = readSpeed(pick.name);
    logLine(kNetLogInfo, "NET/BraidSocket: device " + std::to_string(gDevices.size()) + " " + d.ifname + " " +
                             d.address.hostString() + ", " + std::to_string(d.speedMbps) + " Mb/s");
    gDevices.push_back(std::move(d));
  }
  gDiscovered = true;
  return ncclSuccess;
}

ncclResult_t deviceAt(int dev, Device** out) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (!gDiscovered) return fail(ncclInternalError, "a device was asked for before init");
  if (dev < 0 || dev >= static_cast<int>(gDevices.size())) {
    return fail(ncclInternalError, "device " + std::to_string(dev) + " does not exist (" +
                                       std::to_string(gDevices.size()) + " device(s))");
  }
  *out = &gDevices[static_cast<size_t>(dev)];
  return ncclSuccess;
}

int deviceCount() {
  std::lock_guard<std::mutex> lock(gMutex);
  return static_cast<int>(gDevices.size());
}

std::string deviceAddress(int dev) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (dev < 0 || dev >= static_cast<int>(gDevices.size())) return std::string();
  return gDevices[static_cast<size_t>(dev)].address.hostString();
}

}  // namespace braid::network::socketnet
