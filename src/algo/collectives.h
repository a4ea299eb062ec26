// The catalogue: which algorithms implement which collective, how many lanes (concurrent programs
// per channel) each needs, and one dispatcher that runs lane `lane` of a (collective, algorithm).
#pragma once

#include "algo/doubling.h"
#include "algo/hier.h"
#include "algo/ring.h"
#include "algo/tree.h"

namespace braid::algo {

enum class Coll : int { kAllReduce = 0, kBroadcast, kReduce, kAllGather, kReduceScatter, kNumColls };
// The algorithms and what each implements: algo/algorithm_table.def. kOneShot is a GPU fast path
// for small messages of every collective (src/device/oneshot.cuh): every rank stores what each
// peer needs straight into that peer's buffer as LL lines and combines what it receives, one hop
// in all. It is not written over Prims, so only the CUDA engine runs it; the tuner offers it on GPU
// communicators whose ranks all reach each other's memory, up to a size the engine reserves. kHier
// is the hierarchical all-reduce, all-gather, broadcast and reduce (hier.h): inside each host and
// across hosts on rails. kCrossTree is NCCL's tree across hosts: the double binary tree's all-reduce
// (tree.h) over trees that chain each host's ranks and join the chains by a double binary tree over
// the hosts (tree_builder.h); workFor hands it those trees.
enum class Algo : int {
#define BRAID_ALGO(id, name, lanes, scope) id,
#include "algo/algorithm_table.def"
  kNumAlgos
};

/// Whether `algo` implements `coll` (its rows in the table; the one-shot every collective).
BRAID_HOST_DEVICE inline bool supports(Coll coll, Algo algo) {
  if (algo == Algo::kOneShot) return true;
#define BRAID_IMPL(c, a, kind, kernel, call) \
  if (coll == Coll::c && algo == Algo::a) return true;
#include "algo/algorithm_table.def"
  return false;
}

/// Whether the copy-engine path (Algo::kCopyEngine, device/ce_work.h) runs `coll`.
BRAID_HOST_DEVICE inline bool copyEngineRuns(Coll coll) {
  return coll == Coll::kAllReduce || coll == Coll::kReduceScatter || coll == Coll::kAllGather ||
         coll == Coll::kBroadcast;
}

BRAID_HOST_DEVICE inline int numLanes(Algo algo) {
#define BRAID_ALGO(id, name, lanes, scope) \
  if (algo == Algo::id) return lanes;
#include "algo/algorithm_table.def"
  return 1;
}

/// Where an algorithm runs (its row's `scope`).
enum class AlgoScope : int { kAnywhere, kAcrossHosts, kWithoutFifos };
BRAID_HOST_DEVICE inline AlgoScope scopeOf(Algo algo) {
#define BRAID_ALGO(id, name, lanes, scope) \
  if (algo == Algo::id) return AlgoScope::scope;
#include "algo/algorithm_table.def"
  return AlgoScope::kAnywhere;
}

/// Runs lane `lane` of `coll` by `alg`; a collective `alg` does not implement runs as its ring.
template <class Backend>
BRAID_HOST_DEVICE void runLane(Backend& b, Coll coll, Algo alg, const WorkArgs& w, int lane) {
  (void)lane;
  if (!supports(coll, alg) || alg == Algo::kOneShot) alg = Algo::kRing;
#define BRAID_IMPL(c, a, kind, kernel, call) \
  if (coll == Coll::c && alg == Algo::a) {   \
    call;                                    \
    return;                                  \
  }
#include "algo/algorithm_table.def"
}

const char* collName(Coll coll);
const char* algoName(Algo algo);

}  // namespace braid::algo
