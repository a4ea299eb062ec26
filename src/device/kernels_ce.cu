// The copy-engine path's reducer kernel (ce.cuh).
#include <cuda_runtime.h>

#include "device/ce.cuh"

namespace braid::device {

__global__ void __launch_bounds__(kMaxBlockThreads / 2) braid_CopyEngine(const __grid_constant__ CeKernelArgs a) {
  KernelMark mark(a.base);
  CeReducer(a).run();
}

int launchCeKernel(int ctas, const CeKernelArgs& args, void* stream) {
  if (ctas < 1 || ctas > kMaxCeCtas || args.base.laneThreads < 32 || args.base.laneThreads > kMaxBlockThreads / 2)
    return static_cast<int>(cudaErrorInvalidValue);
  void* params[] = {const_cast<CeKernelArgs*>(&args)};
  return static_cast<int>(cudaLaunchKernel(reinterpret_cast<const void*>(braid_CopyEngine), dim3(ctas),
                                           dim3(args.base.laneThreads), params, 0, static_cast<cudaStream_t>(stream)));
}

const char* ceKernelName() { return "braid_CopyEngine"; }

const void* ceKernel() { return reinterpret_cast<const void*>(braid_CopyEngine); }

}  // namespace braid::device
