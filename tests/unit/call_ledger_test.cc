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
#include <deque>
#include <memory>
#include <mutex>
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
          EXPECT_TRUE(ledgers[r]->attach(q, getpid()).isOk());
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

// Two hosts of one rank each (ranks 0 and 1), linked as CudaEngine links hosts' lowest ranks over
// the network: deliver(from) does what the link's threads do, rank `from`'s verdict (if any) and
// new entries taken (verdictFor, outgoing) and handed to the other's arrived().
struct TwoHosts {
  TwoHosts() : key(uniqueKey()) {
    for (int r = 0; r < 2; ++r) {
      EXPECT_TRUE(ledger[r].create(key, r, core::HostEngine::describeTag).isOk());
      ledger[r].addRemote(1 - r);
    }
  }
  // Every result arrived() gave.
  std::vector<Status> deliverAll(int from) {
    std::lock_guard<std::mutex> lock(mu[from]);  // one thread per link
    std::vector<Status> results;
    for (;;) {
      transport::CallTag batch[64];
      size_t n = ledger[from].verdictFor(1 - from, batch) ? 2 : 0;
      n += ledger[from].outgoing(1 - from, batch + n, 64 - n);
      if (n == 0) return results;
      for (size_t i = 0; i < n; ++i) {
        results.push_back(ledger[1 - from].arrived(from, batch[i]));
        delivered[from] = std::max(delivered[from].load(), batch[i].seq);
      }
    }
  }
  // The first error arrived() gave.
  Status deliver(int from) {
    for (Status& s : deliverAll(from)) {
      if (!s.isOk()) return s;
    }
    return Status::ok();
  }
  uint64_t key;
  CallLedger ledger[2];
  std::mutex mu[2];
  std::atomic<uint32_t> delivered[2] = {0, 0};  // the last number each rank's link handed over
};

// Whichever way the entries cross, each host finds the mismatch itself (a finding of its own,
// not only the other's verdict passed on), and both report the same two calls. Order 0: rank 1
// has rank 0's entry before it queues its own; 1: both queue, rank 0's entry crosses first; 2:
// both queue, rank 1's crosses first.
TEST(CallLedger, BothHostsFindAMismatchBetweenThem) {
  for (int order = 0; order < 3; ++order) {
    TwoHosts h;
    int own[2] = {0, 0};  // findings of each host's own, by rank
    auto count = [&](int r, const std::vector<Status>& found) {
      for (const Status& s : found) {
        if (!s.isOk() && s.message().find("(found on another host)") == std::string::npos) ++own[r];
      }
    };
    ASSERT_TRUE(h.ledger[0].enter(allReduce(1, 1000, braidSum), false).isOk());
    if (order == 0) count(1, h.deliverAll(0));
    Status s1 = h.ledger[1].enter(allReduce(1, 1000, braidMax), false);
    EXPECT_EQ(s1.code(), order == 0 ? Code::kInvalidUsage : Code::kOk) << order;
    count(1, {s1});
    const int first = order == 2 ? 1 : 0;
    count(1 - first, h.deliverAll(first));
    count(first, h.deliverAll(1 - first));
    for (int r : {0, 1}) {
      EXPECT_EQ(own[r], 1) << "rank " << r << " must find it itself, once (order " << order << ")";
      Status why;
      ASSERT_TRUE(h.ledger[r].stopped(&why)) << r;
      EXPECT_EQ(why.message().rfind("mismatched calls: rank 0 queued allreduce #1 (1000 x float32, sum) and rank 1 "
                                    "allreduce #1 (1000 x float32, max)",
                                    0),
                0u)
          << why.message();
    }
  }
}

TEST(CallLedger, MatchedCallsBetweenHostsPass) {
  TwoHosts h;
  for (uint32_t n = 1; n <= 2 * CallLedger::kEntries; ++n) {
    ASSERT_TRUE(h.ledger[n % 2].enter(allReduce(n, n), false).isOk());
    if (n % 3 == 0) {
      ASSERT_TRUE(h.deliver(n % 2).isOk());
    }
    ASSERT_TRUE(h.ledger[1 - n % 2].enter(allReduce(n, n), false).isOk());
    ASSERT_TRUE(h.deliver(0).isOk());
    ASSERT_TRUE(h.deliver(1).isOk());
  }
  Status why;
  EXPECT_FALSE(h.ledger[0].stopped(&why));
  EXPECT_FALSE(h.ledger[1].stopped(&why));
}

