// Which peers an algorithm's programs exchange data with: found by running every lane of the
// algorithm over the Recorder (algorithms are data-oblivious: their peers do not depend on the
// data) instead of being kept by hand beside each algorithm. The CUDA engine lays out its FIFOs
// from it; tests/unit/algo_connections_test.cc checks it.
#pragma once

#include <vector>

#include "algo/collectives.h"
#include "algo/geometry.h"

namespace braid::algo {

/// The peers (ascending, without `rank` itself) that `rank` sends to or receives from on
/// connection id `connId` when it runs any of `algos` (every collective each implements; the
/// one-shot, which has no FIFOs, contributes none). kConnP2p: every rank, itself included (send/recv
/// reaches anyone, a message to itself through its own FIFO).
std::vector<int> algorithmPeers(const Geometry& g, int rank, int connId, const std::vector<Algo>& algos);

/// The same for every connection id at once (indexed by it), from one run of the programs.
std::vector<std::vector<int>> algorithmPeers(const Geometry& g, int rank, const std::vector<Algo>& algos);

/// The algorithms whose FIFOs an engine lays out for `g`: every row of the table but those without
/// FIFOs, those that run only across hosts only where `g` has more than one host.
std::vector<Algo> fifoAlgorithms(const Geometry& g);

}  // namespace braid::algo
