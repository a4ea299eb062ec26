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
// its own (oneShot, below: the call in a small parameter, no barrier before its stores, each thread
// checks the peers' "started" words itself). A group's kernel (oneShotGroup, oneshot_group.cuh)
// first lays the calls out in a shared-memory table, which takes a barrier; its threads then take
// the words of all the calls in turn.
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
            if (oneShotSendsTo<C>(me, p, root))
              aborted = !waitAtLeast(started + p, epoch, false, a.abortFlag, laneWait(a, 0), a.launch,
                                     WaitWhat::kPeerStarted, p);
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
            noteWait(laneWait(a, 0), a.launch, WaitWhat::kLines, q, flag, v[0].y);
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
  KernelMark mark(k.base);
  const CallArgs& call = k.call;
  if (C == algo::Coll::kBroadcast) {
    oneShotBody<C, 8>(k.base, call, AnyTypeAndOp{call.type, call.op});  // moves words, combines none
  } else if (C == algo::Coll::kAllGather) {
    oneShotBody<C, 4>(k.base, call, AnyTypeAndOp{call.type, call.op});
  } else {
    withCombiner(call.type, call.op, [&](auto combine) { oneShotBody<C, 4>(k.base, call, combine); });
  }
}

}  // namespace
}  // namespace braid::device
