// Ring algorithms: all-reduce, all-gather, reduce-scatter, and the broadcast / reduce chains.
//
// Ring all-reduce, 4 ranks, one round of 4 blocks (b0..b3); "+" is reduce, "=" final:
//
//   reduce-scatter (n-1 steps)            all-gather (n-1 steps)
//   pos0  pos1  pos2  pos3                pos0  pos1  pos2  pos3
//   b3 -> +b3 -> +b3 -> =b3  (pos3 owns)  =b0 -> b0 -> b0 -> b0   (each owner passes its block on)
//   each position starts one block, passes it on, and after n-1 hops the block's last
//   receiver (its owner) holds the full reduction; the all-gather walks it around once more.
//
// Data: a channel's range is cut into rounds of nranks blocks of at most chunkElems elements; every
// Prims operation moves one block. Sequential steps per block: 2(n-1).
#pragma once

#include "algo/prims.h"
#include "algo/work.h"

namespace braid::algo {

/// One round's block j: [off, off+len) of the round [base, base+roundSize) cut into n blocks.
struct RoundBlocks {
  size_t base;
  size_t size;
  size_t blk;
  BRAID_HOST_DEVICE size_t off(int j) const { return base + minSize(size, static_cast<size_t>(j) * blk); }
  BRAID_HOST_DEVICE size_t len(int j) const {
    size_t start = static_cast<size_t>(j) * blk;
    return start >= size ? 0 : minSize(blk, size - start);
  }
};

/// The ring's Prims: receive from the previous position, send to the next (no peers alone).
template <class Backend>
BRAID_HOST_DEVICE auto openRing(Backend& b, const RingView& ring) {
  int prev = ring.prev(), next = ring.next();
  return ring.n == 1 ? b.open(nullptr, 0, nullptr, 0, kConnRing) : b.open(&prev, 1, &next, 1, kConnRing);
}

/// all-reduce: output[i] = op over ranks of input[i], i < count.
template <class Backend>
BRAID_HOST_DEVICE void ringAllReduce(Backend& b, const WorkArgs& w) {
  const RingView& ring = w.ring;
  const int n = ring.n;
  const Range r = channelRange(w.count, w.channel, w.nChannels);
  auto p = openRing(b, ring);
  if (n == 1) {
    for (size_t o = r.begin; o < r.end; o += w.chunkElems) p.copy(o, o, minSize(w.chunkElems, r.end - o), w.postOp);
    return;
  }
  const size_t roundElems = static_cast<size_t>(n) * w.chunkElems;
  for (size_t base = r.begin; base < r.end; base += roundElems) {
    RoundBlocks rb{base, minSize(roundElems, r.end - base), 0};
    rb.blk = minSize(w.chunkElems, alignElems(divUp(rb.size, n)));  // aligned blocks, each fits a slot
    int j = wrap(ring.pos - 1, n);
    p.send(rb.off(j), rb.len(j));
    for (int s = 2; s < n; ++s) {
      j = wrap(ring.pos - s, n);
      p.recvReduceSend(rb.off(j), rb.len(j));
    }
    j = ring.pos;  // this position owns block pos: it completes the reduction and starts the gather
    p.recvReduceCopySend(rb.off(j), rb.off(j), rb.len(j), w.postOp);
    for (int s = 1; s < n - 1; ++s) {
      j = wrap(ring.pos - s, n);
      p.recvCopySend(rb.off(j), rb.len(j));
    }
    j = wrap(ring.pos + 1, n);
    p.recv(rb.off(j), rb.len(j));
  }
}

/// all-gather: output[q * count + i] = rank q's input[i].
template <class Backend>
BRAID_HOST_DEVICE void ringAllGather(Backend& b, const WorkArgs& w) {
  const RingView& ring = w.ring;
  const int n = ring.n;
  const Range r = channelRange(w.count, w.channel, w.nChannels);
  auto p = openRing(b, ring);
  for (size_t o = r.begin; o < r.end; o += w.chunkElems) {
    size_t len = minSize(w.chunkElems, r.end - o);
    auto outOf = [&](int position) { return static_cast<size_t>(ring.rankAt(position)) * w.count + o; };
    if (n == 1) {
      p.copy(o, outOf(ring.pos), len, false);
      continue;
    }
    p.copySend(o, outOf(ring.pos), len);
    for (int s = 1; s < n - 1; ++s) p.recvCopySend(outOf(ring.pos - s), len);
    p.recv(outOf(ring.pos - (n - 1)), len);
  }
}

/// reduce-scatter: output[i] = op over ranks of input[rank * count + i].
template <class Backend>
BRAID_HOST_DEVICE void ringReduceScatter(Backend& b, const WorkArgs& w) {
  const RingView& ring = w.ring;
  const int n = ring.n;
  const Range r = channelRange(w.count, w.channel, w.nChannels);
  auto p = openRing(b, ring);
  for (size_t o = r.begin; o < r.end; o += w.chunkElems) {
    size_t len = minSize(w.chunkElems, r.end - o);
    auto inOf = [&](int position) { return static_cast<size_t>(ring.rankAt(position)) * w.count + o; };
    if (n == 1) {
      p.copy(inOf(ring.pos), o, len, w.postOp);
      continue;
    }
    p.send(inOf(ring.pos - 1), len);
    for (int s = 2; s < n; ++s) p.recvReduceSend(inOf(ring.pos - s), len);
    p.recvReduceCopy(inOf(ring.pos), o, len, w.postOp);
  }
}

/// One broadcast chain of `length` ranks over the channel's range, this rank at `rel` (0: its
/// head): the head sends its input (copied to its output on the way) or, with `headFromOutput`,
/// what its output already holds; the others pass each chunk on, the last only receives it. A
/// chain of one copies the input to the output (nothing with `headFromOutput`).
template <class Backend>
BRAID_HOST_DEVICE void broadcastChain(Backend& b, const WorkArgs& w, int prev, int next, int rel, int length, int conn,
                                      bool headFromOutput) {
  const Range r = channelRange(w.count, w.channel, w.nChannels);
  const bool recvs = rel > 0, sends = rel < length - 1;
  if (!recvs && !sends && headFromOutput) return;
  auto p = b.open(&prev, recvs ? 1 : 0, &next, sends ? 1 : 0, conn);
  for (size_t o = r.begin; o < r.end; o += w.chunkElems) {
    const size_t len = minSize(w.chunkElems, r.end - o);
    if (!recvs && !sends)
      p.copy(o, o, len, false);
    else if (!recvs && headFromOutput)
      p.sendOutput(o, len);
    else if (!recvs)
      p.copySend(o, o, len);
    else if (sends)
      p.recvCopySend(o, len);
    else
      p.recv(o, len);
  }
}

/// broadcast: output[i] = root's input[i]. A chain along the ring from the root:
///   root -> pos+1 -> pos+2 -> ... -> pos+n-1, each chunk pipelined behind the previous one.
template <class Backend>
BRAID_HOST_DEVICE void chainBroadcast(Backend& b, const WorkArgs& w) {
  const RingView& ring = w.ring;
  const int n = ring.n;
  int rootPos = 0;
  for (int q = 0; q < n; ++q) rootPos = ring.order[q] == w.root ? q : rootPos;
  const int rel = wrap(ring.pos - rootPos, n);  // 0 at the root, n-1 at the chain's end
  broadcastChain(b, w, ring.prev(), ring.next(), rel, n, kConnRing, false);
}

/// reduce: on the root, output[i] = op over ranks of input[i]. A chain along the ring that ends
/// at the root:  pos+1 -> pos+2 -> ... -> pos+n-1 -> root.
template <class Backend>
BRAID_HOST_DEVICE void chainReduce(Backend& b, const WorkArgs& w) {
  const RingView& ring = w.ring;
  const int n = ring.n;
  const Range r = channelRange(w.count, w.channel, w.nChannels);
  int rootPos = 0;
  for (int q = 0; q < n; ++q) rootPos = ring.order[q] == w.root ? q : rootPos;
  const int rel = wrap(ring.pos - rootPos, n);  // 1 starts the chain, 0 (the root) ends it
  int prev = ring.prev(), next = ring.next();
  const bool sends = rel != 0, recvs = rel != 1 % n;
  auto p = b.open(&prev, recvs && n > 1 ? 1 : 0, &next, sends ? 1 : 0, kConnRing);
  for (size_t o = r.begin; o < r.end; o += w.chunkElems) {
    size_t len = minSize(w.chunkElems, r.end - o);
    if (n == 1)
      p.copy(o, o, len, w.postOp);
    else if (!recvs)
      p.send(o, len);
    else if (sends)
      p.recvReduceSend(o, len);
    else
      p.recvReduceCopy(o, o, len, w.postOp);
  }
}

}  // namespace braid::algo
