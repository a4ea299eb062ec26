// BRAID_TIMEOUT on a GPU (core/watchdog.h, exec/cuda_watch.cc): thread ranks sharing the GPU, each
// stall reported with its kernel and released by the abort action. ctest runs these as
// gpu_watchdog with BRAID_TIMEOUT=2 set for the process (the gpu tier's discovery leaves them out);
// without it they skip.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gpu_world.h"

namespace braid::gputest {
namespace {

using Clock = std::chrono::steady_clock;

int timeoutSeconds() {
  const char* t = std::getenv("BRAID_TIMEOUT");
  return t != nullptr ? std::atoi(t) : 0;
}

// The report a failed communicator gives: its next call fails with it.
std::string reportOf(braidComm_t comm, braidResult_t* async) {
  *async = braidSuccess;
  EXPECT_EQ(braidCommGetAsyncError(comm, async), braidSuccess);
  float x = 0;
  braidResult_t rc = braidAllReduce(&x, &x, 0, braidFloat32, braidSum, comm, nullptr);
  EXPECT_NE(rc, braidSuccess);
  return braidGetLastError();
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Two ranks sharing the GPU, ring and Simple, so that the kernels' names are known.
class GpuWatchdog : public ::testing::Test {
 protected:
  void SetUp() override {
    if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
    if (timeoutSeconds() <= 0) GTEST_SKIP() << "run by ctest's gpu_watchdog (BRAID_TIMEOUT set)";
    WorldOptions o;
    o.nranks = 2;
    o.algorithm = "ring";
    o.protocol = "simple";
    w_ = std::make_unique<World>(o);
    ASSERT_EQ(w_->error, "");
  }

  // A zeroed buffer of `count` floats on rank r's device.
  float* zeroed(int r, size_t count) {
    buffers_.push_back(std::make_unique<DeviceBuffer>(w_->devices[r], count * sizeof(float)));
    fillDevice(w_->devices[r], buffers_.back()->ptr, 0, count * sizeof(float));
    return static_cast<float*>(buffers_.back()->ptr);
  }

  // Rank r's in-place all-reduce of `count` floats on its stream.
  void allReduce(int r, size_t count) {
    float* b = zeroed(r, count);
    ASSERT_EQ(braidAllReduce(b, b, count, braidFloat32, braidSum, w_->comms[r], w_->streams[r]), braidSuccess)
        << braidGetLastError();
  }

  // Both ranks' all-reduces, as one group (one thread drives both).
  void allReduces(size_t count0, size_t count1) {
    ASSERT_EQ(braidGroupStart(), braidSuccess);
    allReduce(0, count0);
    allReduce(1, count1);
    ASSERT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
  }

  std::unique_ptr<World> w_;
  std::vector<std::unique_ptr<DeviceBuffer>> buffers_;
};

// Rank 0 all-reduces while rank 1 makes no call: rank 0's kernel is released within the timeout +
// 2 s, and its communicator fails with the report: its kernel, the lane waiting for rank 1 and the
// diagnosis.
TEST_F(GpuWatchdog, ARankThatSkipsACallIsNamed) {
  const auto t0 = Clock::now();
  allReduce(0, 4096);
  ASSERT_TRUE(w_->sync()) << w_->error;  // released, not aborted by the test's 60 s deadline
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_LT(took, timeoutSeconds() + 2.0);
  braidResult_t async;
  const std::string report = reportOf(w_->comms[0], &async);
  EXPECT_EQ(async, braidTimeout);
  EXPECT_TRUE(contains(report, "rank 0 of 2 made no progress")) << report;
  EXPECT_TRUE(contains(report, "diagnosis: rank 1 has not reached allreduce #1 (4096 x float32, sum)")) << report;
  EXPECT_TRUE(contains(report, "rank 1: has made no call yet")) << report;
  EXPECT_TRUE(contains(report, "its kernel waits for rank 1")) << report;
  EXPECT_TRUE(contains(report, "GPU: launch 1 (braid_AllReduce_Ring_Simple")) << report;
  EXPECT_TRUE(contains(report, "waits for rank 1")) << report;
  // The step: a lane waits for a slot of rank 1's, of which it has seen none (rank 1 never called).
  EXPECT_TRUE(contains(report, "(launch 1) waits for rank 1 to fill a receive slot (")) << report;
  EXPECT_TRUE(contains(report, ", seen 0)")) << report;
  // Rank 1 never called: it is untouched.
  braidResult_t other = braidInternalError;
  EXPECT_EQ(braidCommGetAsyncError(w_->comms[1], &other), braidSuccess);
  EXPECT_EQ(other, braidSuccess);
}

// Rank 0 all-reduces while rank 1 receives from it: a mismatch the call ledger does not see (it
// compares collectives; mismatched collectives fail as they are queued: mismatch_test.cc). Both
// wait; rank 0's report names the mismatch, and rank 1's communicator fails too.
TEST_F(GpuWatchdog, MismatchedCallsAreNamed) {
  allReduce(0, 4096);
  float* buf = zeroed(1, 4096);
  ASSERT_EQ(braidRecv(buf, 4096, braidFloat32, 0, w_->comms[1], w_->streams[1]), braidSuccess) << braidGetLastError();
  ASSERT_TRUE(w_->sync()) << w_->error;
  braidResult_t async;
  const std::string report = reportOf(w_->comms[0], &async);
  EXPECT_EQ(async, braidTimeout);
  EXPECT_TRUE(contains(report, "rank 0 of 2 made no progress")) << report;
  EXPECT_TRUE(contains(report, "in allreduce #1 (4096 x float32, sum)")) << report;
  EXPECT_TRUE(contains(report, "rank 1: in send/recv")) << report;
  EXPECT_TRUE(contains(report, "mismatched calls: rank 1 is in another call than")) << report;
  const std::string other = reportOf(w_->comms[1], &async);
  EXPECT_EQ(async, braidTimeout) << other;
}

// Rank 0 waits to receive from rank 1, which makes no call: the report says rank 1 is in none.
TEST_F(GpuWatchdog, AnUnmatchedReceiveIsNamed) {
  float* buf = zeroed(0, 1 << 18);
  ASSERT_EQ(braidRecv(buf, 1 << 20, braidUint8, 1, w_->comms[0], w_->streams[0]), braidSuccess) << braidGetLastError();
  ASSERT_TRUE(w_->sync()) << w_->error;
  braidResult_t async;
  const std::string report = reportOf(w_->comms[0], &async);
  EXPECT_EQ(async, braidTimeout);
  EXPECT_TRUE(contains(report, "in send/recv [call 1]")) << report;
  EXPECT_TRUE(contains(report, "GPU: launch 1 (braid_SendRecv_Simple 0 send(s) 1 recv(s)")) << report;
  EXPECT_TRUE(contains(report, "waits for rank 1 to fill a receive slot")) << report;
  EXPECT_TRUE(contains(report, "diagnosis: rank 1, which this rank waits for, is in no call")) << report;
}

// A host function blocks rank 0's stream ahead of its all-reduce while rank 1's kernel waits for
// it: rank 1's report says that rank 0's kernel has not begun (the shape of a kernel queued behind
// another, the hang of a shared hardware queue), and so does rank 0's own.
TEST_F(GpuWatchdog, AKernelThatHasNotBegunIsNamed) {
  static std::atomic<bool> release{false};
  release = false;
  auto block = [](void*) {
    const auto until = Clock::now() + std::chrono::seconds(30);
    while (!release.load() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  ASSERT_EQ(cudaSetDevice(w_->devices[0]), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(w_->streams[0], block, nullptr), cudaSuccess);
  allReduces(4096, 4096);
  // Both watchdogs fire; then the host function lets rank 0's kernel begin (and see the abort).
  braidResult_t a0 = braidSuccess, a1 = braidSuccess;
  const auto until = Clock::now() + std::chrono::seconds(timeoutSeconds() + 10);
  while ((a0 == braidSuccess || a1 == braidSuccess) && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    braidCommGetAsyncError(w_->comms[0], &a0);
    braidCommGetAsyncError(w_->comms[1], &a1);
  }
  release = true;
  ASSERT_TRUE(w_->sync()) << w_->error;
  braidResult_t async;
  const std::string r1 = reportOf(w_->comms[1], &async);
  EXPECT_EQ(async, braidTimeout);
  EXPECT_TRUE(contains(r1, "rank 0: in allreduce #1 (4096 x float32, sum) [call 1], its kernel has not begun")) << r1;
  EXPECT_TRUE(contains(r1, "diagnosis: rank 0's kernel has not begun on the GPU")) << r1;
  const std::string r0 = reportOf(w_->comms[0], &async);
  EXPECT_EQ(async, braidTimeout);
  EXPECT_TRUE(contains(r0, "GPU: launch 1 (braid_AllReduce_Ring_Simple")) << r0;
  EXPECT_TRUE(contains(r0, "has not begun (launch 0 ended)")) << r0;
}

}  // namespace
}  // namespace braid::gputest
