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
// after another in each block, so they must fit in it together.
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
constexpr int oneShotBatch() {
  return C == algo::Coll::kAllGather || C == algo::Coll::kBroadcast ? 8 : 4;
}

// One call's part on this CTA: its words, where they start in a block (the launch's calls lie one
// after another there) and in the call's buffers, and the thread that takes its first word.
struct OneShotPart {
  size_t nWords;
  size_t firstWord;    // in the block: the call's offset plus the channel's
  size_t firstThread;  // the CTA's threads take a launch's words in turn, across calls: small calls
                       // of a group run side by side, each on its own threads
  size_t bytes;
  size_t begin;  // first element of the channel's range
  size_t count;
  size_t es;
  __device__ int valid(size_t w) const { return static_cast<int>(bytes - w * 8 < 8 ? bytes - w * 8 : 8); }
};

__device__ __forceinline__ OneShotPart oneShotPart(const CallArgs& call, size_t callWords, size_t ctaWords) {
  OneShotPart p;
  p.firstThread = ctaWords % blockDim.x;
  p.es = elemSizeOf(call.type);
  p.count = call.count;
  const algo::Range range = algo::channelRange(call.count, blockIdx.x, call.nChannels);
  p.begin = range.begin;
  p.bytes = (range.end - range.begin) * p.es;
  p.nWords = (p.bytes + 7) / 8;
  p.firstWord = callWords + range.begin * p.es / 8;  // channels start at multiples of 64 elements
  return p;
}

// This thread's first word of part p: word w belongs to thread (p.firstThread + w) % blockDim.x.
__device__ __forceinline__ size_t oneShotFirstWord(const OneShotPart& p) {
  return (threadIdx.x + blockDim.x - p.firstThread) % blockDim.x;
}

// The words of a call in a block: the next call's lines start after them.
__device__ __forceinline__ size_t oneShotWords(const CallArgs& call) {
  return (call.count * elemSizeOf(call.type) + 7) / 8;
}

// The part of the input block rank q's contribution comes from, and of the output block q.
template <algo::Coll C>
__device__ __forceinline__ const char* oneShotIn(const CallArgs& call, const OneShotPart& p, int q) {
  return static_cast<const char*>(call.input) + ((C == algo::Coll::kReduceScatter ? q * p.count : 0) + p.begin) * p.es;
}
template <algo::Coll C>
__device__ __forceinline__ char* oneShotOut(const CallArgs& call, const OneShotPart& p, int q) {
  return static_cast<char*>(call.output) + ((C == algo::Coll::kAllGather ? q * p.count : 0) + p.begin) * p.es;
}

// 0. Tell every peer this launch started (so its previous one is over), then wait until every rank
// this one sends to in any of its calls has started the previous launch (see the top).
template <algo::Coll C>
__device__ __forceinline__ OneShotRound oneShotBegin(const KernelArgs& a, const BatchKernelArgs& k) {
  const OneShotArgs& o = a.oneShot;
  const int n = a.work.nranks, me = a.work.rank;
  OneShotRound r;
  r.epoch = *static_cast<volatile uint64_t*>(oneShotEpochs(o.regions[me]) + blockIdx.x);
  r.flag = oneShotFlag(r.epoch);
  r.parity = r.epoch % kOneShotParities;
  bool aborted = false;
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    for (int q = 0; q < n; ++q) {
      if (q != me) storeVolatile64(oneShotStarted(o.regions[q]) + me, r.epoch + 1);
    }
  }
  if (threadIdx.x == 0 && r.epoch >= kOneShotParities) {
    for (int q = 0; q < n && !aborted; ++q) {
      bool sends = false;
      for (int i = 0; i < k.nCalls; ++i) sends = sends || oneShotSendsTo<C>(me, q, k.calls[i].root);
      if (sends) aborted = !waitAtLeast(oneShotStarted(o.regions[me]) + q, r.epoch, false, a.abortFlag);
    }
  }
  r.aborted = __syncthreads_or(aborted) != 0;
  return r;
}

