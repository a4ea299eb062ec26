// The direct kernels (Simple only).
#include "device/direct.cuh"

namespace braid::device {

// The direct kernels (direct.cuh): registered buffers reached by their addresses, no FIFO.
#define BRAID_DIRECT_KERNEL(coll, name)                                   \
  __global__ void __launch_bounds__(kMaxBlockThreads / 2)                 \
      braid_##name##_Direct(const __grid_constant__ DirectKernelArgs a) { \
    directCall<algo::Coll::coll>(a);                                      \
  }
BRAID_DIRECT_KERNEL(kAllReduce, AllReduce)
BRAID_DIRECT_KERNEL(kBroadcast, Broadcast)
BRAID_DIRECT_KERNEL(kReduce, Reduce)
BRAID_DIRECT_KERNEL(kAllGather, AllGather)
BRAID_DIRECT_KERNEL(kReduceScatter, ReduceScatter)
#undef BRAID_DIRECT_KERNEL

const KernelRef& kernelDirect(int coll) {
  static const KernelRef refs[] = {
      // algo::Coll order
      {reinterpret_cast<const void*>(braid_AllReduce_Direct), "braid_AllReduce_Direct"},
      {reinterpret_cast<const void*>(braid_Broadcast_Direct), "braid_Broadcast_Direct"},
      {reinterpret_cast<const void*>(braid_Reduce_Direct), "braid_Reduce_Direct"},
      {reinterpret_cast<const void*>(braid_AllGather_Direct), "braid_AllGather_Direct"},
      {reinterpret_cast<const void*>(braid_ReduceScatter_Direct), "braid_ReduceScatter_Direct"},
  };
  static_assert(
      sizeof(refs) / sizeof(refs[0]) == kDirectColls && kDirectColls == static_cast<int>(algo::Coll::kNumColls),
      "a kernel per collective");
  return refs[coll];
}

}  // namespace braid::device
