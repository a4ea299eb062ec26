// Kernel launch by (kind, protocol).
#include <cuda_runtime.h>

#include "device/device_work.h"

namespace braid::device {
namespace {

const KernelRef& kernelFor(KernelKind kind, Proto proto) {
  if (kind >= KernelKind::kAllReduceOneShot) return kernelOneShot(kind);
  const KernelRef* table = proto == Proto::kLL      ? kernelsLL()
                           : proto == Proto::kLL128 ? kernelsLL128()
                                                    : kernelsSimple();
  return table[static_cast<int>(kind)];
}

}  // namespace

int launchKernel(KernelKind kind, Proto proto, int channels, const KernelArgs& args, void* stream) {
  void* params[] = {const_cast<KernelArgs*>(&args)};
  return static_cast<int>(cudaLaunchKernel(kernelFor(kind, proto).fn, dim3(channels),
                                           dim3(args.nLanes * args.laneThreads), params, 0,
                                           static_cast<cudaStream_t>(stream)));
}

int launchP2pKernel(Proto proto, int channels, const P2pKernelArgs& args, void* stream) {
  void* params[] = {const_cast<P2pKernelArgs*>(&args)};
  return static_cast<int>(cudaLaunchKernel(kernelFor(KernelKind::kSendRecv, proto).fn, dim3(channels),
                                           dim3(2 * args.base.laneThreads), params, 0,
                                           static_cast<cudaStream_t>(stream)));
}

const char* kernelName(KernelKind kind, Proto proto) { return kernelFor(kind, proto).name; }

int loadKernels() {
  for (int p = 0; p < static_cast<int>(Proto::kNumProtos); ++p) {
    for (int k = 0; k < static_cast<int>(KernelKind::kNumKinds); ++k) {
      // The one-shot kernels have one protocol: load them once.
      if (p != 0 && k >= static_cast<int>(KernelKind::kAllReduceOneShot)) break;
      cudaFuncAttributes attr;
      cudaError_t err = cudaFuncGetAttributes(&attr, kernelFor(static_cast<KernelKind>(k), static_cast<Proto>(p)).fn);
      if (err != cudaSuccess) return static_cast<int>(err);
    }
  }
  return 0;
}

}  // namespace braid::device
