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

// One translation unit per protocol, each with its own copy of the data-movement loops: they
// compile in parallel. Each defines BRAID_PROTO and BRAID_SUFFIX before it includes this file, and
// gets the kernels of that protocol, named braid_<kernel>_<SUFFIX> (algo/algorithm_table.def), and
// their table kernels<SUFFIX>() in KernelKind order.
#define BRAID_CAT2(a, b) a##b
#define BRAID_XCAT2(a, b) BRAID_CAT2(a, b)
#define BRAID_STR(a) #a
#define BRAID_XSTR(a) BRAID_STR(a)
#define BRAID_KERNEL_FN(kernel) BRAID_XCAT2(braid_##kernel##_, BRAID_SUFFIX)

#define BRAID_IMPL(coll, al, kind, kernel, call)                          \
  __global__ void __launch_bounds__(maxBlockThreads(KernelKind::kind))    \
      BRAID_KERNEL_FN(kernel)(const __grid_constant__ CollKernelArgs a) { \
    runKernel<KernelKind::kind, BRAID_PROTO>(a);                          \
  }
#include "algo/algorithm_table.def"

__global__ void __launch_bounds__(kMaxBlockThreads) BRAID_KERNEL_FN(SendRecv)(const __grid_constant__ P2pKernelArgs a) {
  runSendRecv<BRAID_PROTO>(a);
}

const KernelRef BRAID_XCAT2(kKernels, BRAID_SUFFIX)[] = {
#define BRAID_IMPL(coll, al, kind, kernel, call) \
  {reinterpret_cast<const void*>(BRAID_KERNEL_FN(kernel)), "braid_" #kernel "_" BRAID_XSTR(BRAID_SUFFIX)},
#include "algo/algorithm_table.def"
    {reinterpret_cast<const void*>(BRAID_KERNEL_FN(SendRecv)), "braid_SendRecv_" BRAID_XSTR(BRAID_SUFFIX)},
};
static_assert(sizeof(BRAID_XCAT2(kKernels, BRAID_SUFFIX)) / sizeof(KernelRef) ==
                  static_cast<size_t>(KernelKind::kSendRecv) + 1,
              "a kernel per row of algo/algorithm_table.def, then send/recv");

const KernelRef* BRAID_XCAT2(kernels, BRAID_SUFFIX)() { return BRAID_XCAT2(kKernels, BRAID_SUFFIX); }

}  // namespace braid::device
