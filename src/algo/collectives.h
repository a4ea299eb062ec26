// The catalogue: which algorithms implement which collective, how many lanes (concurrent programs
// per channel) each needs, and one dispatcher that runs lane `lane` of a (collective, algorithm).
#pragma once

#include "algo/doubling.h"
#include "algo/hier.h"
#include "algo/ring.h"
#include "algo/tree.h"

namespace braid::algo {

enum class Coll : int { kAllReduce = 0, kBroadcast, kReduce, kAllGather, kReduceScatter, kNumColls };
// kOneShot is a GPU fast path for small messages of every collective (src/device/oneshot.cuh):
// every rank stores what each peer needs straight into that peer's buffer as LL lines and combines
// what it receives, one hop in all. It is not written over Prims, so only
// the CUDA engine runs it; the tuner offers it on GPU communicators whose ranks all reach each
// other's memory, up to a size the engine reserves.
// kHier is the hierarchical all-reduce, all-gather, broadcast and reduce (hier.h): inside each host
// and across hosts on rails.
enum class Algo : int { kRing = 0, kTree, kDoubleTree, kDoubling, kOneShot, kHier, kNumAlgos };

/// Whether `algo` implements `coll` (broadcast and reduce run as ring chains; trees and recursive
/// doubling are all-reduce only; the one-shot runs every collective).
BRAID_HOST_DEVICE inline bool supports(Coll coll, Algo algo) {
  if (algo == Algo::kHier) return coll != Coll::kReduceScatter;
  return algo == Algo::kRing || algo == Algo::kOneShot || coll == Coll::kAllReduce;
}

BRAID_HOST_DEVICE inline int numLanes(Algo algo) { return algo == Algo::kTree ? 2 : algo == Algo::kDoubleTree ? 4 : 1; }

template <class Backend>
BRAID_HOST_DEVICE void runLane(Backend& b, Coll coll, Algo algo, const WorkArgs& w, int lane) {
  switch (algo) {
    case Algo::kHier:
      if (coll == Coll::kAllGather)
        hierAllGather(b, w);
      else if (coll == Coll::kBroadcast)
        hierBroadcast(b, w);
      else if (coll == Coll::kReduce)
        hierReduce(b, w);
      else
        hierAllReduce(b, w);
      return;
    case Algo::kTree: treeAllReduce(b, w, lane); return;
    case Algo::kDoubleTree: doubleTreeAllReduce(b, w, lane); return;
    case Algo::kDoubling: doublingAllReduce(b, w); return;
    default: break;
  }
  switch (coll) {
    case Coll::kAllReduce: ringAllReduce(b, w); return;
    case Coll::kBroadcast: chainBroadcast(b, w); return;
    case Coll::kReduce: chainReduce(b, w); return;
    case Coll::kAllGather: ringAllGather(b, w); return;
    case Coll::kReduceScatter: ringReduceScatter(b, w); return;
    default: return;
  }
}

const char* collName(Coll coll);
const char* algoName(Algo algo);

}  // namespace braid::algo
