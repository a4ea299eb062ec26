// How a run of GPU calls becomes kernel launches: consecutive calls of one kernel (collective and
// algorithm), protocol and stream share a launch, up to a limit of calls per launch; a one-shot call
// is a launch of its own (its buffers are reused without counters, one call per launch: see
// device/oneshot.cuh). Kept apart from the CUDA engine so that the unit tier checks it without a GPU.
#pragma once

#include <cstddef>
#include <vector>

namespace braid::exec {

/// What decides whether two calls may share a launch.
struct LaunchKey {
  int kernel = 0;  // device::KernelKind
  int proto = 0;   // device::Proto
  const void* stream = nullptr;
  bool oneShot = false;
};

/// A launch: calls [begin, end).
struct LaunchRange {
  size_t begin = 0;
  size_t end = 0;
};

/// Cuts `calls` (in posting order) into launches of at most `maxCalls` calls each, in order.
std::vector<LaunchRange> planLaunches(const std::vector<LaunchKey>& calls, size_t maxCalls);

}  // namespace braid::exec
