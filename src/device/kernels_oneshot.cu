// The one-shot kernels (LL only).
#include "device/oneshot.cuh"
#include "device/oneshot_group.cuh"

namespace braid::device {

// Each one-shot collective has two kernels: one call (braid_AllReduce_OneShot_LL, the call in a small
// parameter, no barrier before its stores) and a group's calls (braid_AllReduce_OneShotGroup_LL).
#define BRAID_ONESHOT_KERNELS(coll, name)                                           \
  __global__ void __launch_bounds__(maxBlockThreads(KernelKind::kAllReduceOneShot)) \
      braid_##name##_OneShot_LL(const __grid_constant__ OneShotKernelArgs a) {      \
    oneShot<algo::Coll::coll>(a);                                                   \
  }                                                                                 \
  __global__ void __launch_bounds__(maxBlockThreads(KernelKind::kAllReduceOneShot)) \
      braid_##name##_OneShotGroup_LL(const __grid_constant__ CollKernelArgs a) {    \
    oneShotGroup<algo::Coll::coll>(a);                                              \
  }
#define BRAID_ONESHOT_REFS(name)                                                                       \
  {                                                                                                    \
    {reinterpret_cast<const void*>(braid_##name##_OneShot_LL), "braid_" #name "_OneShot_LL"}, {        \
      reinterpret_cast<const void*>(braid_##name##_OneShotGroup_LL), "braid_" #name "_OneShotGroup_LL" \
    }                                                                                                  \
  }
BRAID_ONESHOT_KERNELS(kAllReduce, AllReduce)
BRAID_ONESHOT_KERNELS(kAllGather, AllGather)
BRAID_ONESHOT_KERNELS(kReduceScatter, ReduceScatter)
BRAID_ONESHOT_KERNELS(kBroadcast, Broadcast)
BRAID_ONESHOT_KERNELS(kReduce, Reduce)

const KernelRef& kernelOneShot(KernelKind kind, bool group) {
  static const KernelRef refs[][2] = {
      BRAID_ONESHOT_REFS(AllReduce), BRAID_ONESHOT_REFS(AllGather), BRAID_ONESHOT_REFS(ReduceScatter),
      BRAID_ONESHOT_REFS(Broadcast), BRAID_ONESHOT_REFS(Reduce),
  };
  return refs[static_cast<int>(kind) - static_cast<int>(KernelKind::kAllReduceOneShot)][group ? 1 : 0];
}
}  // namespace braid::device
