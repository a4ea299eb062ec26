// The call ledger (exec/call_ledger.h): ranks of one host compare their GPU collectives as they
// queue them. These tests drive the ledgers of several ranks in one process, as thread ranks or
// processes of one host would.
#include "exec/call_ledger.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "core/host_engine.h"

namespace braid::exec {
namespace {

uint64_t uniqueKey() {
  static std::atomic<uint64_t> next{1};
  return (static_cast<uint64_t>(getpid()) << 24) ^ (next++ * 0x9e3779b97f4a7c15ULL);
}

// An all-reduce tag (collective number `n`), as core/host_engine.cc's collectiveTag makes it.
transport::CallTag allReduce(uint32_t n, uint64_t count = 1000, braidRedOp_t op = braidSum) {
  transport::CallTag t;
  t.seq = n;
  t.count = count;
  t.kind = 1 + static_cast<uint8_t>(algo::Coll::kAllReduce);
  t.type = braidFloat32;
  t.op = static_cast<uint8_t>(op);
  return t;
}

// `n` ranks of one host, each with its ledger, every block attached by every rank; each compares
// with its neighbours in rank order (as CudaEngine::openLedgers sets it).
struct Host {
  explicit Host(int n) : key(uniqueKey()) {
    for (int r = 0; r < n; ++r) {
      ledgers.push_back(std::make_unique<CallLedger>());
      EXPECT_TRUE(ledgers.back()->create(key, r, core::HostEngine::describeTag).isOk());
    }
    for (int r = 0; r < n; ++r) {
      for (int q = 0; q < n; ++q) {
        if (q != r) {
          EXPECT_TRUE(ledgers[r]->attach(q).isOk());
        }
      }
      std::vector<int> neighbours;
      if (n > 1) neighbours.push_back((r + 1) % n);
      if (n > 2) neighbours.push_back((r + n - 1) % n);
      ledgers[r]->compareWith(neighbours);
    }
  }
  CallLedger& operator[](int r) { return *ledgers[r]; }
  uint64_t key;
  std::vector<std::unique_ptr<CallLedger>> ledgers;
};

TEST(CallLedger, MatchedCallsPassInEitherOrder) {
  Host h(2);
  for (uint32_t n = 1; n <= 3 * CallLedger::kEntries; ++n) {
    const int first = n % 2;
    ASSERT_TRUE(h[first].enter(allReduce(n, n), false).isOk()) << n;
    ASSERT_TRUE(h[1 - first].enter(allReduce(n, n), false).isOk()) << n;
  }
  Status why;
  EXPECT_FALSE(h[0].stopped(&why));
  EXPECT_FALSE(h[1].stopped(&why));
  EXPECT_EQ(*h[0].abortWord(), 0);
}

TEST(CallLedger, TheLaterRankFindsTheMismatchAndBothLearnIt) {
  for (int later : {0, 1}) {
    Host h(2);
    ASSERT_TRUE(h[1 - later].enter(allReduce(1, 1000, later == 0 ? braidMax : braidSum), false).isOk());
    Status s = h[later].enter(allReduce(1, 1000, later == 0 ? braidSum : braidMax), false);
    ASSERT_EQ(s.code(), Code::kInvalidUsage);
    const std::string want =
        "mismatched calls: rank 0 queued allreduce #1 (1000 x float32, sum) and rank 1 allreduce #1 (1000 x "
        "float32, max)";
    EXPECT_EQ(s.message().rfind(want, 0), 0u) << s.message();
    for (int r : {0, 1}) {
      EXPECT_EQ(*h[r].abortWord(), 1) << "rank " << r << "'s kernels must give up";
      Status why;
      ASSERT_TRUE(h[r].stopped(&why)) << r;
      EXPECT_EQ(why.message(), s.message()) << "every rank reports the same two calls";
    }
  }
}

// Every field the tag carries fails the comparison: count, type, kind (another collective), root.
TEST(CallLedger, EachFieldOfTheTagCounts) {
  auto other = [](transport::CallTag t, int field) {
    if (field == 0) t.count += 1;
    if (field == 1) t.type = braidInt32;
    if (field == 2) t.kind = 1 + static_cast<uint8_t>(algo::Coll::kBroadcast), t.op = 0, t.root = 0;
    if (field == 3) t.root = 1;
    return t;
  };
  for (int field = 0; field < 4; ++field) {
    Host h(2);
    transport::CallTag mine = allReduce(1);
    if (field == 3) mine.kind = 1 + static_cast<uint8_t>(algo::Coll::kBroadcast), mine.op = 0, mine.root = 0;
    ASSERT_TRUE(h[0].enter(mine, false).isOk());
    EXPECT_EQ(h[1].enter(other(mine, field), false).code(), Code::kInvalidUsage) << "field " << field;
  }
}

// Rank 0 of four differs; it queues last and compares with ranks 1 and 3. Rank 2, no neighbour of
// its, learns the verdict too, and its kernels are stopped.
TEST(CallLedger, EveryRankOfTheHostIsStopped) {
  Host h(4);
  for (int r = 1; r < 4; ++r) ASSERT_TRUE(h[r].enter(allReduce(1), false).isOk());
  EXPECT_EQ(h[0].enter(allReduce(1, 999), false).code(), Code::kInvalidUsage);
  for (int r = 0; r < 4; ++r) {
    Status why;
    ASSERT_TRUE(h[r].stopped(&why)) << r;
    EXPECT_NE(why.message().find("rank 0 queued allreduce #1 (999 x float32, sum)"), std::string::npos)
        << why.message();
  }
}

// A rank that queued into a CUDA graph stops comparing, and its neighbours stop comparing with it:
// the graph's replays do not pass through the ledger, so numbers no longer line up.
TEST(CallLedger, CapturedCallsEndTheComparison) {
  Host h(2);
  ASSERT_TRUE(h[0].enter(allReduce(1), false).isOk());
  ASSERT_TRUE(h[1].enter(allReduce(1), false).isOk());
  ASSERT_TRUE(h[0].enter(allReduce(2), true).isOk());      // captured
  EXPECT_TRUE(h[1].enter(allReduce(2, 5), false).isOk());  // rank 0 replays it as rank 1 likes
  EXPECT_TRUE(h[1].enter(allReduce(3, 7), false).isOk());  // numbers have drifted apart
  EXPECT_TRUE(h[0].enter(allReduce(3, 9), false).isOk());  // and rank 0 compares no more
  Status why;
  EXPECT_FALSE(h[1].stopped(&why));
}

// A user's abort raises the word without a verdict: not a mismatch.
TEST(CallLedger, AnAbortIsNoVerdict) {
  Host h(2);
  *const_cast<volatile int*>(h[0].abortWord()) = 1;
  Status why;
  EXPECT_FALSE(h[0].stopped(&why));
}

// Two ranks queue the same calls at once, again and again: a reader that meets an entry being
// rewritten must not see a mismatch (seqlock), and an op that differs at call `bad` must be found
// by at least one of the two (the fences), never by neither, while neither is more than half the
// ledger ahead of the other (a rank further ahead has overwritten the entry: not compared).
TEST(CallLedger, ConcurrentRanksNeverMissAndNeverInvent) {
  constexpr uint32_t kCalls = 3 * CallLedger::kEntries;
  constexpr uint32_t kAhead = CallLedger::kEntries / 2;
  for (int trial = 0; trial < 20; ++trial) {
    const uint32_t bad = trial % 2 == 0 ? 0 : 1 + static_cast<uint32_t>(trial * 37 % kCalls);
    Host h(2);
    std::atomic<int> found{0};
    std::atomic<uint32_t> failedAt[2] = {0, 0};
    std::atomic<uint32_t> done[2] = {0, 0};
    auto rank = [&](int r) {
      for (uint32_t n = 1; n <= kCalls; ++n) {
        while (n > done[1 - r].load() + kAhead && found.load() == 0) std::this_thread::yield();
        const braidRedOp_t op = (n == bad && r == 1) ? braidMax : braidSum;
        Status s = h[r].enter(allReduce(n, 100 + n % 7, op), false);
        if (!s.isOk()) {
          failedAt[r] = n;
          ++found;
          return;
        }
        done[r] = n;
      }
      done[r] = kCalls + kAhead;
    };
    std::thread a(rank, 0), b(rank, 1);
    a.join();
    b.join();
    if (bad == 0) {
      EXPECT_EQ(found.load(), 0) << "trial " << trial << ": a mismatch among matched calls at " << failedAt[0].load()
                                 << "/" << failedAt[1].load();
    } else {
      EXPECT_GE(found.load(), 1) << "trial " << trial << ": the op that differs at call " << bad << " was missed";
      for (int r : {0, 1}) {
        if (failedAt[r] != 0) {
          EXPECT_EQ(failedAt[r].load(), bad) << "rank " << r;
        }
      }
    }
  }
}

TEST(CallLedger, ANamelessPeerIsAnErrorAndNamesAreRemoved) {
  const uint64_t key = uniqueKey();
  {
    CallLedger a;
    ASSERT_TRUE(a.create(key, 0, core::HostEngine::describeTag).isOk());
    Status s = a.attach(3);
    EXPECT_EQ(s.code(), Code::kSystemError);
    EXPECT_NE(s.message().find("rank 3"), std::string::npos) << s.message();
    CallLedger b;
    ASSERT_TRUE(b.create(key, 1, core::HostEngine::describeTag).isOk());
    ASSERT_TRUE(a.attach(1).isOk());
    b.unlinkName();
    CallLedger late;
    ASSERT_TRUE(late.create(key, 2, core::HostEngine::describeTag).isOk());
    EXPECT_FALSE(late.attach(1).isOk()) << "an unlinked name is not found again";
  }
  for (int r = 0; r < 3; ++r) {
    char name[64];
    std::snprintf(name, sizeof(name), "/braid-ledger-%016llx-%d", static_cast<unsigned long long>(key), r);
    int fd = shm_open(name, O_RDONLY, 0);
    EXPECT_LT(fd, 0) << name << " left behind";
    if (fd >= 0) close(fd);
  }
}

}  // namespace
}  // namespace braid::exec
