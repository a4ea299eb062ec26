// algorithmPeers (algo/connections.h) against the peers each algorithm is defined to use: the
// ring's neighbours, the trees' parents and children, recursive doubling's partners, send/recv's
// everyone, the hierarchical all-reduce's local ring and rails, the cross-host tree's chains and
// host tree; for 1..64 ranks, a shuffled
// ring and uneven hosts.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "algo/connections.h"

namespace braid::algo {
namespace {

std::vector<int> sorted(std::set<int> s, int rank) {
  s.erase(rank);
  return std::vector<int>(s.begin(), s.end());
}

// What each algorithm's documentation says its peers are.
std::vector<int> definedPeers(const Geometry& g, int rank, int k) {
  const int n = static_cast<int>(g.ringOrder.size());
  std::set<int> peers;
  WorkArgs w = workFor(g, rank, 0, CallShape{});
  if (n > 1 && k == kConnRing) {
    peers.insert(w.ring.next());
    peers.insert(w.ring.prev());
  } else if (k == kConnTree0 || k == kConnTree1) {
    // The flat double tree and the cross-host one share the trees' connection ids.
    for (Algo a : {Algo::kDoubleTree, Algo::kCrossTree}) {
      CallShape call;
      call.algo = a;
      const TreeView& t = workFor(g, rank, 0, call).trees[k == kConnTree0 ? 0 : 1];
      if (t.parent >= 0) peers.insert(t.parent);
      for (int i = 0; i < t.nChildren; ++i) peers.insert(t.children[i]);
    }
  } else if (k == kConnDoubling && n > 1) {
    int p = 1;
    while (p * 2 <= n) p *= 2;
    if (rank >= p) {
      peers.insert(rank - p);
    } else {
      for (int bit = 1; bit < p; bit *= 2) peers.insert(rank ^ bit);
      if (rank + p < n) peers.insert(rank + p);
    }
  } else if (k == kConnLocal || k == kConnRail) {
    const HostsView& h = w.hosts;
    const int size = h.size(h.host);
    if (k == kConnLocal && size > 1) {
      peers.insert(h.at(h.host, h.local + 1));
      peers.insert(h.at(h.host, h.local + size - 1));
    }
    for (int s = h.local; k == kConnRail && h.n > 1 && s < h.most; s += size) {
      peers.insert(h.at((h.host + 1) % h.n, s));
      peers.insert(h.at((h.host + h.n - 1) % h.n, s));
    }
  }
  return sorted(peers, rank);
}

const std::vector<Algo> kFifoAlgos = {Algo::kRing,     Algo::kTree, Algo::kDoubleTree,
                                      Algo::kDoubling, Algo::kHier, Algo::kCrossTree};

void expectDefined(const Geometry& g, const std::string& what) {
  const int n = static_cast<int>(g.ringOrder.size());
  for (int rank = 0; rank < n; ++rank) {
    for (int k : {kConnRing, kConnTree0, kConnTree1, kConnDoubling, kConnLocal, kConnRail}) {
      EXPECT_EQ(algorithmPeers(g, rank, k, kFifoAlgos), definedPeers(g, rank, k))
          << what << " rank " << rank << " connection id " << k;
    }
    std::vector<int> all(n);
    for (int q = 0; q < n; ++q) all[q] = q;
    EXPECT_EQ(algorithmPeers(g, rank, kConnP2p, kFifoAlgos), all);
  }
}

TEST(AlgorithmPeers, MatchTheDefinitionsForOneToSixtyFourRanks) {
  for (int n = 1; n <= 64; ++n) expectDefined(defaultGeometry(n), std::to_string(n) + " ranks");
}

TEST(AlgorithmPeers, ShuffledRingsAndUnevenHosts) {
  std::mt19937 rng(5);
  for (int n : {3, 5, 8, 13}) {
    std::vector<int> order(n), hostOf(n);
    for (int r = 0; r < n; ++r) order[r] = r, hostOf[r] = static_cast<int>(rng() % 3);
    std::shuffle(order.begin(), order.end(), rng);
    expectDefined(makeGeometry(order, hostOf), std::to_string(n) + " ranks on random hosts");
  }
}

// Only what is asked for: the ring alone opens nothing on the trees' ids; the one-shot nothing.
TEST(AlgorithmPeers, OnlyTheAlgorithmsAskedFor) {
  Geometry g = defaultGeometry(8);
  EXPECT_TRUE(algorithmPeers(g, 3, kConnTree0, {Algo::kRing}).empty());
  EXPECT_TRUE(algorithmPeers(g, 3, kConnRing, {Algo::kOneShot}).empty());
  EXPECT_EQ(algorithmPeers(g, 3, kConnRing, {Algo::kRing}), (std::vector<int>{2, 4}));
}

}  // namespace
}  // namespace braid::algo
