// Communicators bound to CUDA devices: init-all in one process, and a CUDA communicator per rank
// from a unique id. Skipped where no CUDA device is present.
#include <braid/braid.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace {

int deviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

#define REQUIRE_GPUS(n)                                                            \
  do {                                                                             \
    if (deviceCount() < (n)) GTEST_SKIP() << "needs " << (n) << " CUDA device(s)"; \
  } while (0)

TEST(GpuInit, InitAllBindsEachRankToItsDevice) {
  REQUIRE_GPUS(1);
  int n = deviceCount();
  std::vector<braidComm_t> comms(n);
  ASSERT_EQ(braidCommInitAll(comms.data(), n, nullptr), braidSuccess) << braidGetLastError();
  for (int i = 0; i < n; ++i) {
    int rank = -1, count = -1, dev = -2;
    EXPECT_EQ(braidCommUserRank(comms[i], &rank), braidSuccess);
    EXPECT_EQ(braidCommCount(comms[i], &count), braidSuccess);
    EXPECT_EQ(braidCommCuDevice(comms[i], &dev), braidSuccess);
    EXPECT_EQ(rank, i);
    EXPECT_EQ(count, n);
    EXPECT_EQ(dev, i);
  }
  for (braidComm_t c : comms) EXPECT_EQ(braidCommDestroy(c), braidSuccess);
}

TEST(GpuInit, InitAllWithDeviceListInReverse) {
  REQUIRE_GPUS(2);
  int devs[2] = {1, 0};
  braidComm_t comms[2];
  ASSERT_EQ(braidCommInitAll(comms, 2, devs), braidSuccess) << braidGetLastError();
  int dev = -1;
  EXPECT_EQ(braidCommCuDevice(comms[0], &dev), braidSuccess);
  EXPECT_EQ(dev, 1);
  EXPECT_EQ(braidCommCuDevice(comms[1], &dev), braidSuccess);
  EXPECT_EQ(dev, 0);
  for (braidComm_t c : comms) EXPECT_EQ(braidCommDestroy(c), braidSuccess);
}

TEST(GpuInit, InitAllRejectsMissingDevice) {
  REQUIRE_GPUS(1);
  int devs[1] = {deviceCount()};
  braidComm_t comm;
  EXPECT_EQ(braidCommInitAll(&comm, 1, devs), braidInvalidArgument);
  EXPECT_NE(std::string(braidGetLastError()).find("'devlist[0]'"), std::string::npos) << braidGetLastError();
}

// A default (auto) communicator on a GPU machine binds the thread's current device.
TEST(GpuInit, AutoCommUsesCurrentDevice) {
  REQUIRE_GPUS(1);
  int n = deviceCount();
  braidUniqueId id;
  ASSERT_EQ(braidGetUniqueId(&id), braidSuccess);
  std::vector<braidComm_t> comms(n);
  std::vector<braidResult_t> results(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      cudaSetDevice(n - 1 - i);
      results[i] = braidCommInitRank(&comms[i], n, id, i);
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(results[i], braidSuccess);
    int dev = -1;
    EXPECT_EQ(braidCommCuDevice(comms[i], &dev), braidSuccess);
    EXPECT_EQ(dev, n - 1 - i);
    EXPECT_EQ(braidCommDestroy(comms[i]), braidSuccess);
  }
}

}  // namespace
