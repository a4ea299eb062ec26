// This build has no CUDA support (BRAID_ENABLE_CUDA=OFF): no device is ever present.
#include "exec/cuda_device.h"

namespace braid::exec {

int cudaDeviceCount(std::string* why) {
  if (why != nullptr) *why = "braid was built without CUDA support (BRAID_ENABLE_CUDA=OFF)";
  return 0;
}

std::vector<CudaDeviceInfo> cudaDevices() { return {}; }

int cudaHardwareQueues() { return 8; }

Status cudaCurrentDevice(int* device) {
  *device = -1;
  return invalidUsage("braid was built without CUDA support (BRAID_ENABLE_CUDA=OFF)");
}

Status cudaSelectDevice(int device) {
  return invalidUsage("braid was built without CUDA support (BRAID_ENABLE_CUDA=OFF); cannot use device " +
                      std::to_string(device));
}

Status cudaAllocate(size_t, void**) { return invalidUsage("this braid was built without CUDA support"); }

Status cudaRelease(void*) { return invalidUsage("this braid was built without CUDA support"); }

}  // namespace braid::exec
