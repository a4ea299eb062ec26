#include "core/config.h"

#include <algorithm>
#include <cctype>
#include <cstddef>

#include "core/param.h"
#include "tune/tuner.h"

namespace braid::core {
namespace {

// True when the caller's struct (of `size` bytes) contains the field at `offset`.
bool hasField(size_t size, size_t offset, size_t fieldSize) { return size >= offset + fieldSize; }

#define BRAID_HAS_FIELD(cfg, field) hasField((cfg)->size, offsetof(braidConfig_t, field), sizeof((cfg)->field))

Status deviceKindFromParam(DeviceKind* out) {
  std::string v = param::getString(param::Id::kDevice);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  if (v.empty())
    *out = DeviceKind::kAuto;
  else if (v == "cpu" || v == "host")
    *out = DeviceKind::kHost;
  else if (v == "cuda" || v == "gpu")
    *out = DeviceKind::kCuda;
  else
    return invalidArgument("BRAID_DEVICE='" + v + "' is not one of cpu, cuda");
  return Status::ok();
}

}  // namespace

tune::TunerConfig tunerConfig(const CommConfig& config) {
  tune::TunerConfig t;
  t.algorithm = config.algorithm;
  t.protocol = config.protocol;
  t.minCTAs = config.minCTAs;
  t.maxCTAs = config.maxCTAs;
  return t;
}

const char* deviceKindName(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kAuto: return "auto";
    case DeviceKind::kHost: return "host";
    case DeviceKind::kCuda: return "cuda";
  }
  return "?";
}

Status defaultConfig(CommConfig* out) {
  CommConfig c;
  int64_t seconds = param::getInt(param::Id::kBootstrapTimeout);
  if (seconds <= 0) return invalidArgument("BRAID_BOOTSTRAP_TIMEOUT=" + std::to_string(seconds) + " must be > 0");
  c.timeoutMs = seconds * 1000;
  BRAID_RETURN_IF_ERROR(deviceKindFromParam(&c.deviceKind));
  *out = c;
  return Status::ok();
}

Status applyUserConfig(const braidConfig_t* user, const CommConfig& base, CommConfig* out) {
  CommConfig c = base;
  if (user == nullptr) {
    *out = c;
    return Status::ok();
  }
  if (user->size < offsetof(braidConfig_t, blocking)) {
    return invalidArgument("'config': size " + std::to_string(user->size) +
                           " is smaller than the config header; initialize it with BRAID_CONFIG_INITIALIZER");
  }
  if (user->magic != BRAID_CONFIG_MAGIC) {
    return invalidArgument("'config': wrong magic; initialize it with BRAID_CONFIG_INITIALIZER");
  }
  if (user->version == 0 || user->version > BRAID_CONFIG_VERSION) {
    return invalidArgument("'config': version " + std::to_string(user->version) + " is not one this library (" +
                           std::to_string(BRAID_CONFIG_VERSION) + ") knows");
  }
  if (BRAID_HAS_FIELD(user, blocking) && user->blocking != BRAID_CONFIG_UNDEF_INT) {
    if (user->blocking != 0 && user->blocking != 1) {
      return invalidArgument("'config->blocking' = " + std::to_string(user->blocking) + " must be 0 or 1");
    }
    c.blocking = user->blocking == 1;
  }
  if (BRAID_HAS_FIELD(user, minCTAs) && user->minCTAs != BRAID_CONFIG_UNDEF_INT) c.minCTAs = user->minCTAs;
  if (BRAID_HAS_FIELD(user, maxCTAs) && user->maxCTAs != BRAID_CONFIG_UNDEF_INT) c.maxCTAs = user->maxCTAs;
  if (c.minCTAs < 1 || c.minCTAs > kMaxChannels) {
    return invalidArgument("'config->minCTAs' = " + std::to_string(c.minCTAs) + " must be in 1.." +
                           std::to_string(kMaxChannels));
  }
  if (c.maxCTAs < c.minCTAs || c.maxCTAs > kMaxChannels) {
    return invalidArgument("'config->maxCTAs' = " + std::to_string(c.maxCTAs) + " must be in minCTAs (" +
                           std::to_string(c.minCTAs) + ").." + std::to_string(kMaxChannels));
  }
  if (BRAID_HAS_FIELD(user, deviceKind) && user->deviceKind != BRAID_CONFIG_UNDEF_INT) {
    if (user->deviceKind < braidDeviceAuto || user->deviceKind > braidDeviceCuda) {
      return invalidArgument("'config->deviceKind' = " + std::to_string(user->deviceKind) +
                             " is not a braidDeviceKind_t");
    }
    c.deviceKind = static_cast<DeviceKind>(user->deviceKind);
  }
  if (BRAID_HAS_FIELD(user, algorithm) && user->algorithm != nullptr) {
    tune::Allowed allowed;
    BRAID_RETURN_IF_ERROR(tune::restrictAlgorithms(user->algorithm, "'config->algorithm'", &allowed));
    c.algorithm = user->algorithm;
  }
  if (BRAID_HAS_FIELD(user, protocol) && user->protocol != nullptr) {
    tune::Allowed allowed;
    BRAID_RETURN_IF_ERROR(tune::restrictProtocols(user->protocol, "'config->protocol'", &allowed));
    c.protocol = user->protocol;
  }
  if (BRAID_HAS_FIELD(user, timeoutMs) && user->timeoutMs != BRAID_CONFIG_UNDEF_INT) {
    if (user->timeoutMs <= 0) {
      return invalidArgument("'config->timeoutMs' = " + std::to_string(user->timeoutMs) + " must be > 0");
    }
    c.timeoutMs = user->timeoutMs;
  }
  *out = c;
  return Status::ok();
}

}  // namespace braid::core
