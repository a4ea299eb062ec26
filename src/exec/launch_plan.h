// How a run of GPU calls becomes kernel launches: consecutive calls of one kernel (collective and
// algorithm), protocol and stream share a launch, up to a limit of calls per launch. One-shot calls
// share a launch while their words fit in one one-shot block together, whatever their streams: a
// launch is one epoch (device/oneshot.cuh), so every rank must cut a group at the same calls, and
// the streams are each rank's own choice (the engine joins them around the launch). Kept apart from
// the CUDA engine so that the unit tier checks it without a GPU.
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
  size_t oneShotWords = 0;  // a one-shot call's 8-byte words in a block
};

/// A launch: calls [begin, end).
struct LaunchRange {
  size_t begin = 0;
  size_t end = 0;
};

/// Cuts `calls` (in posting order) into launches of at most `maxCalls` calls each, in order; the
/// one-shot calls of a launch hold at most `oneShotBlockWords` words together (a call alone may
/// hold more: the engine refuses it before).
std::vector<LaunchRange> planLaunches(const std::vector<LaunchKey>& calls, size_t maxCalls, size_t oneShotBlockWords);

}  // namespace braid::exec
