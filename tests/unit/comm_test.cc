// Communicator lifetime with ranks as threads of this process: non-blocking init, abort of a
// communicator that is waiting (from another thread), and split.
#include <braid/braid.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "api/handles.h"
#include "core/log.h"
#include "core/plan.h"
#include "exec/cuda_engine.h"

namespace {

using Clock = std::chrono::steady_clock;

braidConfig_t hostConfig(int blocking, int timeoutMs) {
  braidConfig_t c = BRAID_CONFIG_INITIALIZER;
  c.deviceKind = braidDeviceHost;
  c.blocking = blocking;
  c.timeoutMs = timeoutMs;
  return c;
}

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// GPU buffers are laid out from each process's environment: a rank that differs is named, with the
// setting, instead of reading another rank's slots at the wrong place.
TEST(Comm, GpuLayoutSettingsMustAgree) {
  using braid::core::GpuLayoutSettings;
  const GpuLayoutSettings base{512 << 10, 32 << 10, 1024 * 120, 4 << 20, 30, 0};
  std::vector<GpuLayoutSettings> all(3, base);
  EXPECT_TRUE(braid::core::checkLayoutAgreement(all).isOk());
  all[2].oneShotBytes = 1 << 20;
  braid::Status s = braid::core::checkLayoutAgreement(all);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("rank 2"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("BRAID_GPU_ONESHOT_BYTES = 1048576"), std::string::npos) << s.message();
  all[2] = base;
  all[1].channels = 16;
  s = braid::core::checkLayoutAgreement(all);
  EXPECT_NE(s.message().find("rank 1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("channels"), std::string::npos) << s.message();
  all[1] = base;
  all[1].ll128SlotBytes = 3840;
  s = braid::core::checkLayoutAgreement(all);
  EXPECT_NE(s.message().find("BRAID_GPU_LL128_BYTES = 3840"), std::string::npos) << s.message();
}

// The copy-engine path's slots (BRAID_CE): none when off, without reach, or where two ranks of one
// process share a GPU (saying which); else BRAID_CE_SLOT_BYTES within the budget; a bad value is an
// error naming it.
TEST(Comm, CopyEngineSlots) {
  using braid::core::copyEngineSlots;
  std::vector<braid::transport::PeerIdentity> ids(3);
  for (int r = 0; r < 3; ++r) {
    ids[r].pid = 100 + r;
    ids[r].host = 7;
    ids[r].device = 0;  // one GPU, a process per rank
  }
  size_t bytes = 1;
  std::string why;
  ASSERT_TRUE(copyEngineSlots("auto", 2 << 20, ids, true, &bytes, &why).isOk());
  EXPECT_EQ(bytes, braid::exec::ceSlotLimit(3, 2 << 20));
  EXPECT_GT(bytes, 0u);
  EXPECT_EQ(why, "");
  ASSERT_TRUE(copyEngineSlots("0", 2 << 20, ids, true, &bytes, &why).isOk());
  EXPECT_EQ(bytes, 0u);
  ASSERT_TRUE(copyEngineSlots("1", 2 << 20, ids, false, &bytes, &why).isOk());
  EXPECT_EQ(bytes, 0u);
  ids[2].pid = ids[1].pid;  // ranks 1 and 2: threads of one process on one GPU
  ASSERT_TRUE(copyEngineSlots("1", 2 << 20, ids, true, &bytes, &why).isOk());
  EXPECT_EQ(bytes, 0u);
  EXPECT_NE(why.find("ranks 1 and 2"), std::string::npos) << why;
  ids[2].device = 1;  // ... each on a GPU of its own
  ASSERT_TRUE(copyEngineSlots("1", 2 << 20, ids, true, &bytes, &why).isOk());
  EXPECT_GT(bytes, 0u);
  const braid::Status bad = copyEngineSlots("yes", 2 << 20, ids, true, &bytes, &why);
  EXPECT_FALSE(bad.isOk());
  EXPECT_NE(bad.message().find("BRAID_CE='yes'"), std::string::npos) << bad.message();
}

// The one-shot's block: offered to 2..8 ranks, as asked, but lowered so that a rank's region
// (4 x ranks x block) stays within 32 MiB.
TEST(Comm, OneShotBlockLimit) {
  using braid::exec::oneShotBlockLimit;
  EXPECT_EQ(oneShotBlockLimit(1, 4 << 20), 0u);
  EXPECT_EQ(oneShotBlockLimit(9, 4 << 20), 0u);
  EXPECT_EQ(oneShotBlockLimit(2, 4 << 20), size_t{4} << 20);
  EXPECT_EQ(oneShotBlockLimit(2, 16 << 20), size_t{4} << 20);
  EXPECT_EQ(oneShotBlockLimit(8, 4 << 20), size_t{1} << 20);
  EXPECT_EQ(oneShotBlockLimit(3, 64 << 10), size_t{64} << 10);
  for (int n = 2; n <= 8; ++n) EXPECT_LE(4 * n * oneShotBlockLimit(n, 16 << 20), size_t{32} << 20) << n;
}

TEST(Comm, NonBlockingInitReportsInProgressThenSuccess) {
  braidUniqueId id;
  ASSERT_EQ(braidGetUniqueId(&id), braidSuccess);
  braidConfig_t config = hostConfig(0, 20000);
  braidComm_t c0 = nullptr, c1 = nullptr;
  ASSERT_EQ(braidCommInitRankConfig(&c0, 2, id, 0, &config), braidInProgress) << braidGetLastError();
  ASSERT_NE(c0, nullptr);
  braidResult_t state = braidSuccess;
  ASSERT_EQ(braidCommGetAsyncError(c0, &state), braidSuccess);
  EXPECT_EQ(state, braidInProgress);  // rank 1 has not arrived: it cannot be done
  // Calls that need a ready communicator say why they cannot run yet.
  float x = 0;
  EXPECT_EQ(braidAllReduce(&x, &x, 1, braidFloat32, braidSum, c0, nullptr), braidInvalidUsage);
  EXPECT_NE(std::string(braidGetLastError()).find("still initializing"), std::string::npos) << braidGetLastError();

  ASSERT_EQ(braidCommInitRankConfig(&c1, 2, id, 1, &config), braidInProgress);
  for (braidComm_t c : {c0, c1}) {
    auto start = Clock::now();
    do {
      ASSERT_EQ(braidCommGetAsyncError(c, &state), braidSuccess);
    } while (state == braidInProgress && secondsSince(start) < 20);
    EXPECT_EQ(state, braidSuccess);
  }
  int rank = -1;
  EXPECT_EQ(braidCommUserRank(c1, &rank), braidSuccess);
  EXPECT_EQ(rank, 1);
  EXPECT_EQ(braidCommDestroy(c0), braidSuccess);
  EXPECT_EQ(braidCommDestroy(c1), braidSuccess);
}

TEST(Comm, NonBlockingInitThatFailsKeepsItsError) {
  braidUniqueId id;
  ASSERT_EQ(braidGetUniqueId(&id), braidSuccess);
  braidConfig_t config = hostConfig(0, 1000);  // rank 1 never comes: a timeout after 1 s
  braidComm_t c0 = nullptr;
  ASSERT_EQ(braidCommInitRankConfig(&c0, 2, id, 0, &config), braidInProgress);
  braidResult_t state = braidInProgress;
  auto start = Clock::now();
  while (state == braidInProgress && secondsSince(start) < 20)
    ASSERT_EQ(braidCommGetAsyncError(c0, &state), braidSuccess);
  EXPECT_EQ(state, braidTimeout);
  int n = 0;
  EXPECT_EQ(braidCommCount(c0, &n), braidSuccess);  // queries still answer
  float x = 0;
  EXPECT_EQ(braidAllReduce(&x, &x, 1, braidFloat32, braidSum, c0, nullptr), braidTimeout);
  EXPECT_NE(std::string(braidGetLastError()).find("rank(s) 1"), std::string::npos) << braidGetLastError();
  EXPECT_EQ(braidCommDestroy(c0), braidSuccess);
}

TEST(Comm, AbortStopsAnInitThatWaitsForAMissingRank) {
  braidUniqueId id;
  ASSERT_EQ(braidGetUniqueId(&id), braidSuccess);
  braidConfig_t config = hostConfig(0, 60000);
  braidComm_t c0 = nullptr;
  ASSERT_EQ(braidCommInitRankConfig(&c0, 2, id, 0, &config), braidInProgress);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto start = Clock::now();
  EXPECT_EQ(braidCommAbort(c0), braidSuccess);  // joins the init thread, which must stop at once
  EXPECT_LT(secondsSince(start), 5.0) << "abort waited for the 60 s deadline";
  int n = 0;
  EXPECT_EQ(braidCommCount(c0, &n), braidInvalidUsage);
}

// Abort from another thread wakes a bootstrap wait in progress on this communicator.
TEST(Comm, AbortFromAnotherThreadWakesAWait) {
  braidUniqueId id;
  ASSERT_EQ(braidGetUniqueId(&id), braidSuccess);
  braidConfig_t config = hostConfig(1, 60000);
  braidComm_t comms[2] = {nullptr, nullptr};
  std::thread t1([&] { braidCommInitRankConfig(&comms[1], 2, id, 1, &config); });
  ASSERT_EQ(braidCommInitRankConfig(&comms[0], 2, id, 0, &config), braidSuccess) << braidGetLastError();
  t1.join();
  ASSERT_NE(comms[1], nullptr);

  std::shared_ptr<braid::core::Comm> c0;
  ASSERT_TRUE(braid::api::lookupComm(comms[0], "comm", &c0).isOk());
  braid::Status waited;
  auto start = Clock::now();
  std::thread waiter([&] { waited = c0->bootstrap().barrier(); });  // rank 1 never enters it
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(braidCommAbort(comms[0]), braidSuccess);
  waiter.join();
  EXPECT_LT(secondsSince(start), 5.0);
  EXPECT_FALSE(waited.isOk());
  EXPECT_NE(waited.message().find("abort"), std::string::npos) << waited.message();
  c0.reset();
  EXPECT_EQ(braidCommDestroy(comms[1]), braidSuccess);
}

// Aborting one rank releases its peers: a rank waiting in a collective on it stops with an error
// naming the aborted rank instead of waiting forever.
TEST(Comm, AbortReleasesPeersWaitingInACollective) {
  braidUniqueId id;
  ASSERT_EQ(braidGetUniqueId(&id), braidSuccess);
  braidConfig_t config = hostConfig(1, 20000);
  braidComm_t comms[2] = {nullptr, nullptr};
  std::thread t1([&] { braidCommInitRankConfig(&comms[1], 2, id, 1, &config); });
  ASSERT_EQ(braidCommInitRankConfig(&comms[0], 2, id, 0, &config), braidSuccess);
  t1.join();
  // One collective first, so that the connections between the two ranks exist.
  std::vector<float> a(1000, 1), b(1000, 1);
  std::thread warm([&] { braidAllReduce(b.data(), b.data(), b.size(), braidFloat32, braidSum, comms[1], nullptr); });
  ASSERT_EQ(braidAllReduce(a.data(), a.data(), a.size(), braidFloat32, braidSum, comms[0], nullptr), braidSuccess);
  warm.join();
  braidResult_t rc = braidSuccess;
  std::string error;
  auto start = Clock::now();
  std::thread waiter([&] {  // rank 1 enters a collective that rank 0 never joins
    rc = braidAllReduce(b.data(), b.data(), b.size(), braidFloat32, braidSum, comms[1], nullptr);
    error = braidGetLastError();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(braidCommAbort(comms[0]), braidSuccess);
  waiter.join();
  EXPECT_LT(secondsSince(start), 5.0);
  EXPECT_EQ(rc, braidRemoteError);
  EXPECT_NE(error.find("rank 0 gave up"), std::string::npos) << error;
  EXPECT_EQ(braidCommDestroy(comms[1]), braidSuccess);
}

TEST(Comm, SplitOfThreadRanksOrdersByKey) {
  constexpr int n = 4;
  braidUniqueId id;
  ASSERT_EQ(braidGetUniqueId(&id), braidSuccess);
  braidConfig_t config = hostConfig(1, 20000);
  braidComm_t comms[n], halves[n];
  braidResult_t results[n];
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      results[r] = braidCommInitRankConfig(&comms[r], n, id, r, &config);
      // color: r < 3 join color 5, rank 3 opts out; key: reverse rank order
      if (results[r] == braidSuccess) {
        results[r] = braidCommSplit(comms[r], r < 3 ? 5 : BRAID_SPLIT_NOCOLOR, 10 - r, &halves[r], nullptr);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) ASSERT_EQ(results[r], braidSuccess) << "rank " << r;
  EXPECT_EQ(halves[3], nullptr);
  for (int r = 0; r < 3; ++r) {
    int rank = -1, count = -1;
    EXPECT_EQ(braidCommUserRank(halves[r], &rank), braidSuccess);
    EXPECT_EQ(braidCommCount(halves[r], &count), braidSuccess);
    EXPECT_EQ(count, 3);
    EXPECT_EQ(rank, 2 - r);  // keys 10, 9, 8: parent rank 2 has the smallest key
    EXPECT_EQ(braidCommDestroy(halves[r]), braidSuccess);
  }
  for (int r = 0; r < n; ++r) EXPECT_EQ(braidCommDestroy(comms[r]), braidSuccess);
}

}  // namespace

// One thread makes every rank of a communicator inside a group (NCCL's pattern for several devices
// per thread): each init returns at once, braidGroupEnd waits for all, and the communicators work.
TEST(Comm, InitOfEveryRankFromOneThreadInAGroup) {
  const int n = 3;
  braidUniqueId id;
  ASSERT_EQ(braidGetUniqueId(&id), braidSuccess);
  braidConfig_t config = hostConfig(1, 20000);
  std::vector<braidComm_t> comms(n, nullptr);
  ASSERT_EQ(braidGroupStart(), braidSuccess);
  for (int r = 0; r < n; ++r) ASSERT_EQ(braidCommInitRankConfig(&comms[r], n, id, r, &config), braidSuccess);
  ASSERT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
  std::vector<std::vector<int32_t>> out(n, std::vector<int32_t>(5, -1));
  std::vector<int32_t> in(5, 2);
  ASSERT_EQ(braidGroupStart(), braidSuccess);
  for (int r = 0; r < n; ++r)
    ASSERT_EQ(braidAllReduce(in.data(), out[r].data(), 5, braidInt32, braidSum, comms[r], nullptr), braidSuccess);
  ASSERT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
  for (int r = 0; r < n; ++r) EXPECT_EQ(out[r][4], 2 * n) << "rank " << r;
  for (braidComm_t c : comms) EXPECT_EQ(braidCommDestroy(c), braidSuccess);
}

// One thread splits every rank inside a group: each split returns at once with no communicator yet,
// braidGroupEnd makes them, and they work (the exchanges of the parents meet only because the group
// runs each parent's held calls on a thread of its own).
TEST(Comm, SplitOfEveryRankFromOneThreadInAGroup) {
  const int n = 4;
  braidUniqueId id;
  ASSERT_EQ(braidGetUniqueId(&id), braidSuccess);
  braidConfig_t config = hostConfig(1, 20000);
  std::vector<braidComm_t> comms(n, nullptr), halves(n, nullptr);
  ASSERT_EQ(braidGroupStart(), braidSuccess);
  for (int r = 0; r < n; ++r) ASSERT_EQ(braidCommInitRankConfig(&comms[r], n, id, r, &config), braidSuccess);
  ASSERT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
  ASSERT_EQ(braidGroupStart(), braidSuccess);
  for (int r = 0; r < n; ++r) {
    // Ranks 0 and 2 form one half, 1 and 3 the other; keys reverse the order inside each half.
    ASSERT_EQ(braidCommSplit(comms[r], r % 2, n - r, &halves[r], nullptr), braidSuccess) << braidGetLastError();
    EXPECT_EQ(halves[r], nullptr) << "the split of rank " << r << " is held until the group ends";
  }
  ASSERT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
  for (int r = 0; r < n; ++r) {
    ASSERT_NE(halves[r], nullptr) << "rank " << r;
    int rank = -1, count = -1;
    EXPECT_EQ(braidCommUserRank(halves[r], &rank), braidSuccess);
    EXPECT_EQ(braidCommCount(halves[r], &count), braidSuccess);
    EXPECT_EQ(count, 2);
    EXPECT_EQ(rank, r < 2 ? 1 : 0) << "rank " << r;
  }
  // Each half sums its parent ranks: 0 + 2 and 1 + 3.
  std::vector<std::vector<int32_t>> in(n), out(n, std::vector<int32_t>(3, -1));
  for (int r = 0; r < n; ++r) in[r].assign(3, r);
  ASSERT_EQ(braidGroupStart(), braidSuccess);
  for (int r = 0; r < n; ++r)
    ASSERT_EQ(braidAllReduce(in[r].data(), out[r].data(), 3, braidInt32, braidSum, halves[r], nullptr), braidSuccess);
  ASSERT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
  for (int r = 0; r < n; ++r) EXPECT_EQ(out[r][2], r % 2 == 0 ? 2 : 4) << "rank " << r;
  // A bad split inside a group cancels it and is reported by braidGroupEnd.
  braidComm_t unused = nullptr;
  ASSERT_EQ(braidGroupStart(), braidSuccess);
  EXPECT_EQ(braidCommSplit(comms[0], -5, 0, &unused, nullptr), braidInvalidArgument);
  EXPECT_NE(braidGroupEnd(), braidSuccess);
  for (braidComm_t c : halves) EXPECT_EQ(braidCommDestroy(c), braidSuccess);
  for (braidComm_t c : comms) EXPECT_EQ(braidCommDestroy(c), braidSuccess);
}
