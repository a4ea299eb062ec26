#include <cuda_runtime.h>

#include <cstdlib>

#include "exec/cuda_device.h"

namespace braid::exec {
namespace {

Status cudaStatus(const char* call, cudaError_t err) {
  if (err == cudaSuccess) return Status::ok();
  return Status(Code::kCudaError, std::string(call) + " failed: " + cudaGetErrorString(err));
}

}  // namespace

int cudaHardwareQueues() {
  const char* v = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  int n = v != nullptr ? std::atoi(v) : 0;
  return n > 0 ? n : 8;
}

int cudaDeviceCount(std::string* why) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (why != nullptr) *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err);
    (void)cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return 0;
  }
  if (count == 0 && why != nullptr) *why = "the CUDA driver reports no device";
  return count;
}

std::vector<CudaDeviceInfo> cudaDevices() {
  std::vector<CudaDeviceInfo> out;
  int count = cudaDeviceCount();
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    char bus[32] = {0};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess || cudaDeviceGetPCIBusId(bus, sizeof(bus), d) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    out.push_back(CudaDeviceInfo{d, bus, prop.major * 10 + prop.minor, prop.name, prop.multiProcessorCount});
  }
  return out;
}

Status cudaCurrentDevice(int* device) { return cudaStatus("cudaGetDevice", cudaGetDevice(device)); }

Status cudaSelectDevice(int device) { return cudaStatus("cudaSetDevice", cudaSetDevice(device)); }

Status cudaAllocate(size_t bytes, void** out) { return cudaStatus("cudaMalloc", cudaMalloc(out, bytes)); }

Status cudaRelease(void* p) { return cudaStatus("cudaFree", cudaFree(p)); }

}  // namespace braid::exec