// A rank that queued into a graph says so on the wire: the other host compares no more with it.
TEST(CallLedger, ACapturedCallCrossesTheWire) {
  TwoHosts h;
  ASSERT_TRUE(h.ledger[0].enter(allReduce(1), false).isOk());
  ASSERT_TRUE(h.ledger[0].enter(allReduce(2), true).isOk());
  ASSERT_TRUE(h.ledger[0].enter(allReduce(3, 9), false).isOk());
  ASSERT_TRUE(h.deliver(0).isOk());
  EXPECT_TRUE(h.ledger[1].enter(allReduce(1), false).isOk());
  EXPECT_TRUE(h.ledger[1].enter(allReduce(2, 5), false).isOk());
  EXPECT_TRUE(h.ledger[1].enter(allReduce(3, 7), false).isOk());
  EXPECT_TRUE(h.deliver(1).isOk());
  Status why;
  EXPECT_FALSE(h.ledger[0].stopped(&why));
  EXPECT_FALSE(h.ledger[1].stopped(&why));
}

// A rank that ran more than the ledger ahead of its link sends only the entries still there.
TEST(CallLedger, EntriesOverwrittenBeforeTheyWentAreSkipped) {
  TwoHosts h;
  constexpr uint32_t kMore = 10;
  for (uint32_t n = 1; n <= CallLedger::kEntries + kMore; ++n)
    ASSERT_TRUE(h.ledger[0].enter(allReduce(n), false).isOk());
  std::vector<transport::CallTag> out(CallLedger::kEntries + kMore);
  const size_t got = h.ledger[0].outgoing(1, out.data(), out.size());
  ASSERT_EQ(got, CallLedger::kEntries);
  EXPECT_EQ(out.front().seq, kMore + 1);
  EXPECT_EQ(out[got - 1].seq, CallLedger::kEntries + kMore);
  EXPECT_EQ(h.ledger[0].outgoing(1, out.data(), out.size()), 0u) << "each entry goes once";
}

// The enter of a number and the arrival of the peer's entry of that number race on two threads:
// at least one of them sees both, so a mismatch is never missed, and matched calls are never
// taken for one; while neither rank is more than half the ledger ahead of the other, or of what
// the wire has brought it (else the entry compared has been overwritten).
TEST(CallLedger, AnArrivalRacingItsEnterIsNeverMissed) {
  constexpr uint32_t kCalls = 3 * CallLedger::kEntries;
  for (int trial = 0; trial < 10; ++trial) {
    const uint32_t bad = trial % 2 == 0 ? 0 : 1 + static_cast<uint32_t>(trial * 53 % kCalls);
    TwoHosts h;
    std::atomic<bool> stop{false};
    std::atomic<int> found{0};
    std::thread carrier([&] {
      while (!stop.load()) {
        for (int from : {0, 1}) {
          if (!h.deliver(from).isOk()) ++found;
        }
        std::this_thread::yield();
      }
    });
    std::atomic<uint32_t> done[2] = {0, 0};
    auto rank = [&](int r) {
      for (uint32_t n = 1; n <= kCalls; ++n) {
        while (n > done[1 - r].load() + CallLedger::kEntries / 2 ||
               n > h.delivered[1 - r].load() + CallLedger::kEntries / 2) {
          std::this_thread::yield();
        }
        if (!h.ledger[r].enter(allReduce(n, 3, n == bad && r == 1 ? braidMax : braidSum), false).isOk()) ++found;
        done[r] = n;
      }
      done[r] = 2 * kCalls;
    };
    std::thread a(rank, 0), b(rank, 1);
    a.join();
    b.join();
    stop = true;
    carrier.join();
    (void)h.deliver(0);
    (void)h.deliver(1);
    Status why;
    if (bad == 0) {
      EXPECT_EQ(found.load(), 0) << "trial " << trial;
      EXPECT_FALSE(h.ledger[0].stopped(&why));
    } else {
      EXPECT_GE(found.load(), 2) << "trial " << trial << ": both hosts must find call " << bad;
      EXPECT_TRUE(h.ledger[0].stopped(&why) && h.ledger[1].stopped(&why)) << "trial " << trial;
    }
  }
}

