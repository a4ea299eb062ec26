// Symbolic proof of every algorithm: for 1..64 ranks, 1..4 channels, several chunk counts, every
// root, with and without the avg post-operation, on the smallest FIFO depth that can work (2) and on
// the default (8). A wrong offset, a lost or doubled contribution, a missing post-op, an element
// never written or an order that cannot finish all fail here with the rank and element.
#include <gtest/gtest.h>

#include "algo/symbolic.h"

namespace braid::algo {
namespace {

struct Case {
  Coll coll;
  Algo algo;
};

const Case kCases[] = {
    {Coll::kAllReduce, Algo::kRing},     {Coll::kAllReduce, Algo::kTree},     {Coll::kAllReduce, Algo::kDoubleTree},
    {Coll::kBroadcast, Algo::kRing},     {Coll::kReduce, Algo::kRing},        {Coll::kAllGather, Algo::kRing},
    {Coll::kReduceScatter, Algo::kRing}, {Coll::kAllReduce, Algo::kDoubling},
};

// Element counts that give empty, partial, one-chunk and multi-chunk channels. Ring all-reduce cuts
// a channel into rounds of n blocks, so its counts scale with n (one round short of full, and two
// rounds plus a ragged third); the others cut a channel into chunks directly.
std::vector<size_t> countsFor(Coll coll, Algo algo, int n, int channels, size_t chunk) {
  size_t perChannelChunk = chunk * static_cast<size_t>(channels);
  if (coll == Coll::kAllReduce && algo == Algo::kRing)
    return {0, 1, perChannelChunk * n - 1, 2 * perChannelChunk * n + 3};
  return {0, 1, perChannelChunk - 1, 3 * perChannelChunk + 2};
}

bool reduces(Coll c) { return c != Coll::kBroadcast && c != Coll::kAllGather; }

std::string describe(const CallShape& c, int n, int slots) {
  return std::string(collName(c.coll)) + "/" + algoName(c.algo) + " n=" + std::to_string(n) +
         " channels=" + std::to_string(c.nChannels) + " chunk=" + std::to_string(c.chunkElems) +
         " count=" + std::to_string(c.count) + " root=" + std::to_string(c.root) + " post=" + std::to_string(c.postOp) +
         " slots=" + std::to_string(slots);
}

class SymbolicProof : public ::testing::TestWithParam<int> {};

// Up to 16 ranks: every combination. Above, where a call costs O(n^2) operations: every algorithm
// on every channel count with a multi-round count, plus the small counts (so the whole sweep stays
// well under a minute on two cores).
TEST_P(SymbolicProof, EveryAlgorithmChannelsChunksRoots) {
  const int n = GetParam();
  const bool full = n <= 16;
  Geometry g = defaultGeometry(n);
  for (int channels = 1; channels <= 4; ++channels) {
    for (size_t chunk : {size_t{1}, size_t{3}}) {
      if (!full && chunk == 1) continue;
      for (const Case& c : kCases) {
        for (size_t count : countsFor(c.coll, c.algo, n, channels, chunk)) {
          for (bool post : {false, true}) {
            if (post != reduces(c.coll) && (!full || post)) continue;
            for (int root : {0, n - 1, n / 2}) {
              bool rooted = c.coll == Coll::kBroadcast || c.coll == Coll::kReduce;
              if (root != (rooted && !full ? n / 2 : 0) && (!rooted || !full)) continue;
              CallShape call{c.coll, c.algo, count, root, channels, chunk, post};
              // The smallest depth that can work (2) everywhere; the default (8) on one channel.
              for (int slots : {2, 8}) {
                if (slots == 8 && (channels > 1 || !full)) continue;
                ProofResult r = proveCollective(g, call, slots);
                ASSERT_TRUE(r.ok) << describe(call, n, slots) << ": " << r.error;
              }
            }
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks1To64, SymbolicProof, ::testing::Range(1, 65));

// A shuffled ring (as topology search produces) changes nothing about correctness.
TEST(SymbolicProofRing, PermutedRingOrder) {
  Geometry g = makeGeometry({3, 0, 6, 1, 5, 2, 4});
  for (const Case& c : kCases) {
    CallShape call{c.coll, c.algo, 100, 5, 2, 4, true};
    ProofResult r = proveCollective(g, call, 2);
    EXPECT_TRUE(r.ok) << collName(c.coll) << "/" << algoName(c.algo) << ": " << r.error;
  }
}

TEST(SymbolicProofP2p, AllToAllAndIrregularGroups) {
  for (int n : {1, 2, 3, 5, 8, 13}) {
    for (int channels : {1, 3}) {
      ProofResult r = proveP2p(allToAllMessages(n, 10), channels, 3, 2);
      ASSERT_TRUE(r.ok) << "all-to-all n=" << n << ": " << r.error;
    }
  }
  // Irregular: rank r sends 7 elements to r+1 and 3 to r+2, twice to the same peer, and to itself.
  const int n = 6;
  std::vector<P2pRank> ranks(n);
  for (int r = 0; r < n; ++r) {
    ranks[r].inputElems = 40;
    ranks[r].outputElems = 40;
    ranks[r].sends = {{(r + 2) % n, 0, 3}, {(r + 1) % n, 10, 7}, {(r + 1) % n, 20, 5}, {r, 30, 4}};
    ranks[r].recvs = {{(r + n - 1) % n, 5, 7}, {r, 0, 4}, {(r + n - 2) % n, 12, 3}, {(r + n - 1) % n, 20, 5}};
  }
  ProofResult r = proveP2p(ranks, 2, 2, 2);
  EXPECT_TRUE(r.ok) << r.error;
  // A receive that no send matches is reported, not waited for.
  ranks[0].recvs.push_back({3, 35, 1});
  r = proveP2p(ranks, 1, 2, 2);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("rank 0"), std::string::npos) << r.error;
}

// The proof can fail: a ring with one FIFO slot cannot finish (every rank holds a full outgoing
// slot and waits for room), and the report names the stuck ranks and steps.
TEST(SymbolicProofFailures, OneSlotRingDeadlockIsReported) {
  Geometry g = defaultGeometry(4);
  ProofResult r = proveCollective(g, CallShape{Coll::kAllReduce, Algo::kRing, 64, 0, 1, 4, false}, 1);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("no program can progress with 1 FIFO slot"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("rank 3 channel 0 lane 0 step 1 (recvReduceSend)"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace braid::algo
