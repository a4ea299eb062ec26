// A test world of GPU ranks in this process: n communicators (rank r on device r % devices, so a
// single GPU hosts several ranks), one stream each, made with a given algorithm, protocol and CTA
// range. Calls are issued from one thread; each rank's kernel runs on its own stream.
#pragma once

#include <braid/braid.h>
#include <cuda_runtime.h>

#include <string>
#include <vector>

namespace braid::gputest {

int deviceCount();

struct WorldOptions {
  int nranks = 2;
  const char* algorithm = nullptr;  // NULL: the tuner's choice
  const char* protocol = nullptr;
  int minCTAs = BRAID_CONFIG_UNDEF_INT;
  int maxCTAs = BRAID_CONFIG_UNDEF_INT;
};

struct World {
  std::vector<braidComm_t> comms;
  std::vector<int> devices;
  std::vector<cudaStream_t> streams;
  std::string error;  // why making it failed ("" when it worked)

  explicit World(const WorldOptions& options);
  ~World();
  int size() const { return static_cast<int>(comms.size()); }
  /// Waits for every rank's stream; false (and error set) on a CUDA error.
  bool sync();
};

/// Device buffer of `bytes` on `device`, freed by the destructor.
struct DeviceBuffer {
  void* ptr = nullptr;
  int device = 0;
  DeviceBuffer(int device, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

}  // namespace braid::gputest
