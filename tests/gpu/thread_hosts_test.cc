// Ranks as threads of one process, each its own pretended host (core::setThreadHostIdentity, as
// braid-perf --hosts does): the network path between ranks whose CUDA calls meet in one driver,
// each rank captured, instantiated and replayed on its own thread with no barrier between them.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "core/machine.h"
#include "gpu_world.h"

namespace braid::gputest {
namespace {

struct RankOutcome {
  std::string error;
  size_t hostNodes = 0;
  std::vector<double> out;
};

// One rank: an eager all-reduce, then `calls` in-place sums captured into one graph, replayed twice.
// Every sum of the two ranks' equal values doubles them, so a call skipped or run twice shows.
RankOutcome runRank(const braidUniqueId& id, int rank, int nranks, int calls, size_t count) {
  RankOutcome o;
  auto fail = [&](const std::string& what) {
    o.error = "rank " + std::to_string(rank) + ": " + what;
    return o;
  };
  if (cudaSetDevice(0) != cudaSuccess) return fail("cudaSetDevice");
  braidConfig_t config = BRAID_CONFIG_INITIALIZER;
  config.deviceKind = braidDeviceCuda;
  config.algorithm = "ring";
  braidComm_t comm = nullptr;
  core::setThreadHostIdentity("braid-gpu-test-host-" + std::to_string(rank));
  braidResult_t rc = braidCommInitRankConfig(&comm, nranks, id, rank, &config);
  core::setThreadHostIdentity("");
  if (rc != braidSuccess) return fail(std::string("init: ") + braidGetLastError());
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  DeviceBuffer buf(0, count * sizeof(double));
  std::vector<double> in(count);
  for (size_t i = 0; i < count; ++i) in[i] = static_cast<double>((rank + 1) * (1 + static_cast<int>(i % 5)));
  writeDevice(0, buf.ptr, in.data(), count * sizeof(double));
  auto sum = [&] { return braidAllReduce(buf.ptr, buf.ptr, count, braidFloat64, braidSum, comm, stream); };
  std::string error;
  if (sum() != braidSuccess) error = std::string("eager all-reduce: ") + braidGetLastError();
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  if (error.empty() && cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    error = "cudaStreamBeginCapture";
  }
  for (int i = 0; i < calls && error.empty(); ++i) {
    if (sum() != braidSuccess) error = std::string("captured all-reduce: ") + braidGetLastError();
  }
  if (cudaStreamEndCapture(stream, &graph) != cudaSuccess && error.empty()) error = "cudaStreamEndCapture";
  if (error.empty()) {
    o.hostNodes = graphNodesOfType(graph, cudaGraphNodeTypeHost);
    if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) error = "cudaGraphInstantiate";
  }
  for (int replay = 0; replay < 2 && error.empty(); ++replay) {
    if (cudaGraphLaunch(exec, stream) != cudaSuccess) error = "cudaGraphLaunch";
  }
  if (cudaStreamSynchronize(stream) != cudaSuccess && error.empty()) error = "cudaStreamSynchronize";
  if (error.empty()) {
    o.out.resize(count);
    readDevice(0, o.out.data(), buf.ptr, count * sizeof(double));
  }
  if (exec != nullptr) cudaGraphExecDestroy(exec);
  if (graph != nullptr) cudaGraphDestroy(graph);
  braidCommDestroy(comm);
  cudaStreamDestroy(stream);
  if (!error.empty()) return fail(error);
  return o;
}

// 64 calls per graph. Before, a capture held two host functions per call for the network's proxy:
// a graph launch with host functions was held in the driver, and here it held the other rank's
// instantiate or launch, whose kernels the first graph's waited for: every run hung, also with two
// host functions per graph (bench/NOTES.md, twenty-second session). Now a capture holds none, and
// each rank's two replays give the sum of 2 x 64 + 1 doublings.
TEST(GpuThreadHosts, GraphsOfManyCallsReplayWhileTheOtherRankCaptures) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  constexpr int kRanks = 2, kCalls = 64;
  constexpr size_t kCount = 1000;
  braidUniqueId id;
  ASSERT_EQ(braidGetUniqueId(&id), braidSuccess);
  std::vector<std::future<RankOutcome>> ranks;
  for (int r = 0; r < kRanks; ++r) {
    ranks.push_back(std::async(std::launch::async, runRank, id, r, kRanks, kCalls, kCount));
  }
  for (auto& f : ranks) {
    if (f.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
      std::fprintf(stderr, "GpuThreadHosts: a rank's thread is still in its calls after 120 s: hung\n");
      std::_Exit(1);  // its thread cannot be stopped, and the test must not wait forever
    }
  }
  for (int r = 0; r < kRanks; ++r) {
    RankOutcome o = ranks[r].get();
    ASSERT_EQ(o.error, "");
    EXPECT_EQ(o.hostNodes, 0u) << "rank " << r;
    ASSERT_EQ(o.out.size(), kCount);
    for (size_t i = 0; i < kCount; ++i) {
      // (1 + 2) (1 + i % 5) after the eager call, doubled by each of the 2 x 64 replayed ones.
      const double want = std::ldexp(3.0 * (1 + static_cast<int>(i % 5)), 2 * kCalls);
      ASSERT_EQ(o.out[i], want) << "rank " << r << " element " << i;
    }
  }
}

}  // namespace
}  // namespace braid::gputest
