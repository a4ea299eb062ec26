// A rank's messages to itself in a group of sends and receives: on a GPU they are copies on the
// caller's stream, not a trip through the rank's own FIFO (which, first in ring-distance order, would
// hold back the messages to the peers until it is done).
#pragma once

#include <cstddef>
#include <vector>

#include "algo/p2p.h"
#include "core/status.h"

namespace braid::exec {

/// One message to itself: `bytes` from sendBase + from to recvBase + to.
struct SelfCopy {
  size_t from = 0;
  size_t to = 0;
  size_t bytes = 0;
};

/// Moves the sends to `rank` and the receives from `rank` out of `sends` and `recvs`, pairing the
/// k-th of each (posting order, as a FIFO would). An error, naming the sizes, if they do not pair up.
Status takeSelfCopies(int rank, std::vector<algo::P2pOp>* sends, std::vector<algo::P2pOp>* recvs,
                      std::vector<SelfCopy>* copies);

}  // namespace braid::exec
