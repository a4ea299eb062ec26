// What the network transport's unit tests share: the communicator key, the loopback address their
// transports listen on, and two ranks' transports started with each other's handle.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "net/socket.h"
#include "transport/net/net_transport.h"

namespace braid::transport {

constexpr uint64_t kKey = 0x1234abcdull;

inline net::SocketAddress loopbackAddress() {
  net::SocketAddress a;
  EXPECT_TRUE(net::parseHostPort("127.0.0.1:1", &a).isOk());
  return a;
}

/// The options of a transport whose FIFOs a GPU kernel shares (attach), 2 lanes a connection.
inline NetOptions attachedOptions(int slots, size_t slotBytes) {
  NetOptions o;
  o.nSocksPerThread = 2;
  o.slots = slots;
  o.slotBytes = slotBytes;
  o.timeoutMs = 5000;
  o.attachedOnly = true;
  return o;
}

/// Ranks 0 and 1 of a communicator of two, made with options(r), listening on loopback and started
/// with each other's handle; false (with the failure reported) if any step failed.
inline bool startPair(std::unique_ptr<NetTransport> (&rank)[2], const std::function<NetOptions(int)>& options,
                      const std::atomic<bool>* abort) {
  std::vector<NetHandle> handles(2);
  for (int r = 0; r < 2; ++r) {
    rank[r] = std::make_unique<NetTransport>(kKey, r, 2, options(r), abort);
    Status st = rank[r]->listen(loopbackAddress(), &handles[r]);
    EXPECT_TRUE(st.isOk()) << st.message();
    if (!st.isOk()) return false;
  }
  for (int r = 0; r < 2; ++r) {
    Status st = rank[r]->start(handles);
    EXPECT_TRUE(st.isOk()) << st.message();
    if (!st.isOk()) return false;
  }
  return true;
}

}  // namespace braid::transport