// 1. Every word this thread owns goes to every receiver: the stores fly while it waits below. The
// loads of kBatch words are issued before any store (a store's asm is a compiler barrier, so one
// load per store would wait out a memory latency each).
template <algo::Coll C>
__device__ __forceinline__ void oneShotSend(const KernelArgs& a, const CallArgs& call, const OneShotPart& p,
                                            const OneShotRound& r) {
  constexpr int kBatch = oneShotBatch<C>();
  const OneShotArgs& o = a.oneShot;
  const int n = a.work.nranks, me = a.work.rank;
  const size_t stride = blockDim.x;
  for (size_t base = oneShotFirstWord(p); base < p.nWords; base += kBatch * stride) {
    uint64_t x[kBatch];
    bool loaded = false;
    for (int k = 1; k < n; ++k) {
      const int q = (me + k) % n;  // peers in a rotated order, so that not every rank hits rank 0 first
      if (!oneShotSendsTo<C>(me, q, call.root)) continue;
      if (C == algo::Coll::kReduceScatter || !loaded) {
        const char* in = oneShotIn<C>(call, p, C == algo::Coll::kReduceScatter ? q : me);
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          const size_t w = base + u * stride;
          if (w < p.nWords) x[u] = plainRead(in, w, p.valid(w));
        }
        loaded = true;
      }
      uint4* dst = oneShotBlock(o.regions[q], o, n, r.parity, me) + p.firstWord;
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const size_t w = base + u * stride;
        if (w < p.nWords) {
          storeVolatile(dst + w,
                        make_uint4(static_cast<uint32_t>(x[u]), r.flag, static_cast<uint32_t>(x[u] >> 32), r.flag));
        }
      }
    }
  }
}