// Host A holds rank 0; host B ranks 1 and 2; ranks 0 and 1 (their hosts' lowest) are linked. Rank 2
// differs from rank 1 and finds it on host B; rank 1's receiving thread passes the verdict on
// (forward), and host A stops too, with the same two calls. Passing it back changes nothing.
TEST(CallLedger, AVerdictCrossesToTheOtherHost) {
  const uint64_t key = uniqueKey();
  CallLedger ledger[3];
  for (int r = 0; r < 3; ++r) ASSERT_TRUE(ledger[r].create(key, r, core::HostEngine::describeTag).isOk());
  ASSERT_TRUE(ledger[1].attach(2, getpid()).isOk());
  ASSERT_TRUE(ledger[2].attach(1, getpid()).isOk());
  ledger[1].compareWith({2});
  ledger[2].compareWith({1});
  ledger[0].addRemote(1);
  ledger[1].addRemote(0);
  // What rank `from`'s link thread sends, handed to the other's arrived().
  auto deliver = [&](int from) {
    Status first;
    transport::CallTag batch[64];
    size_t n = ledger[from].verdictFor(1 - from, batch) ? 2 : 0;
    n += ledger[from].outgoing(1 - from, batch + n, 64 - n);
    for (size_t i = 0; i < n; ++i) {
      Status s = ledger[1 - from].arrived(from, batch[i]);
      if (first.isOk()) first = s;
    }
    return first;
  };
  ASSERT_TRUE(ledger[0].enter(allReduce(1), false).isOk());
  ASSERT_TRUE(ledger[1].enter(allReduce(1), false).isOk());
  EXPECT_TRUE(deliver(0).isOk());
  EXPECT_TRUE(deliver(1).isOk());
  transport::CallTag half[2];
  EXPECT_FALSE(ledger[0].verdictFor(1, half)) << "no verdict yet";
  Status found = ledger[2].enter(allReduce(1, 1000, braidMax), false);
  ASSERT_EQ(found.code(), Code::kInvalidUsage);
  Status why;
  EXPECT_FALSE(ledger[0].stopped(&why)) << "host A has not heard yet";
  EXPECT_EQ(deliver(1).code(), Code::kInvalidUsage);
  EXPECT_FALSE(ledger[1].verdictFor(0, half)) << "once per link";
  ASSERT_TRUE(ledger[0].stopped(&why));
  EXPECT_EQ(why.message(), found.message()) << "every host reports the same two calls";
  EXPECT_EQ(*ledger[0].abortWord(), 1);
  (void)deliver(0);  // back to host B, which has its verdict already
  ASSERT_TRUE(ledger[1].stopped(&why));
  EXPECT_EQ(why.message(), found.message());
}

// Where the block cannot be shared (here: its name is taken), the rank still gets a block of its
// own: its abort word works and its calls enter, compared with nobody.
TEST(CallLedger, AnUnsharedBlockStillHoldsTheAbortWord) {
  const uint64_t key = uniqueKey();
  CallLedger first, second;
  ASSERT_TRUE(first.create(key, 0, core::HostEngine::describeTag).isOk());
  ASSERT_TRUE(second.create(key, 0, core::HostEngine::describeTag).isOk());
  ASSERT_NE(second.abortWord(), nullptr);
  EXPECT_NE(second.abortWord(), first.abortWord());
  EXPECT_EQ(*second.abortWord(), 0);
  EXPECT_TRUE(second.enter(allReduce(1), false).isOk());
  *const_cast<volatile int*>(second.abortWord()) = 1;
  EXPECT_EQ(*first.abortWord(), 0) << "not the named block";
}

// Collective numbers wrap at 2^32 (0 is skipped: no collective's): the link goes on sending.
TEST(CallLedger, NumbersThatWrapKeepCrossing) {
  TwoHosts h;
  const uint32_t numbers[] = {0xfffffffeu, 0xffffffffu, 1, 2};
  std::vector<transport::CallTag> out(8);
  for (uint32_t n : numbers) {
    ASSERT_TRUE(h.ledger[0].enter(allReduce(n), false).isOk());
    if (n == 0xffffffffu) {
      ASSERT_EQ(h.ledger[0].outgoing(1, out.data(), out.size()), 2u);
    }
  }
  ASSERT_EQ(h.ledger[0].outgoing(1, out.data(), out.size()), 2u) << "past the wrap";
  EXPECT_EQ(out[0].seq, 1u);
  EXPECT_EQ(out[1].seq, 2u);
  EXPECT_TRUE(h.ledger[1].arrived(0, out[0]).isOk());
  EXPECT_TRUE(h.ledger[1].arrived(0, out[1]).isOk());
  EXPECT_TRUE(h.ledger[1].enter(allReduce(1), false).isOk());
  EXPECT_EQ(h.ledger[1].enter(allReduce(2, 5), false).code(), Code::kInvalidUsage) << "still compared";
}

