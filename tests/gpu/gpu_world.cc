#include "gpu_world.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace braid::gputest {

int deviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

World::World(const WorldOptions& o) {
  const int n = o.nranks, gpus = deviceCount();
  comms.assign(n, nullptr);
  streams.assign(n, nullptr);
  for (int r = 0; r < n; ++r) devices.push_back(gpus > 0 ? r % gpus : 0);
  braidUniqueId id;
  if (braidGetUniqueId(&id) != braidSuccess) {
    error = braidGetLastError();
    return;
  }
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      cudaSetDevice(devices[r]);
      braidConfig_t config = BRAID_CONFIG_INITIALIZER;
      config.algorithm = o.algorithm;
      config.protocol = o.protocol;
      config.minCTAs = o.minCTAs;
      config.maxCTAs = o.maxCTAs;
      config.deviceKind = braidDeviceCuda;
      if (braidCommInitRankConfig(&comms[r], n, id, r, &config) != braidSuccess) {
        errors[r] = "rank " + std::to_string(r) + ": " + braidGetLastError();
      }
      cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking);
    });
  }
  for (auto& t : threads) t.join();
  for (const std::string& e : errors) error += e.empty() ? "" : e + "; ";
}

World::~World() {
  for (int r = 0; r < size(); ++r) {
    if (comms[r] != nullptr) braidCommDestroy(comms[r]);
    if (streams[r] != nullptr) {
      cudaSetDevice(devices[r]);
      cudaStreamDestroy(streams[r]);
    }
  }
}

bool World::sync() {
  // Polls with a deadline: a collective that never completes aborts the communicators (so that
  // their kernels give up) and fails the test instead of hanging it.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int r = 0; r < size(); ++r) {
    cudaSetDevice(devices[r]);
    cudaError_t e;
    while ((e = cudaStreamQuery(streams[r])) == cudaErrorNotReady) {
      if (std::chrono::steady_clock::now() > deadline) {
        for (braidComm_t c : comms) braidCommAbort(c);
        for (int q = 0; q < size(); ++q) cudaStreamSynchronize(streams[q]);
        comms.assign(comms.size(), nullptr);  // aborted: destroy would wait for nothing useful
        error = "rank " + std::to_string(r) + "'s stream did not finish within 60 s (aborted)";
        return false;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    if (e != cudaSuccess) {
      error = "rank " + std::to_string(r) + ": " + cudaGetErrorString(e);
      return false;
    }
  }
  return true;
}

namespace {

// Waits for the legacy stream after `issued` (the copy or fill on it); a failure fails the test.
void finish(const char* call, cudaError_t issued) {
  cudaError_t done = issued == cudaSuccess ? cudaStreamSynchronize(cudaStreamLegacy) : issued;
  if (done != cudaSuccess) ADD_FAILURE() << call << ": " << cudaGetErrorString(done);
}

}  // namespace

void writeDevice(int device, void* dst, const void* src, size_t bytes) {
  cudaSetDevice(device);
  finish("cudaMemcpyAsync (to the device)", cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cudaStreamLegacy));
}

void readDevice(int device, void* dst, const void* src, size_t bytes) {
  cudaSetDevice(device);
  finish("cudaMemcpyAsync (from the device)",
         cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, cudaStreamLegacy));
}

void fillDevice(int device, void* dst, unsigned char byte, size_t bytes) {
  cudaSetDevice(device);
  finish("cudaMemsetAsync", cudaMemsetAsync(dst, byte, bytes, cudaStreamLegacy));
}

DeviceBuffer::DeviceBuffer(int dev, size_t bytes) : device(dev) {
  cudaSetDevice(dev);
  if (cudaMalloc(&ptr, bytes > 0 ? bytes : 1) != cudaSuccess) ptr = nullptr;
}

DeviceBuffer::~DeviceBuffer() {
  cudaSetDevice(device);
  cudaFree(ptr);
}

}  // namespace braid::gputest
