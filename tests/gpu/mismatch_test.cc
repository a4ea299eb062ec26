// Mismatched collectives on a GPU communicator, found by the call ledger (exec/call_ledger.h) as
// the calls are queued: the rank that queues second fails its call naming both ranks and both
// calls, the kernel of the rank that queued first is released, and that rank's communicator fails
// with the same text. Thread ranks sharing the GPU (gpu_cases_N), the same with FIFOs in mapped host
// memory (gpu_mismatch_host_memory), the ranks split between two processes of one host
// (gpu_mismatch_processes) and between two pretended hosts (gpu_mismatch_across_hosts).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gpu_world.h"

namespace braid::gputest {
namespace {

// One rank's call: a collective on `count` elements of `type`.
struct Call {
  enum Kind { kAllReduce, kBroadcast } kind = kAllReduce;
  size_t count = 4096;
  braidDataType_t type = braidFloat32;
  braidRedOp_t op = braidSum;
  int root = 0;
};

// Rank nranks - 1 calls `last`, every other rank `first`.
struct Case {
  const char* name;
  const char* protocol;
  Call first, last;
  const char* text;  // what every rank's error must say
  int nranks = 2;
};

std::string caseName(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }

class GpuMismatch : public ::testing::TestWithParam<Case> {};

braidResult_t issue(const World& w, int r, const Call& c, void* buf) {
  if (c.kind == Call::kBroadcast) return braidBroadcast(buf, buf, c.count, c.type, c.root, w.comms[r], w.streams[r]);
  return braidAllReduce(buf, buf, c.count, c.type, c.op, w.comms[r], w.streams[r]);
}

// Each rank queues its call; a rank that queues after one whose call differs fails it; after the
// streams drain (the kernels released, not waiting forever), every rank's communicator has failed
// with the text (within 10 s: a rank of another process or host may learn it a little later).
TEST_P(GpuMismatch, EveryRankFailsNamingBothCalls) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  const Case& c = GetParam();
  WorldOptions o;
  o.nranks = c.nranks;
  o.algorithm = "ring";
  o.protocol = c.protocol;
  World w(o);
  ASSERT_EQ(w.error, "");
  const int n = c.nranks;
  std::vector<std::unique_ptr<DeviceBuffer>> bufs(n);
  std::vector<braidResult_t> rc(n, braidSuccess);
  std::vector<std::string> said(n);
  for (int r = 0; r < n; ++r) {
    if (!w.local(r)) continue;
    const Call& call = r == n - 1 ? c.last : c.first;
    bufs[r] = std::make_unique<DeviceBuffer>(w.devices[r], call.count * 4);
    fillDevice(w.devices[r], bufs[r]->ptr, 0, call.count * 4);
    rc[r] = issue(w, r, call, bufs[r]->ptr);
    if (rc[r] != braidSuccess) said[r] = braidGetLastError();
  }
  ASSERT_TRUE(w.sync()) << w.error;
  int failedAtOnce = 0;
  for (int r = 0; r < n; ++r) {
    if (!w.local(r)) continue;
    if (rc[r] != braidSuccess) {
      ++failedAtOnce;
      EXPECT_EQ(rc[r], braidInvalidUsage) << said[r];
      EXPECT_NE(said[r].find(c.text), std::string::npos) << "rank " << r << ": " << said[r];
    }
    // (Across hosts a peer that stopped may close its connections before its verdict arrives:
    // the network failure comes first, and the verdict, its cause, replaces it.)
    braidResult_t async = braidSuccess;
    for (int i = 0; i < 1000 && async != braidInvalidUsage; ++i) {
      ASSERT_EQ(braidCommGetAsyncError(w.comms[r], &async), braidSuccess);
      if (async != braidInvalidUsage) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(async, braidInvalidUsage) << "rank " << r << "'s communicator must have failed";
    float x = 0;
    EXPECT_EQ(braidAllReduce(&x, &x, 0, braidFloat32, braidSum, w.comms[r], w.streams[r]), braidInvalidUsage);
    const std::string next = braidGetLastError();
    EXPECT_NE(next.find(c.text), std::string::npos) << "rank " << r << "'s next call: " << next;
  }
  // Every rank in this process, queuing in rank order: only the last failed at once.
  bool all = true;
  for (int r = 0; r < n; ++r) all = all && w.local(r);
  if (all) {
    EXPECT_EQ(failedAtOnce, 1);
  }
}

constexpr Call kSum{};
constexpr Call kMax{Call::kAllReduce, 4096, braidFloat32, braidMax, 0};
constexpr Call kInts{Call::kAllReduce, 4096, braidInt32, braidSum, 0};
constexpr Call kMore{Call::kAllReduce, 1 << 20, braidFloat32, braidSum, 0};
constexpr Call kRoot0{Call::kBroadcast, 4096, braidFloat32, braidSum, 0};
constexpr Call kRoot1{Call::kBroadcast, 4096, braidFloat32, braidSum, 1};

INSTANTIATE_TEST_SUITE_P(
    Calls, GpuMismatch,
    ::testing::Values(
        Case{"op_simple", "simple", kSum, kMax,
             "mismatched calls: rank 0 queued allreduce #1 (4096 x float32, sum) and rank 1 allreduce #1 (4096 x "
             "float32, max)"},
        Case{"op_ll", "ll", kSum, kMax, "rank 1 allreduce #1 (4096 x float32, max)"},
        Case{"op_ll128", "ll128", kSum, kMax, "rank 1 allreduce #1 (4096 x float32, max)"},
        Case{"type", "simple", kSum, kInts, "rank 1 allreduce #1 (4096 x int32, sum)"},
        Case{"count", "simple", kMore, kSum,
             "rank 0 queued allreduce #1 (1048576 x float32, sum) and rank 1 allreduce #1 (4096 x float32, sum)"},
        Case{"collective", "ll", kSum, kRoot0,
             "rank 0 queued allreduce #1 (4096 x float32, sum) and rank 1 broadcast #1 (4096 x float32, root 0)"},
        Case{"root", "simple", kRoot0, kRoot1,
             "rank 0 queued broadcast #1 (4096 x float32, root 0) and rank 1 broadcast #1 (4096 x float32, root "
             "1)"},
        // Four ranks, the last differs: across two hosts it is found on the second host, by a rank
        // that is not linked to the first, whose ranks learn the verdict through the link.
        Case{"op_4ranks", "simple", kSum, kMax, "and rank 3 allreduce #1 (4096 x float32, max)", 4}),
    caseName);

// Rank 0 captures an all-reduce into a graph and replays it twice while rank 1 makes the same call
// eagerly twice; then both call eagerly. The ranks' call numbers no longer line up (rank 0 is at
// its second, rank 1 at its third): the ledger must not take that for a mismatch. Every output is
// checked.
TEST(GpuLedger, ACapturedCallEndsTheComparisonWithoutAFalseMismatch) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  WorldOptions o;
  o.nranks = 2;
  World w(o);
  ASSERT_EQ(w.error, "");
  constexpr size_t kCount = 1000;
  std::vector<std::unique_ptr<DeviceBuffer>> in(2), out(2);
  for (int r = 0; r < 2; ++r) {
    if (!w.local(r)) continue;
    in[r] = std::make_unique<DeviceBuffer>(w.devices[r], kCount * sizeof(float));
    out[r] = std::make_unique<DeviceBuffer>(w.devices[r], kCount * sizeof(float));
    std::vector<float> mine(kCount, static_cast<float>(r + 1));
    writeDevice(w.devices[r], in[r]->ptr, mine.data(), kCount * sizeof(float));
  }
  auto allReduce = [&](int r) {
    return braidAllReduce(in[r]->ptr, out[r]->ptr, kCount, braidFloat32, braidSum, w.comms[r], w.streams[r]);
  };
  auto check = [&](const char* when) {
    ASSERT_TRUE(w.sync()) << w.error;
    for (int r = 0; r < 2; ++r) {
      if (!w.local(r)) continue;
      std::vector<float> got(kCount, 0);
      readDevice(w.devices[r], got.data(), out[r]->ptr, kCount * sizeof(float));
      for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(got[i], 3.0f) << when << ", rank " << r << ", element " << i;
      fillDevice(w.devices[r], out[r]->ptr, 0, kCount * sizeof(float));
    }
  };
  cudaGraphExec_t graph = nullptr;
  if (w.local(0)) {
    ASSERT_EQ(captureGraph(
                  w.devices[0], w.streams[0],
                  [&] { return allReduce(0) == braidSuccess ? std::string() : braidGetLastError(); }, &graph),
              "");
  }
  for (int replay = 0; replay < 2; ++replay) {
    if (w.local(0)) {
      ASSERT_EQ(cudaGraphLaunch(graph, w.streams[0]), cudaSuccess);
    }
    if (w.local(1)) {
      ASSERT_EQ(allReduce(1), braidSuccess) << braidGetLastError();
    }
    check("replay");
  }
  for (int r = 0; r < 2; ++r) {
    if (w.local(r)) {
      ASSERT_EQ(allReduce(r), braidSuccess) << "rank " << r << ": " << braidGetLastError();
    }
  }
  check("eager, after the graph");
  if (graph != nullptr) cudaGraphExecDestroy(graph);
}

}  // namespace
}  // namespace braid::gputest