// A name that holds something else is refused, not mapped: an object of another size (mapping
// past its end would fault), or a block of another process (left by an earlier run).
TEST(CallLedger, AForeignObjectUnderThePeersNameIsRefused) {
  const uint64_t key = uniqueKey();
  CallLedger me, stale;
  ASSERT_TRUE(me.create(key, 0, core::HostEngine::describeTag).isOk());
  ASSERT_TRUE(stale.create(key, 1, core::HostEngine::describeTag).isOk());
  Status s = me.attach(1, getpid() + 1);
  EXPECT_EQ(s.code(), Code::kSystemError);
  EXPECT_NE(s.message().find("another process's block"), std::string::npos) << s.message();
  char name[64];
  std::snprintf(name, sizeof(name), "/braid-ledger-%016llx-2", static_cast<unsigned long long>(key));
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  close(fd);
  s = me.attach(2, getpid());
  shm_unlink(name);
  EXPECT_EQ(s.code(), Code::kSystemError);
  EXPECT_NE(s.message().find("not a call ledger"), std::string::npos) << s.message();
  EXPECT_TRUE(me.attach(1, getpid()).isOk()) << "the right process's block is taken";
}

// Two hosts' linked ranks, each running serveLink over a pair of heap FIFOs (what the network's
// proxies move): matched calls pass, a mismatch is found on both, and closing one FIFO ends both
// threads without their stop flag.
TEST(CallLedger, ServedLinksFindAMismatchAndEndWhenTheLinkCloses) {
  TwoHosts h;
  transport::HostFifo zeroToOne(4, 256), oneToZero(4, 256);  // batches of 10 entries, 4 in flight
  std::atomic<bool> stop{false};
  std::atomic<int> ended{0};
  std::thread t0([&] {
    h.ledger[0].serveLink(1, zeroToOne, oneToZero, stop);
    ++ended;
  });
  std::thread t1([&] {
    h.ledger[1].serveLink(0, oneToZero, zeroToOne, stop);
    ++ended;
  });
  constexpr uint32_t kCalls = 200;
  for (uint32_t n = 1; n <= kCalls; ++n) {
    const braidRedOp_t op = n == kCalls ? braidMax : braidSum;
    ASSERT_TRUE(h.ledger[0].enter(allReduce(n), false).isOk());
    (void)h.ledger[1].enter(allReduce(n, 1000, op), false);
    if (n % 8 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the links keep up
  }
  Status why[2];
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!(h.ledger[0].stopped(&why[0]) && h.ledger[1].stopped(&why[1])) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (int r : {0, 1}) {
    EXPECT_NE(why[r].message().find("allreduce #200 (1000 x float32, max)"), std::string::npos)
        << "rank " << r << ": " << why[r].message();
  }
  zeroToOne.close(0, "test");
  while (ended.load() < 2 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(ended.load(), 2) << "a closed FIFO ends both links' threads";
  stop = true;  // (ends them in any case: the test must not hang)
  t0.join();
  t1.join();
}

// A link whose outbox closed before anything was sent, with entries waiting: the thread ends and
// sends nothing into the closed FIFO.
TEST(CallLedger, ALinkWhoseOutboxClosedEnds) {
  TwoHosts h;
  transport::HostFifo out(4, 256), in(4, 256);
  for (uint32_t n = 1; n <= 5; ++n) ASSERT_TRUE(h.ledger[0].enter(allReduce(n), false).isOk());
  out.close(1, "the peer left");
  std::atomic<bool> stop{false};
  h.ledger[0].serveLink(1, out, in, stop);  // returns by itself
  EXPECT_EQ(out.tailCount(), 0u);
}

TEST(CallLedger, ANamelessPeerIsAnErrorAndNamesAreRemoved) {
  const uint64_t key = uniqueKey();
  {
    CallLedger a;
    ASSERT_TRUE(a.create(key, 0, core::HostEngine::describeTag).isOk());
    Status s = a.attach(3, getpid());
    EXPECT_EQ(s.code(), Code::kSystemError);
    EXPECT_NE(s.message().find("rank 3"), std::string::npos) << s.message();
    CallLedger b;
    ASSERT_TRUE(b.create(key, 1, core::HostEngine::describeTag).isOk());
    ASSERT_TRUE(a.attach(1, getpid()).isOk());
    b.unlinkName();
    CallLedger late;
    ASSERT_TRUE(late.create(key, 2, core::HostEngine::describeTag).isOk());
    EXPECT_FALSE(late.attach(1, getpid()).isOk()) << "an unlinked name is not found again";
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
