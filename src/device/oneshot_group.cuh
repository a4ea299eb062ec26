// The one-shot kernel of a group's calls (the algorithm: oneshot.cuh). The calls are one epoch, their
// lines one after another in each block. The CTA's last warp lays them out in a shared-memory table
// while thread 0 waits on the peers' "started" words; after one barrier the threads take the words
// of all the calls in turn, so a group of tiny calls costs one round trip.
#pragma once

#include "device/oneshot.cuh"

namespace braid::device {
namespace {

// What one launch shares across its calls: the epoch's flag and parity, and whether it was aborted.
struct OneShotRound {
  uint64_t epoch;
  uint32_t flag;
  uint64_t parity;
  bool aborted;
};

// kBatch: words per thread per batch (the loads one memory latency covers). Collectives that
// combine batch 4 words (8 overflow the 128 registers a 512-thread CTA may use); the others 8.
template <algo::Coll C>
constexpr int oneShotGroupBatch() {
  return C == algo::Coll::kAllGather || C == algo::Coll::kBroadcast ? 8 : 4;
}

// One call's part on this CTA, worked out once per CTA (not once per thread and call: a channel's
// range costs two 64-bit divisions, and the calls sit in the parameter, where a run-time index
// makes every field an indexed constant load, reloaded after each store's "memory" clobber).
struct OneShotSlot {
  const char* in;     // the input at the channel's first element (reduce-scatter: in block 0)
  char* out;          // the output likewise (all-gather: in block 0)
  size_t blockBytes;  // count x element size: the distance between reduce-scatter's input blocks
                      // and all-gather's output blocks
  uint32_t start;     // the CTA's words of the launch before this call's
  uint32_t nWords;    // this call's words on this CTA
  uint32_t line;      // its first line in a block: the call's offset plus the channel's
  uint32_t bytes;
  int root;
  int type;
  int op;
  bool postOp;
  bool inPlace;
};

// The launch's calls as this CTA's threads use them (shared memory). The CTA's threads take the
// launch's words in turn, across calls: word g of the CTA belongs to thread g % blockDim.x, so the
// calls of a group of small ones run side by side on different threads and the same instructions.
struct OneShotTable {
  OneShotSlot slot[kMaxBatchCalls];
  uint32_t total;  // the CTA's words of the launch
  bool mixed;      // the calls differ in type or op
};

// Fills `t`; the 32 threads of one warp call it, lane j for call j.
__device__ __forceinline__ void oneShotFillTable(const CollKernelArgs& k, OneShotTable& t) {
  const int lane = threadIdx.x % 32, nCalls = k.nCalls;
  uint32_t nWords = 0, words = 0, lineInCall = 0;
  bool differs = false;
  OneShotSlot s = {};
  if (lane < nCalls) {
    const CallArgs& call = k.calls[lane];
    const size_t es = elemSizeOf(call.type);
    words = static_cast<uint32_t>((call.count * es + 7) / 8);
    size_t begin = 0, end = 0;
    if (static_cast<int>(blockIdx.x) < call.nChannels) {
      const algo::Range range = algo::channelRange(call.count, blockIdx.x, call.nChannels);
      begin = range.begin;
      end = range.end;
    }
    s.in = static_cast<const char*>(call.input) + begin * es;
    s.out = static_cast<char*>(call.output) + begin * es;
    s.blockBytes = call.count * es;
    s.bytes = static_cast<uint32_t>((end - begin) * es);
    nWords = (s.bytes + 7) / 8;
    lineInCall = static_cast<uint32_t>(begin * es / 8);  // channels start at multiples of 64 elements
    s.root = call.root;
    s.type = call.type;
    s.op = call.op;
    s.postOp = call.postOp;
    s.inPlace = call.input == call.output;
    differs = call.type != k.calls[0].type || call.op != k.calls[0].op;
  }
  uint32_t wordsBefore = nWords, linesBefore = words;  // inclusive sums first
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const uint32_t w = __shfl_up_sync(kFullWarp, wordsBefore, d), l = __shfl_up_sync(kFullWarp, linesBefore, d);
    if (lane >= d) {
      wordsBefore += w;
      linesBefore += l;
    }
  }
  const bool mixed = __any_sync(kFullWarp, differs);
  if (lane < nCalls) {
    s.start = wordsBefore - nWords;
    s.nWords = nWords;
    s.line = linesBefore - words + lineInCall;
    t.slot[lane] = s;
  }
  if (lane == 31) t.total = wordsBefore;
  if (lane == 0) t.mixed = mixed;
}

// 0. Tell every peer this launch started (so its previous one is over), then wait until every rank
// this one sends to in any of its calls has started the previous launch (see the top). Meanwhile
// the CTA's last warp fills the table; the barrier publishes it.
template <algo::Coll C>
__device__ __forceinline__ OneShotRound oneShotBegin(const CollKernelArgs& k, OneShotTable& t) {
  const KernelArgs& a = k.base;
  const OneShotArgs& o = a.oneShot;
  const int n = a.work.nranks, me = a.work.rank;
  OneShotRound r;
  r.epoch = *static_cast<volatile uint64_t*>(oneShotEpochs(o.regions[0]) + blockIdx.x);
  r.flag = oneShotFlag(r.epoch);
  r.parity = r.epoch % kOneShotParities;
  bool aborted = false;
  oneShotAnnounce(o, me, n, r.epoch);
  if (threadIdx.x >= blockDim.x - 32) oneShotFillTable(k, t);
  if (threadIdx.x == 0 && r.epoch >= kOneShotParities) {
    for (int q = 0; q < n && !aborted; ++q) {
      bool sends = false;
      for (int i = 0; i < k.nCalls; ++i) sends = sends || oneShotSendsTo<C>(me, q, k.calls[i].root);
      if (sends)
        aborted = !waitAtLeast(oneShotStarted(o.regions[0]) + q, r.epoch, false, a.abortFlag, laneWait(a, 0), a.launch,
                               WaitWhat::kPeerStarted, q);
    }
  }
  r.aborted = __syncthreads_or(aborted) != 0;
  return r;
}

// This thread's words of one batch: word base + u x blockDim.x of the CTA is word w[u] of call
// c[u] (-1: none, or a call `takes` rejects). `cursor` is the call of the thread's previous word
// (a thread's words only go forward).
template <int kBatch, class Takes>
__device__ __forceinline__ void oneShotLocate(const OneShotTable& t, uint32_t base, int& cursor, int (&c)[kBatch],
                                              uint32_t (&w)[kBatch], Takes takes) {
#pragma unroll
  for (int u = 0; u < kBatch; ++u) {
    const uint32_t g = base + u * blockDim.x;
    c[u] = -1;
    w[u] = 0;
    if (g < t.total) {
      while (g - t.slot[cursor].start >= t.slot[cursor].nWords) ++cursor;
      if (takes(t.slot[cursor])) {
        c[u] = cursor;
        w[u] = g - t.slot[cursor].start;
      }
    }
  }
}

__device__ __forceinline__ int oneShotValid(const OneShotSlot& s, uint32_t w) {
  return static_cast<int>(s.bytes - w * 8 < 8 ? s.bytes - w * 8 : 8);
}

// 1. Every word this thread owns, of every call, goes to every receiver: the stores fly while it
// waits below. The loads of kBatch words (of any calls) are issued before any store (a store's asm
// is a compiler barrier, so one load per store would wait out a memory latency each).
template <algo::Coll C>
__device__ __forceinline__ void oneShotSend(const KernelArgs& a, const OneShotTable& t, const OneShotRound& r) {
  constexpr int kBatch = oneShotGroupBatch<C>();
  const OneShotArgs& o = a.oneShot;
  const int n = a.work.nranks, me = a.work.rank;
  int cursor = 0;
  for (uint32_t base = threadIdx.x; base < t.total; base += kBatch * blockDim.x) {
    int c[kBatch];
    uint32_t w[kBatch], line[kBatch];
    int root[kBatch];
    oneShotLocate(t, base, cursor, c, w, [&](const OneShotSlot& s) { return oneShotSendsAny<C>(me, n, s.root); });
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      line[u] = c[u] >= 0 ? t.slot[c[u]].line + w[u] : 0;
      root[u] = c[u] >= 0 ? t.slot[c[u]].root : 0;
    }
    uint64_t x[kBatch];
    bool loaded = false;
    for (int k = 1; k < n; ++k) {
      const int q = (me + k) % n;  // peers in a rotated order, so that not every rank hits rank 0 first
      if (C == algo::Coll::kReduceScatter || !loaded) {
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          if (c[u] < 0) continue;
          const OneShotSlot& s = t.slot[c[u]];
          x[u] =
              plainRead(s.in + (C == algo::Coll::kReduceScatter ? q * s.blockBytes : 0), w[u], oneShotValid(s, w[u]));
        }
        loaded = true;
      }
      uint4* dst = oneShotBlock(o.regions[k], o, n, r.parity, me);
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        if (c[u] >= 0 && oneShotSendsTo<C>(me, q, root[u])) {
          storeVolatile(dst + line[u],
                        make_uint4(static_cast<uint32_t>(x[u]), r.flag, static_cast<uint32_t>(x[u] >> 32), r.flag));
        }
      }
    }
  }
}

