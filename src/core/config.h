// CommConfig: a communicator's options, resolved from the caller's braidConfig_t (any version up
// to ours), the parent communicator (split) and the parameter table, in that order of precedence.
#pragma once

#include <cstdint>
#include <string>

#include "braid/braid.h"
#include "core/status.h"
#include "tune/tuner.h"

namespace braid::core {

enum class DeviceKind { kAuto, kHost, kCuda };

constexpr int kMaxChannels = 64;

struct CommConfig {
  bool blocking = true;
  int minCTAs = 1;
  int maxCTAs = kMaxChannels;
  DeviceKind deviceKind = DeviceKind::kAuto;
  std::string algorithm;  // "" = every algorithm allowed
  std::string protocol;   // "" = every protocol allowed
  int64_t timeoutMs = 0;  // bootstrap deadline
};

/// The defaults: parameter table values (BRAID_BOOTSTRAP_TIMEOUT, BRAID_DEVICE).
Status defaultConfig(CommConfig* out);

/// Applies the fields the caller set in `user` (may be NULL) on top of `base`. Checks the header
/// (size, magic, version) and each field's range; errors name the field.
Status applyUserConfig(const braidConfig_t* user, const CommConfig& base, CommConfig* out);

/// The tuner's part of a config: allowed algorithms and protocols, channel bounds.
tune::TunerConfig tunerConfig(const CommConfig& config);

const char* deviceKindName(DeviceKind kind);

}  // namespace braid::core
