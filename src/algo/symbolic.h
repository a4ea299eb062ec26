// SymbolicPrims: proves an algorithm correct for one call shape, without data.
//
// Every element is modelled as (source index, set of contributing ranks, post-op applied). Inputs
// start as (i, {rank}); a reduction unions the sets (and fails on an overlap: a contribution counted
// twice, or on mixing different source indices: an offset bug); the post-op may apply once. After
// all ranks' programs ran together (simulator.h), every output element must hold exactly what the
// collective defines, e.g. all-reduce: (i, all ranks, posted iff avg). Ranks up to 64.
#pragma once

#include <string>

#include "algo/geometry.h"
#include "algo/p2p.h"

namespace braid::algo {

constexpr int kMaxSymbolicRanks = 64;

struct ProofResult {
  bool ok = false;
  std::string error;  // what failed, where (rank, element, step), when !ok
};

/// Runs `call` on `g` with FIFOs of `fifoSlots` and checks every output element.
ProofResult proveCollective(const Geometry& g, const CallShape& call, int fifoSlots);

/// One rank's messages of a grouped send/recv (or all-to-all).
struct P2pRank {
  std::vector<P2pOp> sends;  // offsets into this rank's input
  std::vector<P2pOp> recvs;  // offsets into this rank's output
  size_t inputElems = 0;
  size_t outputElems = 0;
};

/// Runs the p2p lanes of every rank (messages as given, ordered by orderP2p) and checks that each
/// received element is exactly the element its matching send carried.
ProofResult proveP2p(const std::vector<P2pRank>& ranks, int nChannels, size_t chunkElems, int fifoSlots);

/// The p2p messages of an all-to-all of `count` elements per peer.
std::vector<P2pRank> allToAllMessages(int nranks, size_t count);

}  // namespace braid::algo
