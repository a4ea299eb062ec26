// Send/recv groups and all-to-all on host memory between thread ranks, checked element by element.
#include <braid/braid.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "exec/p2p_self.h"
#include "thread_ranks.h"

namespace {

using Ranks = braid::test::ThreadRanks;

int64_t value(int from, int to, size_t i) { return int64_t{from} * 1000000 + int64_t{to} * 1000 + int64_t(i); }

class HostP2p : public ::testing::TestWithParam<int> {
 protected:
  static void SetUpTestSuite() { setenv("BRAID_CHUNK_BYTES", "64", 1); }  // many chunks per message
  static void TearDownTestSuite() { unsetenv("BRAID_CHUNK_BYTES"); }
};

TEST_P(HostP2p, RingExchangeInAGroup) {
  const int n = GetParam();
  Ranks ranks(n);
  const size_t count = 1000;
  std::vector<std::vector<int64_t>> got(n, std::vector<int64_t>(count, -1));
  ranks.run([&](int r) {
    int next = (r + 1) % n, prev = (r + n - 1) % n;
    std::vector<int64_t> mine(count);
    for (size_t i = 0; i < count; ++i) mine[i] = value(r, next, i);
    // Receive posted first: the group makes the order irrelevant.
    EXPECT_EQ(braidGroupStart(), braidSuccess);
    EXPECT_EQ(braidRecv(got[r].data(), count, braidInt64, prev, ranks[r], nullptr), braidSuccess);
    EXPECT_EQ(braidSend(mine.data(), count, braidInt64, next, ranks[r], nullptr), braidSuccess);
    EXPECT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
  });
  for (int r = 0; r < n; ++r) {
    int prev = (r + n - 1) % n;
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(got[r][i], value(prev, r, i)) << "rank " << r << " element " << i;
  }
}

TEST_P(HostP2p, AllToAllOutOfPlaceAndInPlace) {
  const int n = GetParam();
  Ranks ranks(n);
  for (bool inPlace : {false, true}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{77}}) {
      std::vector<std::vector<int64_t>> in(n, std::vector<int64_t>(count * n)),
          out(n, std::vector<int64_t>(count * n, -1));
      for (int r = 0; r < n; ++r) {
        for (int q = 0; q < n; ++q) {
          for (size_t i = 0; i < count; ++i) in[r][q * count + i] = value(r, q, i);
        }
      }
      ranks.run([&](int r) {
        int64_t* dst = inPlace ? in[r].data() : out[r].data();
        EXPECT_EQ(braidAllToAll(in[r].data(), dst, count, braidInt64, ranks[r], nullptr), braidSuccess)
            << braidGetLastError();
      });
      for (int r = 0; r < n; ++r) {
        const std::vector<int64_t>& res = inPlace ? in[r] : out[r];
        for (int q = 0; q < n; ++q) {
          for (size_t i = 0; i < count; ++i) {
            ASSERT_EQ(res[q * count + i], value(q, r, i))
                << (inPlace ? "in-place" : "out-of-place") << " count " << count << " rank " << r << " from " << q;
          }
        }
      }
    }
  }
}

// Several messages to one peer (kept in order), to oneself, of different types, in one group.
// Messages between two ranks match in posting order: with one rank (next = prev = self) this
// posting order would pair different sizes, which MismatchedSelfMessagesFailFast covers.
class HostP2pPeers : public HostP2p {};

