#include "exec/launch_plan.h"

namespace braid::exec {

std::vector<LaunchRange> planLaunches(const std::vector<LaunchKey>& calls, size_t maxCalls) {
  std::vector<LaunchRange> launches;
  for (size_t i = 0; i < calls.size();) {
    const LaunchKey& first = calls[i];
    size_t end = i + 1;
    while (!first.oneShot && end < calls.size() && end - i < maxCalls) {
      const LaunchKey& c = calls[end];
      if (c.oneShot || c.kernel != first.kernel || c.proto != first.proto || c.stream != first.stream) break;
      ++end;
    }
    launches.push_back({i, end});
    i = end;
  }
  return launches;
}

}  // namespace braid::exec
