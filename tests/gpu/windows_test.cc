// Collectives on windows (braidCommWindowRegister) whose ranks live in two processes of this host
// (ctest's gpu_windows_processes runs two copies of this binary, each holding half the ranks):
// each window is exported by CUDA IPC as it is registered, and the direct kernels (device/
// direct.cuh) read and write the other process's windows where this process maps them. Every
// collective, in place and out, against the reference; a CUDA graph replayed with new inputs; a
// window beside a plain buffer is a mismatch the call ledger names. Registering a window is a
// collective across processes, so each rank of this process registers on a thread of its own.
// In one process the same cases run on windows as on buffer registrations (registered_test.cc).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "direct_calls.h"
#include "gpu_world.h"

namespace braid::gputest {
namespace {

// Runs fn(r) for every rank of this process, each on a thread of its own, and waits for them.
template <typename F>
void onEveryLocalRank(World& w, F fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < w.size(); ++r) {
    if (w.local(r)) threads.emplace_back([&fn, r] { fn(r); });
  }
  for (std::thread& t : threads) t.join();
}

// Each local rank's input and output, each a window.
class Windows : public RankBuffers {
 public:
  Windows(World& w, size_t maxCount) : w_(w), in_(w.size()), out_(w.size()), wins_(w.size()) {
    bytes_ = maxCount * w.size() * sizeof(float);
    std::vector<std::string> errors(w.size());
    onEveryLocalRank(w, [&](int r) {
      in_[r] = std::make_unique<DeviceBuffer>(w.devices[r], bytes_);
      out_[r] = std::make_unique<DeviceBuffer>(w.devices[r], bytes_);
      wins_[r].assign(2, nullptr);
      if (braidCommWindowRegister(w.comms[r], in_[r]->ptr, bytes_, &wins_[r][0], 0) != braidSuccess ||
          braidCommWindowRegister(w.comms[r], out_[r]->ptr, bytes_, &wins_[r][1], 0) != braidSuccess) {
        errors[r] = braidGetLastError();
      }
    });
    for (int r = 0; r < w.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  }
  ~Windows() override {
    onEveryLocalRank(w_, [&](int r) {
      for (braidWindow_t h : wins_[r]) EXPECT_EQ(braidCommWindowDeregister(w_.comms[r], h), braidSuccess);
    });
  }
  float* in(int r) override { return static_cast<float*>(in_[r]->ptr); }
  float* out(int r) override { return static_cast<float*>(out_[r]->ptr); }
  size_t bytes() const override { return bytes_; }

 private:
  World& w_;
  size_t bytes_ = 0;
  std::vector<std::unique_ptr<DeviceBuffer>> in_, out_;
  std::vector<std::vector<braidWindow_t>> wins_;
};

class GpuWindows : public ::testing::TestWithParam<int> {
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

TEST_P(GpuWindows, EveryCollectiveMatchesTheReference) {
  const std::vector<size_t> counts = {1, 1023, (size_t{1} << 20) + 3};
  Windows b(*w_, counts.back());
  checkEveryCollective(*w_, b, counts);
}

// A graph of a direct all-gather per rank, replayed with new inputs written between replays.
TEST_P(GpuWindows, GraphsReplayWithNewInputs) {
  const Call c{Coll::kAllGather, (size_t{1} << 18) + 5, false};
  Windows b(*w_, c.count);
  checkGraphReplays(*w_, b, c);
}

INSTANTIATE_TEST_SUITE_P(Ranks, GpuWindows, ::testing::Values(2, 4),
                         [](const ::testing::TestParamInfo<int>& i) { return std::to_string(i.param) + "ranks"; });

// The last rank's all-reduce is on a plain buffer, every other rank's on a window: the ranks with
// windows would run the direct kernel and the last rank the FIFOs. The call ledger (in shared
// memory between the processes) finds it as the calls are queued and names both calls.
TEST(GpuWindowsMixed, AWindowBesideAPlainBufferIsAMismatch) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  WorldOptions o;
  o.nranks = 2;
  World w(o);
  ASSERT_EQ(w.error, "");
  const size_t count = 4096;
  Windows b(w, count);
  std::vector<std::unique_ptr<DeviceBuffer>> plain(w.size());
  std::vector<braidResult_t> rc(w.size(), braidSuccess);
  std::vector<std::string> said(w.size());
  for (int r = 0; r < w.size(); ++r) {
    if (!w.local(r)) continue;
    plain[r] = std::make_unique<DeviceBuffer>(w.devices[r], count * sizeof(float));
    fillDevice(w.devices[r], plain[r]->ptr, 0, count * sizeof(float));
    fillDevice(w.devices[r], b.in(r), 0, b.bytes());
    void* buf = r == w.size() - 1 ? plain[r]->ptr : b.in(r);
    rc[r] = braidAllReduce(buf, buf, count, braidFloat32, braidSum, w.comms[r], w.streams[r]);
    said[r] = braidGetLastError();
  }
  for (int r = 0; r < w.size(); ++r) {
    if (!w.local(r) || rc[r] == braidSuccess) continue;
    EXPECT_EQ(rc[r], braidInvalidUsage) << said[r];
    EXPECT_NE(said[r].find("(4096 x float32, sum, registered buffers)"), std::string::npos) << said[r];
  }
  // A rank that queued first learns it from its communicator's asynchronous error, in either
  // process; its kernel is released.
  ASSERT_TRUE(w.sync()) << w.error;
  for (int r = 0; r < w.size(); ++r) {
    if (!w.local(r) || rc[r] != braidSuccess) continue;
    braidResult_t async = braidSuccess;
    for (int i = 0; i < 500 && async != braidInvalidUsage; ++i) {
      ASSERT_EQ(braidCommGetAsyncError(w.comms[r], &async), braidSuccess);
      if (async != braidInvalidUsage) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(async, braidInvalidUsage) << "rank " << r;
  }
}

// The last rank's registration is refused (its size is 0) while the others' are fine: across
// processes registering is a collective, so the refused rank still takes part, offering nothing;
// it alone returns the error, the others keep their windows to the FIFOs (the INFO line
// gpu_windows_refused_processes asserts), and an all-reduce on them is correct. Across processes
// only: in one process nothing is exchanged.
TEST(GpuWindowsRefused, ARefusedRankKeepsEveryRankOnTheFifos) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  WorldOptions o;
  o.nranks = 2;
  World w(o);
  ASSERT_EQ(w.error, "");
  if (w.local(0) && w.local(1)) GTEST_SKIP() << "needs its ranks in two processes (gpu_windows_refused_processes)";
  const size_t count = 4096;
  const size_t bytes = count * sizeof(float);
  std::vector<std::unique_ptr<DeviceBuffer>> buf(w.size());
  std::vector<braidWindow_t> win(w.size(), nullptr);
  std::vector<braidResult_t> rc(w.size(), braidSuccess);
  std::vector<std::string> said(w.size());
  onEveryLocalRank(w, [&](int r) {
    buf[r] = std::make_unique<DeviceBuffer>(w.devices[r], bytes);
    rc[r] = braidCommWindowRegister(w.comms[r], buf[r]->ptr, r == w.size() - 1 ? 0 : bytes, &win[r], 0);
    said[r] = braidGetLastError();
  });
  for (int r = 0; r < w.size(); ++r) {
    if (!w.local(r)) continue;
    if (r == w.size() - 1) {
      EXPECT_EQ(rc[r], braidInvalidArgument) << said[r];
      EXPECT_NE(said[r].find("'size' is 0"), std::string::npos) << said[r];
    } else {
      EXPECT_EQ(rc[r], braidSuccess) << said[r];
    }
  }
  const Call c{Coll::kAllReduce, count, true};
  for (int r = 0; r < w.size(); ++r) {
    if (!w.local(r)) continue;
    std::vector<float> mine(count);
    for (size_t i = 0; i < count; ++i) mine[i] = x(r, i);
    writeDevice(w.devices[r], buf[r]->ptr, mine.data(), bytes);
    float* p = static_cast<float*>(buf[r]->ptr);
    ASSERT_EQ(issue(w, r, c, p, p), braidSuccess) << braidGetLastError();
  }
  ASSERT_TRUE(w.sync()) << w.error;
  for (int r = 0; r < w.size(); ++r) {
    if (!w.local(r)) continue;
    std::vector<float> got(count);
    readDevice(w.devices[r], got.data(), buf[r]->ptr, bytes);
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(got[i], expected(c, w.size(), r, i)) << "rank " << r << ", element " << i;
  }
  onEveryLocalRank(w, [&](int r) {
    if (win[r] != nullptr) {
      EXPECT_EQ(braidCommWindowDeregister(w.comms[r], win[r]), braidSuccess) << braidGetLastError();
    }
  });
}

}  // namespace
}  // namespace braid::gputest
