// A test world of GPU ranks in this process: n communicators (rank r on device r % devices, so a
// single GPU hosts several ranks), one stream each, made with a given algorithm, protocol and CTA
// range. Calls are issued from one thread; each rank's kernel runs on its own stream.
//
// Across pretended hosts: with BRAID_TEST_HOSTS=h:H:DIR (and a BRAID_HOSTID of its own), this
// process is host h of H processes running the same tests, and holds ranks [h*n/H, (h+1)*n/H) of
// each world; every rank-indexed vector keeps all n entries, null where the rank lives elsewhere
// (local(r) says). Host 0 makes each world's unique id and leaves it in DIR for the others
// (across_hosts.sh runs them).
#pragma once

#include <braid/braid.h>
#include <cuda_runtime.h>

#include <functional>
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
  std::vector<bool> here;    // here[r]: rank r lives in this process
  std::vector<int> process;  // process[r]: which of the pretended hosts' processes holds rank r
  int size() const { return static_cast<int>(comms.size()); }
  bool local(int r) const { return here[r]; }
  /// Waits for every rank's stream; false (and error set) on a CUDA error.
  bool sync();
};

// Test buffers are written and read through these three alone, each in order with everything the
// test issues after it. A cudaMemcpy from pageable host memory may return before its bytes reach
// the device (the driver stages them and the DMA goes on), cudaMemset returns before it is done,
// and the collectives run on non-blocking streams, which do not wait for the legacy stream: with
// two test processes on one GPU, collectives read inputs that had not landed yet. So each helper
// runs on the legacy stream of `device` and waits for it. A CUDA error fails the test, naming the
// call. Reading a collective's output is the caller's to order: World::sync() first.
void writeDevice(int device, void* dst, const void* src, size_t bytes);
void readDevice(int device, void* dst, const void* src, size_t bytes);
void fillDevice(int device, void* dst, unsigned char byte, size_t bytes);

/// Captures what `issue` queues on `stream` (of `device`; thread-local capture) into `*graph`,
/// instantiated. Returns "" or what failed: `issue`'s own error text, or the CUDA call.
std::string captureGraph(int device, cudaStream_t stream, const std::function<std::string()>& issue,
                         cudaGraphExec_t* graph);

/// The nodes of `graph` of one type (kernels, host functions, ...).
size_t graphNodesOfType(cudaGraph_t graph, cudaGraphNodeType type);

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
