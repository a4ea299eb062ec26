// The copy-engine path (device/ce_work.h): all-reduce, reduce-scatter, all-gather and broadcast with the bytes
// moved by cudaMemcpyAsync on side streams and a reducer kernel, chosen here through the algorithm
// list ("ce"). Plain (unregistered) buffers; every collective of direct_calls.h, in place and out,
// against the reference (reduce, which the path does not run, takes the tuner's other choices
// beside them); eager, in CUDA graphs replayed with new inputs, between FIFO calls of one
// group, and on a CTA budget of one. Ranks of one process that share a GPU get no copy-engine path
// (their streams' waits could block each other's hardware queues), so on one GPU these run as
// processes: ctest's gpu_copy_engine_processes, _three_processes and _four_processes,
// gpu_copy_engine_small_slots (64 KiB slots, each reused many times within a call) and
// gpu_copy_engine_forced (BRAID_CE=1, no algorithm list); gpu_copy_engine_threads runs them in one
// process, which needs a GPU per rank. A world in which the path is not offered skips, saying why.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "direct_calls.h"
#include "gpu_world.h"

namespace braid::gputest {
namespace {

// Each local rank's input and output, as cudaMalloc gives them.
class Plain : public RankBuffers {
 public:
  Plain(World& w, size_t maxCount) : in_(w.size()), out_(w.size()) {
    bytes_ = maxCount * w.size() * sizeof(float);
    for (int r = 0; r < w.size(); ++r) {
      if (!w.local(r)) continue;
      in_[r] = std::make_unique<DeviceBuffer>(w.devices[r], bytes_);
      out_[r] = std::make_unique<DeviceBuffer>(w.devices[r], bytes_);
    }
  }
  float* in(int r) override { return static_cast<float*>(in_[r]->ptr); }
  float* out(int r) override { return static_cast<float*>(out_[r]->ptr); }
  size_t bytes() const override { return bytes_; }

 private:
  std::vector<std::unique_ptr<DeviceBuffer>> in_, out_;
  size_t bytes_ = 0;
};

// Why a world gets no copy-engine path ("" when it does): BRAID_CE unset or 0 (the default; ctest
// sets auto or 1), two ranks of one process on one GPU, or two GPUs without peer access (anywhere
// in the world, so that every process skips alike).
std::string noCopyEngine(const World& w) {
  const char* ce = std::getenv("BRAID_CE");
  if (ce == nullptr || std::string(ce) == "0" || std::string(ce).empty())
    return "the copy-engine path is off unless BRAID_CE is auto or 1 (ctest sets it)";
  for (int r = 0; r < w.size(); ++r) {
    for (int q = r + 1; q < w.size(); ++q) {
      if (w.process[r] == w.process[q] && w.devices[r] == w.devices[q])
        return "ranks " + std::to_string(r) + " and " + std::to_string(q) +
               " share a process and a GPU: no copy-engine path (ctest runs these as processes)";
      int access = 1;
      if (w.devices[r] != w.devices[q] && (cudaDeviceCanAccessPeer(&access, w.devices[r], w.devices[q]) != cudaSuccess))
        access = 0;
      if (access == 0)
        return "GPUs " + std::to_string(w.devices[r]) + " and " + std::to_string(w.devices[q]) +
               " do not reach each other's memory: host memory, no copy-engine path";
    }
  }
  return "";
}

class GpuCopyEngine : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
    WorldOptions o;
    o.nranks = GetParam();
    o.algorithm = "allreduce:ce;reducescatter:ce;allgather:ce;broadcast:ce";  // (reduce: the tuner's)
    o.maxCTAs = 8;
    w_ = std::make_unique<World>(o);
    ASSERT_EQ(w_->error, "");
    if (const std::string why = noCopyEngine(*w_); !why.empty()) GTEST_SKIP() << why;
  }
  std::unique_ptr<World> w_;
};

TEST_P(GpuCopyEngine, EveryCollectiveMatchesTheReference) {
  const std::vector<size_t> counts = {1, 7, 1023, 100003, (size_t{1} << 20) + 3};
  Plain b(*w_, counts.back());
  checkEveryCollective(*w_, b, counts);
}

