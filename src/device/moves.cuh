// The data movement of one Prims operation: up to three sources reduced element-wise into up to
// three destinations, by the threads of one lane. Sources and destinations are plain memory (user
// buffers, Simple slots), LL slots (lines carrying a flag beside each 4 data bytes) or LL128 slots
// (128-byte lines of 120 data bytes and a flag).
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/device_work.h"

namespace braid::device {

constexpr int kMaxSrcs = 1 + algo::kMaxPeers;  // the rank's own data and each receive peer
constexpr int kMaxDsts = 1 + algo::kMaxPeers;  // the output and each send peer

struct Moves {
  const char* src[kMaxSrcs];
  char* dst[kMaxDsts];
  uint32_t srcFlag[kMaxSrcs];  // LL sources: the flag each line must carry (0: plain memory)
  int srcPeer[kMaxSrcs];       // LL sources: the rank that writes the lines (for the watchdog)
  uint32_t dstFlag[kMaxDsts];  // LL destinations: the flag to write (0: plain memory)
  int nSrc;
  int nDst;
  size_t n;         // elements
  int postDivisor;  // avg: divide the result by this (0: no post-op)
};

/// Where a lane stands: its threads, its barrier, the communicator's abort flag and (BRAID_TIMEOUT)
/// the record its long waits are told to.
struct LaneCtx {
  int tid;  // 0..nthreads-1 within the lane
  int nthreads;
  int barrier;  // named barrier id of the lane (1..4: the double binary tree has four lanes)
  const volatile int* abortFlag;
  LaneWait* wait;  // null without the watchdog
  uint64_t launch;
};

/// The record of lane `lane` of this CTA (null without the watchdog).
__device__ __forceinline__ LaneWait* laneWait(const KernelArgs& a, int lane) {
  if (a.watch == nullptr) return nullptr;
  const int c = blockIdx.x < kWatchedChannels ? static_cast<int>(blockIdx.x) : kWatchedChannels - 1;
  return &a.watch->lanes[c * kWatchedLanes + lane];
}

/// A long wait tells the watchdog what it waits for (called at the wait's abort checks only).
__device__ __forceinline__ void noteWait(LaneWait* w, uint64_t launch, WaitWhat what, int peer, uint64_t target,
                                         uint64_t seen) {
  if (w == nullptr) return;
  volatile LaneWait* v = w;
  v->launch = launch;
  v->target = target;
  v->seen = seen;
  v->peer = peer;
  v->what = static_cast<int32_t>(what);
}

/// Thread 0 of CTA 0 marks a kernel's start and end for the watchdog.
struct KernelMark {
  const KernelArgs& a;
  __device__ explicit KernelMark(const KernelArgs& args) : a(args) {
    if (a.watch != nullptr && blockIdx.x == 0 && threadIdx.x == 0)
      *static_cast<volatile uint64_t*>(&a.watch->started) = a.launch;
  }
  __device__ ~KernelMark() {
    if (a.watch != nullptr && blockIdx.x == 0 && threadIdx.x == 0)
      *static_cast<volatile uint64_t*>(&a.watch->finished) = a.launch;
  }
};

/// Moves `m`; all threads of the lane call it. Simple: plain memory only. LL, LL128: returns false
/// if the communicator was aborted while a line was awaited.
template <Proto P>
__device__ __noinline__ bool moveData(const Moves& m, int type, int op, const LaneCtx& lane);

}  // namespace braid::device

// ---- Definitions (each protocol's kernel file instantiates its own) -----------------------------

#include "device/reduce.cuh"

