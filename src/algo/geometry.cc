#include "algo/geometry.h"

#include <algorithm>

namespace braid::algo {

Geometry makeGeometry(const std::vector<int>& ringOrder) {
  return makeGeometry(ringOrder, std::vector<int>(ringOrder.size(), 0));
}

Geometry makeGeometry(const std::vector<int>& ringOrder, const std::vector<int>& hostOf) {
  Geometry g;
  int n = static_cast<int>(ringOrder.size());
  g.ringOrder = ringOrder;
  g.posOf.assign(n, 0);
  for (int p = 0; p < n; ++p) g.posOf[ringOrder[p]] = p;
  g.trees[0] = buildDoubleTree(n, 0);
  g.trees[1] = buildDoubleTree(n, 1);
  // Hosts in the order the ring reaches them, each host's ranks in ring order.
  std::vector<int> labels;
  std::vector<std::vector<int>> members;
  for (int rank : ringOrder) {
    int label = hostOf[rank];
    size_t h = 0;
    while (h < labels.size() && labels[h] != label) ++h;
    if (h == labels.size()) {
      labels.push_back(label);
      members.emplace_back();
    }
    members[h].push_back(rank);
  }
  g.hostOf.assign(n, 0);
  g.localOf.assign(n, 0);
  g.hostStart.push_back(0);
  for (size_t h = 0; h < members.size(); ++h) {
    for (size_t i = 0; i < members[h].size(); ++i) {
      g.hostOf[members[h][i]] = static_cast<int>(h);
      g.localOf[members[h][i]] = static_cast<int>(i);
      g.hostRanks.push_back(members[h][i]);
    }
    g.hostStart.push_back(static_cast<int>(g.hostRanks.size()));
    g.mostOnAHost = std::max(g.mostOnAHost, static_cast<int>(members[h].size()));
  }
  std::vector<std::vector<int>> chains(members.size());  // each host's ring positions
  for (size_t h = 0; h < members.size(); ++h) {
    for (int rank : members[h]) chains[h].push_back(g.posOf[rank]);
  }
  for (int t = 0; t < 2; ++t) g.crossTrees[t] = buildCrossHostTree(chains, n, t);
  return g;
}

Geometry defaultGeometry(int n) {
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  return makeGeometry(order);
}

WorkArgs workFor(const Geometry& g, int rank, int channel, const CallShape& call) {
  WorkArgs w;
  w.rank = rank;
  w.nranks = static_cast<int>(g.ringOrder.size());
  w.count = call.count;
  w.root = call.root;
  w.channel = channel;
  w.nChannels = call.nChannels;
  w.chunkElems = call.chunkElems;
  w.postOp = call.postOp;
  w.ring.order = g.ringOrder.data();
  w.ring.n = w.nranks;
  w.ring.pos = g.posOf[rank];
  const PositionTree* trees = call.algo == Algo::kCrossTree ? g.crossTrees : g.trees;
  w.trees[0] = treeViewFor(trees[0], g.ringOrder, rank);
  w.trees[1] = treeViewFor(trees[1], g.ringOrder, rank);
  w.hosts.ranks = g.hostRanks.data();
  w.hosts.start = g.hostStart.data();
  w.hosts.n = static_cast<int>(g.hostStart.size()) - 1;
  w.hosts.host = g.hostOf[rank];
  w.hosts.local = g.localOf[rank];
  w.hosts.most = g.mostOnAHost;
  return w;
}

size_t inputElems(Coll coll, size_t count, int nranks) { return coll == Coll::kReduceScatter ? count * nranks : count; }

size_t outputElems(Coll coll, size_t count, int nranks) { return coll == Coll::kAllGather ? count * nranks : count; }

size_t messageElems(Coll coll, size_t count, int nranks) {
  return std::max(inputElems(coll, count, nranks), outputElems(coll, count, nranks));
}

const char* collName(Coll coll) {
  switch (coll) {
    case Coll::kAllReduce: return "allreduce";
    case Coll::kBroadcast: return "broadcast";
    case Coll::kReduce: return "reduce";
    case Coll::kAllGather: return "allgather";
    case Coll::kReduceScatter: return "reducescatter";
    default: return "?";
  }
}

const char* algoName(Algo algo) {
#define BRAID_ALGO(id, name, lanes, scope) \
  if (algo == Algo::id) return name;
#include "algo/algorithm_table.def"
  return "?";
}

}  // namespace braid::algo
