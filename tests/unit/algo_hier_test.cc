// The hierarchical collectives (algo/hier.h: all-reduce, all-gather, broadcast, reduce) and the
// cross-host tree's all-reduce (tree_builder.h's buildCrossHostTree under tree.h), proven
// symbolically on levelled geometries: 1..8 hosts x 1..8 ranks per host, uneven hosts, hosts
// interleaved in rank order and shuffled rings, every channel count to 3, chunk sizes, counts from
// empty to several rounds, with and without avg, on the smallest FIFO depth (2) and the default
// (8); their traces' sequential steps against the cost model's; and the geometry's levels. Above
// 16 ranks a sample: 1 and 3 channels, chunk 3, counts 0, a round less one and one per rank and 3
// (the 8 x 8 grid in full took 42 s of the unit tier, 246 s under AddressSanitizer).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "algo/symbolic.h"
#include "algo/trace.h"
#include "tune/cost.h"

namespace braid::algo {
namespace {

// Ranks 0..n-1 on hosts of the given sizes, host after host in rank order.
std::vector<int> hostsOfSizes(const std::vector<int>& sizes) {
  std::vector<int> hostOf;
  for (size_t h = 0; h < sizes.size(); ++h) hostOf.insert(hostOf.end(), sizes[h], static_cast<int>(h));
  return hostOf;
}

Geometry levelled(const std::vector<int>& hostOf) {
  std::vector<int> order(hostOf.size());
  for (size_t r = 0; r < order.size(); ++r) order[r] = static_cast<int>(r);
  return makeGeometry(order, hostOf);
}

std::string sizesText(const std::vector<int>& sizes) {
  std::string s;
  for (int k : sizes) s += (s.empty() ? "" : "+") + std::to_string(k);
  return s;
}

void proveAll(const Geometry& g, const std::string& what, bool full, Algo algo = Algo::kHier) {
  const int n = static_cast<int>(g.ringOrder.size());
  for (Coll coll : {Coll::kAllReduce, Coll::kAllGather, Coll::kBroadcast, Coll::kReduce, Coll::kReduceScatter}) {
    if (!supports(coll, algo)) continue;
    const bool rooted = coll == Coll::kBroadcast || coll == Coll::kReduce;
    for (int root : {0, n - 1, n / 2}) {
      if (!rooted && root != 0) continue;
      if (rooted && !full && root == n / 2) continue;
      for (int channels = 1; channels <= 3; ++channels) {
        if (!full && channels == 2) continue;
        for (size_t chunk : {size_t{1}, size_t{3}}) {
          if (!full && chunk == 1) continue;
          const size_t round = chunk * static_cast<size_t>(channels) * g.mostOnAHost;
          const std::vector<size_t> counts =
              full ? std::vector<size_t>{0, 1, round - 1, 2 * round + 5, size_t(n) * 7 + 3}
                   : std::vector<size_t>{0, round - 1, size_t(n) + 3};
          for (size_t count : counts) {
            for (bool post : {false, true}) {
              if (post && coll != Coll::kAllReduce && coll != Coll::kReduce && coll != Coll::kReduceScatter) continue;
              for (int slots : {2, 8}) {
                if (slots == 8 && (channels > 1 || !full)) continue;
                CallShape call{coll, algo, count, root, channels, chunk, post};
                ProofResult r = proveCollective(g, call, slots);
                ASSERT_TRUE(r.ok) << algoName(algo) << " " << collName(coll) << " " << what << " root=" << root
                                  << " channels=" << channels << " chunk=" << chunk << " count=" << count
                                  << " post=" << post << " slots=" << slots << ": " << r.error;
              }
            }
          }
        }
      }
    }
  }
}

const std::vector<std::vector<int>> kUnevenMixes = {{2, 1},    {1, 2},       {2, 1, 2},    {3, 1},       {1, 3, 2},
                                                    {4, 1, 1}, {1, 1, 1, 5}, {3, 2, 1, 2}, {5, 3},       {2, 2, 2, 1},
                                                    {7, 1},    {1, 8, 1},    {3, 3, 2},    {8, 7, 6, 5}, {2, 4, 8}};

// The levelled algorithms: the hierarchical ones and the cross-host tree.
class LevelledProof : public ::testing::TestWithParam<Algo> {};

TEST_P(LevelledProof, EvenHostsOneToEightByOneToEight) {
  for (int hosts = 1; hosts <= 8; ++hosts) {
    for (int perHost = 1; perHost <= 8; ++perHost) {
      std::vector<int> sizes(hosts, perHost);
      proveAll(levelled(hostsOfSizes(sizes)), sizesText(sizes), hosts * perHost <= 16, GetParam());
    }
  }
}

TEST_P(LevelledProof, UnevenHosts) {
  for (const auto& sizes : kUnevenMixes) proveAll(levelled(hostsOfSizes(sizes)), sizesText(sizes), true, GetParam());
}

// Hosts interleaved in rank order (rank r on host r % N) under a shuffled ring: the levels follow
// the ring, not the ranks.
TEST_P(LevelledProof, InterleavedHostsAndShuffledRings) {
  std::mt19937 rng(11);
  for (int n : {4, 6, 7, 12}) {
    for (int hosts : {2, 3}) {
      std::vector<int> hostOf(n), order(n);
      for (int r = 0; r < n; ++r) hostOf[r] = r % hosts, order[r] = r;
      std::shuffle(order.begin(), order.end(), rng);
      proveAll(makeGeometry(order, hostOf), std::to_string(n) + " ranks interleaved on " + std::to_string(hosts), true,
               GetParam());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Algos, LevelledProof, ::testing::Values(Algo::kHier, Algo::kCrossTree),
                         [](const ::testing::TestParamInfo<Algo>& p) { return std::string(algoName(p.param)); });

// The cross-host trees: no rank with more than two children, each host's ranks a chain (tree 1 the
// other way), one edge into every host but the root's, between heads or into a chain's second rank;
// even and uneven hosts.
TEST(CrossTree, ChainsJoinedByTheTreeOverHosts) {
  std::vector<std::vector<int>> mixes = kUnevenMixes;
  for (int hosts = 1; hosts <= 9; ++hosts) mixes.push_back(std::vector<int>(hosts, 4));
  for (const auto& sizes : mixes) {
    const Geometry g = levelled(hostsOfSizes(sizes));
    const int n = static_cast<int>(g.ringOrder.size()), hosts = static_cast<int>(sizes.size());
    for (int t = 0; t < 2; ++t) {
      const PositionTree& tree = g.crossTrees[t];
      const PositionTree over = buildDoubleTree(hosts, t);
      SCOPED_TRACE(sizesText(sizes) + " tree " + std::to_string(t));
      int roots = 0;
      std::vector<int> into(hosts, 0);
      for (int x = 0; x < n; ++x) {
        EXPECT_LE(tree.children[x].size(), size_t{2});
        const int p = tree.parent[x];
        if (p < 0) {
          ++roots;
          continue;
        }
        const int hx = g.hostOf[x], hp = g.hostOf[p];
        const int k = sizes[hx], lx = g.localOf[x], lp = g.localOf[p];
        if (hx == hp) {  // the chain: tree 0 from local 0 up, tree 1 from the last down
          EXPECT_EQ(lx, t == 0 ? lp + 1 : lp - 1) << "rank " << x;
          continue;
        }
        ++into[hx];
        EXPECT_EQ(over.parent[hx], hp) << "rank " << x;                  // the tree over hosts
        EXPECT_EQ(lx, t == 0 ? 0 : k - 1) << "rank " << x;               // a head hangs from
        const int kp = sizes[hp], fromHead = t == 0 ? lp : kp - 1 - lp;  // its parent's head or second
        EXPECT_TRUE(fromHead == 0 || (fromHead == 1 && over.children[hp].size() == 2 && over.children[hp][1] == hx))
            << "rank " << x;
      }
      EXPECT_EQ(roots, 1);
      for (int h = 0; h < hosts; ++h) EXPECT_EQ(into[h], over.parent[h] >= 0 ? 1 : 0) << "host " << h;
    }
  }
}

TEST(HierGeometry, LevelsFollowTheRing) {
  // Ring 3 0 2 1 4; hosts: 0 and 2 on "7", 1 and 3 on "5", 4 on "9".
  Geometry g = makeGeometry({3, 0, 2, 1, 4}, {7, 5, 7, 5, 9});
  EXPECT_EQ(g.hostRanks, (std::vector<int>{3, 1, 0, 2, 4}));  // host 0 (label 5, reached first), 1, 2
  EXPECT_EQ(g.hostStart, (std::vector<int>{0, 2, 4, 5}));
  EXPECT_EQ(g.hostOf, (std::vector<int>{1, 0, 1, 0, 2}));
  EXPECT_EQ(g.localOf, (std::vector<int>{0, 1, 1, 0, 0}));
  EXPECT_EQ(g.mostOnAHost, 2);
  WorkArgs w = workFor(g, 4, 0, CallShape{});
  EXPECT_EQ(w.hosts.n, 3);
  EXPECT_EQ(w.hosts.host, 2);
  EXPECT_EQ(w.hosts.at(2, 1), 4);  // a host of one rank takes part in every rail with it
  EXPECT_EQ(w.hosts.at(0, 1), 1);
}

// The cross-host tree's all-reduce: twice the deeper tree's depth, as the cost model says; and what
// leaves the busiest host, as the model counts it, against the trace's bytes between hosts.
TEST(CrossTreeTrace, StepsMatchTheCostModel) {
  for (int hosts = 2; hosts <= 9; ++hosts) {
    for (int perHost = 1; perHost <= 6; ++perHost) {
      Geometry g = levelled(hostsOfSizes(std::vector<int>(hosts, perHost)));
      const size_t count = static_cast<size_t>(perHost) * hosts * kAlignElems;
      TraceResult t = traceCollective(g, CallShape{Coll::kAllReduce, Algo::kCrossTree, count, 0, 1, count, false}, 8);
      ASSERT_TRUE(t.ok) << t.error;
      EXPECT_EQ(t.steps, tune::crossTreeSteps(hosts, perHost)) << hosts << " x " << perHost;
      EXPECT_LE(t.steps, 2 * ((perHost - 1) + 2 * floorLog2(hosts) + 1)) << hosts << " x " << perHost;
    }
  }
}

// What the busiest host sends to other hosts, per element of an all-reduce, as the traces count it
// against the cost model's hostLinkFactor: the flat ring, the flat and cross-host double trees, the
// hierarchical all-reduce.
TEST(LevelledTrace, BytesBetweenHostsMatchTheCostModel) {
  for (int hosts = 2; hosts <= 6; ++hosts) {
    for (int perHost = 1; perHost <= 4; ++perHost) {
      Geometry g = levelled(hostsOfSizes(std::vector<int>(hosts, perHost)));
      const int n = hosts * perHost;
      // A count each part divides evenly: ring blocks, hierarchical shards of rails, tree halves.
      const size_t count = static_cast<size_t>(n) * perHost * hosts * kAlignElems * 4;
      tune::Machine m = tune::hostMachine(n, hosts, false);
      for (Algo a : {Algo::kRing, Algo::kDoubleTree, Algo::kCrossTree, Algo::kHier}) {
        TraceResult t = traceCollective(g, CallShape{Coll::kAllReduce, a, count, 0, 1, count, false}, 8);
        ASSERT_TRUE(t.ok) << t.error;
        std::vector<size_t> out(hosts, 0);
        for (const auto& kv : t.links.elems) {
          if (g.hostOf[kv.first.first] != g.hostOf[kv.first.second]) out[g.hostOf[kv.first.first]] += kv.second;
        }
        const double traced = static_cast<double>(*std::max_element(out.begin(), out.end())) / count;
        EXPECT_NEAR(traced, tune::hostLinkFactor(m, Coll::kAllReduce, a), 1e-9)
            << algoName(a) << " on " << hosts << " x " << perHost;
      }
    }
  }
}

// Sequential steps of one chunk: 2(k-1) inside hosts and 2(N-1) across, as the cost model says.
TEST(HierTrace, StepsMatchTheCostModel) {
  for (int hosts = 1; hosts <= 6; ++hosts) {
    for (int perHost = 1; perHost <= 6; ++perHost) {
      Geometry g = levelled(hostsOfSizes(std::vector<int>(hosts, perHost)));
      const size_t count = static_cast<size_t>(perHost) * hosts * kAlignElems;
      for (Coll coll : {Coll::kAllReduce, Coll::kAllGather, Coll::kBroadcast, Coll::kReduce, Coll::kReduceScatter}) {
        TraceResult t = traceCollective(g, CallShape{coll, Algo::kHier, count, 0, 1, count, false}, 8);
        ASSERT_TRUE(t.ok) << t.error;
        EXPECT_EQ(t.steps, tune::hierSteps(coll, hosts, perHost)) << collName(coll) << " " << hosts << " x " << perHost;
      }
    }
  }
}

}  // namespace
}  // namespace braid::algo