namespace braid::device {
namespace {

// Loads that bypass L1 (a FIFO slot is rewritten by the peer while this kernel runs), returning
// the bits as T.
template <class T>
__device__ __forceinline__ T loadCg(const void* p) {
  static_assert(sizeof(T) == 16 || sizeof(T) == 8 || sizeof(T) == 4 || sizeof(T) == 2 || sizeof(T) == 1);
  T out;
  if constexpr (sizeof(T) == 16) {
    uint4 v = __ldcg(static_cast<const uint4*>(p));
    memcpy(&out, &v, 16);
  } else if constexpr (sizeof(T) == 8) {
    unsigned long long v = __ldcg(static_cast<const unsigned long long*>(p));
    memcpy(&out, &v, 8);
  } else if constexpr (sizeof(T) == 4) {
    unsigned v = __ldcg(static_cast<const unsigned*>(p));
    memcpy(&out, &v, 4);
  } else if constexpr (sizeof(T) == 2) {
    unsigned short v = __ldcg(static_cast<const unsigned short*>(p));
    memcpy(&out, &v, 2);
  } else {
    unsigned char v = __ldcg(static_cast<const unsigned char*>(p));
    memcpy(&out, &v, 1);
  }
  return out;
}

__device__ __forceinline__ bool aligned(const void* p, size_t a) {
  return (reinterpret_cast<uintptr_t>(p) & (a - 1)) == 0;
}

// ---- Simple ------------------------------------------------------------------------------------

template <class F, class Op>
__device__ __noinline__ void simpleLoop(const Moves& m, const LaneCtx& lane) {
  using S = typename F::Storage;
  const size_t bytes = m.n * sizeof(S);
  bool vec = true;
  for (int j = 0; j < m.nSrc; ++j) vec = vec && aligned(m.src[j], 16);
  for (int j = 0; j < m.nDst; ++j) vec = vec && aligned(m.dst[j], 16);
  const size_t nPacks = vec ? bytes / 16 : 0;
  const size_t stride = lane.nthreads;
  constexpr int kUnroll = 4;
  size_t i = lane.tid;
  for (; i + (kUnroll - 1) * stride < nPacks; i += kUnroll * stride) {
    uint4 acc[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc[u] = loadCg<uint4>(m.src[0] + (i + u * stride) * 16);
    for (int j = 1; j < m.nSrc; ++j) {
      uint4 x[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) x[u] = loadCg<uint4>(m.src[j] + (i + u * stride) * 16);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) acc[u] = reduceUnit<F, Op>(acc[u], x[u]);
    }
    if (m.postDivisor) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) acc[u] = divideUnit<F>(acc[u], m.postDivisor);
    }
    for (int d = 0; d < m.nDst; ++d) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) *reinterpret_cast<uint4*>(m.dst[d] + (i + u * stride) * 16) = acc[u];
    }
  }
  for (; i < nPacks; i += stride) {
    uint4 acc = loadCg<uint4>(m.src[0] + i * 16);
    for (int j = 1; j < m.nSrc; ++j) acc = reduceUnit<F, Op>(acc, loadCg<uint4>(m.src[j] + i * 16));
    if (m.postDivisor) acc = divideUnit<F>(acc, m.postDivisor);
    for (int d = 0; d < m.nDst; ++d) *reinterpret_cast<uint4*>(m.dst[d] + i * 16) = acc;
  }
  // The rest (or everything, unaligned): element by element.
  for (size_t e = nPacks * 16 / sizeof(S) + lane.tid; e < m.n; e += stride) {
    typename F::Math acc = F::load(loadCg<S>(m.src[0] + e * sizeof(S)));
    for (int j = 1; j < m.nSrc; ++j) acc = Op::apply(acc, F::load(loadCg<S>(m.src[j] + e * sizeof(S))));
    S out = F::store(acc);
    if (m.postDivisor) out = F::store(divideBy(F::load(out), m.postDivisor));
    for (int d = 0; d < m.nDst; ++d) *reinterpret_cast<S*>(m.dst[d] + e * sizeof(S)) = out;
  }
}

// ---- LL ----------------------------------------------------------------------------------------

