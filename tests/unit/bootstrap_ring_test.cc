// In-process bootstraps: ranks are threads of this test, connected over loopback TCP exactly as
// processes would be. Every rank checks every byte it receives against what the sender must have
// put there.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/net.h"
#include "core/log.h"

namespace braid::bootstrap {
namespace {

// Sets an environment variable for one test and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    const char* old = std::getenv(name);
    hadOld_ = old != nullptr;
    if (hadOld_) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (hadOld_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool hadOld_ = false;
  std::string old_;
};

Options testOptions(int64_t timeoutMs = 5000, const std::atomic<bool>* abort = nullptr) {
  Options o;
  o.timeoutMs = timeoutMs;
  o.abort = abort;
  return o;
}

// Runs fn(rank) on one thread per rank and returns each rank's result.
std::vector<Status> runRanks(int n, const std::function<Status(int)>& fn) {
  std::vector<Status> results(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      log::ScopedRank logRank(r);
      results[r] = fn(r);
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

void expectAllOk(const std::vector<Status>& results) {
  for (size_t r = 0; r < results.size(); ++r)
    EXPECT_TRUE(results[r].isOk()) << "rank " << r << ": " << results[r].message();
}

uint64_t pattern(int rank, size_t i) { return uint64_t(rank) * 1000003u + i * 7919u + 1; }

Status verifyAllGather(Bootstrap& b, size_t wordsPerRank) {
  int n = b.nranks();
  std::vector<uint64_t> data(n * wordsPerRank, 0);
  for (size_t i = 0; i < wordsPerRank; ++i) data[b.rank() * wordsPerRank + i] = pattern(b.rank(), i);
  BRAID_RETURN_IF_ERROR(b.allGather(data.data(), wordsPerRank * sizeof(uint64_t)));
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < wordsPerRank; ++i) {
      if (data[r * wordsPerRank + i] != pattern(r, i)) {
        return internalError("allGather slot of rank " + std::to_string(r) + " word " + std::to_string(i) + " wrong");
      }
    }
  }
  return Status::ok();
}

std::string text(int from, int to, uint32_t tag, int seq) {
  return "from " + std::to_string(from) + " to " + std::to_string(to) + " tag " + std::to_string(tag) + " #" +
         std::to_string(seq);
}

Status expectMessage(Bootstrap& b, int peer, uint32_t tag, const std::string& want) {
  std::string got(want.size(), '\0');
  BRAID_RETURN_IF_ERROR(b.recv(peer, tag, got.data(), got.size()));
  if (got != want) return internalError("rank " + std::to_string(b.rank()) + " got '" + got + "', want '" + want + "'");
  return Status::ok();
}

// The whole life of one rank: rendezvous, all-gathers, tagged messages around the ring (received in
// another order than sent, and FIFO within one tag), to itself, and barriers.
Status exerciseRank(const UniqueIdBytes& id, int rank, int n) {
  std::unique_ptr<Bootstrap> b;
  BRAID_RETURN_IF_ERROR(Bootstrap::create(id, rank, n, testOptions(), &b));
  if (b->rank() != rank || b->nranks() != n) return internalError("rank/nranks wrong");
  if (static_cast<int>(b->peerAddresses().size()) != n) return internalError("peerAddresses has the wrong size");
  for (int r = 0; r < n; ++r) {
    if (b->peerAddresses()[r].empty()) return internalError("no address for rank " + std::to_string(r));
    for (int s = 0; s < r; ++s) {
      if (b->peerAddresses()[r] == b->peerAddresses()[s]) return internalError("two ranks share a listener");
    }
  }
  BRAID_RETURN_IF_ERROR(verifyAllGather(*b, 3));
  BRAID_RETURN_IF_ERROR(verifyAllGather(*b, (1 << 20) / 8));  // 1 MiB slots: more than a socket buffer

  int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  BRAID_RETURN_IF_ERROR(b->send(next, 7, text(rank, next, 7, 0).data(), text(rank, next, 7, 0).size()));
  BRAID_RETURN_IF_ERROR(b->send(next, 9, text(rank, next, 9, 0).data(), text(rank, next, 9, 0).size()));
  BRAID_RETURN_IF_ERROR(b->send(next, 7, text(rank, next, 7, 1).data(), text(rank, next, 7, 1).size()));
  BRAID_RETURN_IF_ERROR(b->send(rank, 5, text(rank, rank, 5, 0).data(), text(rank, rank, 5, 0).size()));
  BRAID_RETURN_IF_ERROR(expectMessage(*b, prev, 9, text(prev, rank, 9, 0)));  // out of order: 9 before 7
  BRAID_RETURN_IF_ERROR(expectMessage(*b, prev, 7, text(prev, rank, 7, 0)));  // FIFO within tag 7
  BRAID_RETURN_IF_ERROR(expectMessage(*b, prev, 7, text(prev, rank, 7, 1)));
  BRAID_RETURN_IF_ERROR(expectMessage(*b, rank, 5, text(rank, rank, 5, 0)));
  BRAID_RETURN_IF_ERROR(b->send(next, 0, nullptr, 0));  // empty messages are messages too
  BRAID_RETURN_IF_ERROR(b->recv(prev, 0, nullptr, 0));

  // Large messages both ways at once: neither send may wait for the other rank's recv.
  std::vector<unsigned char> big(4 << 20, static_cast<unsigned char>(rank)), in(big.size());
  BRAID_RETURN_IF_ERROR(b->send(next, 42, big.data(), big.size()));
  BRAID_RETURN_IF_ERROR(b->recv(prev, 42, in.data(), in.size()));
  for (unsigned char c : in) {
    if (c != static_cast<unsigned char>(prev)) return internalError("big message corrupted");
  }
  // A large message and then a small one under the same tag: the small one may complete first at
  // the receiver, but is delivered second.
  const std::string small = text(rank, next, 43, 1);
  BRAID_RETURN_IF_ERROR(b->send(next, 43, big.data(), big.size()));
  BRAID_RETURN_IF_ERROR(b->send(next, 43, small.data(), small.size()));
  BRAID_RETURN_IF_ERROR(b->recv(prev, 43, in.data(), in.size()));
  if (in[0] != static_cast<unsigned char>(prev) || in.back() != static_cast<unsigned char>(prev)) {
    return internalError("tag 43 delivered out of order");
  }
  BRAID_RETURN_IF_ERROR(expectMessage(*b, prev, 43, text(prev, rank, 43, 1)));
  BRAID_RETURN_IF_ERROR(b->barrier());
  return b->barrier();
}

void runWholeLife(int n) {
  UniqueIdBytes id;
  Status st = createUniqueId(&id);
  ASSERT_TRUE(st.isOk()) << st.message();
  expectAllOk(runRanks(n, [&](int r) { return exerciseRank(id, r, n); }));
}

TEST(BootstrapRing, OneRank) { runWholeLife(1); }
TEST(BootstrapRing, TwoRanks) { runWholeLife(2); }
TEST(BootstrapRing, ThreeRanks) { runWholeLife(3); }
TEST(BootstrapRing, FiveRanks) { runWholeLife(5); }

// A port that was free a moment ago (for ids that name a fixed address).
uint16_t freePort(const SocketAddress& host) {
  Socket s;
  SocketAddress bound;
  if (!Socket::listen(host, &s).isOk() || !s.localAddress(&bound).isOk()) return 0;
  return bound.port();
}

TEST(BootstrapRing, Rank0ServesTheRootOverIpv6Loopback) {
  SocketAddress loop6;
  ASSERT_TRUE(parseHostPort("[::1]:1", AF_INET6, &loop6).isOk());
  loop6.setPort(0);
  uint16_t port = freePort(loop6);
  if (port == 0) GTEST_SKIP() << "::1 is not available on this host";
  ScopedEnv commId("BRAID_COMM_ID", "[::1]:" + std::to_string(port));
  UniqueIdBytes id;
  ASSERT_TRUE(createUniqueId(&id).isOk());
  UniqueIdInfo info;
  ASSERT_TRUE(decodeUniqueId(id, &info).isOk());
  EXPECT_TRUE(info.rank0ServesRoot);
  EXPECT_EQ(info.root.toString(), "[::1]:" + std::to_string(port));
  std::vector<SocketAddress> seen(3);
  expectAllOk(runRanks(3, [&](int r) {
    std::unique_ptr<Bootstrap> b;
    BRAID_RETURN_IF_ERROR(Bootstrap::create(id, r, 3, testOptions(), &b));
    seen[r] = b->peerAddresses()[r];
    BRAID_RETURN_IF_ERROR(verifyAllGather(*b, 2));
    return b->barrier();
  }));
  for (const SocketAddress& a : seen) EXPECT_EQ(a.family(), AF_INET6) << a.toString();
}

TEST(BootstrapRing, SameFixedAddressServesOneCommunicatorAfterAnother) {
  SocketAddress loop4;
  ASSERT_TRUE(parseHostPort("127.0.0.1:1", AF_INET, &loop4).isOk());
  loop4.setPort(0);
  std::string where = "127.0.0.1:" + std::to_string(freePort(loop4));
  for (int round = 0; round < 2; ++round) {
    UniqueIdBytes id;
    ASSERT_TRUE(uniqueIdForAddress(where, "job", &id).isOk());
    expectAllOk(runRanks(2, [&](int r) {
      std::unique_ptr<Bootstrap> b;
      BRAID_RETURN_IF_ERROR(Bootstrap::create(id, r, 2, testOptions(), &b));
      return verifyAllGather(*b, 1);
    }));
  }
}

TEST(BootstrapRing, LocalIdIgnoresCommId) {
  ScopedEnv commId("BRAID_COMM_ID", "127.0.0.1:9");  // taken by the job's first communicator
  UniqueIdBytes id;
  ASSERT_TRUE(createLocalUniqueId(&id).isOk());
  UniqueIdInfo info;
  ASSERT_TRUE(decodeUniqueId(id, &info).isOk());
  EXPECT_FALSE(info.rank0ServesRoot);
  EXPECT_NE(info.root.port(), 9);
  expectAllOk(runRanks(2, [&](int r) {
    std::unique_ptr<Bootstrap> b;
    BRAID_RETURN_IF_ERROR(Bootstrap::create(id, r, 2, testOptions(), &b));
    return verifyAllGather(*b, 4);
  }));
}

// --- errors of a running bootstrap ------------------------------------------------------------

TEST(BootstrapRing, UsageErrorsNameWhatIsWrong) {
  UniqueIdBytes id;
  ASSERT_TRUE(createUniqueId(&id).isOk());
  std::vector<Status> results = runRanks(2, [&](int r) -> Status {
    std::unique_ptr<Bootstrap> b;
    BRAID_RETURN_IF_ERROR(Bootstrap::create(id, r, 2, testOptions(2000), &b));
    int other = 1 - r;
    char buf[16] = {0};
    Status st = b->send(2, 1, buf, 1);
    if (st.code() != Code::kInvalidArgument || st.message().find("peer rank 2") == std::string::npos) {
      return internalError("send to rank 2: " + st.message());
    }
    st = b->recv(-1, 1, buf, 1);
    if (st.code() != Code::kInvalidArgument) return internalError("recv from -1: " + st.message());
    BRAID_RETURN_IF_ERROR(b->send(other, 3, buf, 8));
    st = b->recv(other, 3, buf, 16);
    bool named = st.message().find("rank " + std::to_string(other)) != std::string::npos &&
                 st.message().find("tag 3") != std::string::npos &&
                 st.message().find("expected 16 bytes") != std::string::npos &&
                 st.message().find("has 8") != std::string::npos;
    if (st.code() != Code::kInvalidUsage || !named) return internalError("size mismatch: " + st.message());
    BRAID_RETURN_IF_ERROR(b->recv(other, 3, buf, 8));  // the message is still there
    // Different all-gather sizes on the two ranks.
    std::vector<char> data(2 * (8 + 8 * r));
    st = b->allGather(data.data(), 8 + 8 * r);
    if (st.code() != Code::kInvalidUsage || st.message().find("same size") == std::string::npos) {
      return internalError("allGather size mismatch: " + st.message());
    }
    return Status::ok();
  });
  expectAllOk(results);
}

TEST(BootstrapRing, RecvTimeoutNamesThePeer) {
  UniqueIdBytes id;
  ASSERT_TRUE(createUniqueId(&id).isOk());
  std::vector<Status> results = runRanks(2, [&](int r) -> Status {
    std::unique_ptr<Bootstrap> b;
    BRAID_RETURN_IF_ERROR(Bootstrap::create(id, r, 2, testOptions(300), &b));
    if (r == 1) return b->barrier();
    BRAID_RETURN_IF_ERROR(b->barrier());
    char c;
    return b->recv(1, 77, &c, 1);  // rank 1 never sends
  });
  EXPECT_TRUE(results[1].isOk()) << results[1].message();
  EXPECT_EQ(results[0].code(), Code::kTimeout);
  EXPECT_NE(results[0].message().find("timed out after 300 ms waiting for a message from rank 1 with tag 77"),
            std::string::npos)
      << results[0].message();
}

TEST(BootstrapRing, ClosedPeerIsNamed) {
  UniqueIdBytes id;
  ASSERT_TRUE(createUniqueId(&id).isOk());
  std::vector<Status> results = runRanks(2, [&](int r) -> Status {
    std::unique_ptr<Bootstrap> b;
    BRAID_RETURN_IF_ERROR(Bootstrap::create(id, r, 2, testOptions(3000), &b));
    BRAID_RETURN_IF_ERROR(b->barrier());
    if (r == 1) return Status::ok();  // leaves: its sockets close
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return b->barrier();
  });
  EXPECT_TRUE(results[1].isOk());
  EXPECT_EQ(results[0].code(), Code::kRemoteError) << results[0].message();
  EXPECT_NE(results[0].message().find("rank 1 (previous in ring)"), std::string::npos) << results[0].message();
}

TEST(BootstrapRing, AbortEndsAWaitPromptly) {
  UniqueIdBytes id;
  ASSERT_TRUE(createUniqueId(&id).isOk());
  std::atomic<bool> abort{false};
  std::unique_ptr<Bootstrap> b;
  ASSERT_TRUE(Bootstrap::create(id, 0, 1, testOptions(60000, &abort), &b).isOk());
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    abort.store(true);
  });
  auto start = std::chrono::steady_clock::now();
  char c;
  Status st = b->recv(0, 1, &c, 1);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  aborter.join();
  EXPECT_EQ(st.code(), Code::kInternalError) << st.message();
  EXPECT_NE(st.message().find("aborted"), std::string::npos) << st.message();
  EXPECT_LT(ms, 1500);
}

}  // namespace
}  // namespace braid::bootstrap
