#include "algo/connections.h"

#include <set>

#include "algo/recorder.h"

namespace braid::algo {

std::vector<int> algorithmPeers(const Geometry& g, int rank, int connId, const std::vector<Algo>& algos) {
  return algorithmPeers(g, rank, algos)[connId];
}

std::vector<std::vector<int>> algorithmPeers(const Geometry& g, int rank, const std::vector<Algo>& algos) {
  const int n = static_cast<int>(g.ringOrder.size());
  std::vector<std::set<int>> found(kNumConnIds);
  for (Algo a : algos) {
    if (scopeOf(a) == AlgoScope::kWithoutFifos) continue;
    for (int c = 0; c < static_cast<int>(Coll::kNumColls); ++c) {
      const auto coll = static_cast<Coll>(c);
      if (!supports(coll, a)) continue;
      // A count that gives every part a program splits its range into (the double tree's halves
      // are cut at multiples of kAlignElems) some elements, in one chunk: every connection opens,
      // with the fewest operations. A chain's ends depend on its root: roots at ring positions 0
      // and n/2 leave no rank without its receive or its send.
      const bool rooted = coll == Coll::kBroadcast || coll == Coll::kReduce;
      const int roots[] = {g.ringOrder[0], g.ringOrder[n / 2]};
      for (int root : roots) {
        if (!rooted && root != roots[0]) continue;
        const size_t count = static_cast<size_t>(n) + 2 * kAlignElems;
        CallShape call{coll, a, count, root, 1, count, false};
        WorkArgs w = workFor(g, rank, 0, call);
        for (int lane = 0; lane < numLanes(a); ++lane) {
          Recorder rec;
          runLane(rec, coll, a, w, lane);
          for (const Op& op : rec.ops) {
            for (int i = 0; i < op.nRecv && op.receives(); ++i) found[op.recvConns[i]].insert(op.recvPeers[i]);
            for (int i = 0; i < op.nSend && op.sends(); ++i) found[op.conn].insert(op.sendPeers[i]);
          }
        }
      }
    }
  }
  std::vector<std::vector<int>> peers(kNumConnIds);
  for (int k = 0; k < kNumConnIds; ++k) {
    found[k].erase(rank);
    peers[k].assign(found[k].begin(), found[k].end());
  }
  for (int q = 0; q < n; ++q) peers[kConnP2p].push_back(q);  // send/recv reaches anyone, itself too
  return peers;
}

std::vector<Algo> fifoAlgorithms(const Geometry& g) {
  std::vector<Algo> algos;
  for (int i = 0; i < static_cast<int>(Algo::kNumAlgos); ++i) {
    const auto a = static_cast<Algo>(i);
    const AlgoScope scope = scopeOf(a);
    if (scope == AlgoScope::kWithoutFifos || (scope == AlgoScope::kAcrossHosts && g.hostStart.size() <= 2)) continue;
    algos.push_back(a);
  }
  return algos;
}

}  // namespace braid::algo
