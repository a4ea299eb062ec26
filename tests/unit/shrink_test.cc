// braidCommShrink on host-memory communicators of thread ranks: the survivors form a new
// communicator in the parent's order without the excluded ranks, whether those never call (hung),
// were aborted (dead), or left a collective of the parent stuck (BRAID_SHRINK_ABORT ends it); the
// new communicator's all-reduce is checked against the sum of the survivors' values; bad arguments
// and dead parents are refused with a message.
#include <braid/braid.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "thread_ranks.h"

namespace {

using braid::test::ThreadRanks;

constexpr size_t kCount = 4099;

// Each survivor's value is its parent rank + 1; the new communicator's all-reduce must give their
// sum on every element, and its ranks must follow the parent's order.
void expectWorkingChild(braidComm_t child, int parentRank, const std::vector<int>& survivors, float* sum,
                        std::string* error) {
  int rank = -1, count = -1;
  braidCommUserRank(child, &rank);
  braidCommCount(child, &count);
  int expectRank = 0;
  while (survivors[expectRank] != parentRank) ++expectRank;
  if (rank != expectRank || count != static_cast<int>(survivors.size())) {
    *error = "rank " + std::to_string(rank) + " of " + std::to_string(count) + ", expected " +
             std::to_string(expectRank) + " of " + std::to_string(survivors.size());
    return;
  }
  std::vector<float> data(kCount, static_cast<float>(parentRank + 1));
  if (braidAllReduce(data.data(), data.data(), kCount, braidFloat32, braidSum, child, nullptr) != braidSuccess) {
    *error = braidGetLastError();
    return;
  }
  for (size_t i = 0; i < kCount; ++i) {
    if (data[i] != data[0]) {
      *error = "element " + std::to_string(i) + " differs";
      return;
    }
  }
  *sum = data[0];
}

float sumOf(const std::vector<int>& survivors) {
  float s = 0;
  for (int r : survivors) s += static_cast<float>(r + 1);
  return s;
}

TEST(Shrink, AnExcludedRankThatNeverCallsIsNotWaitedFor) {
  ThreadRanks ranks(4);
  int excluded[] = {2};
  const std::vector<int> survivors = {0, 1, 3};
  std::vector<braidComm_t> child(4, nullptr);
  std::vector<float> sums(4, -1);
  std::vector<std::string> problems(4);
  std::vector<std::string> errors;
  auto rc = ranks.each(
      [&](int r) {
        if (r == 2) return braidSuccess;  // hung: never calls
        braidResult_t res = braidCommShrink(ranks[r], excluded, 1, &child[r], nullptr, BRAID_SHRINK_DEFAULT);
        if (res == braidSuccess) expectWorkingChild(child[r], r, survivors, &sums[r], &problems[r]);
        return res;
      },
      &errors);
  for (int r : survivors) {
    ASSERT_EQ(rc[r], braidSuccess) << "rank " << r << ": " << errors[r];
    EXPECT_EQ(problems[r], "") << "rank " << r;
    EXPECT_EQ(sums[r], sumOf(survivors)) << "rank " << r;
    EXPECT_EQ(braidCommDestroy(child[r]), braidSuccess);
  }
}

TEST(Shrink, AfterAnAbortedPeerFailedTheParent) {
  ThreadRanks ranks(3);
  int excluded[] = {1};
  const std::vector<int> survivors = {0, 2};
  std::vector<braidComm_t> child(3, nullptr);
  std::vector<float> sums(3, -1);
  std::vector<std::string> problems(3), errors;
  std::vector<braidResult_t> second(3, braidSuccess);
  std::atomic<int> firstDone{0};
  auto rc = ranks.each(
      [&](int r) {
        std::vector<float> data(kCount, 1.0f);
        braidResult_t res = braidAllReduce(data.data(), data.data(), kCount, braidFloat32, braidSum, ranks[r], nullptr);
        if (res != braidSuccess) return res;
        ++firstDone;
        if (r == 1) {
          while (firstDone.load() < 3) std::this_thread::yield();
          return braidCommAbort(ranks[1]);  // dead: its connections close, its handle is gone
        }
        second[r] = braidAllReduce(data.data(), data.data(), kCount, braidFloat32, braidSum, ranks[r], nullptr);
        res = braidCommShrink(ranks[r], excluded, 1, &child[r], nullptr, BRAID_SHRINK_DEFAULT);
        if (res == braidSuccess) expectWorkingChild(child[r], r, survivors, &sums[r], &problems[r]);
        return res;
      },
      &errors);
  for (int r : survivors) {
    EXPECT_NE(second[r], braidSuccess) << "rank " << r << "'s call with the aborted rank 1 succeeded";
    ASSERT_EQ(rc[r], braidSuccess) << "rank " << r << ": " << errors[r];
    EXPECT_EQ(problems[r], "") << "rank " << r;
    EXPECT_EQ(sums[r], sumOf(survivors)) << "rank " << r;
    braidResult_t async = braidSuccess;
    EXPECT_EQ(braidCommGetAsyncError(ranks[r], &async), braidSuccess);
    EXPECT_NE(async, braidSuccess) << "the parent of rank " << r << " did not fail";
    EXPECT_EQ(braidCommDestroy(child[r]), braidSuccess);
  }
  // The aborted parent is gone: split and shrink on it are refused, saying so.
  braidComm_t none = nullptr;
  EXPECT_EQ(braidCommShrink(ranks[1], excluded, 0, &none, nullptr, 0), braidInvalidUsage);
  EXPECT_NE(std::string(braidGetLastError()).find("not a live communicator (destroyed, aborted"), std::string::npos)
      << braidGetLastError();
  EXPECT_EQ(braidCommSplit(ranks[1], 0, 0, &none, nullptr), braidInvalidUsage);
  EXPECT_NE(std::string(braidGetLastError()).find("not a live communicator (destroyed, aborted"), std::string::npos)
      << braidGetLastError();
}

// Ranks 0 and 1 are inside an all-reduce that rank 2 never joins; another thread of each shrinks
// with BRAID_SHRINK_ABORT: the stuck calls return an error, and the new communicator works. With
// BRAID_CHECK=1 the stuck calls wait in the check's exchange over the bootstrap (the ring through
// rank 2), which the shrink then needs itself.
void abortFirstEndsAStuckCall(bool checked) {
  ThreadRanks ranks(3, nullptr,
                    checked ? std::vector<std::pair<const char*, const char*>>{{"BRAID_CHECK", "1"}}
                            : std::vector<std::pair<const char*, const char*>>{});
  std::vector<std::string> errors;
  auto warm = ranks.each(
      [&](int r) {
        std::vector<float> data(kCount, 1.0f);
        return braidAllReduce(data.data(), data.data(), kCount, braidFloat32, braidSum, ranks[r], nullptr);
      },
      &errors);
  for (int r = 0; r < 3; ++r) ASSERT_EQ(warm[r], braidSuccess) << errors[r];
  int excluded[] = {2};
  const std::vector<int> survivors = {0, 1};
  std::vector<braidResult_t> stuck(2, braidSuccess);
  std::vector<std::string> stuckError(2);
  std::vector<std::thread> calls;
  for (int r = 0; r < 2; ++r) {
    calls.emplace_back([&, r] {
      std::vector<float> data(kCount, 1.0f);
      stuck[r] = braidAllReduce(data.data(), data.data(), kCount, braidFloat32, braidSum, ranks[r], nullptr);
      stuckError[r] = braidGetLastError();
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::vector<braidComm_t> child(3, nullptr);
  std::vector<float> sums(3, -1);
  std::vector<std::string> problems(3);
  auto t0 = std::chrono::steady_clock::now();
  auto rc = ranks.each(
      [&](int r) {
        if (r == 2) return braidSuccess;
        braidResult_t res = braidCommShrink(ranks[r], excluded, 1, &child[r], nullptr, BRAID_SHRINK_ABORT);
        if (res == braidSuccess) expectWorkingChild(child[r], r, survivors, &sums[r], &problems[r]);
        return res;
      },
      &errors);
  for (auto& t : calls) t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  for (int r : survivors) {
    EXPECT_NE(stuck[r], braidSuccess) << "rank " << r << "'s stuck call succeeded";
    ASSERT_EQ(rc[r], braidSuccess) << "rank " << r << ": " << errors[r];
    EXPECT_EQ(problems[r], "") << "rank " << r;
    EXPECT_EQ(sums[r], sumOf(survivors)) << "rank " << r;
    EXPECT_EQ(braidCommDestroy(child[r]), braidSuccess);
  }
}

TEST(Shrink, AbortFirstEndsACallStuckOnAnotherThread) { abortFirstEndsAStuckCall(false); }

TEST(Shrink, AbortFirstEndsACheckedCallStuckInTheBootstrap) { abortFirstEndsAStuckCall(true); }

// A communicator whose init failed before its ranks met has no bootstrap: refused, not a crash.
TEST(Shrink, AnInitThatFailedIsRefused) {
  braidUniqueId id;
  ASSERT_EQ(braidGetUniqueId(&id), braidSuccess);
  braidConfig_t config = BRAID_CONFIG_INITIALIZER;
  config.deviceKind = braidDeviceHost;
  config.blocking = 0;
  config.timeoutMs = 1000;
  braidComm_t lonely = nullptr;  // rank 0 of 2; rank 1 never comes
  braidResult_t rc = braidCommInitRankConfig(&lonely, 2, id, 0, &config);
  ASSERT_TRUE(rc == braidInProgress || rc == braidSuccess) << braidGetLastError();
  braidResult_t async = braidInProgress;
  for (int i = 0; i < 100 && async == braidInProgress; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    braidCommGetAsyncError(lonely, &async);
  }
  ASSERT_NE(async, braidSuccess);
  ASSERT_NE(async, braidInProgress) << "the init did not time out";
  int excluded[] = {1};
  braidComm_t child = nullptr;
  EXPECT_EQ(braidCommShrink(lonely, excluded, 1, &child, nullptr, 0), braidInvalidUsage);
  EXPECT_NE(std::string(braidGetLastError()).find("init failed before its ranks met"), std::string::npos)
      << braidGetLastError();
  EXPECT_EQ(braidCommDestroy(lonely), braidSuccess);
}

TEST(Shrink, BadArgumentsAreRefusedNamingThem) {
  ThreadRanks ranks(2);
  braidComm_t child = nullptr;
  auto refused = [&](int* list, int n, braidComm_t* out, int flags, braidResult_t code, const char* says) {
    EXPECT_EQ(braidCommShrink(ranks[0], list, n, out, nullptr, flags), code) << says;
    EXPECT_NE(std::string(braidGetLastError()).find(says), std::string::npos) << braidGetLastError();
  };
  int outOfRange[] = {2}, twice[] = {1, 1}, self[] = {0}, one[] = {1};
  refused(outOfRange, 1, &child, 0, braidInvalidArgument, "excluded rank 2 is not in 0..1");
  refused(twice, 2, &child, 0, braidInvalidArgument, "rank 1 is excluded twice");
  refused(self, 1, &child, 0, braidInvalidUsage, "rank 0 is in its own exclude list");
  refused(one, -1, &child, 0, braidInvalidArgument, "'excludeRanksCount' = -1 is negative");
  refused(nullptr, 1, &child, 0, braidInvalidArgument, "'excludeRanksList'");
  refused(one, 1, nullptr, 0, braidInvalidArgument, "'newcomm'");
  refused(one, 1, &child, 4, braidInvalidArgument, "'shrinkFlags' = 4");
  // Excluding every other rank leaves a communicator of one.
  ASSERT_EQ(braidCommShrink(ranks[0], one, 1, &child, nullptr, 0), braidSuccess) << braidGetLastError();
  int count = 0;
  braidCommCount(child, &count);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(braidCommDestroy(child), braidSuccess);
  // A finalized parent is refused.
  ASSERT_EQ(braidCommFinalize(ranks[1]), braidSuccess);
  int zero[] = {0};
  EXPECT_EQ(braidCommShrink(ranks[1], zero, 1, &child, nullptr, 0), braidInvalidUsage);
  EXPECT_NE(std::string(braidGetLastError()).find("finalized"), std::string::npos) << braidGetLastError();
}

}  // namespace
