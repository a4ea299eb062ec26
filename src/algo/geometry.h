// Geometry: the ring order and the two trees of a communicator (host side), and the WorkArgs each
// (rank, channel) program of a call gets from them.
#pragma once

#include <vector>

#include "algo/collectives.h"
#include "algo/tree_builder.h"
#include "algo/work.h"

namespace braid::algo {

struct Geometry {
  std::vector<int> ringOrder;  // ranks in ring order
  std::vector<int> posOf;      // rank -> ring position
  PositionTree trees[2];       // trees[0]: the binary tree; trees[0..1]: the double binary tree
  PositionTree crossTrees[2];  // the cross-host double tree (buildCrossHostTree)
  // Levels (HostsView): every host's ranks in ring order, host after host; where each rank is.
  std::vector<int> hostRanks;
  std::vector<int> hostStart;  // hosts + 1 entries
  std::vector<int> hostOf;     // rank -> host index
  std::vector<int> localOf;    // rank -> index on its host
  int mostOnAHost = 1;
};

/// A geometry for `ringOrder` (a permutation of 0..n-1), all ranks on one host.
Geometry makeGeometry(const std::vector<int>& ringOrder);
/// The same with the ranks' hosts: `hostOf[rank]` is any label of the rank's host (hosts are
/// numbered in the order the ring reaches them; uneven hosts are fine).
Geometry makeGeometry(const std::vector<int>& ringOrder, const std::vector<int>& hostOf);

/// The ring 0, 1, ..., n-1.
Geometry defaultGeometry(int n);

/// How one call is cut up: the parameters the tuner chooses.
struct CallShape {
  Coll coll = Coll::kAllReduce;
  Algo algo = Algo::kRing;
  size_t count = 0;
  int root = 0;
  int nChannels = 1;
  size_t chunkElems = 1;
  bool postOp = false;
};

/// The arguments of `rank`'s programs on `channel`; `g` must outlive the result (it points into it).
/// WorkArgs::trees are the cross-host trees for Algo::kCrossTree, else the flat ones.
WorkArgs workFor(const Geometry& g, int rank, int channel, const CallShape& call);

/// Elements of the input and output buffers a collective uses on each rank.
size_t inputElems(Coll coll, size_t count, int nranks);
size_t outputElems(Coll coll, size_t count, int nranks);
/// Elements of the message as nccl-tests and the tuner count it: the larger of the two buffers
/// (all-gather's output, reduce-scatter's input, the one buffer of the others).
size_t messageElems(Coll coll, size_t count, int nranks);

}  // namespace braid::algo
