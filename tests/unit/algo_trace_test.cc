// Trace: sequential steps and link loads of each algorithm, the numbers the cost model uses.
#include <gtest/gtest.h>

#include "algo/collectives.h"
#include "algo/geometry.h"
#include "algo/recorder.h"
#include "algo/trace.h"

namespace braid::algo {
namespace {

TEST(Trace, RingAllReduceTakesTwoNMinusOneSteps) {
  for (int n : {2, 3, 5, 8, 13, 64}) {
    TraceResult t =
        traceCollective(defaultGeometry(n), CallShape{Coll::kAllReduce, Algo::kRing, size_t(n) * 4, 0, 1, 4, false}, 8);
    ASSERT_TRUE(t.ok) << t.error;
    EXPECT_EQ(t.steps, 2 * (n - 1)) << "n=" << n;
    // Each rank sends 2(n-1)/n of the data to its next rank, and only there.
    EXPECT_EQ(t.maxLinkElems, size_t(2 * (n - 1) * 4)) << "n=" << n;
    EXPECT_EQ(t.links.elems.size(), size_t(n));
  }
}

TEST(Trace, TreeAllReduceTakesTwiceTheDepth) {
  for (int n : {2, 3, 5, 8, 13, 64}) {
    for (Algo a : {Algo::kTree, Algo::kDoubleTree}) {
      TraceResult t = traceCollective(defaultGeometry(n), CallShape{Coll::kAllReduce, a, 64, 0, 1, 4, false}, 8);
      ASSERT_TRUE(t.ok) << t.error;
      EXPECT_EQ(t.steps, 2 * floorLog2(n)) << algoName(a) << " n=" << n;
    }
  }
}

// The fold of the extra ranks overlaps the first exchange of the ranks that take none, and the
// unfold is one more hop: log2(P) + 1 for these n (n = 7 takes +2; tune_test checks every n).
TEST(Trace, DoublingTakesLog2StepsPlusOneOffPowersOfTwo) {
  for (int n : {2, 3, 4, 5, 8, 12, 16, 64}) {
    TraceResult t =
        traceCollective(defaultGeometry(n), CallShape{Coll::kAllReduce, Algo::kDoubling, 64, 0, 1, 64, false}, 8);
    ASSERT_TRUE(t.ok) << t.error;
    int p = 1, log2p = 0;
    while (p * 2 <= n) p *= 2, ++log2p;
    EXPECT_EQ(t.steps, log2p + (p == n ? 0 : 1)) << "n=" << n;
    // The whole buffer every step: a rank sends 64 elements per exchange (and once more to unfold).
    EXPECT_EQ(t.maxRankSendElems, size_t(64) * (log2p + (p == n ? 0 : 1))) << "n=" << n;
  }
}

TEST(Trace, SixtyFourRanksRingVersusTree) {
  Geometry g = defaultGeometry(64);
  TraceResult ring = traceCollective(g, CallShape{Coll::kAllReduce, Algo::kRing, 64 * 8, 0, 1, 8, false}, 8);
  TraceResult tree = traceCollective(g, CallShape{Coll::kAllReduce, Algo::kTree, 64 * 8, 0, 1, 8, false}, 8);
  ASSERT_TRUE(ring.ok && tree.ok);
  EXPECT_EQ(ring.steps, 126);
  EXPECT_EQ(tree.steps, 12);
  // The price of the tree: an interior rank sends the whole message up and to each of two children
  // (3x), a ring rank 2(n-1)/n of it. Per link the tree is lighter (1x against 2(n-1)/n).
  EXPECT_EQ(tree.maxRankSendElems, 3u * 512);
  EXPECT_EQ(ring.maxRankSendElems, 2u * 63 * 8);
  EXPECT_EQ(tree.maxLinkElems, 512u);
  EXPECT_EQ(ring.maxLinkElems, 2u * 63 * 8);
}

TEST(Trace, DoubleTreeHalvesTheBusiestLink) {
  Geometry g = defaultGeometry(16);
  TraceResult tree = traceCollective(g, CallShape{Coll::kAllReduce, Algo::kTree, 1024, 0, 1, 32, false}, 8);
  TraceResult dbt = traceCollective(g, CallShape{Coll::kAllReduce, Algo::kDoubleTree, 1024, 0, 1, 32, false}, 8);
  ASSERT_TRUE(tree.ok && dbt.ok);
  // One tree: an interior rank sends everything up and to both children. Two trees on halves: an
  // interior rank of one tree (1.5x) is a leaf of the other (0.5x).
  EXPECT_EQ(tree.maxRankSendElems, 3u * 1024);
  EXPECT_EQ(dbt.maxRankSendElems, 2u * 1024);
}

TEST(Trace, ChainsAndGathers) {
  const int n = 6;
  Geometry g = defaultGeometry(n);
  TraceResult b = traceCollective(g, CallShape{Coll::kBroadcast, Algo::kRing, 60, 2, 1, 10, false}, 8);
  TraceResult ag = traceCollective(g, CallShape{Coll::kAllGather, Algo::kRing, 10, 0, 1, 10, false}, 8);
  TraceResult rs = traceCollective(g, CallShape{Coll::kReduceScatter, Algo::kRing, 10, 0, 1, 10, false}, 8);
  ASSERT_TRUE(b.ok && ag.ok && rs.ok);
  EXPECT_EQ(b.steps, n - 1);
  EXPECT_EQ(ag.steps, n - 1);
  EXPECT_EQ(rs.steps, n - 1);
  EXPECT_EQ(b.links.elems.size(), size_t(n - 1));  // the chain does not close the ring
  EXPECT_EQ(ag.maxLinkElems, size_t((n - 1) * 10));
}

}  // namespace
}  // namespace braid::algo

