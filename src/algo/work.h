// WorkArgs: everything one (rank, channel, lane) program of an algorithm needs, as a plain,
// trivially copyable struct (it travels to GPU kernels unchanged).
//
// Buffers are not here: algorithms speak in element offsets into the call's input (sendbuff) and
// output (recvbuff); the Prims backend owns the pointers (or, for the symbolic and trace
// backends, the modelled contents).
#pragma once

#include "algo/common.h"

namespace braid::algo {

constexpr int kMaxTreeChildren = 2;

/// This rank's place in a ring: `order[p]` is the rank at ring position p.
struct RingView {
  const int* order = nullptr;
  int n = 1;
  int pos = 0;  // this rank's position
  BRAID_HOST_DEVICE int rankAt(int p) const { return order[wrap(p, n)]; }
  BRAID_HOST_DEVICE int next() const { return rankAt(pos + 1); }
  BRAID_HOST_DEVICE int prev() const { return rankAt(pos - 1); }
};

/// This rank's place in one tree (ranks, not positions); parent -1 at the root.
struct TreeView {
  int parent = -1;
  int children[kMaxTreeChildren] = {-1, -1};
  int nChildren = 0;
};

/// The hosts of a communicator as the hierarchical algorithms see them: each host's ranks in ring
/// order, host after host (hosts in the order the ring first reaches them). Host h's i-th rank is
/// at(h, i); the "rail" of local index i is the i-th rank of every host, where a host with fewer
/// ranks than i + 1 takes part with its rank (i mod its size).
struct HostsView {
  const int* ranks = nullptr;  // every host's ranks, host after host
  const int* start = nullptr;  // host h's are ranks[start[h] .. start[h + 1])
  int n = 1;                   // hosts
  int host = 0;                // this rank's host
  int local = 0;               // this rank's index on it
  int most = 1;                // the most ranks any host has
  BRAID_HOST_DEVICE int size(int h) const { return start[h + 1] - start[h]; }
  BRAID_HOST_DEVICE int at(int h, int i) const { return ranks[start[h] + i % size(h)]; }
  /// The host of `rank` and its index there (0, 0 if it is on none).
  BRAID_HOST_DEVICE void find(int rank, int* hostOf, int* index) const {
    *hostOf = *index = 0;
    for (int g = 0; g < n; ++g) {
      for (int i = 0; i < size(g); ++i) {
        if (ranks[start[g] + i] == rank) *hostOf = g, *index = i;
      }
    }
  }
};

struct WorkArgs {
  int rank = 0;
  int nranks = 1;
  size_t count = 0;  // elements per rank as the collective defines it (see each algorithm)
  int root = 0;      // broadcast and reduce
  int channel = 0;   // this program's channel, 0..nChannels-1
  int nChannels = 1;
  size_t chunkElems = 1;  // most elements one Prims operation moves (one FIFO slot)
  bool postOp = false;    // avg: divide by nranks where the final value is written
  RingView ring;
  TreeView trees[2];  // tree all-reduce uses trees[0]; the double binary tree both
  HostsView hosts;    // the hierarchical algorithms
};

/// Parts of a buffer that channels and ring blocks cut start at multiples of this many elements
/// (unless the whole is smaller), so that every part of an aligned buffer is 16-byte aligned for
/// every element type and GPU kernels move it in 16-byte vectors.
constexpr size_t kAlignElems = 64;

BRAID_HOST_DEVICE inline size_t alignElems(size_t x) { return (x + kAlignElems - 1) / kAlignElems * kAlignElems; }

/// The part [begin, end) of [0, count) that `channel` of `nChannels` works on: near-equal parts,
/// cut at multiples of kAlignElems.
struct Range {
  size_t begin;
  size_t end;
  BRAID_HOST_DEVICE size_t size() const { return end - begin; }
};

BRAID_HOST_DEVICE inline size_t channelCut(size_t count, int k, int nChannels) {
  size_t cut = alignElems(count * k / nChannels);
  return cut < count ? cut : count;
}

BRAID_HOST_DEVICE inline Range channelRange(size_t count, int channel, int nChannels) {
  return Range{channelCut(count, channel, nChannels), channelCut(count, channel + 1, nChannels)};
}

/// Splits `r` into two halves (the double binary tree gives one to each tree).
BRAID_HOST_DEVICE inline Range half(Range r, int which) {
  size_t mid = r.begin + minSize(r.size(), alignElems(r.size() / 2));
  return which == 0 ? Range{r.begin, mid} : Range{mid, r.end};
}

/// Connection ids: algorithms that run several patterns on one channel keep their FIFOs apart.
enum ConnId : int {
  kConnRing = 0,
  kConnTree0 = 1,
  kConnTree1 = 2,
  kConnP2p = 3,
  kConnDoubling = 4,
  kConnLocal = 5,  // hierarchical: the ring inside a host
  kConnRail = 6,   // hierarchical: the ring across hosts
  kNumConnIds = 7
};

}  // namespace braid::algo
