// The one-shot algorithm (every collective): one hop, no FIFO counters, no barrier inside the data
// loop.
//
// Each thread owns a set of 8-byte words of its channel's range. It
//   1. loads each of its input words and stores it, as an LL line (4 data, flag, 4 data, flag, one
//      16-byte store), into block (parity, this rank) of every peer's region;
//   2. then reads each word from every peer's line in its own region, spinning until both flags
//      match, combines the words in rank order (rank 0's first, so every rank ends with the same
//      bits) and writes the output.
// A word's line sits at the same place in every round, and the thread that writes it is the one
// that reads the peer's line of the same word, so no thread waits for any other.
//
// Reuse without counters: the flag is derived from the channel's epoch (one-shot launches so far),
// and launches alternate between two parities of blocks. Every kernel first writes "started launch
// e" into each peer's header; before a rank stores into a peer's parity p for launch e (e >= 2), it
// waits until that peer has started launch e - 1, so the peer's kernel for launch e - 2, the last
// reader of parity p, is over (kernels of one stream run in order). Data coming back does not prove
// it in general: after a call in which data flowed one way only (broadcast, reduce, or two
// non-roots), the peer may still be reading launch e - 2. The epochs live in device memory, so CUDA
// graph replays advance them. Every channel's counter advances on every launch (CTA 0 advances
// those of the channels a launch does not use), so all counters name the same launch.
//
// A launch may carry several calls of one collective (a group): they are one epoch, their lines one
// after another in each block, so they must fit in it together. A launch of one call has a kernel of
// its own (oneShot: the call in a small parameter, no barrier before its stores, each thread checks
// the peers' "started" words itself). A group's kernel (oneShotGroup) first lays the calls out in a
// shared-memory table, which takes a barrier; its threads then take the words of all the calls in
// turn.
#pragma once

#include "algo/work.h"
#include "device/moves.cuh"
#include "device/prims.cuh"

namespace braid::device {
namespace {

// Never 0 (zeroed memory), and of an odd period (2^32 - 1), so that where it wraps the parity changes
// too: a stale line could match only after 8.6e9 calls without a write to it.
__device__ __forceinline__ uint32_t oneShotFlag(uint64_t epoch) {
  return static_cast<uint32_t>(epoch % 0xffffffffull) + 1;
}

// A region's header: the epoch of each channel, then, per rank q, the last call q started (+1).
__device__ __forceinline__ uint64_t* oneShotEpochs(char* region) { return reinterpret_cast<uint64_t*>(region); }
__device__ __forceinline__ uint64_t* oneShotStarted(char* region) {
  return reinterpret_cast<uint64_t*>(region) + kMaxOneShotChannels;
}

// The first line of block (parity, sender) of `region`.
__device__ __forceinline__ uint4* oneShotBlock(char* region, const OneShotArgs& o, int nranks, uint64_t parity,
                                               int sender) {
  uint4* lines = reinterpret_cast<uint4*>(region + kOneShotHeaderBytes);
  return lines + (parity * nranks + sender) * o.lines;
}

// Who sends to whom. `count` is work.count: one rank's block for all-gather and reduce-scatter, the
// whole buffer otherwise.
//   all-reduce      every rank sends its input to every peer; output = op over ranks, in rank order
//   all-gather      every rank sends its input to every peer; output block q = rank q's input
//   reduce-scatter  every rank sends its input block q to peer q; output = op over ranks of their
//                   block `rank`
//   broadcast       the root sends its input to every peer; output = the root's input
//   reduce          every rank but the root sends its input to the root; the root's output = op
//                   over ranks
template <algo::Coll C>
__device__ __forceinline__ bool oneShotSendsTo(int me, int q, int root) {
  if (C == algo::Coll::kBroadcast) return me == root && q != me;
  if (C == algo::Coll::kReduce) return me != root && q == root;
  return q != me;
}

template <algo::Coll C>
__device__ __forceinline__ bool oneShotReceivesFrom(int me, int q, int root) {
  return oneShotSendsTo<C>(q, me, root);
}

// Whether rank `me` sends its input to any peer in a call with this root.
template <algo::Coll C>
__device__ __forceinline__ bool oneShotSendsAny(int me, int n, int root) {
  if (C == algo::Coll::kBroadcast) return me == root;
  if (C == algo::Coll::kReduce) return me != root;
  return n > 1;
}

// The least "started" word of the ranks this one sends to. The loads all go out before any is used
// (a loop over n would wait for each before issuing the next).
template <algo::Coll C>
__device__ __forceinline__ uint64_t oneShotLeastStarted(const uint64_t* started, int n, int me, int root) {
  uint64_t v[kMaxOneShotRanks];
#pragma unroll
  for (int q = 0; q < kMaxOneShotRanks; ++q)
    v[q] = q < n && oneShotSendsTo<C>(me, q, root) ? loadVolatile64(started + q) : ~0ull;
  uint64_t least = ~0ull;
#pragma unroll
  for (int q = 0; q < kMaxOneShotRanks; ++q) least = min(least, v[q]);
  return least;
}

// 0. Tells every peer this launch started (so its previous one is over): CTA 0's thread 0.
__device__ __forceinline__ void oneShotAnnounce(const OneShotArgs& o, int me, int n, uint64_t epoch) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    for (int k = 1; k < n; ++k) storeVolatile64(oneShotStarted(o.regions[k]) + me, epoch + 1);
  }
}

