// The hierarchical collectives (algo/hier.h: all-reduce, all-gather, broadcast, reduce), proven
// symbolically on levelled geometries: 1..8 hosts x 1..8 ranks per host, uneven hosts, hosts
// interleaved in rank order and shuffled rings, every channel count to 3, chunk sizes, counts from
// empty to several rounds, with and without avg, on the smallest FIFO depth (2) and the default
// (8); their traces' sequential steps against the cost model's; and the geometry's levels.
#include <gtest/gtest.h>

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

void proveAll(const Geometry& g, const std::string& what, bool full) {
  const int n = static_cast<int>(g.ringOrder.size());
  for (Coll coll : {Coll::kAllReduce, Coll::kAllGather, Coll::kBroadcast, Coll::kReduce}) {
    const bool rooted = coll == Coll::kBroadcast || coll == Coll::kReduce;
    for (int root : {0, n - 1, n / 2}) {
      if (!rooted && root != 0) continue;
      if (rooted && !full && root == n / 2) continue;
      for (int channels = 1; channels <= 3; ++channels) {
        for (size_t chunk : {size_t{1}, size_t{3}}) {
          if (!full && chunk == 1) continue;
          const size_t round = chunk * static_cast<size_t>(channels) * g.mostOnAHost;
          for (size_t count : {size_t{0}, size_t{1}, round - 1, 2 * round + 5, size_t(n) * 7 + 3}) {
            for (bool post : {false, true}) {
              if (post && coll != Coll::kAllReduce && coll != Coll::kReduce) continue;
              for (int slots : {2, 8}) {
                if (slots == 8 && (channels > 1 || !full)) continue;
                CallShape call{coll, Algo::kHier, count, root, channels, chunk, post};
                ProofResult r = proveCollective(g, call, slots);
                ASSERT_TRUE(r.ok) << collName(coll) << " " << what << " root=" << root << " channels=" << channels
                                  << " chunk=" << chunk << " count=" << count << " post=" << post << " slots=" << slots
                                  << ": " << r.error;
              }
            }
          }
        }
      }
    }
  }
}

TEST(HierProof, EvenHostsOneToEightByOneToEight) {
  for (int hosts = 1; hosts <= 8; ++hosts) {
    for (int perHost = 1; perHost <= 8; ++perHost) {
      std::vector<int> sizes(hosts, perHost);
      proveAll(levelled(hostsOfSizes(sizes)), sizesText(sizes), hosts * perHost <= 16);
    }
  }
}

TEST(HierProof, UnevenHosts) {
  const std::vector<std::vector<int>> mixes = {{2, 1},    {1, 2},       {2, 1, 2},    {3, 1},       {1, 3, 2},
                                               {4, 1, 1}, {1, 1, 1, 5}, {3, 2, 1, 2}, {5, 3},       {2, 2, 2, 1},
                                               {7, 1},    {1, 8, 1},    {3, 3, 2},    {8, 7, 6, 5}, {2, 4, 8}};
  for (const auto& sizes : mixes) proveAll(levelled(hostsOfSizes(sizes)), sizesText(sizes), true);
}

// Hosts interleaved in rank order (rank r on host r % N) under a shuffled ring: the levels follow
// the ring, not the ranks.
TEST(HierProof, InterleavedHostsAndShuffledRings) {
  std::mt19937 rng(11);
  for (int n : {4, 6, 7, 12}) {
    for (int hosts : {2, 3}) {
      std::vector<int> hostOf(n), order(n);
      for (int r = 0; r < n; ++r) hostOf[r] = r % hosts, order[r] = r;
      std::shuffle(order.begin(), order.end(), rng);
      proveAll(makeGeometry(order, hostOf), std::to_string(n) + " ranks interleaved on " + std::to_string(hosts), true);
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

// Sequential steps of one chunk: 2(k-1) inside hosts and 2(N-1) across, as the cost model says.
TEST(HierTrace, StepsMatchTheCostModel) {
  for (int hosts = 1; hosts <= 6; ++hosts) {
    for (int perHost = 1; perHost <= 6; ++perHost) {
      Geometry g = levelled(hostsOfSizes(std::vector<int>(hosts, perHost)));
      const size_t count = static_cast<size_t>(perHost) * hosts * kAlignElems;
      for (Coll coll : {Coll::kAllReduce, Coll::kAllGather, Coll::kBroadcast, Coll::kReduce}) {
        TraceResult t = traceCollective(g, CallShape{coll, Algo::kHier, count, 0, 1, count, false}, 8);
        ASSERT_TRUE(t.ok) << t.error;
        EXPECT_EQ(t.steps, tune::hierSteps(coll, hosts, perHost)) << collName(coll) << " " << hosts << " x " << perHost;
      }
    }
  }
}

}  // namespace
}  // namespace braid::algo
