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
  if constexpr (K == KernelKind::kAllReduceRing) {
    algo::ringAllReduce(b, w);
  } else if constexpr (K == KernelKind::kAllReduceTree) {
    algo::treeAllReduce(b, w, lane);
  } else if constexpr (K == KernelKind::kAllReduceDoubleTree) {
    algo::doubleTreeAllReduce(b, w, lane);
  } else if constexpr (K == KernelKind::kAllReduceDoubling) {
    algo::doublingAllReduce(b, w);
  } else if constexpr (K == KernelKind::kBroadcastRing) {
    algo::chainBroadcast(b, w);
  } else if constexpr (K == KernelKind::kReduceRing) {
    algo::chainReduce(b, w);
  } else if constexpr (K == KernelKind::kAllGatherRing) {
    algo::ringAllGather(b, w);
  } else if constexpr (K == KernelKind::kReduceScatterRing) {
    algo::ringReduceScatter(b, w);
  } else if constexpr (K == KernelKind::kAllReduceHier) {
    algo::hierAllReduce(b, w);
  }
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

// One translation unit per protocol, each with its own copy of the data-movement loops: the two
// compile in parallel. Each defines the kernels of protocol PROTO, named braid_<what>_<SUFFIX>.
#define BRAID_KERNEL(name, kind)                                                                            \
  __global__ void __launch_bounds__(maxBlockThreads(kind)) name(const __grid_constant__ CollKernelArgs a) { \
    runKernel<kind, BRAID_PROTO>(a);                                                                        \
  }

#define BRAID_KERNEL_TABLE(suffix)                                                                                 \
  BRAID_KERNEL(braid_AllReduce_Ring_##suffix, KernelKind::kAllReduceRing)                                          \
  BRAID_KERNEL(braid_AllReduce_Tree_##suffix, KernelKind::kAllReduceTree)                                          \
  BRAID_KERNEL(braid_AllReduce_DoubleTree_##suffix, KernelKind::kAllReduceDoubleTree)                              \
  BRAID_KERNEL(braid_AllReduce_Doubling_##suffix, KernelKind::kAllReduceDoubling)                                  \
  BRAID_KERNEL(braid_Broadcast_Ring_##suffix, KernelKind::kBroadcastRing)                                          \
  BRAID_KERNEL(braid_Reduce_Ring_##suffix, KernelKind::kReduceRing)                                                \
  BRAID_KERNEL(braid_AllGather_Ring_##suffix, KernelKind::kAllGatherRing)                                          \
  BRAID_KERNEL(braid_ReduceScatter_Ring_##suffix, KernelKind::kReduceScatterRing)                                  \
  BRAID_KERNEL(braid_AllReduce_Hier_##suffix, KernelKind::kAllReduceHier)                                          \
  __global__ void __launch_bounds__(kMaxBlockThreads)                                                              \
      braid_SendRecv_##suffix(const __grid_constant__ P2pKernelArgs a) {                                           \
    runSendRecv<BRAID_PROTO>(a);                                                                                   \
  }                                                                                                                \
  const KernelRef kKernels##suffix[] = {                                                                           \
      {reinterpret_cast<const void*>(braid_AllReduce_Ring_##suffix), "braid_AllReduce_Ring_" #suffix},             \
      {reinterpret_cast<const void*>(braid_AllReduce_Tree_##suffix), "braid_AllReduce_Tree_" #suffix},             \
      {reinterpret_cast<const void*>(braid_AllReduce_DoubleTree_##suffix), "braid_AllReduce_DoubleTree_" #suffix}, \
      {reinterpret_cast<const void*>(braid_AllReduce_Doubling_##suffix), "braid_AllReduce_Doubling_" #suffix},     \
      {reinterpret_cast<const void*>(braid_Broadcast_Ring_##suffix), "braid_Broadcast_Ring_" #suffix},             \
      {reinterpret_cast<const void*>(braid_Reduce_Ring_##suffix), "braid_Reduce_Ring_" #suffix},                   \
      {reinterpret_cast<const void*>(braid_AllGather_Ring_##suffix), "braid_AllGather_Ring_" #suffix},             \
      {reinterpret_cast<const void*>(braid_ReduceScatter_Ring_##suffix), "braid_ReduceScatter_Ring_" #suffix},     \
      {reinterpret_cast<const void*>(braid_AllReduce_Hier_##suffix), "braid_AllReduce_Hier_" #suffix},             \
      {reinterpret_cast<const void*>(braid_SendRecv_##suffix), "braid_SendRecv_" #suffix},                         \
  };                                                                                                               \
  const KernelRef* kernels##suffix() { return kKernels##suffix; }

}  // namespace braid::device
