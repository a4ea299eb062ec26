// The LL protocol's kernels (kernels.cuh).
#define BRAID_PROTO Proto::kLL
#include "device/kernels.cuh"
#include "device/oneshot.cuh"

namespace braid::device {
BRAID_KERNEL_TABLE(LL)

#define BRAID_ONESHOT_KERNEL(name, coll)                                            \
  __global__ void __launch_bounds__(maxBlockThreads(KernelKind::kAllReduceOneShot)) \
      name(const __grid_constant__ BatchKernelArgs a) {                             \
    oneShot<coll>(a);                                                               \
  }
BRAID_ONESHOT_KERNEL(braid_AllReduce_OneShot_LL, algo::Coll::kAllReduce)
BRAID_ONESHOT_KERNEL(braid_AllGather_OneShot_LL, algo::Coll::kAllGather)
BRAID_ONESHOT_KERNEL(braid_ReduceScatter_OneShot_LL, algo::Coll::kReduceScatter)
BRAID_ONESHOT_KERNEL(braid_Broadcast_OneShot_LL, algo::Coll::kBroadcast)
BRAID_ONESHOT_KERNEL(braid_Reduce_OneShot_LL, algo::Coll::kReduce)

const KernelRef& kernelOneShot(KernelKind kind) {
  static const KernelRef refs[] = {
      {reinterpret_cast<const void*>(braid_AllReduce_OneShot_LL), "braid_AllReduce_OneShot_LL"},
      {reinterpret_cast<const void*>(braid_AllGather_OneShot_LL), "braid_AllGather_OneShot_LL"},
      {reinterpret_cast<const void*>(braid_ReduceScatter_OneShot_LL), "braid_ReduceScatter_OneShot_LL"},
      {reinterpret_cast<const void*>(braid_Broadcast_OneShot_LL), "braid_Broadcast_OneShot_LL"},
      {reinterpret_cast<const void*>(braid_Reduce_OneShot_LL), "braid_Reduce_OneShot_LL"},
  };
  return refs[static_cast<int>(kind) - static_cast<int>(KernelKind::kAllReduceOneShot)];
}
}  // namespace braid::device
