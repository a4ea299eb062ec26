// Tree all-reduce: reduce up a binary tree, broadcast down, pipelined chunk by chunk.
//
//   root      up lane   recvReduceCopySend  children + input -> output -> children
//     |
//   interior  up lane   recvReduceSend      children + input -> parent
//     |       down lane recvCopySend        parent -> output -> children
//     |
//   leaf      up lane   send                input -> parent
//             down lane recv                parent -> output
//
// Up and down run as two lanes (concurrent programs) of the channel, on separate connections
// (child->parent and parent->child), so a rank keeps sending chunks up while results come down.
// The double binary tree runs two such trees (lanes 0-1 and 2-3), each on half of the range.
#pragma once

#include "algo/prims.h"
#include "algo/work.h"

namespace braid::algo {

/// Lane 0 (up) or 1 (down) of one tree over `range`.
template <class Backend>
BRAID_HOST_DEVICE void treeAllReduceLane(Backend& b, const WorkArgs& w, const TreeView& t, int connId, Range range,
                                         int lane) {
  const int* kids = t.children;
  const int nKids = t.nChildren;
  const bool root = t.parent < 0;
  if (lane == 0) {
    // Up: children (and input) reduce towards the root, which turns the result around.
    auto p = root ? b.open(kids, nKids, kids, nKids, connId) : b.open(kids, nKids, &t.parent, 1, connId);
    for (size_t o = range.begin; o < range.end; o += w.chunkElems) {
      size_t len = minSize(w.chunkElems, range.end - o);
      if (root && nKids == 0)
        p.copy(o, o, len, w.postOp);
      else if (root)
        p.recvReduceCopySend(o, o, len, w.postOp);
      else if (nKids == 0)
        p.send(o, len);
      else
        p.recvReduceSend(o, len);
    }
    return;
  }
  if (root) return;  // the root's up lane already sent the results down
  auto p = b.open(&t.parent, 1, kids, nKids, connId);
  for (size_t o = range.begin; o < range.end; o += w.chunkElems) {
    size_t len = minSize(w.chunkElems, range.end - o);
    if (nKids == 0)
      p.recv(o, len);
    else
      p.recvCopySend(o, len);
  }
}

/// Tree all-reduce over trees[0]; lanes 0 (up) and 1 (down).
template <class Backend>
BRAID_HOST_DEVICE void treeAllReduce(Backend& b, const WorkArgs& w, int lane) {
  treeAllReduceLane(b, w, w.trees[0], kConnTree0, channelRange(w.count, w.channel, w.nChannels), lane);
}

/// Double binary tree all-reduce: lanes 0-1 run trees[0] on the first half of the channel's range,
/// lanes 2-3 run trees[1] on the second half.
template <class Backend>
BRAID_HOST_DEVICE void doubleTreeAllReduce(Backend& b, const WorkArgs& w, int lane) {
  const int tree = lane / 2;
  treeAllReduceLane(b, w, w.trees[tree], tree == 0 ? kConnTree0 : kConnTree1,
                    half(channelRange(w.count, w.channel, w.nChannels), tree), lane % 2);
}

}  // namespace braid::algo
