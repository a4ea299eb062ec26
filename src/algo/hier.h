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

// A round's shard `sb` (cut into `hosts` blocks) all-reduced on the rail through `p`, in place in
// the output, as a ring over the hosts (this host at `pos`). Its ops come in three parts, of which
// parts `from` to `to` run here, so that a caller may put other work between them: 0 the first op
// (a send), 1 the ops up to the one that finishes this host's block, 2 the rest.
template <class P>
BRAID_HOST_DEVICE void railAllReduce(P& p, RoundBlocks sb, int pos, int hosts, bool post, int from, int to) {
  sb.blk = alignElems(divUp(sb.size, hosts));
  if (from <= 0 && to >= 0) p.sendOutput(sb.off(wrap(pos - 1, hosts)), sb.len(wrap(pos - 1, hosts)));
  if (from <= 1 && to >= 1) {
    for (int step = 2; step < hosts; ++step) {
      const int j = wrap(pos - step, hosts);
      p.recvReduceSendOutput(sb.off(j), sb.len(j));
    }
    p.recvReduceOutputSend(sb.off(pos), sb.len(pos), post);
  }
  if (from <= 2 && to >= 2) {
    for (int step = 1; step < hosts - 1; ++step) {
      const int j = wrap(pos - step, hosts);
      p.recvReplaceSend(sb.off(j), sb.len(j));
    }
    const int j = wrap(pos + 1, hosts);
    p.recvReplace(sb.off(j), sb.len(j));
  }
}

// Even hosts (every rank owns one shard a round), the levels overlapped: round i's rail ops are
// spread over the host ring's work of rounds i + 1 (reduce-scatter) and i - 1 (all-gather), so
// that the network carries round i while the copies and reductions inside the host run:
//   rail send (i) | reduce-scatter (i + 1) | rail reduce and send (i) | all-gather (i - 1) | rail receive (i)
// The host ring's two phases share one connection in this order on every rank of the host; the
// rounds are disjoint parts of the output, so no op touches another's elements.
template <class Backend>
BRAID_HOST_DEVICE void hierAllReduceOverlapped(Backend& b, const WorkArgs& w, const HierRounds& rounds) {
  const HostsView& h = w.hosts;
  const int k = h.size(h.host), me = h.local, hosts = h.n;
  const Range r = rounds.range;
  const int localPrev = h.at(h.host, me + k - 1), localNext = h.at(h.host, me + 1);
  const int railPrev = h.at(wrap(h.host - 1, hosts), me), railNext = h.at(wrap(h.host + 1, hosts), me);
  auto local = b.open(&localPrev, 1, &localNext, 1, kConnLocal);
  auto rail = b.open(&railPrev, 1, &railNext, 1, kConnRail);
  const size_t step = rounds.roundElems();
  const size_t nRounds = r.end > r.begin ? divUp(r.end - r.begin, step) : 0;
  auto reduceScatter = [&](size_t i) {
    const RoundBlocks rb = rounds.at(r.begin + i * step);
    local.send(rb.off(wrap(me - 1, k)), rb.len(wrap(me - 1, k)));
    for (int s = 2; s < k; ++s) local.recvReduceSend(rb.off(wrap(me - s, k)), rb.len(wrap(me - s, k)));
    local.recvReduceCopy(rb.off(me), rb.off(me), rb.len(me), false);
  };
  auto allGather = [&](size_t i) {
    const RoundBlocks rb = rounds.at(r.begin + i * step);
    local.sendOutput(rb.off(me), rb.len(me));
    for (int s = 1; s < k - 1; ++s) local.recvCopySend(rb.off(wrap(me - s, k)), rb.len(wrap(me - s, k)));
    local.recv(rb.off(wrap(me + 1, k)), rb.len(wrap(me + 1, k)));
  };
  auto railPart = [&](size_t i, int part) {
    const RoundBlocks rb = rounds.at(r.begin + i * step);
    railAllReduce(rail, RoundBlocks{rb.off(me), rb.len(me), 0}, h.host, hosts, w.postOp, part, part);
  };
  if (nRounds > 0) reduceScatter(0);
  for (size_t i = 0; i < nRounds; ++i) {
    railPart(i, 0);
    if (i + 1 < nRounds) reduceScatter(i + 1);
    railPart(i, 1);
    if (i > 0) allGather(i - 1);
    railPart(i, 2);
  }
  if (nRounds > 0) allGather(nRounds - 1);
}