// Graphs of a copy-engine all-reduce and all-gather on every rank, replayed three times with new
// inputs: the words start every call at 0, so a replay's fixed values are right again.
TEST_P(GpuCopyEngine, GraphsReplayWithNewInputs) {
  for (const Call& c : {Call{Coll::kAllReduce, (size_t{1} << 20) + 5, false, braidSum},
                        Call{Coll::kAllGather, 300001, false}, Call{Coll::kReduceScatter, 300001, false}}) {
    Plain b(*w_, c.count);
    checkGraphReplays(*w_, b, c);
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, GpuCopyEngine, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& i) { return std::to_string(i.param) + "ranks"; });

// A reducer of one CTA (the user's CTA budget) still completes every chunk.
TEST(GpuCopyEngineBudget, OneCtaReducesEveryChunk) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  WorldOptions o;
  o.nranks = 2;
  o.algorithm = "ce";
  o.maxCTAs = 1;
  World w(o);
  ASSERT_EQ(w.error, "");
  if (const std::string why = noCopyEngine(w); !why.empty()) GTEST_SKIP() << why;
  const Call c{Coll::kAllReduce, (size_t{3} << 20) + 1, false, braidAvg};
  Plain b(w, c.count);
  prepare(w, b, c);
  ASSERT_EQ(runAll(w, b, c), "");
  check(w, b, c, "one CTA");
}

// One group per rank: a copy-engine all-reduce, then a ring all-gather of its result, which must
// wait for it.
TEST(GpuCopyEngineMixed, CopyEngineCallsKeepTheirPlaceInAGroup) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  WorldOptions o;
  o.nranks = 2;
  o.algorithm = "allreduce:ce;allgather:ring";
  World w(o);
  ASSERT_EQ(w.error, "");
  if (!w.local(0) || !w.local(1)) GTEST_SKIP() << "thread ranks of one process only";
  if (const std::string why = noCopyEngine(w); !why.empty()) GTEST_SKIP() << why;
  const int n = w.size();
  const size_t count = 1 << 19;
  const Call reduce{Coll::kAllReduce, count, false, braidSum};
  Plain b(w, count);
  prepare(w, b, reduce);
  std::vector<std::unique_ptr<DeviceBuffer>> gathered(n);
  ASSERT_EQ(braidGroupStart(), braidSuccess);
  for (int r = 0; r < n; ++r) {
    gathered[r] = std::make_unique<DeviceBuffer>(w.devices[r], count * n * sizeof(float));
    auto s = reinterpret_cast<braidStream_t>(w.streams[r]);
    ASSERT_EQ(braidAllReduce(b.in(r), b.out(r), count, braidFloat32, braidSum, w.comms[r], s), braidSuccess);
    ASSERT_EQ(braidAllGather(b.out(r), gathered[r]->ptr, count, braidFloat32, w.comms[r], s), braidSuccess);
  }
  ASSERT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
  ASSERT_TRUE(w.sync()) << w.error;
  for (int r = 0; r < n; ++r) {
    std::vector<float> got(count * n);
    readDevice(w.devices[r], got.data(), gathered[r]->ptr, got.size() * sizeof(float));
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], expected(reduce, n, r, i % count)) << "rank " << r << " element " << i;
    }
  }
}

// BRAID_CE=1 (ctest's gpu_copy_engine_forced sets it) with no algorithm list: the tuner takes the
// path for every all-reduce, reduce-scatter and all-gather, and each matches the reference.
TEST(GpuCopyEngineForced, EveryCollectiveWithTheTunersChoice) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  const char* ce = std::getenv("BRAID_CE");
  if (ce == nullptr || std::string(ce) != "1") GTEST_SKIP() << "BRAID_CE=1 only (ctest's gpu_copy_engine_forced)";
  WorldOptions o;
  o.nranks = 2;
  World w(o);
  ASSERT_EQ(w.error, "");
  if (const std::string why = noCopyEngine(w); !why.empty()) GTEST_SKIP() << why;
  const std::vector<size_t> counts = {1, 1023, (size_t{1} << 20) + 3};
  Plain b(w, counts.back());
  checkEveryCollective(w, b, counts);
}

}  // namespace
}  // namespace braid::gputest