__device__ __forceinline__ uint4 loadVolatile(const uint4* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

__device__ __forceinline__ void storeVolatile(uint4* p, uint4 v) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

// Word w of an LL slot: waits until both halves carry `flag`. False on abort.
__device__ __forceinline__ bool llRead(const char* slot, size_t w, uint32_t flag, const LaneCtx& lane, int peer,
                                       uint64_t* out) {
  const uint4* line = reinterpret_cast<const uint4*>(slot) + w;
  uint4 v = loadVolatile(line);
  int spins = 0;
  while (v.y != flag || v.w != flag) {
    if (++spins == 4096) {
      spins = 0;
      noteWait(lane.wait, lane.launch, WaitWhat::kLines, peer, flag, v.y);
      if (*lane.abortFlag) return false;
    }
    v = loadVolatile(line);
  }
  *out = static_cast<uint64_t>(v.x) | (static_cast<uint64_t>(v.z) << 32);
  return true;
}

// Plain memory, `valid` (1..8) bytes of word w.
__device__ __forceinline__ uint64_t plainRead(const char* base, size_t w, int valid) {
  const char* p = base + w * 8;
  if (valid == 8 && aligned(p, 8)) return loadCg<uint64_t>(p);
  uint64_t v = 0;
  for (int b = 0; b < valid; ++b) v |= static_cast<uint64_t>(loadCg<unsigned char>(p + b)) << (8 * b);
  return v;
}

__device__ __forceinline__ void plainWrite(char* base, size_t w, int valid, uint64_t v) {
  char* p = base + w * 8;
  if (valid == 8 && aligned(p, 8)) {
    *reinterpret_cast<uint64_t*>(p) = v;
    return;
  }
  for (int b = 0; b < valid; ++b) p[b] = static_cast<char>(v >> (8 * b));
}

// One 8-byte word of `type` combined element-wise with another by `op`, and the avg division. LL
// moves words, not vectors: a call per word costs little next to its flag polls, and keeps one LL
// loop for every (type, op) instead of one each (which took ptxas minutes).
__device__ __noinline__ uint64_t combineWord(uint64_t a, uint64_t b, int type, int op);
__device__ __noinline__ uint64_t divideWord(uint64_t a, int type, int divisor);

// Each thread handles kLlUnroll words at a time and issues every load of a group before it waits
// on any: one flag poll is a round trip to L2, so polling word after word would serialise them.
constexpr int kLlUnroll = 4;

__device__ __noinline__ bool llLoop(const Moves& m, int type, int op, const LaneCtx& lane) {
  const size_t bytes = m.n * elemSizeOf(type);
  const size_t nWords = (bytes + 7) / 8;
  const size_t stride = lane.nthreads;
  for (size_t base = lane.tid; base < nWords; base += kLlUnroll * stride) {
    uint64_t acc[kLlUnroll];
    for (int j = 0; j < m.nSrc; ++j) {
      uint64_t x[kLlUnroll];
      if (m.srcFlag[j] != 0) {
        const uint4* lines = reinterpret_cast<const uint4*>(m.src[j]);
        uint4 v[kLlUnroll];
#pragma unroll
        for (int u = 0; u < kLlUnroll; ++u) {
          if (base + u * stride < nWords) v[u] = loadVolatile(lines + base + u * stride);
        }
#pragma unroll
        for (int u = 0; u < kLlUnroll; ++u) {
          const size_t w = base + u * stride;
          if (w >= nWords) continue;
          if (v[u].y == m.srcFlag[j] && v[u].w == m.srcFlag[j]) {
            x[u] = static_cast<uint64_t>(v[u].x) | (static_cast<uint64_t>(v[u].z) << 32);
          } else if (!llRead(m.src[j], w, m.srcFlag[j], lane, m.srcPeer[j], &x[u])) {
            return false;
          }
        }
      } else {
#pragma unroll
        for (int u = 0; u < kLlUnroll; ++u) {
          const size_t w = base + u * stride;
          if (w < nWords) x[u] = plainRead(m.src[j], w, static_cast<int>(bytes - w * 8 < 8 ? bytes - w * 8 : 8));
        }
      }
      for (int u = 0; u < kLlUnroll; ++u) acc[u] = j == 0 ? x[u] : combineWord(acc[u], x[u], type, op);
    }
    for (int u = 0; u < kLlUnroll; ++u) {
      const size_t w = base + u * stride;
      if (w >= nWords) continue;
      const int valid = static_cast<int>(bytes - w * 8 < 8 ? bytes - w * 8 : 8);
      uint64_t out = m.postDivisor ? divideWord(acc[u], type, m.postDivisor) : acc[u];
      for (int d = 0; d < m.nDst; ++d) {
        if (m.dstFlag[d] != 0) {
          uint4 line =
              make_uint4(static_cast<uint32_t>(out), m.dstFlag[d], static_cast<uint32_t>(out >> 32), m.dstFlag[d]);
          storeVolatile(reinterpret_cast<uint4*>(m.dst[d]) + w, line);
        } else {
          plainWrite(m.dst[d], w, valid, out);
        }
      }
    }
  }
  return true;
}

// How a loop of words combines two of them: the sums of the common float formats inline, every
// other (type, op) through one call.
template <class F>
struct InlineSum {
  __device__ __forceinline__ uint64_t operator()(uint64_t acc, uint64_t x) const {
    return reduceUnit<F, SumOp>(acc, x);
  }
};

struct AnyTypeAndOp {
  int type, op;
  __device__ __forceinline__ uint64_t operator()(uint64_t acc, uint64_t x) const {
    return combineWord(acc, x, type, op);
  }
};

// Calls body(combiner) with InlineSum for the sum (and avg) of f32, bf16 and f16, AnyTypeAndOp
// otherwise.
template <class Body>
__device__ __forceinline__ auto withCombiner(int type, int op, Body body) {
  if (op == 0 || op == 4) {  // sum, avg (sum, then the division)
    switch (type) {
      case 7: return body(InlineSum<Plain<float, float>>{});
      case 9: return body(InlineSum<Bf16Fmt>{});
      case 6: return body(InlineSum<HalfFmt>{});
      default: break;
    }
  }
  return body(AnyTypeAndOp{type, op});
}

// ---- LL128 -------------------------------------------------------------------------------------
//
// A line is 128 bytes: 8 threads of a warp hold 16 bytes each, thread 7's second word is the flag,
// so a line carries data words 15L .. 15L+14. The 8 threads store a line in one instruction, and
// NVLink (and a GPU's own memory) delivers such a store whole, so a reader that loads the line in
// one instruction and sees the flag sees all of its data: no fence, and 120 of 128 bytes are data.
// A warp moves 4 lines per instruction; each lane's warps take kLl128Unroll such groups at a time,
// issuing every load of them before waiting on any flag.

constexpr int kLl128Unroll = 4;
constexpr size_t kLl128DataWords = kLl128DataPerLine / 8;
constexpr uint32_t kFullWarp = 0xffffffffu;

// A thread's 16 bytes of a line, loaded or stored only where `on` (a predicate inside the asm, not
// a branch: the 8 threads of a line must issue it as one instruction, so the warp stays converged).
__device__ __forceinline__ void loadLine16If(bool on, const char* p, uint64_t* a, uint64_t* b) {
  asm volatile("{ .reg .pred on; setp.ne.u32 on, %3, 0; @on ld.volatile.global.v2.u64 {%0,%1}, [%2]; }"
               : "+l"(*a), "+l"(*b)
               : "l"(p), "r"(static_cast<uint32_t>(on))
               : "memory");
}

__device__ __forceinline__ void storeLine16If(bool on, char* p, uint64_t a, uint64_t b) {
  asm volatile("{ .reg .pred on; setp.ne.u32 on, %3, 0; @on st.volatile.global.v2.u64 [%0], {%1,%2}; }" ::"l"(p),
               "l"(a), "l"(b), "r"(static_cast<uint32_t>(on))
               : "memory");
}

// Source j's data of the warp's kLl128Unroll groups into x, without waiting for any of it: a slot's
// lines (each loaded by a converged warp in one instruction, see above) or the plain words of the
// same lines.
template <int U>
__device__ __forceinline__ void ll128Issue(const Moves& m, int j, size_t g0, size_t nLines, size_t bytes, int sub,
                                           int pos, uint64_t (&x)[U][2]) {
  if (m.srcFlag[j] != 0) {
    __syncwarp();
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const size_t line = (g0 + u) * 4 + sub;
      loadLine16If(line < nLines, m.src[j] + line * kLl128LineBytes + pos * 16, &x[u][0], &x[u][1]);
    }
    return;
  }
  const size_t nWords = (bytes + 7) / 8;
  auto valid = [&](size_t w) { return static_cast<int>(bytes - w * 8 < 8 ? bytes - w * 8 : 8); };
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const size_t line = (g0 + u) * 4 + sub;
    const size_t w = line * kLl128DataWords + 2 * pos;
    x[u][0] = line < nLines && w < nWords ? plainRead(m.src[j], w, valid(w)) : 0;
    x[u][1] = line < nLines && pos < 7 && w + 1 < nWords ? plainRead(m.src[j], w + 1, valid(w + 1)) : 0;
  }
}