// How the receive combines two words of a call: one (type, op) for the whole launch, inline, or
// each call's through combineWord.
template <class F>
struct OneShotSameOp {
  F f;
  __device__ __forceinline__ uint64_t operator()(uint64_t acc, uint64_t x, const OneShotSlot&) const {
    return f(acc, x);
  }
};
struct OneShotEachOp {
  __device__ __forceinline__ uint64_t operator()(uint64_t acc, uint64_t x, const OneShotSlot& s) const {
    return combineWord(acc, x, s.type, s.op);
  }
};

// 2. The same words from every sender (and this rank's own), kBatch at a time, across calls. The
// loads of this rank's words go out first and those of each sender's lines right behind them, so
// one memory latency covers the batch; lines not there yet are re-read together until all carry
// the flag. Returns false if the communicator was aborted meanwhile.
template <algo::Coll C, class Combine>
__device__ __forceinline__ bool oneShotReceive(const KernelArgs& a, const OneShotTable& t, const OneShotRound& r,
                                               Combine combine) {
  constexpr int kBatch = oneShotGroupBatch<C>();
  constexpr bool kCombines = C == algo::Coll::kAllReduce || C == algo::Coll::kReduceScatter || C == algo::Coll::kReduce;
  const OneShotArgs& o = a.oneShot;
  const int n = a.work.nranks, me = a.work.rank;
  auto receives = [&](const OneShotSlot& s) {
    return C == algo::Coll::kBroadcast ? me != s.root : C == algo::Coll::kReduce ? me == s.root : true;
  };
  auto copiesOwn = [&](const OneShotSlot& s) { return C == algo::Coll::kBroadcast && me == s.root && !s.inPlace; };
  auto usesOwn = [&](const OneShotSlot& s) { return kCombines || C == algo::Coll::kAllGather || copiesOwn(s); };
  const uint4* region = oneShotBlock(o.regions[0], o, n, r.parity, 0);
  bool aborted = false;
  int cursor = 0;
  for (uint32_t base = threadIdx.x; base < t.total && !aborted; base += kBatch * blockDim.x) {
    int c[kBatch];
    uint32_t w[kBatch];
    oneShotLocate(t, base, cursor, c, w, [&](const OneShotSlot& s) { return receives(s) || copiesOwn(s); });
    uint64_t mine[kBatch], acc[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (c[u] < 0 || !usesOwn(t.slot[c[u]])) continue;
      const OneShotSlot& s = t.slot[c[u]];
      mine[u] =
          plainRead(s.in + (C == algo::Coll::kReduceScatter ? me * s.blockBytes : 0), w[u], oneShotValid(s, w[u]));
    }
    for (int q = 0; q < n && !aborted; ++q) {
      unsigned own = 0, from = 0;  // the words q's value comes from this rank's input / q's lines for
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        if (c[u] < 0) continue;
        const OneShotSlot& s = t.slot[c[u]];
        if (q == me && usesOwn(s)) own |= 1u << u;
        if (q != me && oneShotReceivesFrom<C>(me, q, s.root)) from |= 1u << u;
      }
      if ((own | from) == 0) continue;
      uint4 v[kBatch];  // the sender's lines (data in x and z)
      const uint4* src = region + static_cast<size_t>(q) * o.lines;
      unsigned missing = from;
      for (int spins = 0; missing != 0 && !aborted;) {
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          if (missing & (1u << u)) v[u] = loadVolatile(src + t.slot[c[u]].line + w[u]);
        }
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          if ((missing & (1u << u)) && v[u].y == r.flag && v[u].w == r.flag) missing &= ~(1u << u);
        }
        if (missing != 0 && ++spins == 4096) {
          spins = 0;
          noteWait(laneWait(a, 0), a.launch, WaitWhat::kLines, q, r.flag, 0);
          aborted = *a.abortFlag != 0;  // the communicator is unusable from here on
        }
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        if (((own | from) & (1u << u)) == 0 || aborted) continue;
        const OneShotSlot& s = t.slot[c[u]];
        const uint64_t x =
            (own & (1u << u)) != 0 ? mine[u] : static_cast<uint64_t>(v[u].x) | (static_cast<uint64_t>(v[u].z) << 32);
        if (!kCombines) {
          plainWrite(s.out + (C == algo::Coll::kAllGather ? q * s.blockBytes : 0), w[u], oneShotValid(s, w[u]), x);
        } else {
          acc[u] = q == 0 ? x : combine(acc[u], x, s);
        }
      }
    }
    for (int u = 0; u < kBatch && !aborted && kCombines; ++u) {
      if (c[u] < 0) continue;
      const OneShotSlot& s = t.slot[c[u]];
      plainWrite(s.out, w[u], oneShotValid(s, w[u]), s.postOp ? divideWord(acc[u], s.type, n) : acc[u]);
    }
  }
  return !aborted;
}