// 2. The same words from every sender (and this rank's own), kBatch at a time. The loads of this
// rank's words go out first and those of each sender's lines right behind them, so one memory
// latency covers the batch; lines not there yet are re-read together until all carry the flag.
// Returns false if the communicator was aborted meanwhile.
template <algo::Coll C, class Combine>
__device__ __forceinline__ bool oneShotReceive(const KernelArgs& a, const CallArgs& call, const OneShotPart& p,
                                               const OneShotRound& r, Combine combine) {
  constexpr int kBatch = oneShotBatch<C>();
  constexpr bool kCombines = C == algo::Coll::kAllReduce || C == algo::Coll::kReduceScatter || C == algo::Coll::kReduce;
  const OneShotArgs& o = a.oneShot;
  const int n = a.work.nranks, me = a.work.rank, root = call.root;
  const size_t stride = blockDim.x;
  const bool receives = C == algo::Coll::kBroadcast ? me != root : C == algo::Coll::kReduce ? me == root : true;
  const bool copiesOwn = C == algo::Coll::kBroadcast && me == root && call.input != call.output;
  const bool usesOwn = kCombines || C == algo::Coll::kAllGather || copiesOwn;
  const int postDivisor = call.postOp ? n : 0;
  const char* own = oneShotIn<C>(call, p, me);
  bool aborted = false;
  for (size_t base = oneShotFirstWord(p); base < p.nWords && !aborted && (receives || copiesOwn);
       base += kBatch * stride) {
    uint64_t mine[kBatch], acc[kBatch];
    if (usesOwn) {
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const size_t w = base + u * stride;
        if (w < p.nWords) mine[u] = plainRead(own, w, p.valid(w));
      }
    }
    for (int q = 0; q < n && !aborted; ++q) {
      const bool isOwn = q == me && usesOwn;
      if (!isOwn && !oneShotReceivesFrom<C>(me, q, root)) continue;
      uint4 v[kBatch];  // the sender's lines (data in x and z)
      if (isOwn) {
#pragma unroll
        for (int u = 0; u < kBatch; ++u)
          v[u] = make_uint4(static_cast<uint32_t>(mine[u]), 0, static_cast<uint32_t>(mine[u] >> 32), 0);
      } else {
        const uint4* src = oneShotBlock(o.regions[me], o, n, r.parity, q) + p.firstWord;
        unsigned missing = 0;
#pragma unroll
        for (int u = 0; u < kBatch; ++u) missing |= base + u * stride < p.nWords ? 1u << u : 0u;
        for (int spins = 0; missing != 0 && !aborted;) {
#pragma unroll
          for (int u = 0; u < kBatch; ++u) {
            if (missing & (1u << u)) v[u] = loadVolatile(src + base + u * stride);
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
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const size_t w = base + u * stride;
        if (w >= p.nWords || aborted) continue;
        const uint64_t x = static_cast<uint64_t>(v[u].x) | (static_cast<uint64_t>(v[u].z) << 32);
        if (!kCombines) {
          plainWrite(oneShotOut<C>(call, p, q), w, p.valid(w), x);
        } else {
          acc[u] = q == 0 ? x : combine(acc[u], x);
        }
      }
    }
    for (int u = 0; u < kBatch && !aborted && kCombines; ++u) {
      const size_t w = base + u * stride;
      if (w < p.nWords) {
        plainWrite(oneShotOut<C>(call, p, 0), w, p.valid(w),
                   postDivisor ? divideWord(acc[u], call.type, postDivisor) : acc[u]);
      }
    }
  }
  return !aborted;
}

// The launch's calls: every call's stores first, then every call's loads, so all stores are in flight
// before the first wait. A launch is one epoch: its calls lie one after another in the blocks (the
// host batches calls only while they fit). Combining words through combineWord (a call that switches
// on the type and op) costs as much as the memory traffic at these sizes: the sums of the common
// floating types get their own inline copy.
template <algo::Coll C>
__device__ void oneShot(const BatchKernelArgs& k) {
  const KernelArgs& a = k.base;
  const OneShotRound r = oneShotBegin<C>(a, k);
  size_t words = 0, ctaWords = 0;
  for (int i = 0; i < k.nCalls && !r.aborted; ++i) {
    const CallArgs& call = k.calls[i];
    if (static_cast<int>(blockIdx.x) < call.nChannels) {
      const OneShotPart p = oneShotPart(call, words, ctaWords);
      oneShotSend<C>(a, call, p, r);
      ctaWords += p.nWords;
    }
    words += oneShotWords(call);
  }
  words = ctaWords = 0;
  bool ok = !r.aborted;
  for (int i = 0; i < k.nCalls && ok; ++i) {
    const CallArgs& call = k.calls[i];
    if (static_cast<int>(blockIdx.x) < call.nChannels) {
      const OneShotPart p = oneShotPart(call, words, ctaWords);
      ctaWords += p.nWords;
      if (C == algo::Coll::kAllGather || C == algo::Coll::kBroadcast) {
        ok = oneShotReceive<C>(a, call, p, r, AnyTypeAndOp{call.type, call.op});  // moves words, combines none
      } else {
        ok = withCombiner(call.type, call.op, [&](auto combine) { return oneShotReceive<C>(a, call, p, r, combine); });
      }
    }
    words += oneShotWords(call);
  }
  // 3. Every thread read this launch's epoch; the next launch's is one more on every channel (CTA 0
  // advances those of the channels this launch has no CTA for).
  __syncthreads();
  if (threadIdx.x == 0) {
    uint64_t* epochs = oneShotEpochs(a.oneShot.regions[a.work.rank]);
    epochs[blockIdx.x] = r.epoch + 1;
    if (blockIdx.x == 0) {
      for (int c = gridDim.x; c < a.oneShot.channels; ++c) epochs[c] += 1;
    }
  }
}

}  // namespace
}  // namespace braid::device
