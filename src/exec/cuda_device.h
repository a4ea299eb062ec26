// The few CUDA runtime facts the communicator needs at init: how many devices there are, which one
// is current, and selecting one. Built from cuda_device_cuda.cc where CUDA is enabled and from
// cuda_device_none.cc otherwise, so no caller needs a CUDA header or an #ifdef.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace braid::exec {

/// Number of usable CUDA devices; 0 without CUDA support, driver or GPU. `why` (optional) gets the
/// reason when the answer is 0.
int cudaDeviceCount(std::string* why = nullptr);

/// The hardware queues the driver spreads a context's streams over (CUDA_DEVICE_MAX_CONNECTIONS;
/// 8 when unset). Ranks of one process that share a device need a queue per stream (docs/gpu.md).
int cudaHardwareQueues();

/// What topology discovery needs to know of one device.
struct CudaDeviceInfo {
  int ordinal = -1;
  std::string busId;  // as the runtime writes it ("0000:18:00.0")
  int sm = 0;         // compute capability x 10
  std::string name;
  int multiprocessors = 0;
};

/// Every usable device; empty without CUDA support, driver or GPU.
std::vector<CudaDeviceInfo> cudaDevices();

/// The calling thread's current CUDA device.
Status cudaCurrentDevice(int* device);

/// Makes `device` the calling thread's current CUDA device.
Status cudaSelectDevice(int device);

/// Device memory on the current device (ncclMemAlloc): cudaMalloc and cudaFree, with their errors.
Status cudaAllocate(size_t bytes, void** out);
Status cudaRelease(void* p);

}  // namespace braid::exec
