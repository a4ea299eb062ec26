// The algorithm table (algo/algorithm_table.def) against what it generates: every algorithm has a
// name of its own that the tuner's parser takes back, and its lane count; every row is a template
// that the proofs accept (2 hosts x 2 ranks, every root), has a cost entry (a finite, positive
// prediction across hosts), and is what supports() and runLane() answer for its collective; a
// collective an algorithm lacks runs its ring. (That every row has a kernel per protocol is the
// CUDA build's: device/kernels.cuh names each row's compilation unit, and a row without one does
// not compile.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "algo/connections.h"
#include "algo/recorder.h"
#include "algo/symbolic.h"
#include "tune/cost.h"

namespace braid::algo {
namespace {

struct Row {
  Coll coll;
  Algo algo;
  const char* kernel;
};

const Row kRows[] = {
#define BRAID_IMPL(c, a, kind, kernel, call) {Coll::c, Algo::a, #kernel},
#include "algo/algorithm_table.def"
};

TEST(AlgorithmTable, EveryAlgorithmHasItsOwnNameAndLanes) {
  std::set<std::string> names;
  for (int a = 0; a < static_cast<int>(Algo::kNumAlgos); ++a) {
    const std::string name = algoName(static_cast<Algo>(a));
    EXPECT_NE(name, "?") << "algorithm " << a;
    EXPECT_TRUE(names.insert(name).second) << name << " twice";
    EXPECT_GE(numLanes(static_cast<Algo>(a)), 1);
  }
  EXPECT_EQ(numLanes(Algo::kTree), 2);
  EXPECT_EQ(numLanes(Algo::kDoubleTree), 4);
}

TEST(AlgorithmTable, EveryRowIsProvenCostedAndDispatched) {
  const Geometry g = makeGeometry({0, 1, 2, 3}, {0, 0, 1, 1});
  const tune::Machine m = tune::hostMachine(4, 2, false);
  std::set<std::string> kernels;
  for (const Row& row : kRows) {
    SCOPED_TRACE(std::string(collName(row.coll)) + " by " + algoName(row.algo));
    EXPECT_TRUE(kernels.insert(row.kernel).second) << row.kernel << " twice";
    EXPECT_TRUE(supports(row.coll, row.algo));
    for (int root : {0, 1, 2, 3}) {
      const bool rooted = row.coll == Coll::kBroadcast || row.coll == Coll::kReduce;
      if (!rooted && root != 0) continue;
      ProofResult r = proveCollective(g, CallShape{row.coll, row.algo, 1000, root, 2, 64, false}, 2);
      EXPECT_TRUE(r.ok) << "root " << root << ": " << r.error;
    }
    tune::Prediction p = tune::predict(m, row.coll, row.algo, tune::Proto::kSimple, 1 << 20, 1);
    EXPECT_TRUE(std::isfinite(p.us) && p.us > 0) << p.us;
  }
  // Every collective has its ring row, and only the one-shot answers for rows it does not have.
  for (int c = 0; c < static_cast<int>(Coll::kNumColls); ++c) {
    const auto coll = static_cast<Coll>(c);
    EXPECT_TRUE(supports(coll, Algo::kRing)) << collName(coll);
    EXPECT_TRUE(supports(coll, Algo::kOneShot)) << collName(coll);
    for (int a = 0; a < static_cast<int>(Algo::kNumAlgos); ++a) {
      const auto alg = static_cast<Algo>(a);
      bool row = false;
      for (const Row& r : kRows) row = row || (r.coll == coll && r.algo == alg);
      if (alg != Algo::kOneShot) {
        EXPECT_EQ(supports(coll, alg), row) << collName(coll) << " by " << algoName(alg);
      }
    }
  }
}

// Each row's scope, and the FIFO algorithms an engine lays out from it: the one-shot opens no FIFO
// connection; the hierarchical algorithms and the cross-host tree only where
// the geometry has hosts.
TEST(AlgorithmTable, ScopesDecideWhichFifosAnEngineLaysOut) {
  const Geometry oneHost = makeGeometry({0, 1, 2, 3}), twoHosts = makeGeometry({0, 1, 2, 3}, {0, 0, 1, 1});
  EXPECT_EQ(scopeOf(Algo::kOneShot), AlgoScope::kWithoutFifos);
  EXPECT_EQ(scopeOf(Algo::kHier), AlgoScope::kAcrossHosts);
  EXPECT_EQ(scopeOf(Algo::kCrossTree), AlgoScope::kAcrossHosts);
  EXPECT_EQ(scopeOf(Algo::kRing), AlgoScope::kAnywhere);
  const std::vector<Algo> one = fifoAlgorithms(oneHost), two = fifoAlgorithms(twoHosts);
  for (int i = 0; i < static_cast<int>(Algo::kNumAlgos); ++i) {
    const auto a = static_cast<Algo>(i);
    const bool inOne = std::find(one.begin(), one.end(), a) != one.end();
    const bool inTwo = std::find(two.begin(), two.end(), a) != two.end();
    EXPECT_EQ(inOne, scopeOf(a) == AlgoScope::kAnywhere) << algoName(a);
    EXPECT_EQ(inTwo, scopeOf(a) != AlgoScope::kWithoutFifos) << algoName(a);
  }
  // What the engines connect follows: the one-shot's rows add no peers.
  EXPECT_TRUE(algorithmPeers(twoHosts, 1, {Algo::kOneShot})[kConnRing].empty());
}

// runLane of a collective the algorithm lacks records exactly what its ring records.
TEST(AlgorithmTable, ACollectiveAnAlgorithmLacksRunsAsItsRing) {
  const Geometry g = makeGeometry({0, 1, 2, 3}, {0, 0, 1, 1});
  for (Algo alg : {Algo::kTree, Algo::kDoubling, Algo::kOneShot}) {
    const WorkArgs w = workFor(g, 1, 0, CallShape{Coll::kReduceScatter, alg, 100, 0, 1, 16, false});
    Recorder a, b;
    runLane(a, Coll::kReduceScatter, alg, w, 0);
    runLane(b, Coll::kReduceScatter, Algo::kRing, w, 0);
    ASSERT_EQ(a.ops.size(), b.ops.size()) << algoName(alg);
    for (size_t i = 0; i < a.ops.size(); ++i) {
      EXPECT_EQ(a.ops[i].kind, b.ops[i].kind);
      EXPECT_EQ(a.ops[i].conn, b.ops[i].conn);
    }
  }
}

}  // namespace
}  // namespace braid::algo