namespace braid::algo {
namespace {

// Every part an operation touches starts at a multiple of kAlignElems within its rank's block, for
// every collective, algorithm, rank count, channel count and count: GPU kernels then move aligned
// buffers in 16-byte vectors (unaligned channels once ran element by element at a tenth of the speed).
TEST(Trace, OperationsStartAtAlignedElements) {
  struct Which {
    Coll coll;
    Algo algo;
  };
  const Which all[] = {{Coll::kAllReduce, Algo::kRing},       {Coll::kAllReduce, Algo::kTree},
                       {Coll::kAllReduce, Algo::kDoubleTree}, {Coll::kAllReduce, Algo::kDoubling},
                       {Coll::kBroadcast, Algo::kRing},       {Coll::kReduce, Algo::kRing},
                       {Coll::kAllGather, Algo::kRing},       {Coll::kReduceScatter, Algo::kRing}};
  for (const Which& w : all) {
    for (int n : {2, 3, 5, 8}) {
      Geometry g = defaultGeometry(n);
      for (size_t count : {size_t{100}, size_t{70001}, size_t{1000003}}) {
        for (int channels : {1, 3, 11, 30}) {
          CallShape shape{w.coll, w.algo, count, n - 1, channels, 32768, false};
          for (int rank = 0; rank < n; ++rank) {
            for (int c = 0; c < channels; ++c) {
              Recorder rec;
              WorkArgs args = workFor(g, rank, c, shape);
              for (int lane = 0; lane < numLanes(w.algo); ++lane) runLane(rec, w.coll, w.algo, args, lane);
              for (const Op& op : rec.ops) {
                if (op.n == 0) continue;
                const bool in = op.readsInput(), out = op.writesOutput() || op.readsOutput();
                EXPECT_TRUE(!in || op.in % count % kAlignElems == 0)
                    << collName(w.coll) << "/" << algoName(w.algo) << " n=" << n << " count=" << count
                    << " channels=" << channels << " rank " << rank << ": input offset " << op.in;
                EXPECT_TRUE(!out || op.out % count % kAlignElems == 0)
                    << collName(w.coll) << "/" << algoName(w.algo) << " n=" << n << " count=" << count
                    << " channels=" << channels << " rank " << rank << ": output offset " << op.out;
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace braid::algo
