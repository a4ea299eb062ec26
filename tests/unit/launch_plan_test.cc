// How a group's GPU calls become launches (exec/launch_plan.h), checked against ranges written out by
// hand for each case.
#include "exec/launch_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace braid::exec {
namespace {

// The launches as "begin-end" pairs, e.g. "0-3 3-4".
std::string describe(const std::vector<LaunchRange>& launches) {
  std::string out;
  for (const LaunchRange& r : launches) {
    out += (out.empty() ? "" : " ") + std::to_string(r.begin) + "-" + std::to_string(r.end);
  }
  return out;
}

LaunchKey key(int kernel, int proto = 0, const void* stream = nullptr, bool oneShot = false) {
  LaunchKey k;
  k.kernel = kernel;
  k.proto = proto;
  k.stream = stream;
  k.oneShot = oneShot;
  return k;
}

TEST(LaunchPlan, CallsOfOneKernelProtocolAndStreamShareALaunch) {
  EXPECT_EQ(describe(planLaunches({key(0), key(0), key(0)}, 16, 0)), "0-3");
  EXPECT_EQ(describe(planLaunches({key(2, 1), key(2, 1)}, 16, 0)), "0-2");
}

TEST(LaunchPlan, AnotherKernelProtocolOrStreamStartsANewLaunchInPostingOrder) {
  int a = 0, b = 0;
  EXPECT_EQ(describe(planLaunches({key(0), key(0), key(6), key(6), key(0), key(7)}, 16, 0)), "0-2 2-4 4-5 5-6");
  EXPECT_EQ(describe(planLaunches({key(0, 0), key(0, 1), key(0, 1)}, 16, 0)), "0-1 1-3");
  EXPECT_EQ(describe(planLaunches({key(0, 0, &a), key(0, 0, &a), key(0, 0, &b)}, 16, 0)), "0-2 2-3");
}

TEST(LaunchPlan, ALaunchHoldsAtMostMaxCalls) {
  std::vector<LaunchKey> calls(35, key(4));
  EXPECT_EQ(describe(planLaunches(calls, 16, 0)), "0-16 16-32 32-35");
  EXPECT_EQ(describe(planLaunches(calls, 1, 0)).substr(0, 11), "0-1 1-2 2-3");
}

LaunchKey oneShot(int kernel, size_t words) {
  LaunchKey k = key(kernel, 1, nullptr, true);
  k.oneShotWords = words;
  return k;
}

TEST(LaunchPlan, OneShotCallsShareALaunchWhileTheirWordsFitInABlock) {
  EXPECT_EQ(describe(planLaunches({oneShot(9, 1), oneShot(9, 100), oneShot(9, 7)}, 16, 1000)), "0-3");
  EXPECT_EQ(describe(planLaunches({oneShot(9, 600), oneShot(9, 600), oneShot(9, 400)}, 16, 1000)), "0-1 1-3");
  // Streams do not cut one-shot calls: a launch is one epoch on every rank, and each rank picks its
  // own streams (the engine joins them around the launch).
  int a = 0, b = 0;
  LaunchKey onA = oneShot(9, 1), onB = oneShot(9, 1);
  onA.stream = &a;
  onB.stream = &b;
  EXPECT_EQ(describe(planLaunches({onA, onB, onA}, 16, 1000)), "0-3");
  // A one-shot and a FIFO call of the same kernel number never share a launch.
  EXPECT_EQ(describe(planLaunches({oneShot(9, 1), key(9, 1), oneShot(10, 1)}, 16, 1000)), "0-1 1-2 2-3");
}

TEST(LaunchPlan, NoCallsNoLaunches) { EXPECT_TRUE(planLaunches({}, 16, 0).empty()); }

}  // namespace
}  // namespace braid::exec
