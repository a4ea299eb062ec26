// Collectives on registered buffers (braidCommRegister): the direct kernels (device/direct.cuh) read
// and write the peers' user buffers by their addresses. Every collective, in place and out, counts
// from 1 to past a million, 2-4 ranks (4 takes the passes of more than three sources), against a
// reference computed here; eager, in a CUDA graph replayed with new inputs, and between calls on
// unregistered buffers in one group. A rank whose buffers are registered beside one whose are not is
// a mismatch the call ledger names. Ranks GpuRegistered also runs with its ranks split between two
// processes of this host (ctest's gpu_registered_processes): each registration is then exported to
// the other process as it is made (core/comm_buffers.cc), and the direct kernels reach the other
// process's buffers where it maps them.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "direct_calls.h"
#include "gpu_world.h"

namespace braid::gputest {
namespace {

// Each local rank's registered input and output, big enough for every call of the test.
class Registered : public RankBuffers {
 public:
  Registered(World& w, size_t maxCount) : w_(w), in_(w.size()), out_(w.size()), handles_(w.size()) {
    const size_t bytes = maxCount * w.size() * sizeof(float);
    for (int r = 0; r < w.size(); ++r) {
      if (!w.local(r)) continue;
      in_[r] = std::make_unique<DeviceBuffer>(w.devices[r], bytes);
      out_[r] = std::make_unique<DeviceBuffer>(w.devices[r], bytes);
      handles_[r].assign(2, nullptr);
      EXPECT_EQ(braidCommRegister(w.comms[r], in_[r]->ptr, bytes, &handles_[r][0]), braidSuccess)
          << braidGetLastError();
      EXPECT_EQ(braidCommRegister(w.comms[r], out_[r]->ptr, bytes, &handles_[r][1]), braidSuccess)
          << braidGetLastError();
    }
    bytes_ = bytes;
  }
  ~Registered() override {
    for (int r = 0; r < w_.size(); ++r) {
      for (void* h : handles_[r]) EXPECT_EQ(braidCommDeregister(w_.comms[r], h), braidSuccess) << braidGetLastError();
    }
  }
  float* in(int r) override { return static_cast<float*>(in_[r]->ptr); }
  float* out(int r) override { return static_cast<float*>(out_[r]->ptr); }
  size_t bytes() const override { return bytes_; }

 private:
  World& w_;
  std::vector<std::unique_ptr<DeviceBuffer>> in_, out_;
  std::vector<std::vector<void*>> handles_;
  size_t bytes_ = 0;
};

// A world of GetParam() ranks: thread ranks of this process, or split with other processes.
class GpuRegistered : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
    WorldOptions o;
    o.nranks = GetParam();
    w_ = std::make_unique<World>(o);
    ASSERT_EQ(w_->error, "");
  }
  std::unique_ptr<World> w_;
};

TEST_P(GpuRegistered, EveryCollectiveMatchesTheReference) {
  const std::vector<size_t> counts = {1, 7, 1023, (size_t{1} << 20) + 3};
  Registered b(*w_, counts.back());
  checkEveryCollective(*w_, b, counts);
}

// Graphs of a direct all-reduce on every rank, replayed three times, the inputs rewritten between
// replays: each replay reads the current inputs (the addresses travel as the kernels run).
TEST_P(GpuRegistered, GraphsReplayWithNewInputs) {
  const Call c{Coll::kAllReduce, (size_t{1} << 18) + 5, false, braidSum};
  Registered b(*w_, c.count);
  checkGraphReplays(*w_, b, c);
}

INSTANTIATE_TEST_SUITE_P(Ranks, GpuRegistered, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& i) { return std::to_string(i.param) + "ranks"; });

