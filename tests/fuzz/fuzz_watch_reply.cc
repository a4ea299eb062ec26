// The answers a rank's watchdog reads from its peers' watch listeners (core/watchdog.cc): 80-byte
// states from another process, perhaps another host. One that carries the right magic, rank and
// communicator is rendered into the hang report with its call tag, whose fields may be anything;
// the report must come out, whatever they hold. The input is up to four states and a byte of
// answer kinds; rank 0 is this rank.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/host_engine.h"
#include "core/watchdog.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using braid::core::PeerState;
  using braid::core::WatchState;
  if (size < 1 + sizeof(WatchState)) return 0;
  const uint8_t kinds = data[0];
  const size_t n = std::min<size_t>(4, (size - 1) / sizeof(WatchState));
  std::vector<PeerState> ranks(n);
  for (size_t r = 0; r < n; ++r) {
    std::memcpy(&ranks[r].state, data + 1 + r * sizeof(WatchState), sizeof(WatchState));
    ranks[r].kind = static_cast<PeerState::Kind>((kinds >> (2 * r)) & 3);
  }
  ranks[0].kind = PeerState::Kind::kAnswered;
  for (bool onRequest : {false, true}) {
    braid::core::stallReport(0, 5.0, ranks, braid::core::HostEngine::describeTag, onRequest, "");
    braid::core::stallReport(0, 5.0, ranks, nullptr, onRequest, "a line more");
  }
  return 0;
}
