// Mismatched calls between host ranks (issue 17): every slot carries its sender's call tag
// (transport/host_fifo.h), so ranks in different calls fail at their first shared step with an
// error naming both ranks and both calls -- never wrong data, never a hang. Thread ranks over
// loopback here; tests/multiproc runs the same across processes over shared memory and sockets.
#include <braid/braid.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "thread_ranks.h"

namespace braid::test {
namespace {

// The odd rank's call against the others': each takes (comm, odd?, in, out), buffers of 64 floats.
using Call = std::function<braidResult_t(braidComm_t comm, bool odd, float* in, float* out)>;

braidResult_t allReduce(braidComm_t c, float* in, float* out, size_t count, braidDataType_t type, braidRedOp_t op) {
  return braidAllReduce(in, out, count, type, op, c, nullptr);
}

struct Mismatch {
  const char* name;
  Call call;
  const char* usual;  // the call of every rank but the last, as the error names it
  const char* odd;    // the last rank's
};

const Mismatch kMismatches[] = {
    {"op",
     [](braidComm_t c, bool odd, float* in, float* out) {
       return allReduce(c, in, out, 64, braidFloat32, odd ? braidMax : braidSum);
     },
     "allreduce #1 (64 x float32, sum)", "allreduce #1 (64 x float32, max)"},
    {"type",
     [](braidComm_t c, bool odd, float* in, float* out) {
       return allReduce(c, in, out, 64, odd ? braidInt32 : braidFloat32, braidSum);
     },
     "allreduce #1 (64 x float32, sum)", "allreduce #1 (64 x int32, sum)"},
    {"count",
     [](braidComm_t c, bool odd, float* in, float* out) {
       return allReduce(c, in, out, odd ? 63 : 64, braidFloat32, braidSum);
     },
     "allreduce #1 (64 x float32, sum)", "allreduce #1 (63 x float32, sum)"},
    {"collective",
     [](braidComm_t c, bool odd, float* in, float* out) {
       return odd ? braidBroadcast(in, out, 64, braidFloat32, 0, c, nullptr)
                  : allReduce(c, in, out, 64, braidFloat32, braidSum);
     },
     "allreduce #1 (64 x float32, sum)", "broadcast #1 (64 x float32, root 0)"},
    {"root",
     [](braidComm_t c, bool odd, float* in, float* out) {
       return braidBroadcast(in, out, 64, braidFloat32, odd ? 1 : 0, c, nullptr);
     },
     "broadcast #1 (64 x float32, root 0)", "broadcast #1 (64 x float32, root 1)"},
};

// 2 and 3 ranks on rings, the last rank's call differing: every rank whose call met the other
// fails, and one that saw the other's data names the sender and both calls; the others stop too
// (the failing rank's closed connections end their waits) instead of hanging. (The algorithms are pinned to rings so
// that both calls share their connections: calls on disjoint connections never meet, and the
// watchdog is what reports them. Two ranks that both think themselves the root of a broadcast only
// send; the stale slot fails their next call.)
TEST(HostMismatch, EveryKindFailsNamingBothCalls) {
  for (int n : {2, 3}) {
    for (const Mismatch& m : kMismatches) {
      if (n == 2 && std::string(m.name) == "root") continue;
      SCOPED_TRACE(std::string(m.name) + ", " + std::to_string(n) + " ranks");
      ThreadRanks ranks(n, "ring");
      std::vector<std::vector<float>> in, out(n, std::vector<float>(64, 0.0f));
      for (int r = 0; r < n; ++r) in.emplace_back(64, static_cast<float>(r + 1));
      std::vector<std::string> errors;
      std::vector<braidResult_t> rc =
          ranks.each([&](int r) { return m.call(ranks[r], r == n - 1, in[r].data(), out[r].data()); }, &errors);
      bool named = false;
      for (int r = 0; r < n; ++r) {
        if (rc[r] == braidSuccess) {
          // Only where this rank's call never met the other one: the ranks of root 0 broadcast
          // among themselves before the odd rank (root 1) refuses their data, and their output is
          // right for their call.
          EXPECT_EQ(std::string(m.name), "root") << "rank " << r << " returned success from a mismatched call";
          for (float v : out[r]) ASSERT_EQ(v, 1.0f) << "rank " << r;
          continue;
        }
        if (errors[r].find("mismatched calls: rank") == std::string::npos) continue;
        const bool odd = r == n - 1;
        EXPECT_EQ(rc[r], braidInvalidUsage) << errors[r];
        EXPECT_NE(errors[r].find(std::string(" sent data of ") + (odd ? m.usual : m.odd) + " to rank " +
                                 std::to_string(r) + ", which is in " + (odd ? m.odd : m.usual)),
                  std::string::npos)
            << errors[r];
        named = true;
      }
      EXPECT_TRUE(named) << "no rank named the mismatch: '" << errors[0] << "' / '" << errors[1] << "'";
    }
  }
}

// A rank that skipped a call is one collective behind: its next call meets the others' previous
// one, and the numbers say so. Rank 1 skips the first of two all-reduces of different counts.
TEST(HostMismatch, ASkippedCallIsNamedByNumber) {
  ThreadRanks ranks(2);
  std::vector<std::vector<float>> buf(2, std::vector<float>(64, 1.0f));
  std::vector<std::string> errors;
  std::vector<braidResult_t> rc = ranks.each(
      [&](int r) {
        if (r == 0) {
          braidResult_t first =
              braidAllReduce(buf[r].data(), buf[r].data(), 32, braidFloat32, braidSum, ranks[r], nullptr);
          if (first != braidSuccess) return first;
        }
        return braidAllReduce(buf[r].data(), buf[r].data(), 64, braidFloat32, braidSum, ranks[r], nullptr);
      },
      &errors);
  EXPECT_NE(rc[0], braidSuccess);
  EXPECT_NE(rc[1], braidSuccess);
  const std::string all = errors[0] + " | " + errors[1];
  EXPECT_NE(all.find("allreduce #1 (64 x float32, sum)"), std::string::npos) << all;  // rank 1's first
  EXPECT_NE(all.find("allreduce #1 (32 x float32, sum)"), std::string::npos) << all;  // rank 0's first
}

// Matching calls of every kind still pass with the tags on (and stay correct after a mismatch was
// reported on another communicator).
TEST(HostMismatch, MatchingCallsPass) {
  ThreadRanks ranks(3);
  std::vector<std::vector<float>> in(3, std::vector<float>(64 * 3, 2.0f)), out(3, std::vector<float>(64 * 3, 0.0f));
  std::vector<std::string> errors;
  std::vector<braidResult_t> rc = ranks.each(
      [&](int r) {
        braidComm_t c = ranks[r];
        braidResult_t e = braidAllReduce(in[r].data(), out[r].data(), 64, braidFloat32, braidSum, c, nullptr);
        if (e == braidSuccess) e = braidBroadcast(in[r].data(), out[r].data(), 64, braidFloat32, 2, c, nullptr);
        if (e == braidSuccess)
          e = braidReduceScatter(in[r].data(), out[r].data(), 64, braidFloat32, braidMax, c, nullptr);
        if (e == braidSuccess) e = braidAllGather(in[r].data(), out[r].data(), 64, braidFloat32, c, nullptr);
        return e;
      },
      &errors);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(rc[r], braidSuccess) << errors[r];
  for (float v : out[0]) EXPECT_EQ(v, 2.0f);
}

}  // namespace
}  // namespace braid::test
