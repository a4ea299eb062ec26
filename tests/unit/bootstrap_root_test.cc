// The rendezvous under bad conditions: garbage on the listeners, ranks that never come, ranks that
// contradict each other, roots that are silent or gone, aborts. The errors must say who and where.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/frame.h"
#include "bootstrap/inbox.h"
#include "bootstrap/net.h"
#include "core/log.h"

namespace braid::bootstrap {
namespace {

using std::chrono::milliseconds;

constexpr uint64_t kMagic = 0x5eed5eed5eed5eedull;

Options testOptions(int64_t timeoutMs, const std::atomic<bool>* abort = nullptr) {
  Options o;
  o.timeoutMs = timeoutMs;
  o.abort = abort;
  return o;
}

// Runs fn(rank) on one thread per entry of `ranks` (which may repeat or skip ranks).
std::vector<Status> runThreads(const std::vector<int>& ranks, const std::function<Status(int, size_t)>& fn) {
  std::vector<Status> results(ranks.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ranks.size(); ++i) {
    threads.emplace_back([&, i] {
      log::ScopedRank logRank(ranks[i]);
      results[i] = fn(ranks[i], i);
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

SocketAddress loopback() {
  SocketAddress a;
  EXPECT_TRUE(parseHostPort("127.0.0.1:1", AF_INET, &a).isOk());
  a.setPort(0);
  return a;
}

Socket connectTo(const SocketAddress& to) {
  Socket s;
  Status st = Socket::connect(to, "test peer", Deadline::in(2000, nullptr), &s);
  EXPECT_TRUE(st.isOk()) << st.message();
  return s;
}

void sendBytes(Socket& s, const void* data, size_t bytes) {
  Status st = s.sendAll(data, bytes, Deadline::in(2000, nullptr));
  EXPECT_TRUE(st.isOk()) << st.message();
}

void sendHeader(Socket& s, uint64_t magic, uint32_t type, uint64_t length) {
  FrameHeader h{magic, type, kProtocolVersion, length};
  sendBytes(s, &h, sizeof(h));
}

std::vector<unsigned char> helloFrame(uint64_t magic, int rank, int nranks) {
  FrameHeader h = makeHeader(magic, FrameType::kHello, kHelloBytes);
  std::vector<unsigned char> frame(sizeof(h));
  std::memcpy(frame.data(), &h, sizeof(h));
  SocketAddress listener = loopback();
  listener.setPort(9);
  std::vector<unsigned char> payload = encodeHello(Hello{rank, nranks, 1000, listener});
  frame.insert(frame.end(), payload.begin(), payload.end());
  return frame;
}

// Every kind of bad connection, each on its own socket; the silent one stays open.
struct Garbage {
  std::vector<Socket> sockets;
  static constexpr size_t kKinds = 7;

  Garbage(const SocketAddress& to, uint64_t magic) {
    std::mt19937_64 rng(12345);
    std::vector<unsigned char> noise(200);
    for (unsigned char& c : noise) c = static_cast<unsigned char>(rng());
    sockets.push_back(connectTo(to));  // random bytes
    sendBytes(sockets.back(), noise.data(), noise.size());
    sockets.push_back(connectTo(to));  // right shape, wrong magic
    sendBytes(sockets.back(), helloFrame(magic ^ 1, 0, 3).data(), sizeof(FrameHeader) + kHelloBytes);
    sockets.push_back(connectTo(to));  // truncated header, then closed
    sendBytes(sockets.back(), helloFrame(magic, 0, 3).data(), 10);
    sockets.back().close();
    sockets.push_back(connectTo(to));  // silent, held open
    sockets.push_back(connectTo(to));  // right magic, claims 4 GB
    sendHeader(sockets.back(), magic, static_cast<uint32_t>(FrameType::kHello), uint64_t{4} << 30);
    sockets.push_back(connectTo(to));  // right magic, unknown type
    sendHeader(sockets.back(), magic, 99, 8);
    sockets.push_back(connectTo(to));  // right magic, a type this listener never takes first
    sendHeader(sockets.back(), magic, static_cast<uint32_t>(FrameType::kData), 8);
  }
};

TEST(BootstrapInbox, DropsGarbageWhileSlowAndFastPeersGetThrough) {
  Socket listener;
  ASSERT_TRUE(Socket::listen(loopback(), &listener).isOk());
  SocketAddress at;
  ASSERT_TRUE(listener.localAddress(&at).isOk());
  Inbox inbox(std::move(listener), kMagic, typeBit(FrameType::kHello), "test inbox", milliseconds(300));

  Garbage garbage(at, kMagic);
  std::vector<unsigned char> slowFrame = helloFrame(kMagic, 2, 3), fastFrame = helloFrame(kMagic, 1, 3);
  Socket slow = connectTo(at);
  sendBytes(slow, slowFrame.data(), 12);  // half a header, then a pause
  Socket fast = connectTo(at);
  sendBytes(fast, fastFrame.data(), fastFrame.size());

  Inbox::Arrival arrival;
  Hello hello;
  Status st = inbox.next(Deadline::in(2000, nullptr), "waiting for the fast peer", &arrival);
  ASSERT_TRUE(st.isOk()) << st.message();
  ASSERT_TRUE(decodeHello(arrival.payload, &hello).isOk());
  EXPECT_EQ(hello.rank, 1);

  sendBytes(slow, slowFrame.data() + 12, slowFrame.size() - 12);
  st = inbox.next(Deadline::in(2000, nullptr), "waiting for the slow peer", &arrival);
  ASSERT_TRUE(st.isOk()) << st.message();
  ASSERT_TRUE(decodeHello(arrival.payload, &hello).isOk());
  EXPECT_EQ(hello.rank, 2);

  // Nothing else is valid; by now the silent connection has outlived its 300 ms too.
  st = inbox.next(Deadline::in(500, nullptr), "waiting for nothing", &arrival);
  EXPECT_EQ(st.code(), Code::kTimeout) << st.message();
  EXPECT_EQ(inbox.droppedCount(), Garbage::kKinds);
  EXPECT_EQ(inbox.pendingCount(), 0u);
}

TEST(BootstrapInbox, APeerMayBeSlowButNotSilent) {
  Socket listener;
  ASSERT_TRUE(Socket::listen(loopback(), &listener).isOk());
  SocketAddress at;
  ASSERT_TRUE(listener.localAddress(&at).isOk());
  Inbox inbox(std::move(listener), kMagic, typeBit(FrameType::kMessage), "test inbox", milliseconds(400));
  std::vector<unsigned char> payload(3000, 0xab);
  std::thread writer([&] {
    Socket s = connectTo(at);
    sendHeader(s, kMagic, static_cast<uint32_t>(FrameType::kMessage), payload.size());
    for (int part = 0; part < 4; ++part) {  // 600 ms in all, never 400 ms without a byte
      std::this_thread::sleep_for(milliseconds(150));
      sendBytes(s, payload.data() + part * 750, 750);
    }
    Socket stalls = connectTo(at);  // a header, half the payload, then silence
    sendHeader(stalls, kMagic, static_cast<uint32_t>(FrameType::kMessage), payload.size());
    sendBytes(stalls, payload.data(), 1500);
    std::this_thread::sleep_for(milliseconds(1000));
  });
  Inbox::Arrival arrival;
  Status st = inbox.next(Deadline::in(2000, nullptr), "waiting for the slow peer", &arrival);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(arrival.payload, payload);
  st = inbox.next(Deadline::in(800, nullptr), "waiting for the stalled peer", &arrival);
  EXPECT_EQ(st.code(), Code::kTimeout);
  writer.join();
  EXPECT_EQ(inbox.droppedCount(), 1u);
}

TEST(BootstrapRoot, GarbageAtRootAndRankListenersDoesNotStopRealRanks) {
  UniqueIdBytes id;
  ASSERT_TRUE(createUniqueId(&id).isOk());
  UniqueIdInfo info;
  ASSERT_TRUE(decodeUniqueId(id, &info).isOk());
  Garbage atRoot(info.root, info.magic);  // before, and while, the ranks arrive

  std::vector<Status> results = runThreads({0, 1, 2}, [&](int r, size_t) -> Status {
    std::unique_ptr<Bootstrap> b;
    BRAID_RETURN_IF_ERROR(Bootstrap::create(id, r, 3, testOptions(5000), &b));
    if (r == 0) Garbage atRank1(b->peerAddresses()[1], info.magic);  // sent, then closed (silent one too)
    std::vector<int> slots(3, -1);
    slots[r] = 100 + r;
    BRAID_RETURN_IF_ERROR(b->allGather(slots.data(), sizeof(int)));
    for (int s = 0; s < 3; ++s) {
      if (slots[s] != 100 + s) return internalError("slot " + std::to_string(s) + " wrong");
    }
    int next = (r + 1) % 3, prev = (r + 2) % 3, got = -1;
    BRAID_RETURN_IF_ERROR(b->send(next, 5, &r, sizeof(r)));
    BRAID_RETURN_IF_ERROR(b->recv(prev, 5, &got, sizeof(got)));
    if (got != prev) return internalError("message from " + std::to_string(prev) + " wrong");
    return b->barrier();
  });
  for (size_t r = 0; r < results.size(); ++r) EXPECT_TRUE(results[r].isOk()) << r << ": " << results[r].message();
}

TEST(BootstrapRoot, EveryArrivedRankNamesTheMissingOne) {
  UniqueIdBytes id;
  ASSERT_TRUE(createUniqueId(&id).isOk());
  UniqueIdInfo info;
  ASSERT_TRUE(decodeUniqueId(id, &info).isOk());
  auto start = std::chrono::steady_clock::now();
  std::vector<Status> results = runThreads({0, 1, 3}, [&](int r, size_t) {
    std::unique_ptr<Bootstrap> b;
    return Bootstrap::create(id, r, 4, testOptions(1000), &b);
  });
  auto elapsed = std::chrono::steady_clock::now() - start;
  std::string expected = "rank(s) 2 did not arrive at the bootstrap root " + info.root.toString() + " within 1 s";
  for (const Status& st : results) {
    EXPECT_EQ(st.code(), Code::kTimeout) << st.message();
    EXPECT_NE(st.message().find(expected), std::string::npos) << st.message();
  }
  EXPECT_LT(elapsed, milliseconds(2500));
}

TEST(BootstrapRoot, MissingRank0NamesTheRootItServes) {
  SocketAddress probe;
  Socket holder;
  ASSERT_TRUE(Socket::listen(loopback(), &holder).isOk());
  ASSERT_TRUE(holder.localAddress(&probe).isOk());
  holder.close();  // a port nobody listens on
  UniqueIdBytes id;
  ASSERT_TRUE(uniqueIdForAddress(probe.toString(), "job", &id).isOk());
  std::unique_ptr<Bootstrap> b;
  Status st = Bootstrap::create(id, 1, 2, testOptions(300), &b);
  EXPECT_EQ(st.code(), Code::kTimeout) << st.message();
  EXPECT_NE(st.message().find("connecting to the bootstrap root " + probe.toString()), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("Connection refused"), std::string::npos) << st.message();
}

TEST(BootstrapRoot, Rank0ReportsABusyRootAddress) {
  Socket busy;
  ASSERT_TRUE(Socket::listen(loopback(), &busy).isOk());
  SocketAddress at;
  ASSERT_TRUE(busy.localAddress(&at).isOk());
  UniqueIdBytes id;
  ASSERT_TRUE(uniqueIdForAddress(at.toString(), "job", &id).isOk());
  std::unique_ptr<Bootstrap> b;
  Status st = Bootstrap::create(id, 0, 1, testOptions(1000), &b);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("rank 0 cannot serve the bootstrap root at " + at.toString()), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("Address already in use"), std::string::npos) << st.message();
}

TEST(BootstrapRoot, ContradictingRanksAreRefusedAndTheRestCarryOn) {
  UniqueIdBytes id;
  ASSERT_TRUE(createUniqueId(&id).isOk());
  // Thread 0 is the first rank 0 of 2; then a second rank 0 and a rank 1 that thinks there are 3;
  // then the real rank 1.
  const int delaysMs[] = {0, 250, 250, 500};
  const int nranks[] = {2, 2, 3, 2};
  std::vector<Status> results = runThreads({0, 0, 1, 1}, [&](int r, size_t i) {
    std::this_thread::sleep_for(milliseconds(delaysMs[i]));
    std::unique_ptr<Bootstrap> b;
    BRAID_RETURN_IF_ERROR(Bootstrap::create(id, r, nranks[i], testOptions(3000), &b));
    return b->barrier();
  });
  EXPECT_TRUE(results[0].isOk()) << results[0].message();
  EXPECT_TRUE(results[3].isOk()) << results[3].message();
  EXPECT_EQ(results[1].code(), Code::kInvalidUsage);
  EXPECT_NE(results[1].message().find("rank 0 arrived twice"), std::string::npos) << results[1].message();
  EXPECT_EQ(results[2].code(), Code::kInvalidUsage);
  EXPECT_NE(results[2].message().find("rank 1 was started with nranks 3 but rank 0 with 2"), std::string::npos)
      << results[2].message();
}

TEST(BootstrapRoot, SilentOrVanishingRootIsNamed) {
  Socket fakeRoot;  // listens (so connects succeed) but never answers
  ASSERT_TRUE(Socket::listen(loopback(), &fakeRoot).isOk());
  UniqueIdInfo info;
  info.magic = kMagic;
  ASSERT_TRUE(fakeRoot.localAddress(&info.root).isOk());
  UniqueIdBytes id;
  encodeUniqueId(info, &id);
  std::unique_ptr<Bootstrap> b;
  Status st = Bootstrap::create(id, 0, 1, testOptions(300), &b);
  EXPECT_EQ(st.code(), Code::kTimeout) << st.message();
  EXPECT_NE(st.message().find("no answer from the bootstrap root " + info.root.toString()), std::string::npos)
      << st.message();

  // Now the root takes the connection and closes it without answering.
  std::thread closer([&] {
    Socket conn;
    SocketAddress from;
    fakeRoot.accept(Deadline::in(2000, nullptr), &conn, &from).ignore();
  });
  closer.join();  // the earlier rank's connection is still in the backlog: closed now
  std::thread closer2([&] {
    Socket conn;
    SocketAddress from;
    fakeRoot.accept(Deadline::in(2000, nullptr), &conn, &from).ignore();
  });
  st = Bootstrap::create(id, 0, 1, testOptions(2000), &b);
  closer2.join();
  EXPECT_EQ(st.code(), Code::kRemoteError) << st.message();
  EXPECT_NE(st.message().find("the bootstrap root " + info.root.toString() + " closed the connection"),
            std::string::npos)
      << st.message();
}

TEST(BootstrapRoot, BadArgumentsAndIds) {
  UniqueIdBytes id;
  ASSERT_TRUE(uniqueIdForAddress("127.0.0.1:9", "job", &id).isOk());
  std::unique_ptr<Bootstrap> b;
  EXPECT_EQ(Bootstrap::create(id, 2, 2, testOptions(100), &b).code(), Code::kInvalidArgument);
  EXPECT_EQ(Bootstrap::create(id, -1, 2, testOptions(100), &b).code(), Code::kInvalidArgument);
  EXPECT_EQ(Bootstrap::create(id, 0, 0, testOptions(100), &b).code(), Code::kInvalidArgument);
  EXPECT_EQ(Bootstrap::create(id, 0, 1, testOptions(0), &b).code(), Code::kInvalidArgument);
  id.bytes[20] ^= 1;
  Status st = Bootstrap::create(id, 0, 1, testOptions(100), &b);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("corrupted"), std::string::npos) << st.message();
  EXPECT_EQ(b, nullptr);
}

TEST(BootstrapRoot, AbortEndsTheRendezvous) {
  UniqueIdBytes id;
  ASSERT_TRUE(createUniqueId(&id).isOk());
  std::atomic<bool> abort{false};
  std::thread aborter([&] {
    std::this_thread::sleep_for(milliseconds(200));
    abort.store(true);
  });
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<Bootstrap> b;
  Status st = Bootstrap::create(id, 0, 2, testOptions(60000, &abort), &b);  // rank 1 never comes
  auto elapsed = std::chrono::steady_clock::now() - start;
  aborter.join();
  EXPECT_NE(st.message().find("aborted"), std::string::npos) << st.message();
  EXPECT_LT(elapsed, milliseconds(1500));
}

}  // namespace
}  // namespace braid::bootstrap
