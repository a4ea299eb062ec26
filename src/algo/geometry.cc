#include "algo/geometry.h"

namespace braid::algo {

Geometry makeGeometry(const std::vector<int>& ringOrder) {
  Geometry g;
  int n = static_cast<int>(ringOrder.size());
  g.ringOrder = ringOrder;
  g.posOf.assign(n, 0);
  for (int p = 0; p < n; ++p) g.posOf[ringOrder[p]] = p;
  g.trees[0] = buildDoubleTree(n, 0);
  g.trees[1] = buildDoubleTree(n, 1);
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
  w.trees[0] = treeViewFor(g.trees[0], g.ringOrder, rank);
  w.trees[1] = treeViewFor(g.trees[1], g.ringOrder, rank);
  return w;
}

size_t inputElems(Coll coll, size_t count, int nranks) { return coll == Coll::kReduceScatter ? count * nranks : count; }

size_t outputElems(Coll coll, size_t count, int nranks) { return coll == Coll::kAllGather ? count * nranks : count; }

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
  switch (algo) {
    case Algo::kRing: return "ring";
    case Algo::kTree: return "tree";
    case Algo::kDoubleTree: return "dbtree";
    case Algo::kDoubling: return "doubling";
    case Algo::kOneShot: return "oneshot";
    default: return "?";
  }
}

}  // namespace braid::algo
