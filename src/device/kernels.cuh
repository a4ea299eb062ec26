// The kernels: one per (collective and algorithm, protocol), named so that profilers show what ran
// (braid_AllReduce_Ring_LL). The element type and operation are run-time arguments: each kernel
// shares one data-movement function per protocol (moves.cuh), which holds a loop per (type, op).
// A CTA is one channel; its threads split into lanes of args.laneThreads (two lanes for the tree's
// up and down, four for the double binary tree, two for send/recv).
#pragma once

#include <cuda_runtime.h>

#include "device/device_work.h"
#include "device/prims.cuh"

namespace braid::device {

template <KernelKind K, Proto P>
__device__ __forceinline__ void runCall(const KernelArgs& a, const CallArgs& call) {
  const int lane = threadIdx.x / a.laneThreads;
  LaneCtx ctx{
      static_cast<int>(threadIdx.x % a.laneThreads), a.laneThreads, 1 + lane, a.abortFlag, laneWait(a, lane), a.launch};
  algo::WorkArgs w = workOf(a, call, blockIdx.x);
  DeviceBackend<P> b{a, call, ctx, w.channel};
  (void)lane;
#define BRAID_IMPL(coll, al, kind, kernel, call) \
  if constexpr (K == KernelKind::kind) {         \
    call;                                        \
  } else  // NOLINT: the next row's if, or the empty statement below
#include "algo/algorithm_table.def"
  {}
}

// The calls of a launch in order. A CTA past a call's channels skips it; so does the same CTA of
// every peer, so the FIFO steps of each channel stay in agreement. A lane's connection ends belong
// to that lane in every call of a kind, and each Prims stores its steps before the lane's barrier,
// so the next call's Prims reads them back.
template <KernelKind K, Proto P>
__device__ __forceinline__ void runKernel(const CollKernelArgs& k) {
  KernelMark mark(k.base);
  for (int i = 0; i < k.nCalls; ++i) {
    if (static_cast<int>(blockIdx.x) < k.calls[i].nChannels) runCall<K, P>(k.base, k.calls[i]);
  }
}

template <Proto P>
__device__ __forceinline__ void runSendRecv(const P2pKernelArgs& p) {
  const KernelArgs& a = p.base;
  const int lane = threadIdx.x / a.laneThreads;
  LaneCtx ctx{
      static_cast<int>(threadIdx.x % a.laneThreads), a.laneThreads, 1 + lane, a.abortFlag, laneWait(a, lane), a.launch};
  KernelMark mark(a);
  algo::WorkArgs w = workOf(a, p.call, blockIdx.x);
  DeviceBackend<P> b{a, p.call, ctx, w.channel};
  if (lane == 0)
    algo::p2pSendLane(b, w, p.sends, p.nSends);
  else
    algo::p2pRecvLane(b, w, p.recvs, p.nRecvs);
}

// A protocol's kernels are compiled in kKernelParts translation units, so that a build on many cores
// waits for a few kernels, not for all of a protocol's (a kernel row takes about 20 s of nvcc).
// src/device/CMakeLists.txt generates the units: each defines BRAID_PROTO, BRAID_SUFFIX and
// BRAID_PART, includes this file, and gets the kernels of that protocol whose row is in that part,
// named braid_<kernel>_<SUFFIX> (algo/algorithm_table.def), and fillKernels<BRAID_PROTO, BRAID_PART>,
// which writes their entries of the protocol's table. A row missing from this map does not compile.
#define BRAID_PART_kAllReduceRing 0
#define BRAID_PART_kAllReduceTree 0
#define BRAID_PART_kAllReduceDoubleTree 1
#define BRAID_PART_kAllReduceDoubling 1
#define BRAID_PART_kAllReduceHier 2
#define BRAID_PART_kAllReduceCrossTree 3
#define BRAID_PART_kBroadcastRing 0
#define BRAID_PART_kReduceRing 0
#define BRAID_PART_kAllGatherRing 1
#define BRAID_PART_kReduceScatterRing 1
#define BRAID_PART_kAllGatherHier 2
#define BRAID_PART_kReduceScatterHier 2
#define BRAID_PART_kBroadcastHier 3
#define BRAID_PART_kReduceHier 3
#define BRAID_PART_kSendRecv 3
static_assert(kKernelParts == 4, "the map above names parts 0 to 3");

// BRAID_IN_PART(kind, ...) is its other arguments where kind's row is in this unit's part, else nothing.
#define BRAID_KEEP_0(...)
#define BRAID_KEEP_1(...)
#define BRAID_KEEP_2(...)
#define BRAID_KEEP_3(...)
#if BRAID_PART == 0
#undef BRAID_KEEP_0
#define BRAID_KEEP_0(...) __VA_ARGS__
#elif BRAID_PART == 1
#undef BRAID_KEEP_1
#define BRAID_KEEP_1(...) __VA_ARGS__
#elif BRAID_PART == 2
#undef BRAID_KEEP_2
#define BRAID_KEEP_2(...) __VA_ARGS__
#elif BRAID_PART == 3
#undef BRAID_KEEP_3
#define BRAID_KEEP_3(...) __VA_ARGS__
#else
#error "BRAID_PART must be 0 to 3"
#endif
#define BRAID_CAT2(a, b) a##b
#define BRAID_XCAT2(a, b) BRAID_CAT2(a, b)
#define BRAID_IN_PART(kind, ...) BRAID_XCAT2(BRAID_KEEP_, BRAID_PART_##kind)(__VA_ARGS__)
#define BRAID_STR(a) #a
#define BRAID_XSTR(a) BRAID_STR(a)
#define BRAID_KERNEL_FN(kernel) BRAID_XCAT2(braid_##kernel##_, BRAID_SUFFIX)
#define BRAID_KERNEL_ENTRY(kind, kernel)                                                               \
  table[static_cast<int>(KernelKind::kind)] = {reinterpret_cast<const void*>(BRAID_KERNEL_FN(kernel)), \
                                               "braid_" #kernel "_" BRAID_XSTR(BRAID_SUFFIX)};

#define BRAID_IMPL(coll, al, kind, kernel, call)                                                          \
  BRAID_IN_PART(                                                                                          \
      kind, __global__ void __launch_bounds__(maxBlockThreads(KernelKind::kind)) BRAID_KERNEL_FN(kernel)( \
                const __grid_constant__ CollKernelArgs a) { runKernel<KernelKind::kind, BRAID_PROTO>(a); })
#include "algo/algorithm_table.def"

BRAID_IN_PART(
    kSendRecv, __global__ void __launch_bounds__(kMaxBlockThreads)
                   BRAID_KERNEL_FN(SendRecv)(const __grid_constant__ P2pKernelArgs a) { runSendRecv<BRAID_PROTO>(a); })

template <>
void fillKernels<BRAID_PROTO, BRAID_PART>(KernelRef* table) {
#define BRAID_IMPL(coll, al, kind, kernel, call) BRAID_IN_PART(kind, BRAID_KERNEL_ENTRY(kind, kernel))
#include "algo/algorithm_table.def"
  BRAID_IN_PART(kSendRecv, BRAID_KERNEL_ENTRY(kSendRecv, SendRecv))
  (void)table;
}

}  // namespace braid::device