// Uneven hosts: each phase runs over all of the channel's rounds before the next begins, so that
// each streams through its FIFOs without waiting at every round for the other level (a rank
// owning several shards takes their rails one after another).
template <class Backend>
BRAID_HOST_DEVICE void hierAllReduce(Backend& b, const WorkArgs& w) {
  const HostsView& h = w.hosts;
  const int k = h.size(h.host), me = h.local, hosts = h.n, shards = h.most;
  const HierRounds rounds{channelRange(w.count, w.channel, w.nChannels), w.chunkElems, shards};
  bool even = hosts > 1 && k > 1;  // every host k ranks (one schedule on every rank: mixed ones deadlock)
  for (int g = 0; even && g < hosts; ++g) even = h.size(g) == shards;
  if (even) {
    hierAllReduceOverlapped(b, w, rounds);
    return;
  }
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
    for (size_t base = r.begin; base < r.end; base += rounds.roundElems()) {
      const RoundBlocks rb = rounds.at(base);
      railAllReduce(p, RoundBlocks{off(rb, s), len(rb, s), 0}, h.host, hosts, w.postOp, 0, 2);
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

// Hierarchical broadcast: a chain across hosts on the root's rail (from the root's host round the
// hosts), then a chain inside each host from its member of that rail. Every rank ends with the
// root's input in its output. On a host with fewer ranks than the root's local index, the rail
// folds (HostsView::at): local index rootLocal mod k serves it. Steps per chunk: (N-1) + (k-1),
// against the flat chain's Nk-1; what crosses each host's link is the message once, as in the flat
// chain over a host-contiguous ring.
template <class Backend>
BRAID_HOST_DEVICE void hierBroadcast(Backend& b, const WorkArgs& w) {
  const HostsView& h = w.hosts;
  const int k = h.size(h.host), me = h.local, hosts = h.n;
  int rootHost = 0, rootLocal = 0;
  h.find(w.root, &rootHost, &rootLocal);
  const int src = rootLocal % k;  // this host's member of the root's rail
  // 1. across hosts, on the root's rail: rel 0 is the root's host.
  if (me == src && hosts > 1) {
    const int prev = h.at(wrap(h.host - 1, hosts), rootLocal), next = h.at(wrap(h.host + 1, hosts), rootLocal);
    broadcastChain(b, w, prev, next, wrap(h.host - rootHost, hosts), hosts, kConnRail, false);
  }
  // 2. inside each host, from its rail member: it holds the data in its output by now, or (one
  // host) it is the root, with the data in its input.
  broadcastChain(b, w, h.at(h.host, me + k - 1), h.at(h.host, me + 1), wrap(me - src, k), k, kConnLocal, hosts > 1);
}

// Hierarchical reduce: on the root, output[i] = op over ranks of input[i]. The broadcast turned
// round, as a tree of chains: inside each host a chain ends at the host's member of the root's rail
// (local index rootLocal mod k, as hierBroadcast folds it), and that member combines what its chain
// brings with what comes along the rail from the hosts before it, then passes the sum on along the
// rail towards the root's host:
//
//   host B: b1 -> b0 --rail--+        (b0: the member of the root's rail on B)
//   host A: a1 -> a0 = root <+        a0 receives from a1 and from b0 in the same step
//
// Every partial sum streams straight on, so no rank but the root needs room for one (a reduce's
// output is the root's alone). Steps per chunk: (k-1) inside + (N-1) across, against the flat
// chain's Nk-1; what crosses each host's link is the message once, as in the flat chain.
template <class Backend>
BRAID_HOST_DEVICE void hierReduce(Backend& b, const WorkArgs& w) {
  const HostsView& h = w.hosts;
  const int k = h.size(h.host), me = h.local, hosts = h.n;
  int rootHost = 0, rootLocal = 0;
  h.find(w.root, &rootHost, &rootLocal);
  const int src = rootLocal % k;                       // this host's member of the root's rail
  const int localRel = wrap(me - src, k);              // 1 starts the host's chain, 0 ends it
  const int railRel = wrap(h.host - rootHost, hosts);  // 1 starts the rail's chain, 0 is the root's host
  // The rail member receives on two levels: its host's chain (kConnLocal) and the rail (kConnRail).
  int recvPeers[2], recvConns[2], sendPeer = -1, sendConn = kConnLocal, nRecv = 0;
  if (k > 1 && localRel != 1 % k) recvPeers[nRecv] = h.at(h.host, me + k - 1), recvConns[nRecv++] = kConnLocal;
  if (localRel != 0) {
    sendPeer = h.at(h.host, me + 1);
  } else {
    if (hosts > 1 && railRel != 1 % hosts) {
      recvPeers[nRecv] = h.at(wrap(h.host - 1, hosts), rootLocal), recvConns[nRecv++] = kConnRail;
    }
    if (railRel != 0) sendPeer = h.at(wrap(h.host + 1, hosts), rootLocal), sendConn = kConnRail;
  }
  const Range r = channelRange(w.count, w.channel, w.nChannels);
  auto p = b.open(recvPeers, recvConns, nRecv, &sendPeer, sendPeer >= 0 ? 1 : 0, sendConn);
  for (size_t o = r.begin; o < r.end; o += w.chunkElems) {
    const size_t len = minSize(w.chunkElems, r.end - o);
    if (sendPeer >= 0 && nRecv == 0)
      p.send(o, len);
    else if (sendPeer >= 0)
      p.recvReduceSend(o, len);
    else if (nRecv > 0)
      p.recvReduceCopy(o, o, len, w.postOp);
    else
      p.copy(o, o, len, w.postOp);  // one rank in all
  }
}

// Where a rank stands for the rail algorithms (all-gather, reduce-scatter): its host's size and its
// index there, the hosts, the rails (the most ranks a host has), its channel's range, its host ring's
// neighbours, and host g's member of rail s (-1: none).
struct RailPlace {
  const HostsView& h;
  int k, me, hosts, rails;
  Range r;
  int localPrev, localNext;
  BRAID_HOST_DEVICE explicit RailPlace(const WorkArgs& w)
      : h(w.hosts),
        k(h.size(h.host)),
        me(h.local),
        hosts(h.n),
        rails(h.most),
        r(channelRange(w.count, w.channel, w.nChannels)),
        localPrev(h.at(h.host, me + k - 1)),
        localNext(h.at(h.host, me + 1)) {}
  BRAID_HOST_DEVICE int member(int g, int s) const { return s < rails && s < h.size(g) ? h.ranks[h.start[g] + s] : -1; }
};

// Hierarchical all-gather: output[q * count + i] = rank q's input[i].
//
//   1. across hosts, rail s (the ranks of local index s on every host) ring-gathers its members'
//      blocks into their places in the output; on a host with fewer ranks, rank s mod k takes part
//      without a block of its own (an empty one), so that it receives the others';
//   2. inside each host, a ring all-gather in which local rank i passes on the blocks of its rails
//      (s = i, i + k, ...: every rank of local index s on every host).
//
// Across a host's link per direction: (N-1)/N of the output, against the flat ring's (n-1)/n.
// Steps per chunk: N-1 across, k-1 inside. No reduction, so no partial results and no scratch.
template <class Backend>
BRAID_HOST_DEVICE void hierAllGather(Backend& b, const WorkArgs& w) {
  const RailPlace at(w);
  const HostsView& h = at.h;
  const int k = at.k, me = at.me, hosts = at.hosts, rails = at.rails, localPrev = at.localPrev,
            localNext = at.localNext;
  const Range r = at.r;
  // Output offset of rank q's block at element o; q < 0: a host's missing member (empty).
  auto place = [&](int q, size_t o) { return q < 0 ? size_t{0} : static_cast<size_t>(q) * w.count + o; };
  // 1. across hosts, on every rail this rank serves.
  for (int s = me; s < rails; s += k) {
    const int prev = h.at(wrap(h.host - 1, hosts), s), next = h.at(wrap(h.host + 1, hosts), s);
    auto p = hosts == 1 ? b.open(nullptr, 0, nullptr, 0, kConnRail) : b.open(&prev, 1, &next, 1, kConnRail);
    const int self = at.member(h.host, s);  // this rank, or -1 on a rail it serves for a missing index
    for (size_t o = r.begin; o < r.end; o += w.chunkElems) {
      const size_t len = minSize(w.chunkElems, r.end - o);
      auto lenOf = [&](int q) { return q < 0 ? size_t{0} : len; };
      if (hosts == 1) {
        if (self >= 0) p.copy(o, place(self, o), len, false);
        continue;
      }
      p.copySend(o, place(self, o), lenOf(self));
      for (int t = 1; t < hosts - 1; ++t) {
        const int q = at.member(wrap(h.host - t, hosts), s);
        p.recvCopySend(place(q, o), lenOf(q));
      }
      const int q = at.member(wrap(h.host + 1, hosts), s);
      p.recv(place(q, o), lenOf(q));
    }
  }
  if (k == 1) return;
  // 2. inside the host: each local rank's rails' blocks to the others, a ring all-gather per
  // block index b (local rank j's b-th block: the b-th of its rails j, j + k, ... on every host
  // that has a member there; an empty one past its last), so that each step moves one slot.
  auto p = b.open(&localPrev, 1, &localNext, 1, kConnLocal);
  // Rank q of local rank j's b-th block, or -1.
  auto blockOf = [&](int j, int index) {
    for (int s = wrap(j, k); s < rails; s += k) {
      for (int g = 0; g < hosts; ++g) {
        const int q = at.member(g, s);
        if (q >= 0 && index-- == 0) return q;
      }
    }
    return -1;
  };
  int most = 0;  // the most blocks a local rank holds
  for (int j = 0; j < k; ++j) {
    while (blockOf(j, most) >= 0) ++most;
  }
  for (size_t o = r.begin; o < r.end; o += w.chunkElems) {
    const size_t len = minSize(w.chunkElems, r.end - o);
    auto lenOf = [&](int q) { return q < 0 ? size_t{0} : len; };
    for (int index = 0; index < most; ++index) {
      int q = blockOf(me, index);
      p.sendOutput(place(q, o), lenOf(q));
      for (int t = 1; t < k - 1; ++t) {
        q = blockOf(me - t, index);
        p.recvCopySend(place(q, o), lenOf(q));
      }
      q = blockOf(me + 1, index);
      p.recv(place(q, o), lenOf(q));
    }
  }
}

// Hierarchical reduce-scatter: output[i] = op over ranks q of q's input[rank * count + i]. Rail s
// (the ranks of local index s on every host) reduce-scatters across the hosts in a ring, as the flat
// ring does over all ranks; what a rail member adds at each step is its host's sum of that block,
// which a ring reduce-scatter inside the host brings it in the same step:
//
//   step t = 0 .. N-1 works on the blocks of host d = host - t - 1 (at t = N-1 this host's own);
//   inside each host, a ring reduce-scatter of host d's blocks, one per rail, ends each block's sum
//   at the rail's member here, which receives from its host's ring and from the rail at once, adds
//   its own input and sends on along the rail (at t = N-1 it writes its output instead).
//
// Every partial sum streams on, so no rank needs room for other ranks' blocks (the output is one
// block long). A host of fewer ranks than the largest serves rail s by local rank s mod k, in
// passes of k rails; a rail with no member on host d reduces an empty block. Across a host's link
// per direction: (N-1)/N of the input, against the flat ring's (n-1)/n over host-contiguous ranks;
// sequential steps per chunk: (k-1) + (N-1), as the trace counts them (the flat ring's n - 1).
template <class Backend>
BRAID_HOST_DEVICE void hierReduceScatter(Backend& b, const WorkArgs& w) {
  const RailPlace at(w);
  for (size_t o = at.r.begin; o < at.r.end; o += w.chunkElems) {
    const size_t len = minSize(w.chunkElems, at.r.end - o);
    auto in = [&](int q) { return q < 0 ? size_t{0} : static_cast<size_t>(q) * w.count + o; };
    auto lenOf = [&](int q) { return q < 0 ? size_t{0} : len; };
    for (int t = 0; t < at.hosts; ++t) {
      const int d = wrap(at.h.host - t - 1, at.hosts);
      for (int pass = 0; pass * at.k < at.rails; ++pass) {
        auto dest = [&](int i) { return at.member(d, pass * at.k + wrap(i, at.k)); };  // host d's rank of that rail
        if (at.k > 1) {  // inside the host: the ring reduce-scatter, but for this rank's own block
          auto p = b.open(&at.localPrev, 1, &at.localNext, 1, kConnLocal);
          p.send(in(dest(at.me - 1)), lenOf(dest(at.me - 1)));
          for (int j = 2; j < at.k; ++j) p.recvReduceSend(in(dest(at.me - j)), lenOf(dest(at.me - j)));
        }
        // This rank's rail of the pass: its host's sum (from the ring inside) and the rail's, on.
        const int s = pass * at.k + at.me, q = dest(at.me);
        const bool rail = s < at.rails && at.hosts > 1;
        int recvPeers[2], recvConns[2], nRecv = 0, sendPeer = -1;
        if (at.k > 1) recvPeers[nRecv] = at.localPrev, recvConns[nRecv++] = kConnLocal;
        if (rail && t > 0) recvPeers[nRecv] = at.h.at(wrap(at.h.host - 1, at.hosts), s), recvConns[nRecv++] = kConnRail;
        if (rail && t < at.hosts - 1) sendPeer = at.h.at(wrap(at.h.host + 1, at.hosts), s);
        auto p = b.open(recvPeers, recvConns, nRecv, &sendPeer, sendPeer >= 0 ? 1 : 0, kConnRail);
        if (sendPeer >= 0 && nRecv == 0) {
          p.send(in(q), lenOf(q));
        } else if (sendPeer >= 0) {
          p.recvReduceSend(in(q), lenOf(q));
        } else if (nRecv > 0) {  // the last step (q is this rank), or an empty block past the rails
          p.recvReduceCopy(in(q), o, lenOf(q), w.postOp);
        } else {
          p.copy(in(q), o, len, w.postOp);  // one rank in all
        }
      }
    }
  }
}

}  // namespace braid::algo