// Waits until every line source j's loads in x came from carries the step's flag, reloading all the
// groups still short of it together: one round trip after the last line lands, where waiting for
// the groups one after the other cost a round trip per group. Plain sources return at once. False
// on abort. All 32 threads of the warp call it.
template <int U>
__device__ __forceinline__ bool ll128Wait(const Moves& m, int j, size_t g0, size_t nLines, int sub, int pos,
                                          const LaneCtx& lane, uint64_t (&x)[U][2]) {
  if (m.srcFlag[j] == 0) return true;
  const uint64_t flag = m.srcFlag[j];
  auto missing = [&](int u) { return (g0 + u) * 4 + sub < nLines && pos == 7 && x[u][1] != flag; };
  unsigned waiting = 0;  // the groups whose lines some thread of the warp still waits for (warp-uniform)
#pragma unroll
  for (int u = 0; u < U; ++u) waiting |= __any_sync(kFullWarp, missing(u)) ? 1u << u : 0u;
  int spins = 0;
  while (waiting != 0) {
    // A line's flag vouches for the data the other 7 threads loaded only if they loaded it in the
    // same instruction: every reload is issued by the converged warp, predicated, never branched.
    __syncwarp();
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const size_t line = (g0 + u) * 4 + sub;
      loadLine16If(((waiting >> u) & 1u) != 0 && line < nLines, m.src[j] + line * kLl128LineBytes + pos * 16, &x[u][0],
                   &x[u][1]);
    }
    unsigned still = 0;
#pragma unroll
    for (int u = 0; u < U; ++u) still |= ((waiting >> u) & 1u) != 0 && __any_sync(kFullWarp, missing(u)) ? 1u << u : 0u;
    waiting = still;
    if (waiting != 0 && ++spins == 4096) {
      spins = 0;
      if (pos == 7) noteWait(lane.wait, lane.launch, WaitWhat::kLines, m.srcPeer[j], flag, x[0][1]);
      if (__any_sync(kFullWarp, *lane.abortFlag != 0)) return false;
    }
  }
  return true;
}