// One group per rank: an all-reduce on unregistered buffers, a direct all-gather, another
// unregistered all-reduce. The direct launch sits between the others in order.
TEST(GpuRegisteredMixed, DirectCallsKeepTheirPlaceInAGroup) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  WorldOptions o;
  o.nranks = 2;
  World w(o);
  ASSERT_EQ(w.error, "");
  if (!w.local(0) || !w.local(1)) GTEST_SKIP() << "thread ranks of one process only";
  const int n = w.size();
  const size_t count = 100003;
  const Call gather{Coll::kAllGather, count, false};
  Registered b(w, count);
  std::vector<std::unique_ptr<DeviceBuffer>> plain;
  prepare(w, b, gather);
  for (int r = 0; r < n; ++r) {
    plain.push_back(std::make_unique<DeviceBuffer>(w.devices[r], count * sizeof(float)));
    std::vector<float> ones(count, 1.0f);
    writeDevice(w.devices[r], plain.back()->ptr, ones.data(), count * sizeof(float));
  }
  ASSERT_EQ(braidGroupStart(), braidSuccess);
  for (int r = 0; r < n; ++r) {
    float* p = static_cast<float*>(plain[r]->ptr);
    braidStream_t s = reinterpret_cast<braidStream_t>(w.streams[r]);
    ASSERT_EQ(braidAllReduce(p, p, count, braidFloat32, braidSum, w.comms[r], s), braidSuccess);
    ASSERT_EQ(issue(w, r, gather, b.in(r), b.out(r)), braidSuccess);
    ASSERT_EQ(braidAllReduce(p, p, count, braidFloat32, braidSum, w.comms[r], s), braidSuccess);
  }
  ASSERT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
  check(w, b, gather, "between unregistered calls");
  for (int r = 0; r < n; ++r) {
    std::vector<float> got(count);
    readDevice(w.devices[r], got.data(), plain[r]->ptr, count * sizeof(float));
    for (size_t i = 0; i < count; i += 997) ASSERT_EQ(got[i], static_cast<float>(n * n)) << "rank " << r;
  }
}

// Rank 0's buffers are registered, rank 1's are not: rank 0 would run the direct kernel and rank 1
// the FIFOs. The call ledger finds it as the calls are queued; both communicators fail naming it.
TEST(GpuRegisteredMixed, RegisteredBesideUnregisteredIsAMismatch) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  WorldOptions o;
  o.nranks = 2;
  World w(o);
  ASSERT_EQ(w.error, "");
  if (!w.local(0) || !w.local(1)) GTEST_SKIP() << "thread ranks of one process only";
  const size_t count = 4096, bytes = count * sizeof(float);
  DeviceBuffer a(w.devices[0], bytes), c(w.devices[1], bytes);
  fillDevice(w.devices[0], a.ptr, 0, bytes);
  fillDevice(w.devices[1], c.ptr, 0, bytes);
  void* handle = nullptr;
  ASSERT_EQ(braidCommRegister(w.comms[0], a.ptr, bytes, &handle), braidSuccess);
  const braidResult_t rc0 = braidAllReduce(a.ptr, a.ptr, count, braidFloat32, braidSum, w.comms[0], w.streams[0]);
  const braidResult_t rc1 = braidAllReduce(c.ptr, c.ptr, count, braidFloat32, braidSum, w.comms[1], w.streams[1]);
  const std::string said1 = braidGetLastError();
  EXPECT_EQ(rc0, braidSuccess);
  EXPECT_EQ(rc1, braidInvalidUsage);
  EXPECT_NE(said1.find("rank 0 queued allreduce #1 (4096 x float32, sum, registered buffers) and rank 1 allreduce "
                       "#1 (4096 x float32, sum)"),
            std::string::npos)
      << said1;
  ASSERT_TRUE(w.sync()) << w.error;  // rank 0's kernel released
  braidResult_t async = braidSuccess;
  for (int i = 0; i < 500 && async != braidInvalidUsage; ++i) {
    ASSERT_EQ(braidCommGetAsyncError(w.comms[0], &async), braidSuccess);
    if (async != braidInvalidUsage) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(async, braidInvalidUsage);
  EXPECT_EQ(braidCommDeregister(w.comms[0], handle), braidSuccess);
}

}  // namespace
}  // namespace braid::gputest