// 3. Once every thread has read this launch's epoch (and the table), the next launch's is one more
// on every channel; CTA 0 advances those of the channels this launch has no CTA for, spread over
// its threads.
__device__ __forceinline__ void oneShotFinish(const OneShotArgs& o, uint64_t epoch) {
  __syncthreads();
  uint64_t* epochs = oneShotEpochs(o.regions[0]);
  if (threadIdx.x == 0) epochs[blockIdx.x] = epoch + 1;
  if (blockIdx.x == 0) {
    for (size_t k = gridDim.x + threadIdx.x; k < static_cast<size_t>(o.channels); k += blockDim.x) epochs[k] += 1;
  }
}

// One call. kBatch: words per thread per batch (the loads one memory latency covers).
template <algo::Coll C, int kBatch, class Combine>
__device__ __forceinline__ void oneShotBody(const KernelArgs& a, const CallArgs& call, Combine combine) {
  constexpr bool kCombines = C == algo::Coll::kAllReduce || C == algo::Coll::kReduceScatter || C == algo::Coll::kReduce;
  const OneShotArgs& o = a.oneShot;
  const int n = a.work.nranks, me = a.work.rank, root = call.root, c = blockIdx.x;
  const size_t tid = threadIdx.x, stride = blockDim.x;
  const uint64_t epoch = *static_cast<volatile uint64_t*>(oneShotEpochs(o.regions[0]) + c);
  const uint32_t flag = oneShotFlag(epoch);
  const uint64_t parity = epoch % kOneShotParities;
  const size_t es = elemSizeOf(call.type), count = call.count;
  const algo::Range range = algo::channelRange(count, c, call.nChannels);
  const size_t bytes = (range.end - range.begin) * es;
  const size_t nWords = (bytes + 7) / 8;
  const size_t firstWord = range.begin * es / 8;  // channels start at multiples of 64 elements
  // The part of the input block rank q's contribution comes from, and of the output block q.
  auto in = [&](int q) {
    return static_cast<const char*>(call.input) +
           ((C == algo::Coll::kReduceScatter ? q * count : 0) + range.begin) * es;
  };
  auto out = [&](int q) {
    return static_cast<char*>(call.output) + ((C == algo::Coll::kAllGather ? q * count : 0) + range.begin) * es;
  };
  auto valid = [&](size_t w) { return static_cast<int>(bytes - w * 8 < 8 ? bytes - w * 8 : 8); };
  bool aborted = false;

  oneShotAnnounce(o, me, n, epoch);

  // 1. Every word this thread owns goes to every receiver first: the stores fly while it waits
  // below. Before its first store, a thread checks itself that every rank it sends to has started
  // the previous call (see the top). The epoch, the first batch of input and the "started" words
  // are loaded in that order, none waiting for another, so the three cost one memory latency; no
  // barrier stands between them and the stores. The loads of kBatch words are issued before any
  // store (a store's asm is a compiler barrier, so one load per store would wait out a memory
  // latency each).
  const uint64_t* started = oneShotStarted(o.regions[0]);
  bool peersChecked = epoch < kOneShotParities;
  for (size_t base = tid; base < nWords && !aborted; base += kBatch * stride) {
    uint64_t x[kBatch];
    bool loaded = false;
    for (int k = 1; k < n; ++k) {
      const int q = (me + k) % n;  // peers in a rotated order, so that not every rank hits rank 0 first
      if (!oneShotSendsTo<C>(me, q, root)) continue;
      if (C == algo::Coll::kReduceScatter || !loaded) {
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          const size_t w = base + u * stride;
          if (w < nWords) x[u] = plainRead(in(C == algo::Coll::kReduceScatter ? q : me), w, valid(w));
        }
        loaded = true;
      }
      if (!peersChecked) {
        if (oneShotLeastStarted<C>(started, n, me, root) < epoch) {
          for (int p = 0; p < n && !aborted; ++p) {
            if (oneShotSendsTo<C>(me, p, root)) aborted = !waitAtLeast(started + p, epoch, false, a.abortFlag);
          }
        }
        peersChecked = true;
      }
      if (aborted) break;
      uint4* dst = oneShotBlock(o.regions[k], o, n, parity, me) + firstWord;
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const size_t w = base + u * stride;
        if (w < nWords) {
          storeVolatile(dst + w,
                        make_uint4(static_cast<uint32_t>(x[u]), flag, static_cast<uint32_t>(x[u] >> 32), flag));
        }
      }
    }
  }

  // 2. The same words from every sender (and this rank's own), kBatch at a time. The loads of
  // this rank's words go out first and those of each sender's lines right behind them, so one memory
  // latency covers the batch; lines not there yet are re-read together until all carry the flag.
  const bool receives = C == algo::Coll::kBroadcast ? me != root : C == algo::Coll::kReduce ? me == root : true;
  const bool copiesOwn = C == algo::Coll::kBroadcast && me == root && call.input != call.output;
  const bool usesOwn = kCombines || C == algo::Coll::kAllGather || copiesOwn;
  const int postDivisor = call.postOp ? n : 0;
  for (size_t base = tid; base < nWords && !aborted && (receives || copiesOwn); base += kBatch * stride) {
    uint64_t own[kBatch], acc[kBatch];
    if (usesOwn) {
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const size_t w = base + u * stride;
        if (w < nWords) own[u] = plainRead(in(me), w, valid(w));
      }
    }
    for (int q = 0; q < n && !aborted; ++q) {
      const bool isOwn = q == me && usesOwn;
      if (!isOwn && !oneShotReceivesFrom<C>(me, q, root)) continue;
      uint4 v[kBatch];  // the sender's lines (data in x and z)
      if (isOwn) {
#pragma unroll
        for (int u = 0; u < kBatch; ++u)
          v[u] = make_uint4(static_cast<uint32_t>(own[u]), 0, static_cast<uint32_t>(own[u] >> 32), 0);
      } else {
        const uint4* src = oneShotBlock(o.regions[0], o, n, parity, q) + firstWord;
        unsigned missing = 0;
#pragma unroll
        for (int u = 0; u < kBatch; ++u) missing |= base + u * stride < nWords ? 1u << u : 0u;
        for (int spins = 0; missing != 0 && !aborted;) {
#pragma unroll
          for (int u = 0; u < kBatch; ++u) {
            if (missing & (1u << u)) v[u] = loadVolatile(src + base + u * stride);
          }
#pragma unroll
          for (int u = 0; u < kBatch; ++u) {
            if ((missing & (1u << u)) && v[u].y == flag && v[u].w == flag) missing &= ~(1u << u);
          }
          if (missing != 0 && ++spins == 4096) {
            spins = 0;
            aborted = *a.abortFlag != 0;  // the communicator is unusable from here on
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const size_t w = base + u * stride;
        if (w >= nWords || aborted) continue;
        const uint64_t x = static_cast<uint64_t>(v[u].x) | (static_cast<uint64_t>(v[u].z) << 32);
        if (!kCombines) {
          plainWrite(out(q), w, valid(w), x);
        } else {
          acc[u] = q == 0 ? x : combine(acc[u], x);
        }
      }
    }
    for (int u = 0; u < kBatch && !aborted && kCombines; ++u) {
      const size_t w = base + u * stride;
      if (w < nWords)
        plainWrite(out(0), w, valid(w), postDivisor ? divideWord(acc[u], call.type, postDivisor) : acc[u]);
    }
  }
  oneShotFinish(o, epoch);
}

// Combining words through combineWord (a call that switches on the type and op) costs as much as the
// memory traffic at these sizes: the sums of the common floating types get their own inline copy.
// Broadcast batches 8 words per thread; the others 4 (8 overflow the 128 registers a 512-thread CTA
// may use: all-gather's output blocks spilled 40 bytes per thread).
template <algo::Coll C>
__device__ void oneShot(const OneShotKernelArgs& k) {
  const CallArgs& call = k.call;
  if (C == algo::Coll::kBroadcast) {
    oneShotBody<C, 8>(k.base, call, AnyTypeAndOp{call.type, call.op});  // moves words, combines none
  } else if (C == algo::Coll::kAllGather) {
    oneShotBody<C, 4>(k.base, call, AnyTypeAndOp{call.type, call.op});
  } else {
    withCombiner(call.type, call.op, [&](auto combine) { oneShotBody<C, 4>(k.base, call, combine); });
  }
}

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
      if (sends) aborted = !waitAtLeast(oneShotStarted(o.regions[0]) + q, r.epoch, false, a.abortFlag);
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