template <class Combine>
__device__ __noinline__ bool ll128Body(const Moves& m, int type, const LaneCtx& lane, Combine combine) {
  constexpr int U = kLl128Unroll;
  const size_t bytes = m.n * elemSizeOf(type);
  const size_t nWords = (bytes + 7) / 8;
  const size_t nLines = (nWords + kLl128DataWords - 1) / kLl128DataWords;
  const size_t nGroups = (nLines + 3) / 4;
  const int warp = lane.tid / 32, nWarps = lane.nthreads / 32;
  const int sub = (lane.tid % 32) / 8;  // which of the warp's 4 lines
  const int pos = lane.tid % 8;         // 16-byte position in the line; 7 holds the flag
  auto valid = [&](size_t w) { return static_cast<int>(bytes - w * 8 < 8 ? bytes - w * 8 : 8); };
  // The loop bounds are the same for the 32 threads of a warp (the flag votes need all of them).
  for (size_t g0 = static_cast<size_t>(warp) * U; g0 < nGroups; g0 += static_cast<size_t>(nWarps) * U) {
    // Sources two at a time (Prims lists the rank's own data first, then the receive slots): both
    // sources' loads are in flight before the warp waits on either, and the reduction keeps the
    // order ((s0 op s1) op s2).
    uint64_t acc[U][2] = {}, x[U][2] = {};
    ll128Issue(m, 0, g0, nLines, bytes, sub, pos, acc);
    if (m.nSrc > 1) ll128Issue(m, 1, g0, nLines, bytes, sub, pos, x);
    if (!ll128Wait(m, 0, g0, nLines, sub, pos, lane, acc)) return false;
    for (int j = 1; j < m.nSrc; ++j) {
      if (j > 1) ll128Issue(m, j, g0, nLines, bytes, sub, pos, x);
      if (!ll128Wait(m, j, g0, nLines, sub, pos, lane, x)) return false;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        acc[u][0] = combine(acc[u][0], x[u][0]);
        acc[u][1] = combine(acc[u][1], x[u][1]);
      }
    }
    if (m.postDivisor) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        acc[u][0] = divideWord(acc[u][0], type, m.postDivisor);
        acc[u][1] = divideWord(acc[u][1], type, m.postDivisor);
      }
    }
    for (int d = 0; d < m.nDst; ++d) {
      if (m.dstFlag[d] != 0) {
        // The 8 threads of a line store it, flag included, in one instruction of a converged warp:
        // byte-wise copies of unaligned words and the flag thread's shorter path diverge it before.
        __syncwarp();
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const size_t line = (g0 + u) * 4 + sub;
          storeLine16If(line < nLines, m.dst[d] + line * kLl128LineBytes + pos * 16, acc[u][0],
                        pos == 7 ? m.dstFlag[d] : acc[u][1]);
        }
        continue;
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const size_t line = (g0 + u) * 4 + sub;
        const size_t w = line * kLl128DataWords + 2 * pos;
        if (line >= nLines) continue;
        if (w < nWords) plainWrite(m.dst[d], w, valid(w), acc[u][0]);
        if (pos < 7 && w + 1 < nWords) plainWrite(m.dst[d], w + 1, valid(w + 1), acc[u][1]);
      }
    }
  }
  // Leave converged: the plain copies above diverge the warp, and the lane barrier follows.
  __syncwarp();
  return true;
}

