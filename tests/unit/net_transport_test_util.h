// What the network transport's unit tests share: the communicator key and the loopback address
// their transports listen on.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "net/socket.h"

namespace braid::transport {

constexpr uint64_t kKey = 0x1234abcdull;

inline net::SocketAddress loopbackAddress() {
  net::SocketAddress a;
  EXPECT_TRUE(net::parseHostPort("127.0.0.1:1", &a).isOk());
  return a;
}

}  // namespace braid::transport
