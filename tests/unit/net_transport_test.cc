// The network transport on its own: two ranks' transports in one process over the built-in socket
// network, slots of every size moved through connections of 1 to 8 lanes and checked byte for byte;
// piece boundaries; connections with wrong hellos; a peer that goes away.
#include "transport/net/net_transport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "net/socket.h"
#include "net_transport_test_util.h"
#include "transport/net/net_abi.h"
#include "transport/net/socket_net.h"

namespace braid::transport {
namespace {

// Two ranks' transports, listening and started with each other's handle.
struct Pair {
  std::atomic<bool> abort{false};
  std::unique_ptr<NetTransport> rank[2];

  Pair(int threads, int socksPerThread, int slots, size_t slotBytes) {
    NetOptions o;
    o.nThreads = threads;
    o.nSocksPerThread = socksPerThread;
    o.slots = slots;
    o.slotBytes = slotBytes;
    o.timeoutMs = 5000;
    startPair(
        rank, [&](int) { return o; }, &abort);
  }
};

// Sends `sizes.size()` slots of the given sizes from rank 0 to rank 1 and checks every byte.
// `byReference`: slots whose size allows it are published by reference to memory of the sender's
// (the built-in network allows it), which changes once each is freed.
void moveSlots(Pair& pair, const std::vector<size_t>& sizes, int channel, bool byReference = false) {
  HostFifo* out = nullptr;
  HostFifo* in = nullptr;
  ASSERT_TRUE(pair.rank[1]->fifo(channel, 0, 0, 1, &in).isOk());
  ASSERT_TRUE(pair.rank[0]->fifo(channel, 0, 0, 1, &out).isOk());
  StopFlags stop{&pair.abort, nullptr};
  auto byte = [](size_t slot, size_t i) { return static_cast<char>((slot * 131 + i * 7) & 0xff); };
  ASSERT_TRUE(out->byReference());
  std::thread sender([&] {
    std::vector<char> mine[kMaxSteps];
    for (size_t k = 0; k < sizes.size(); ++k) {
      char* slot = out->waitWritable(stop);
      ASSERT_NE(slot, nullptr);
      if (byReference && out->referenceSaves(sizes[k])) {
        // The slot's memory of the sender's is free again once its slot is (it waited for it).
        std::vector<char>& data = mine[k % out->slots()];
        data.assign(sizes[k], 0);
        for (size_t i = 0; i < sizes[k]; ++i) data[i] = byte(k, i);
        uint64_t counter = out->publishRef(data.data(), data.size());
        ASSERT_EQ(out->refAt(counter), data.data());
        continue;
      }
      for (size_t i = 0; i < sizes[k]; ++i) slot[i] = byte(k, i);
      out->publish(sizes[k]);
    }
    if (!sizes.empty()) {
      ASSERT_TRUE(out->waitReleased(out->tailCount() - 1, stop));
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

TEST(NetPieces, CoverTheSlotOnceWithPiecesOfAtLeastTheMinimum) {
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

class NetTransportLanes : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(NetTransportLanes, EverySlotArrivesWhole) {
  auto [threads, socks] = GetParam();
  const size_t slotBytes = 4 * kMinPieceBytes + 3;
  Pair pair(threads, socks, 4, slotBytes);
  std::mt19937 rng(threads * 10 + socks);
  std::vector<size_t> sizes = {0, 1, 7, slotBytes, kMinPieceBytes, kMinPieceBytes + 1, slotBytes - 1};
  for (int i = 0; i < 60; ++i) sizes.push_back(rng() % (slotBytes + 1));
  moveSlots(pair, sizes, 0);
  moveSlots(pair, {slotBytes, 5, slotBytes}, 3);  // a second connection of the same pair
  moveSlots(pair, sizes, 5, true);                // lanes 1 and up send from the sender's memory
}

INSTANTIATE_TEST_SUITE_P(ThreadsByLanes, NetTransportLanes,
                         ::testing::Values(std::make_tuple(1, 1), std::make_tuple(1, 2), std::make_tuple(2, 2),
                                           std::make_tuple(2, 4)));

// A connection this rank closes (a call that gave up with slots sent by reference) says, once all
// its lanes have closed their network connections, that nothing reads its slots any more.
TEST(NetTransport, ClosingAConnectionEndsEveryReadOfItsSlots) {
  Pair pair(2, 2, 4, 4 * kMinPieceBytes);
  HostFifo *out = nullptr, *in = nullptr;
  ASSERT_TRUE(pair.rank[1]->fifo(0, 0, 0, 1, &in).isOk());
  ASSERT_TRUE(pair.rank[0]->fifo(0, 0, 0, 1, &out).isOk());
  EXPECT_FALSE(out->readersDone());
  out->close(0, "test");
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!out->readersDone() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(out->readersDone()) << "the lanes of a closed connection did not all close within 5 s";
}

// Connects to `handle` with a network of its own and sends `hello` (null: nothing); the connection.
void* intrude(const network::Network& n, NetHandle handle, const NetHello* hello) {
  void* comm = nullptr;
  for (int i = 0; i < 100000 && comm == nullptr; ++i) {
    EXPECT_EQ(n.api().connect(n.context(), 0, handle.data(), &comm, nullptr), ncclSuccess);
  }
  EXPECT_NE(comm, nullptr);
  if (hello == nullptr || comm == nullptr) return comm;
  void* mh = nullptr;
  void* req = nullptr;
  EXPECT_EQ(n.api().regMr(comm, const_cast<NetHello*>(hello), sizeof(*hello), network::kPtrHost, &mh), ncclSuccess);
  EXPECT_EQ(n.api().isend(comm, const_cast<NetHello*>(hello), sizeof(*hello), -1, mh, nullptr, &req), ncclSuccess);
  int done = 0;
  for (int i = 0; i < 100000 && !done; ++i) EXPECT_EQ(n.api().test(req, &done, nullptr), ncclSuccess);
  n.api().deregMr(comm, mh);
  return comm;
}

// True once a send on `comm` fails (the receiver dropped the connection), within 5 s.
bool sendsFail(const network::Network& n, void* comm) {
  std::vector<char> chunk(64 << 10);
  void* mh = nullptr;
  EXPECT_EQ(n.api().regMr(comm, chunk.data(), chunk.size(), network::kPtrHost, &mh), ncclSuccess);
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  bool failed = false;
  while (!failed && std::chrono::steady_clock::now() < end) {
    void* req = nullptr;
    if (n.api().isend(comm, chunk.data(), chunk.size(), 0, mh, nullptr, &req) != ncclSuccess) failed = true;
    int done = 0;
    while (!failed && req != nullptr && !done && std::chrono::steady_clock::now() < end) {
      failed = n.api().test(req, &done, nullptr) != ncclSuccess;
    }
  }
  n.api().deregMr(comm, mh);
  return failed;
}

// Connections whose first message is not a transport's hello (a hello for another communicator or
// rank, something else, silence) are dropped; a real connection made meanwhile still works. (Bytes
// that are not a network connection at all are the network's to drop: tests/net.)
TEST(NetTransport, WrongHellosAreDroppedAndRealPeersStillConnect) {
  NetOptions o;
  o.slots = 4;
  o.slotBytes = 1024;
  o.timeoutMs = 5000;
  std::atomic<bool> abort{false};
  std::vector<NetHandle> handles(2);
  NetTransport r0(kKey, 0, 2, o, &abort), r1(kKey, 1, 2, o, &abort);
  ASSERT_TRUE(r0.listen(loopbackAddress(), &handles[0]).isOk());
  ASSERT_TRUE(r1.listen(loopbackAddress(), &handles[1]).isOk());
  ASSERT_TRUE(r0.start(handles).isOk());
  ASSERT_TRUE(r1.start(handles).isOk());

  std::unique_ptr<network::Network> n;
  ASSERT_TRUE(network::Network::fromTable(network::socketNetwork(), "test", 99, &n).isOk());
  NetHello otherComm{kNetHelloMagic, kKey + 1, 0, 1, 0, 0, 0, 1, 0, 0};
  NetHello badRank{kNetHelloMagic, kKey, 7, 1, 0, 0, 0, 1, 0, 0};
  NetHello notAHello{0x1234, kKey, 0, 1, 0, 0, 0, 1, 0, 0};
  void* intruders[] = {intrude(*n, handles[1], &otherComm), intrude(*n, handles[1], &badRank),
                       intrude(*n, handles[1], &notAHello), intrude(*n, handles[1], nullptr)};  // the last says nothing

  HostFifo* in = nullptr;
  HostFifo* out = nullptr;
  ASSERT_TRUE(r1.fifo(0, 0, 0, 1, &in).isOk());
  ASSERT_TRUE(r0.fifo(0, 0, 0, 1, &out).isOk());
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

  // The intruders with wrong hellos find their connection closed.
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(sendsFail(*n, intruders[i])) << "intruder " << i << " was not dropped";
  for (void* c : intruders) n->api().closeSend(c);
}

// Publishes one slot of `bytes` bytes, each `value`, into `out`.
void publishSlot(HostFifo* out, size_t bytes, char value, const StopFlags& stop) {
  char* slot = out->waitWritable(stop);
  ASSERT_NE(slot, nullptr);
  std::memset(slot, value, bytes);
  out->publish(bytes);
}

// A peer whose transport goes away mid-stream: the receiver's wait ends with the FIFO closed in
// the peer's name, after the slots that did arrive.
TEST(NetTransport, PeerGoneClosesTheFifoInItsName) {
  Pair pair(1, 2, 4, 256);
  HostFifo* in = nullptr;
  HostFifo* out = nullptr;
  ASSERT_TRUE(pair.rank[1]->fifo(0, 0, 0, 1, &in).isOk());
  ASSERT_TRUE(pair.rank[0]->fifo(0, 0, 0, 1, &out).isOk());
  StopFlags stop{&pair.abort, nullptr};
  publishSlot(out, 256, 1, stop);
  pair.rank[0].reset();  // flushes the slot, then closes its lanes
  size_t bytes = 0;
  ASSERT_NE(in->waitReadable(&bytes, stop), nullptr);
  EXPECT_EQ(bytes, 256u);
  in->release();
  EXPECT_EQ(in->waitReadable(&bytes, stop), nullptr);
  EXPECT_EQ(in->closedBy(), 0);
}

// Runs `wait` (which returns once its FIFO is readable or stopped) with `abort` raised after 10 s,
// so that a wait nothing ends fails the test instead of hanging it. True if it ended by itself.
bool endsWithin10s(std::atomic<bool>& abort, const std::function<void()>& wait) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread watcher([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(10), [&] { return done; })) abort.store(true);
  });
  wait();
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  watcher.join();
  return !abort.load();
}

// Channel 0 both ways between the pair: rank 0's out0 to rank 1's in1 (one slot moved through it,
// so its lanes are up) and rank 1's out1 to rank 0's in0.
void connectBothWays(Pair& pair, HostFifo** out0, HostFifo** in1, HostFifo** out1, HostFifo** in0) {
  ASSERT_TRUE(pair.rank[1]->fifo(0, 0, 0, 1, in1).isOk());
  ASSERT_TRUE(pair.rank[0]->fifo(0, 1, 1, 0, in0).isOk());
  ASSERT_TRUE(pair.rank[0]->fifo(0, 0, 0, 1, out0).isOk());
  ASSERT_TRUE(pair.rank[1]->fifo(0, 1, 1, 0, out1).isOk());
  StopFlags plain{&pair.abort, nullptr};
  publishSlot(*out0, 16, 3, plain);
  size_t bytes = 0;
  ASSERT_NE((*in1)->waitReadable(&bytes, plain), nullptr);
  (*in1)->release();
}

// The exit race over the network: rank 1 receives rank 0's slot, sends more slots than rank 0's
// FIFO holds (the rest wait in the socket) and leaves, as a rank does after its last call. Rank 0's
// idle send connection may see the close first; its waits for rank 1's slots watch that connection
// (as a step's waits watch all its FIFOs), and still get every slot. The send connection fails
// only once rank 0 publishes a slot that can no longer go anywhere, naming rank 1: at once, however
// late its own socket tells it, since the receive connection's end told the transport already
// (it used to depend on the proxy looking at the idle socket first, and failed under load).
TEST(NetTransport, APeerThatSentItsLastSlotsAndLeftDoesNotEndTheWaitForThem) {
  constexpr int kSlots = 4;
  Pair pair(1, 2, kSlots, 256);
  HostFifo *out0 = nullptr, *in1 = nullptr, *out1 = nullptr, *in0 = nullptr;
  ASSERT_NO_FATAL_FAILURE(connectBothWays(pair, &out0, &in1, &out1, &in0));
  StopFlags plain{&pair.abort, nullptr};
  size_t bytes = 0;
  for (int k = 0; k < 3 * kSlots; ++k) publishSlot(out1, 100, static_cast<char>(k), plain);
  pair.rank[1].reset();  // flushes its slots into the socket, then closes every lane
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // rank 0's idle send lane sees it
  EXPECT_LT(out0->closedBy(), 0) << out0->closeReason();

  HostFifo* watched[] = {in0, out0};
  StopFlags step{&pair.abort, nullptr, watched, 2};
  for (int k = 0; k < 3 * kSlots; ++k) {
    const char* got = nullptr;
    ASSERT_TRUE(endsWithin10s(pair.abort, [&] { got = in0->waitReadable(&bytes, step); }));
    ASSERT_NE(got, nullptr) << "slot " << k << ": " << in0->closeReason() << " / " << out0->closeReason();
    EXPECT_EQ(bytes, 100u);
    EXPECT_EQ(got[99], static_cast<char>(k));
    in0->release();
  }
  ASSERT_TRUE(endsWithin10s(pair.abort, [&] { EXPECT_EQ(in0->waitReadable(&bytes, step), nullptr); }));
  EXPECT_EQ(in0->closedBy(), 1);

  publishSlot(out0, 8, 0, plain);
  EXPECT_EQ(out0->closedBy(), 1) << pair.rank[0]->describePeer(1);
  EXPECT_NE(out0->closeReason().find("rank 1"), std::string::npos) << out0->closeReason();
}

// A peer that gave up on one connection, and stays (its call failed): this rank's send connection
// to it has a live socket, which never tells of anything, yet the receive connection's end already
// did. The next slot published to the peer fails at once, naming it, on that connection and on
// one made afterwards (the peer's listener still accepts it).
TEST(NetTransport, APeerSeenGoneOnOneConnectionEndsTheSendConnectionsToIt) {
  Pair pair(1, 2, 4, 256);
  HostFifo *out0 = nullptr, *in1 = nullptr, *out1 = nullptr, *in0 = nullptr;
  ASSERT_NO_FATAL_FAILURE(connectBothWays(pair, &out0, &in1, &out1, &in0));
  StopFlags plain{&pair.abort, nullptr};
  size_t bytes = 0;

  out1->close(1, "rank 1 gave up on its call");  // its lanes close their sockets; in1 stays open
  ASSERT_TRUE(endsWithin10s(pair.abort, [&] { EXPECT_EQ(in0->waitReadable(&bytes, plain), nullptr); }));
  EXPECT_EQ(in0->closedBy(), 1);
  EXPECT_LT(out0->closedBy(), 0) << "nothing was published to rank 1 since: " << out0->closeReason();

  publishSlot(out0, 8, 0, plain);
  EXPECT_EQ(out0->closedBy(), 1) << pair.rank[0]->describePeer(1);
  EXPECT_NE(out0->closeReason().find("rank 1 left or failed"), std::string::npos) << out0->closeReason();

  HostFifo* later = nullptr;
  ASSERT_TRUE(pair.rank[0]->fifo(1, 0, 0, 1, &later).isOk());
  EXPECT_LT(later->closedBy(), 0);
  publishSlot(later, 8, 0, plain);
  EXPECT_EQ(later->closedBy(), 1) << "a send connection made after the peer went";
}

// A connection the leaving peer never made (it was in another call): a wait on it ends, naming the
// peer, once the peer's lanes have all had time to arrive; so does one asked for afterwards.
TEST(NetTransport, AConnectionAPeerNeverMadeFailsOnceItIsGone) {
  Pair pair(1, 2, 4, 256);
  HostFifo *out0 = nullptr, *in1 = nullptr, *never = nullptr;
  ASSERT_TRUE(pair.rank[1]->fifo(0, 0, 0, 1, &in1).isOk());
  ASSERT_TRUE(pair.rank[0]->fifo(0, 0, 0, 1, &out0).isOk());
  ASSERT_TRUE(pair.rank[0]->fifo(2, 3, 1, 0, &never).isOk());
  StopFlags plain{&pair.abort, nullptr};
  publishSlot(out0, 16, 1, plain);
  size_t bytes = 0;
  ASSERT_NE(in1->waitReadable(&bytes, plain), nullptr);
  in1->release();
  pair.rank[1].reset();

  ASSERT_TRUE(endsWithin10s(pair.abort, [&] { EXPECT_EQ(never->waitReadable(&bytes, plain), nullptr); }));
  EXPECT_EQ(never->closedBy(), 1);
  EXPECT_NE(never->closeReason().find("rank 1 went away without ever sending on channel 2 connection 3"),
            std::string::npos)
      << never->closeReason();

  HostFifo* later = nullptr;
  ASSERT_TRUE(pair.rank[0]->fifo(1, 0, 1, 0, &later).isOk());
  EXPECT_EQ(later->closedBy(), 1) << "a connection asked for after the peer left, never made by it";
}

// A host link (attach with quiet, as the call ledger links hosts' ranks): heap FIFOs both ways,
// tagged slots of no data arrive in order with their tags; when one side goes, the other's inbox
// closes (its reader stops) but nobody is told of a failure, since the link's end fails no call.
// The same link made loud does tell (the check can fail).
TEST(NetTransport, AQuietHostLinkCarriesTagsAndEndsWithoutAFailure) {
  for (bool quiet : {true, false}) {
    SCOPED_TRACE(quiet ? "quiet" : "loud");
    std::atomic<int> failures[2] = {0, 0};
    std::unique_ptr<NetTransport> rank[2];
    ASSERT_TRUE(startPair(
        rank,
        [&failures](int r) {
          NetOptions o = attachedOptions(8, 64);
          o.onFailure = [&failures, r](int, const std::string&) { ++failures[r]; };
          return o;
        },
        nullptr));
    HostFifo* out[2] = {nullptr, nullptr};
    HostFifo* in[2] = {nullptr, nullptr};
    for (int r = 0; r < 2; ++r) {  // the incoming side first, as NetDeviceTransport::link
      auto fifo = std::make_unique<HostFifo>(64, 64);
      in[r] = fifo.get();
      ASSERT_TRUE(rank[r]->attach(1023, 1023, 1 - r, r, std::move(fifo), quiet).isOk());
    }
    for (int r = 0; r < 2; ++r) {
      auto fifo = std::make_unique<HostFifo>(64, 64);
      out[r] = fifo.get();
      ASSERT_TRUE(rank[r]->attach(1023, 1023, r, 1 - r, std::move(fifo), quiet).isOk());
    }
    // Every wait below ends within 10 s.
    std::atomic<bool> timeUp{false}, finished{false};
    std::thread timer([&] {
      for (int i = 0; i < 100 && !finished.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      timeUp = true;
    });
    StopFlags stop;
    stop.abort = &timeUp;
    constexpr uint32_t kTags = 40;
    for (int r = 0; r < 2; ++r) {
      for (uint32_t n = 1; n <= kTags; ++n) {
        CallTag t;
        t.seq = n;
        t.count = 1000 * r + n;
        t.kind = 1;
        ASSERT_NE(out[r]->waitWritable(stop), nullptr);
        out[r]->publish(0, t);
      }
    }
    for (int r = 0; r < 2; ++r) {
      for (uint32_t n = 1; n <= kTags; ++n) {
        size_t bytes = 1;
        CallTag t;
        ASSERT_NE(in[r]->waitReadable(&bytes, stop, &t), nullptr) << "rank " << r << ", tag " << n;
        EXPECT_EQ(bytes, 0u);
        EXPECT_EQ(t.seq, n);
        EXPECT_EQ(t.count, 1000u * (1 - r) + n);
        in[r]->release();
      }
    }
    rank[1].reset();
    size_t bytes = 0;
    EXPECT_EQ(in[0]->waitReadable(&bytes, stop, nullptr), nullptr);
    EXPECT_FALSE(timeUp.load()) << "rank 0's inbox must close when rank 1 goes";
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a failure would be told by now
    EXPECT_EQ(failures[0].load() == 0, quiet) << failures[0].load() << " failure(s) told";
    finished = true;
    timer.join();
  }
}

// Eager GPU launches tell the transport at once (no host function): its proxies poll from a
// launch's begin until the probe finds every kernel queued before the last end ended, and stop
// asking the probe once it has; a begin that races the probe keeps them polling.
TEST(NetTransport, EagerLaunchesKeepTheProxiesPollingUntilTheProbeSaysDone) {
  std::atomic<bool> abort{false};
  NetTransport t(1, 0, 2, NetOptions{}, &abort);
  bool done = false;
  int asked = 0;
  std::function<void()> duringProbe;
  t.setDoneProbe([&] {
    ++asked;
    if (duringProbe) duringProbe();
    return done;
  });
  EXPECT_FALSE(t.kernelsMayRun()) << "nothing launched";
  EXPECT_EQ(asked, 0);
  t.eagerLaunch(true);
  done = true;
  EXPECT_TRUE(t.kernelsMayRun()) << "a launch under way: its kernel is not queued yet";
  t.eagerLaunch(false);
  done = false;
  EXPECT_TRUE(t.kernelsMayRun()) << "the kernel runs";
  done = true;
  EXPECT_FALSE(t.kernelsMayRun());
  const int before = asked;
  EXPECT_FALSE(t.kernelsMayRun());
  EXPECT_EQ(asked, before) << "quiet until the next launch: the probe is not asked again";
  // A launch; then the next begins while the probe reads the event of the one before.
  t.eagerLaunch(true);
  t.eagerLaunch(false);
  duringProbe = [&] { t.eagerLaunch(true); };
  EXPECT_TRUE(t.kernelsMayRun()) << "a begin during the probe keeps the proxies polling";
  duringProbe = nullptr;
  t.eagerLaunch(false);
  EXPECT_FALSE(t.kernelsMayRun());
  t.beginWork();
  EXPECT_TRUE(t.kernelsMayRun()) << "a graph's kernel (host functions) counts too";
  t.endWork();
}

}  // namespace
}  // namespace braid::transport