// The launch's calls: every call's stores first, then every call's loads, so all stores are in flight
// before the first wait. A launch is one epoch: its calls lie one after another in the blocks (the
// host batches calls only while they fit). Combining words through combineWord (a call that switches
// on the type and op) costs as much as the memory traffic at these sizes: the sums of the common
// floating types get their own inline copy, where every call of the launch has that type and op.
template <algo::Coll C>
__device__ void oneShotGroup(const CollKernelArgs& k) {
  __shared__ OneShotTable t;
  const KernelArgs& a = k.base;
  KernelMark mark(a);
  const OneShotRound r = oneShotBegin<C>(k, t);
  bool ok = !r.aborted;
  if (ok) oneShotSend<C>(a, t, r);
  if (ok) {
    const int type = t.slot[0].type, op = t.slot[0].op;
    if (C == algo::Coll::kAllGather || C == algo::Coll::kBroadcast || t.mixed || (op != 0 && op != 4)) {
      ok = oneShotReceive<C>(a, t, r, OneShotEachOp{});  // all-gather and broadcast combine none
    } else if (type == 7) {
      ok = oneShotReceive<C>(a, t, r, OneShotSameOp<InlineSum<Plain<float, float>>>{});
    } else if (type == 9) {
      ok = oneShotReceive<C>(a, t, r, OneShotSameOp<InlineSum<Bf16Fmt>>{});
    } else if (type == 6) {
      ok = oneShotReceive<C>(a, t, r, OneShotSameOp<InlineSum<HalfFmt>>{});
    } else {
      ok = oneShotReceive<C>(a, t, r, OneShotEachOp{});
    }
  }
  oneShotFinish(a.oneShot, r.epoch);
}

}  // namespace
}  // namespace braid::device
