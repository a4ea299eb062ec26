// Hierarchical all-reduce: reduce-scatter inside each host, an all-reduce of each shard across the
// hosts on its rail, all-gather inside each host. N hosts of k ranks, one round of k shards:
//
//   host A: a0 a1          1. inside: ring reduce-scatter     a0 holds shard 0 of A, a1 shard 1
//   host B: b0 b1                                              b0 shard 0 of B, b1 shard 1
//                          2. across: shard 0 on rail a0-b0, shard 1 on rail a1-b1, each a ring
//                             all-reduce of the shard over the N hosts (in the output)
//                          3. inside: ring all-gather of the shards from their owners
//
// What crosses between hosts per direction falls from the flat ring's 2(n-1)/n x S to 2(N-1)/N x S
// (n = N k); sequential steps per chunk: 2(k-1) inside, 2(N-1) across.
//
// Uneven hosts: a round has as many shards as the largest host has ranks (HostsView::most); a host
// of k ranks reduce-scatters them in passes of k, so its rank i owns shards i, i + k, ...; rail s
// (the ranks owning shard s on every host) is HostsView::at(h, s). A rank owning several shards
// takes part in their rails one after another, in shard order, as every rail member does: a rail
// waits only for rails of lower shards, so none waits for itself. One host: the flat
// reduce-scatter and all-gather inside it; one rank per host: the ring across hosts alone.
#pragma once

#include "algo/prims.h"
#include "algo/ring.h"
#include "algo/work.h"

namespace braid::algo {

// The rounds of a channel's range: `shards` shards of at most one chunk each.
struct HierRounds {
  Range range;
  size_t chunk;
  int shards;
  BRAID_HOST_DEVICE size_t roundElems() const { return static_cast<size_t>(shards) * chunk; }
  BRAID_HOST_DEVICE RoundBlocks at(size_t base) const {
    RoundBlocks rb{base, minSize(roundElems(), range.end - base), 0};
    rb.blk = minSize(chunk, alignElems(divUp(rb.size, shards)));
    return rb;
  }
};

// Each phase runs over all of the channel's rounds before the next begins, so that each streams
// through its FIFOs without waiting at every round for the other level.
template <class Backend>
BRAID_HOST_DEVICE void hierAllReduce(Backend& b, const WorkArgs& w) {
  const HostsView& h = w.hosts;
  const int k = h.size(h.host), me = h.local, hosts = h.n, shards = h.most;
  const HierRounds rounds{channelRange(w.count, w.channel, w.nChannels), w.chunkElems, shards};
  const Range r = rounds.range;
  const int localPrev = h.at(h.host, me + k - 1), localNext = h.at(h.host, me + 1);
  const bool postInside = w.postOp && hosts == 1;  // else the step across hosts finishes the values
  // Shard `t * k + pos` of pass t for local position pos; past the last shard: empty.
  auto shardOf = [&](int t, int pos) { return t * k + wrap(pos, k); };
  auto off = [&](const RoundBlocks& rb, int s) { return rb.off(s < shards ? s : shards); };
  auto len = [&](const RoundBlocks& rb, int s) { return s < shards ? rb.len(s) : size_t{0}; };
  {  // 1. inside the host: reduce-scatter, this rank ending with shards me, me + k, ... in its output
    auto p = k == 1 ? b.open(nullptr, 0, nullptr, 0, kConnLocal) : b.open(&localPrev, 1, &localNext, 1, kConnLocal);
    for (size_t base = r.begin; base < r.end; base += rounds.roundElems()) {
      const RoundBlocks rb = rounds.at(base);
      for (int t = 0; t * k < shards; ++t) {
        const int mine = shardOf(t, me);
        if (k == 1) {
          p.copy(off(rb, mine), off(rb, mine), len(rb, mine), postInside);
          continue;
        }
        p.send(off(rb, shardOf(t, me - 1)), len(rb, shardOf(t, me - 1)));
        for (int s = 2; s < k; ++s) p.recvReduceSend(off(rb, shardOf(t, me - s)), len(rb, shardOf(t, me - s)));
        p.recvReduceCopy(off(rb, mine), off(rb, mine), len(rb, mine), postInside);
      }
    }
  }
  // 2. across hosts: each of this rank's shards all-reduced on its rail, in place in the output.
  for (int s = me; s < shards && hosts > 1; s += k) {
    const int prev = h.at(wrap(h.host - 1, hosts), s), next = h.at(wrap(h.host + 1, hosts), s);
    auto p = b.open(&prev, 1, &next, 1, kConnRail);
    const int pos = h.host;
    for (size_t base = r.begin; base < r.end; base += rounds.roundElems()) {
      const RoundBlocks rb = rounds.at(base);
      RoundBlocks sb{off(rb, s), len(rb, s), 0};
      sb.blk = alignElems(divUp(sb.size, hosts));
      int j = wrap(pos - 1, hosts);
      p.sendOutput(sb.off(j), sb.len(j));
      for (int step = 2; step < hosts; ++step) {
        j = wrap(pos - step, hosts);
        p.recvReduceSendOutput(sb.off(j), sb.len(j));
      }
      p.recvReduceOutputSend(sb.off(pos), sb.len(pos), w.postOp);
      for (int step = 1; step < hosts - 1; ++step) {
        j = wrap(pos - step, hosts);
        p.recvReplaceSend(sb.off(j), sb.len(j));
      }
      j = wrap(pos + 1, hosts);
      p.recvReplace(sb.off(j), sb.len(j));
    }
  }
  if (k == 1) return;
  // 3. inside the host: all-gather of every shard from its owner.
  auto p = b.open(&localPrev, 1, &localNext, 1, kConnLocal);
  for (size_t base = r.begin; base < r.end; base += rounds.roundElems()) {
    const RoundBlocks rb = rounds.at(base);
    for (int t = 0; t * k < shards; ++t) {
      p.sendOutput(off(rb, shardOf(t, me)), len(rb, shardOf(t, me)));
      for (int s = 1; s < k - 1; ++s) p.recvCopySend(off(rb, shardOf(t, me - s)), len(rb, shardOf(t, me - s)));
      p.recv(off(rb, shardOf(t, me + 1)), len(rb, shardOf(t, me + 1)));
    }
  }
}

}  // namespace braid::algo