__device__ __noinline__ bool ll128Loop(const Moves& m, int type, int op, const LaneCtx& lane) {
  return withCombiner(type, op, [&](auto combine) { return ll128Body(m, type, lane, combine); });
}

// ---- Dispatch on (type, op): each loop exists once per format and operation -------------------

// Calls Loop<Format, Op>::run(args...) for the run-time (type, op).
template <template <class, class> class Loop, class R, class F, class... Args>
__device__ __forceinline__ R byOp(int op, Args... args) {
  switch (op) {
    case 1: return Loop<F, ProdOp>::run(args...);
    case 2: return Loop<F, MaxOp>::run(args...);
    case 3: return Loop<F, MinOp>::run(args...);
    default: return Loop<F, SumOp>::run(args...);  // sum, and avg (sum, then the post-division)
  }
}

template <template <class, class> class Loop, class R, class... Args>
__device__ __forceinline__ R byType(int type, int op, Args... args) {
  switch (type) {  // braidDataType_t
    case 0: return byOp<Loop, R, Plain<int8_t, int8_t>>(op, args...);
    case 1: return byOp<Loop, R, Plain<uint8_t, uint8_t>>(op, args...);
    case 2: return byOp<Loop, R, Plain<int32_t, int32_t>>(op, args...);
    case 3: return byOp<Loop, R, Plain<uint32_t, uint32_t>>(op, args...);
    case 4: return byOp<Loop, R, Plain<int64_t, int64_t>>(op, args...);
    case 5: return byOp<Loop, R, Plain<uint64_t, uint64_t>>(op, args...);
    case 6: return byOp<Loop, R, HalfFmt>(op, args...);
    case 8: return byOp<Loop, R, Plain<double, double>>(op, args...);
    case 9: return byOp<Loop, R, Bf16Fmt>(op, args...);
    case 10: return byOp<Loop, R, E4m3Fmt>(op, args...);
    case 11: return byOp<Loop, R, E5m2Fmt>(op, args...);
    default: return byOp<Loop, R, Plain<float, float>>(op, args...);
  }
}

template <class F, class Op>
struct SimpleLoop {
  static __device__ __forceinline__ bool run(const Moves* m, const LaneCtx* lane) {
    simpleLoop<F, Op>(*m, *lane);
    return true;
  }
};

template <class F, class Op>
struct CombineWord {
  static __device__ __forceinline__ uint64_t run(uint64_t a, uint64_t b) { return reduceUnit<F, Op>(a, b); }
};

__device__ __noinline__ uint64_t combineWord(uint64_t a, uint64_t b, int type, int op) {
  return byType<CombineWord, uint64_t>(type, op, a, b);
}

template <class F, class Op>
struct DivideWord {
  static __device__ __forceinline__ uint64_t run(uint64_t a, int divisor) { return divideUnit<F>(a, divisor); }
};

__device__ __noinline__ uint64_t divideWord(uint64_t a, int type, int divisor) {
  return byType<DivideWord, uint64_t>(type, 0 /* sum: the op does not matter */, a, divisor);
}

}  // namespace

template <Proto P>
__device__ __noinline__ bool moveData(const Moves& m, int type, int op, const LaneCtx& lane) {
  if constexpr (P == Proto::kSimple) {
    return byType<SimpleLoop, bool>(type, op, &m, &lane);
  } else if constexpr (P == Proto::kLL) {
    return llLoop(m, type, op, lane);
  } else {
    return ll128Loop(m, type, op, lane);
  }
}

}  // namespace braid::device
