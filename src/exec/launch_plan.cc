#include "exec/launch_plan.h"

namespace braid::exec {

std::vector<LaunchRange> planLaunches(const std::vector<LaunchKey>& calls, size_t maxCalls, size_t oneShotBlockWords) {
  std::vector<LaunchRange> launches;
  for (size_t i = 0; i < calls.size();) {
    const LaunchKey& first = calls[i];
    size_t end = i + 1, words = first.oneShotWords;
    while (end < calls.size() && end - i < maxCalls) {
      const LaunchKey& c = calls[end];
      if (c.oneShot != first.oneShot || c.kernel != first.kernel || c.proto != first.proto) break;
      if (!first.oneShot && c.stream != first.stream) break;
      if (first.oneShot && words + c.oneShotWords > oneShotBlockWords) break;
      words += c.oneShotWords;
      ++end;
    }
    launches.push_back({i, end});
    i = end;
  }
  return launches;
}

}  // namespace braid::exec
