// The socket transport on its own: two ranks' transports in one process, slots of every size moved
// through connections of 1 to 8 sockets and checked byte for byte; piece boundaries; garbage on the
// listening port; a peer that goes away.
#include "transport/socket_transport.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "net/socket.h"

namespace braid::transport {
namespace {

constexpr uint64_t kKey = 0x1234abcdull;

net::SocketAddress loopbackAddress() {
  net::SocketAddress a;
  EXPECT_TRUE(net::parseHostPort("127.0.0.1:1", &a).isOk());
  return a;
}

// Two ranks' transports, listening on 127.0.0.1 and started with each other's address.
struct Pair {
  std::atomic<bool> abort{false};
  std::unique_ptr<SocketTransport> rank[2];

  Pair(int threads, int socksPerThread, int slots, size_t slotBytes) {
    SocketOptions o;
    o.nThreads = threads;
    o.nSocksPerThread = socksPerThread;
    o.slots = slots;
    o.slotBytes = slotBytes;
    o.timeoutMs = 5000;
    std::vector<net::SocketAddress> addresses(2);
    for (int r = 0; r < 2; ++r) {
      rank[r] = std::make_unique<SocketTransport>(kKey, r, 2, o, &abort);
      EXPECT_TRUE(rank[r]->listen(loopbackAddress(), &addresses[r]).isOk());
    }
    for (int r = 0; r < 2; ++r) EXPECT_TRUE(rank[r]->start(addresses).isOk());
  }
};

// Sends `sizes.size()` slots of the given sizes from rank 0 to rank 1 and checks every byte.
void moveSlots(Pair& pair, const std::vector<size_t>& sizes, int channel) {
  HostFifo* out = nullptr;
  HostFifo* in = nullptr;
  ASSERT_TRUE(pair.rank[1]->connection(channel, 0, 0, 1, &in).isOk());
  ASSERT_TRUE(pair.rank[0]->connection(channel, 0, 0, 1, &out).isOk());
  StopFlags stop{&pair.abort, nullptr};
  auto byte = [](size_t slot, size_t i) { return static_cast<char>((slot * 131 + i * 7) & 0xff); };
  std::thread sender([&] {
    for (size_t k = 0; k < sizes.size(); ++k) {
      char* slot = out->waitWritable(stop);
      ASSERT_NE(slot, nullptr);
      for (size_t i = 0; i < sizes[k]; ++i) slot[i] = byte(k, i);
      out->publish(sizes[k]);
    }
  });
  for (size_t k = 0; k < sizes.size(); ++k) {
    size_t bytes = 0;
    const char* slot = in->waitReadable(&bytes, stop);
    ASSERT_NE(slot, nullptr) << "slot " << k;
    ASSERT_EQ(bytes, sizes[k]) << "slot " << k;
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(slot[i], byte(k, i)) << "slot " << k << " byte " << i;
    in->release();
  }
  sender.join();
}

TEST(SocketPieces, CoverTheSlotOnceWithPiecesOfAtLeastTheMinimum) {
  for (int lanes : {1, 2, 3, 8}) {
    for (size_t bytes : {size_t{0}, size_t{1}, kMinPieceBytes - 1, kMinPieceBytes, 2 * kMinPieceBytes + 5,
                         size_t{1} << 20, (size_t{1} << 20) + 3}) {
      size_t next = 0;
      int used = 0;
      for (int lane = 0; lane < lanes; ++lane) {
        size_t b = 0, e = 0;
        pieceOf(bytes, lane, lanes, &b, &e);
        if (b == e) continue;
        EXPECT_EQ(b, next) << bytes << " bytes, lane " << lane << " of " << lanes;
        if (lane > 0) {
          EXPECT_GE(e - b, kMinPieceBytes) << bytes << " bytes, lane " << lane;
        }
        next = e;
        ++used;
      }
      EXPECT_EQ(next, bytes) << bytes << " bytes over " << lanes << " lanes";
      EXPECT_LE(used, lanes);
    }
  }
}

class SocketTransportLanes : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(SocketTransportLanes, EverySlotArrivesWhole) {
  auto [threads, socks] = GetParam();
  const size_t slotBytes = 4 * kMinPieceBytes + 3;
  Pair pair(threads, socks, 4, slotBytes);
  std::mt19937 rng(threads * 10 + socks);
  std::vector<size_t> sizes = {0, 1, 7, slotBytes, kMinPieceBytes, kMinPieceBytes + 1, slotBytes - 1};
  for (int i = 0; i < 60; ++i) sizes.push_back(rng() % (slotBytes + 1));
  moveSlots(pair, sizes, 0);
  moveSlots(pair, {slotBytes, 5, slotBytes}, 3);  // a second connection of the same pair
}

INSTANTIATE_TEST_SUITE_P(ThreadsBySockets, SocketTransportLanes,
                         ::testing::Values(std::make_tuple(1, 1), std::make_tuple(1, 2), std::make_tuple(2, 2),
                                           std::make_tuple(2, 4)));

// Connections that are not a transport's hello (garbage, silence, a hello for another
// communicator or rank) are dropped; a real connection made meanwhile still works.
TEST(SocketTransport, GarbageOnTheListenerIsDroppedAndRealPeersStillConnect) {
  SocketOptions o;
  o.slots = 4;
  o.slotBytes = 1024;
  o.timeoutMs = 5000;
  std::atomic<bool> abort{false};
  std::vector<net::SocketAddress> addresses(2);
  SocketTransport r0(kKey, 0, 2, o, &abort), r1(kKey, 1, 2, o, &abort);
  ASSERT_TRUE(r0.listen(loopbackAddress(), &addresses[0]).isOk());
  ASSERT_TRUE(r1.listen(loopbackAddress(), &addresses[1]).isOk());
  ASSERT_TRUE(r0.start(addresses).isOk());
  ASSERT_TRUE(r1.start(addresses).isOk());

  net::Deadline deadline = net::Deadline::in(2000, nullptr);
  std::vector<net::Socket> intruders(4);
  for (auto& s : intruders) ASSERT_TRUE(net::Socket::connect(addresses[1], "listener", deadline, &s).isOk());
  std::string junk(100, 'x');
  ASSERT_TRUE(intruders[0].sendAll(junk.data(), junk.size(), deadline).isOk());
  SocketHello otherComm{0x6272616964534f43ull, kKey + 1, 0, 1, 0, 0, 0, 1};
  ASSERT_TRUE(intruders[1].sendAll(&otherComm, sizeof(otherComm), deadline).isOk());
  SocketHello badRank{0x6272616964534f43ull, kKey, 7, 1, 0, 0, 0, 1};
  ASSERT_TRUE(intruders[2].sendAll(&badRank, sizeof(badRank), deadline).isOk());
  // intruders[3] says nothing.

  HostFifo* in = nullptr;
  HostFifo* out = nullptr;
  ASSERT_TRUE(r1.connection(0, 0, 0, 1, &in).isOk());
  ASSERT_TRUE(r0.connection(0, 0, 0, 1, &out).isOk());
  StopFlags stop{&abort, nullptr};
  char* slot = out->waitWritable(stop);
  ASSERT_NE(slot, nullptr);
  std::memcpy(slot, "hello", 5);
  out->publish(5);
  size_t bytes = 0;
  const char* got = in->waitReadable(&bytes, stop);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(std::string(got, bytes), "hello");
  in->release();

  // The dropped intruders see their connection closed.
  for (int i = 0; i < 3; ++i) {
    char c;
    Status st = intruders[i].recvAll(&c, 1, net::Deadline::in(2000, nullptr));
    EXPECT_FALSE(st.isOk()) << "intruder " << i << " was not dropped";
    EXPECT_EQ(st.message().find("timed out"), std::string::npos) << st.message();
  }
}

// A peer whose transport goes away mid-stream: the receiver's wait ends with the FIFO closed in
// the peer's name, after the slots that did arrive.
TEST(SocketTransport, PeerGoneClosesTheFifoInItsName) {
  Pair pair(1, 2, 4, 256);
  HostFifo* in = nullptr;
  HostFifo* out = nullptr;
  ASSERT_TRUE(pair.rank[1]->connection(0, 0, 0, 1, &in).isOk());
  ASSERT_TRUE(pair.rank[0]->connection(0, 0, 0, 1, &out).isOk());
  StopFlags stop{&pair.abort, nullptr};
  char* slot = out->waitWritable(stop);
  ASSERT_NE(slot, nullptr);
  std::memset(slot, 1, 256);
  out->publish(256);
  pair.rank[0].reset();  // flushes the slot, then closes its sockets
  size_t bytes = 0;
  ASSERT_NE(in->waitReadable(&bytes, stop), nullptr);
  EXPECT_EQ(bytes, 256u);
  in->release();
  EXPECT_EQ(in->waitReadable(&bytes, stop), nullptr);
  EXPECT_EQ(in->closedBy(), 0);
}

}  // namespace
}  // namespace braid::transport