TEST_P(HostP2pPeers, IrregularGroup) {
  const int n = GetParam();
  Ranks ranks(n);
  std::vector<std::vector<int32_t>> a(n, std::vector<int32_t>(300, -1)), b(n, std::vector<int32_t>(300, -1));
  std::vector<std::vector<double>> self(n, std::vector<double>(50, -1));
  ranks.run([&](int r) {
    int next = (r + 1) % n, prev = (r + n - 1) % n;
    std::vector<int32_t> first(300), second(300);
    std::vector<double> mine(50);
    for (int i = 0; i < 300; ++i) first[i] = r * 10000 + i, second[i] = -(r * 10000 + i);
    for (int i = 0; i < 50; ++i) mine[i] = r + i * 0.5;
    EXPECT_EQ(braidGroupStart(), braidSuccess);
    EXPECT_EQ(braidSend(first.data(), 300, braidInt32, next, ranks[r], nullptr), braidSuccess);
    EXPECT_EQ(braidRecv(self[r].data(), 50, braidFloat64, r, ranks[r], nullptr), braidSuccess);
    EXPECT_EQ(braidRecv(a[r].data(), 300, braidInt32, prev, ranks[r], nullptr), braidSuccess);
    EXPECT_EQ(braidSend(second.data(), 300, braidInt32, next, ranks[r], nullptr), braidSuccess);
    EXPECT_EQ(braidSend(mine.data(), 50, braidFloat64, r, ranks[r], nullptr), braidSuccess);
    EXPECT_EQ(braidRecv(b[r].data(), 300, braidInt32, prev, ranks[r], nullptr), braidSuccess);
    EXPECT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
  });
  for (int r = 0; r < n; ++r) {
    int prev = (r + n - 1) % n;
    for (int i = 0; i < 300; ++i) {
      ASSERT_EQ(a[r][i], prev * 10000 + i);
      ASSERT_EQ(b[r][i], -(prev * 10000 + i));
    }
    for (int i = 0; i < 50; ++i) ASSERT_EQ(self[r][i], r + i * 0.5);
  }
}

// A receive whose size differs from the matching send fails at once instead of waiting forever.
TEST(HostP2pErrors, MismatchedSelfMessagesFailFast) {
  setenv("BRAID_CHUNK_BYTES", "64", 1);
  Ranks ranks(1);
  unsetenv("BRAID_CHUNK_BYTES");
  std::vector<int32_t> big(300, 1), got(300);
  std::vector<double> small(50, 2), gotSmall(50);
  EXPECT_EQ(braidGroupStart(), braidSuccess);
  EXPECT_EQ(braidSend(big.data(), 300, braidInt32, 0, ranks[0], nullptr), braidSuccess);
  EXPECT_EQ(braidSend(small.data(), 50, braidFloat64, 0, ranks[0], nullptr), braidSuccess);
  EXPECT_EQ(braidRecv(gotSmall.data(), 50, braidFloat64, 0, ranks[0], nullptr), braidSuccess);  // matches `big`
  EXPECT_EQ(braidRecv(got.data(), 300, braidInt32, 0, ranks[0], nullptr), braidSuccess);
  EXPECT_EQ(braidGroupEnd(), braidRemoteError);
  EXPECT_NE(std::string(braidGetLastError()).find("different amount of data"), std::string::npos)
      << braidGetLastError();
  // The FIFOs are out of step now: the communicator refuses further calls and says why.
  braidResult_t async = braidSuccess;
  EXPECT_EQ(braidCommGetAsyncError(ranks[0], &async), braidSuccess);
  EXPECT_EQ(async, braidRemoteError);
  EXPECT_EQ(braidSend(big.data(), 1, braidInt32, 0, ranks[0], nullptr), braidRemoteError);
  EXPECT_NE(std::string(braidGetLastError()).find("failed earlier"), std::string::npos) << braidGetLastError();
}

INSTANTIATE_TEST_SUITE_P(Ranks, HostP2p, ::testing::Values(1, 2, 3, 5, 8));
INSTANTIATE_TEST_SUITE_P(Ranks, HostP2pPeers, ::testing::Values(2, 3, 5, 8));

}  // namespace

// Several collectives of one communicator in a group run in the order they were posted, on every
// rank: sizes differ, so any other pairing across ranks gives wrong results (or a mismatch).
TEST(HostGroup, CollectivesOfOneCommunicatorKeepTheirOrder) {
  const int n = 3;
  Ranks ranks(n);
  const size_t counts[] = {1, 1000, 7, 4099, 64};
  constexpr int kCalls = 5;
  std::vector<std::vector<std::vector<int64_t>>> out(n);
  for (int round = 0; round < 20; ++round) {
    ranks.run([&](int r) {
      std::vector<std::vector<int64_t>> in(kCalls);
      out[r].assign(kCalls, {});
      EXPECT_EQ(braidGroupStart(), braidSuccess);
      for (int k = 0; k < kCalls; ++k) {
        in[k].assign(counts[k], 0);
        out[r][k].assign(counts[k], -1);
        for (size_t i = 0; i < counts[k]; ++i) in[k][i] = value(r, k, i);
        EXPECT_EQ(braidAllReduce(in[k].data(), out[r][k].data(), counts[k], braidInt64, braidSum, ranks[r], nullptr),
                  braidSuccess);
      }
      EXPECT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
    });
    for (int r = 0; r < n; ++r) {
      for (int k = 0; k < kCalls; ++k) {
        for (size_t i = 0; i < counts[k]; ++i) {
          int64_t want = 0;
          for (int q = 0; q < n; ++q) want += value(q, k, i);
          ASSERT_EQ(out[r][k][i], want) << "round " << round << " rank " << r << " call " << k << " element " << i;
        }
      }
    }
  }
}

