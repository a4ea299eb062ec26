#include "gpu_world.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace braid::gputest {

int deviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

namespace {

// The gpu tests run several ranks of one process on one GPU: each rank's stream needs a hardware
// queue of its own (docs/gpu.md), asked for before the process's first CUDA call.
__attribute__((constructor)) void enoughHardwareQueues() { setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0); }

// This process's part of a world spread over pretended hosts (BRAID_TEST_HOSTS=h:H:DIR).
struct HostSplit {
  int host = 0, hosts = 1;
  std::string dir;
};

HostSplit hostSplit() {
  HostSplit split;
  const char* v = std::getenv("BRAID_TEST_HOSTS");
  if (v == nullptr) return split;
  std::string s = v;
  size_t a = s.find(':'), b = s.find(':', a + 1);
  if (a == std::string::npos || b == std::string::npos) return split;
  split.host = std::atoi(s.substr(0, a).c_str());
  split.hosts = std::max(1, std::atoi(s.substr(a + 1, b - a - 1).c_str()));
  split.dir = s.substr(b + 1);
  return split;
}

// The unique id of this process's `seq`-th world: made here (host 0, left in the folder for the
// others: written aside, then renamed into place) or waited for.
std::string worldId(const HostSplit& split, int seq, braidUniqueId* id) {
  if (split.hosts == 1) return braidGetUniqueId(id) == braidSuccess ? "" : braidGetLastError();
  const std::string path = split.dir + "/world-" + std::to_string(seq) + ".id";
  if (split.host == 0) {
    if (braidGetUniqueId(id) != braidSuccess) return braidGetLastError();
    std::FILE* f = std::fopen((path + ".part").c_str(), "wb");
    if (f == nullptr || std::fwrite(id, sizeof(*id), 1, f) != 1 || std::fclose(f) != 0 ||
        std::rename((path + ".part").c_str(), path.c_str()) != 0)
      return "cannot write " + path;
    return "";
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
      size_t got = std::fread(id, sizeof(*id), 1, f);
      std::fclose(f);
      if (got == 1) return "";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return "host 0 left no unique id in " + path + " within 60 s";
}

}  // namespace

World::World(const WorldOptions& o) {
  static int worlds = 0;
  const int n = o.nranks, gpus = deviceCount();
  const HostSplit split = hostSplit();
  comms.assign(n, nullptr);
  streams.assign(n, nullptr);
  here.assign(n, false);
  for (int h = 0; h < split.hosts; ++h) {
    for (int r = h * n / split.hosts; r < (h + 1) * n / split.hosts; ++r) process.push_back(h);
  }
  for (int r = 0; r < n; ++r) here[r] = process[r] == split.host;
  for (int r = 0; r < n; ++r) devices.push_back(gpus > 0 ? r % gpus : 0);
  braidUniqueId id;
  error = worldId(split, ++worlds, &id);
  if (!error.empty()) return;
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    if (!here[r]) continue;
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
    if (!here[r]) continue;
    cudaSetDevice(devices[r]);
    cudaError_t e;
    while ((e = cudaStreamQuery(streams[r])) == cudaErrorNotReady) {
      if (std::chrono::steady_clock::now() > deadline) {
        for (braidComm_t c : comms) {
          if (c != nullptr) braidCommAbort(c);
        }
        for (int q = 0; q < size(); ++q) {
          if (here[q]) cudaStreamSynchronize(streams[q]);
        }
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

std::string captureGraph(int device, cudaStream_t stream, const std::function<std::string()>& issue,
                         cudaGraphExec_t* graph) {
  *graph = nullptr;
  if (cudaSetDevice(device) != cudaSuccess) return "cudaSetDevice failed";
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    return "cudaStreamBeginCapture failed";
  }
  std::string error = issue();
  cudaGraph_t g = nullptr;
  if (cudaStreamEndCapture(stream, &g) != cudaSuccess && error.empty()) error = "cudaStreamEndCapture failed";
  if (error.empty() && cudaGraphInstantiate(graph, g, 0) != cudaSuccess) error = "cudaGraphInstantiate failed";
  if (g != nullptr) cudaGraphDestroy(g);
  return error;
}

size_t graphNodesOfType(cudaGraph_t graph, cudaGraphNodeType type) {
  size_t n = 0;
  if (cudaGraphGetNodes(graph, nullptr, &n) != cudaSuccess || n == 0) return 0;
  std::vector<cudaGraphNode_t> nodes(n);
  if (cudaGraphGetNodes(graph, nodes.data(), &n) != cudaSuccess) return 0;
  size_t found = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType t;
    if (cudaGraphNodeGetType(node, &t) == cudaSuccess && t == type) ++found;
  }
  return found;
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
