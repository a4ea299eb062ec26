// Point-to-point: send/recv and all-to-all as grouped messages.
//
// A group's messages run on two lanes of a channel: every send in the send lane, every receive in
// the receive lane, each ordered by ring distance (sends by (peer - rank) mod n, receives by
// (rank - peer) mod n; equal distances keep their posting order). That order cannot deadlock with
// any finite FIFO depth: the blocked operation of smallest distance always finds its partner at
// the head of the other lane (docs/algorithms.md has the argument; the symbolic tests check it).
#pragma once

#include <vector>

#include "algo/prims.h"
#include "algo/work.h"

namespace braid::algo {

/// One message of a group: `count` elements to or from `peer`, at `offset` of the input (send)
/// or output (receive) buffer. A channel carries its channelRange of every message.
struct P2pOp {
  int peer;
  size_t offset;
  size_t count;
};

/// Orders a rank's messages for the two lanes (by ring distance, stable). Host side.
void orderP2p(int rank, int nranks, std::vector<P2pOp>* sends, std::vector<P2pOp>* recvs);

/// The send lane: `ops` already in distance order.
template <class Backend>
BRAID_HOST_DEVICE void p2pSendLane(Backend& b, const WorkArgs& w, const P2pOp* ops, int nOps) {
  for (int i = 0; i < nOps; ++i) {
    auto p = b.open(nullptr, 0, &ops[i].peer, 1, kConnP2p);
    Range r = channelRange(ops[i].count, w.channel, w.nChannels);
    for (size_t o = r.begin; o < r.end; o += w.chunkElems) p.send(ops[i].offset + o, minSize(w.chunkElems, r.end - o));
  }
}

/// The receive lane: `ops` already in distance order.
template <class Backend>
BRAID_HOST_DEVICE void p2pRecvLane(Backend& b, const WorkArgs& w, const P2pOp* ops, int nOps) {
  for (int i = 0; i < nOps; ++i) {
    auto p = b.open(&ops[i].peer, 1, nullptr, 0, kConnP2p);
    Range r = channelRange(ops[i].count, w.channel, w.nChannels);
    for (size_t o = r.begin; o < r.end; o += w.chunkElems) p.recv(ops[i].offset + o, minSize(w.chunkElems, r.end - o));
  }
}

}  // namespace braid::algo