// A call that fails inside a group cancels the group: braidGroupEnd issues none of its calls and
// returns the failure, and the next group starts clean (the call held before the failure was not
// issued, or the later all-reduce would pair with it).
TEST(HostGroup, AFailedCallCancelsTheGroup) {
  const int n = 2;
  Ranks ranks(n);
  std::vector<std::vector<int64_t>> out(n, std::vector<int64_t>(100, -1));
  ranks.run([&](int r) {
    std::vector<int64_t> in(100, r + 1), held(100, -1);
    EXPECT_EQ(braidGroupStart(), braidSuccess);
    EXPECT_EQ(braidAllReduce(in.data(), held.data(), 100, braidInt64, braidSum, ranks[r], nullptr), braidSuccess);
    EXPECT_NE(braidAllReduce(nullptr, held.data(), 100, braidInt64, braidSum, ranks[r], nullptr), braidSuccess);
    EXPECT_NE(braidGroupEnd(), braidSuccess);
    EXPECT_NE(std::string(braidGetLastError()).find("none of its calls was issued"), std::string::npos)
        << braidGetLastError();
    EXPECT_EQ(held[0], -1);  // not issued
    EXPECT_EQ(braidAllReduce(in.data(), out[r].data(), 100, braidInt64, braidMax, ranks[r], nullptr), braidSuccess)
        << braidGetLastError();
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(out[r][0], n) << "rank " << r;
}

// GPU groups copy a rank's messages to itself instead of sending them through its own FIFO: the k-th
// send to itself pairs with the k-th receive from itself, and the other messages stay in order.
TEST(P2pSelfCopies, PairInPostingOrderAndLeaveThePeersMessages) {
  using braid::algo::P2pOp;
  std::vector<P2pOp> sends = {{1, 0, 8}, {2, 8, 100}, {1, 108, 4}, {2, 112, 50}};
  std::vector<P2pOp> recvs = {{2, 0, 100}, {0, 100, 7}, {2, 107, 50}};
  std::vector<braid::exec::SelfCopy> copies;
  ASSERT_TRUE(braid::exec::takeSelfCopies(2, &sends, &recvs, &copies).isOk());
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0].from, 8u);
  EXPECT_EQ(copies[0].to, 0u);
  EXPECT_EQ(copies[0].bytes, 100u);
  EXPECT_EQ(copies[1].from, 112u);
  EXPECT_EQ(copies[1].to, 107u);
  EXPECT_EQ(copies[1].bytes, 50u);
  ASSERT_EQ(sends.size(), 2u);
  EXPECT_EQ(sends[1].offset, 108u);
  ASSERT_EQ(recvs.size(), 1u);
  EXPECT_EQ(recvs[0].peer, 0);
}

TEST(P2pSelfCopies, SizesOrCountsThatDoNotPairAreErrors) {
  using braid::algo::P2pOp;
  std::vector<braid::exec::SelfCopy> copies;
  std::vector<P2pOp> sends = {{0, 0, 8}}, recvs = {{0, 0, 16}};
  braid::Status s = braid::exec::takeSelfCopies(0, &sends, &recvs, &copies);
  EXPECT_EQ(s.code(), braid::Code::kInvalidUsage);
  EXPECT_NE(s.message().find("8 bytes sent but 16 received"), std::string::npos) << s.message();
  sends = {{0, 0, 8}, {0, 8, 8}};
  recvs = {{0, 0, 8}};
  s = braid::exec::takeSelfCopies(0, &sends, &recvs, &copies);
  EXPECT_NE(s.message().find("sends 2 message(s) to itself in this group but receives 1"), std::string::npos)
      << s.message();
}
