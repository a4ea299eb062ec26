// BRAID_CHECK=1: the fingerprint comparison as pure functions (every field, the fields each
// collective ignores, send/recv pairs), then end to end between thread ranks: a mismatched call
// fails on every rank with the same message, moves no data, and the next correct call works.
#include "core/call_check.h"

#include <braid/braid.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "thread_ranks.h"

namespace braid::core {
namespace {

using algo::Coll;

CallFingerprint call(Coll coll, uint64_t count, braidDataType_t type = braidFloat32, braidRedOp_t op = braidSum,
                     int root = 0, uint64_t seq = 7) {
  CollRequest r;
  r.coll = coll;
  r.count = count;
  r.type = type;
  r.op = op;
  r.root = root;
  return collFingerprint(r, seq);
}

std::vector<CallFingerprint> same(int n, const CallFingerprint& f) { return std::vector<CallFingerprint>(n, f); }

void expectMismatch(const std::vector<CallFingerprint>& calls, const std::string& message) {
  Status s = compareCalls(calls);
  EXPECT_EQ(s.code(), Code::kInvalidUsage);
  EXPECT_EQ(s.message(), message);
}

// ---- collectives --------------------------------------------------------------------------------

TEST(CallCheckCompare, IdenticalCallsPass) {
  for (Coll coll : {Coll::kAllReduce, Coll::kBroadcast, Coll::kReduce, Coll::kAllGather, Coll::kReduceScatter}) {
    for (int n : {1, 2, 5}) {
      EXPECT_TRUE(compareCalls(same(n, call(coll, 1024, braidBfloat16, braidMax, n - 1))).isOk())
          << algo::collName(coll) << " n " << n;
    }
  }
  EXPECT_TRUE(compareCalls({}).isOk());
}

TEST(CallCheckCompare, CountNamesTheRanksOfEachValue) {
  auto calls = same(4, call(Coll::kAllReduce, 1024));
  calls[2].count = 1000;
  expectMismatch(calls, "call 7 does not match across ranks: count is 1024 on ranks 0,1,3 but 1000 on rank 2");
}

TEST(CallCheckCompare, MostCommonValueComesFirst) {
  auto calls = same(4, call(Coll::kAllReduce, 1000));
  calls[0].count = 1024;
  expectMismatch(calls, "call 7 does not match across ranks: count is 1000 on ranks 1-3 but 1024 on rank 0");
}

TEST(CallCheckCompare, DatatypeByName) {
  auto calls = same(4, call(Coll::kReduceScatter, 64, braidFloat32));
  calls[1].type = braidInt32;
  calls[3].type = braidInt32;
  expectMismatch(calls, "call 7 does not match across ranks: datatype is float32 on ranks 0,2 but int32 on ranks 1,3");
}

TEST(CallCheckCompare, OpByName) {
  auto calls = same(3, call(Coll::kReduce, 64, braidInt64, braidSum, 2));
  calls[0].op = braidMax;
  expectMismatch(calls, "call 7 does not match across ranks: op is sum on ranks 1,2 but max on rank 0");
}

TEST(CallCheckCompare, Root) {
  auto calls = same(4, call(Coll::kBroadcast, 64, braidUint8, braidSum, 0));
  calls[3].root = 1;
  expectMismatch(calls, "call 7 does not match across ranks: root is 0 on ranks 0-2 but 1 on rank 3");
}

TEST(CallCheckCompare, CollectiveKindHidesTheOtherFields) {
  auto calls = same(4, call(Coll::kAllReduce, 1024));
  calls[2] = call(Coll::kBroadcast, 5, braidInt8, braidSum, 3);  // count, type, root: not comparable
  expectMismatch(calls,
                 "call 7 does not match across ranks: collective is allreduce on ranks 0,1,3 but broadcast on rank 2");
  calls[1] = sendRecvFingerprint(2, 7);
  expectMismatch(
      calls,
      "call 7 does not match across ranks: collective is allreduce on ranks 0,3 but send/recv group on rank 1, "
      "broadcast on rank 2");
}

TEST(CallCheckCompare, CallNumber) {
  auto calls = same(3, call(Coll::kAllGather, 8, braidFloat32, braidSum, 0, 5));
  calls[1].seq = 4;
  expectMismatch(calls, "calls do not match across ranks: call number is 5 on ranks 0,2 but 4 on rank 1");
}

TEST(CallCheckCompare, SeveralFieldsAndValues) {
  auto calls = same(8, call(Coll::kAllReduce, 100, braidFloat16, braidSum));
  calls[5].count = 99;
  calls[6].count = 98;
  calls[7].type = braidFloat64;
  calls[7].op = braidAvg;
  expectMismatch(calls,
                 "call 7 does not match across ranks: count is 100 on ranks 0-4,7 but 99 on rank 5, 98 on rank 6; "
                 "datatype is float16 on ranks 0-6 but float64 on rank 7; op is sum on ranks 0-6 but avg on rank 7");
}

TEST(CallCheckCompare, FieldsACollectiveDoesNotUseAreIgnored) {
  struct Case {
    Coll coll;
    bool usesOp;
    bool usesRoot;
  };
  for (Case c :
       {Case{Coll::kAllReduce, true, false}, Case{Coll::kBroadcast, false, true}, Case{Coll::kReduce, true, true},
        Case{Coll::kAllGather, false, false}, Case{Coll::kReduceScatter, true, false}}) {
    auto ops = same(3, call(c.coll, 16));
    ops[1].op = braidProd;
    EXPECT_EQ(compareCalls(ops).isOk(), !c.usesOp) << algo::collName(c.coll) << " op";
    auto roots = same(3, call(c.coll, 16));
    roots[2].root = 1;
    EXPECT_EQ(compareCalls(roots).isOk(), !c.usesRoot) << algo::collName(c.coll) << " root";
  }
  // A send/recv group's size is per rank; its pairs are compared by compareSendRecv.
  std::vector<CallFingerprint> groups = {sendRecvFingerprint(2, 3), sendRecvFingerprint(6, 3)};
  EXPECT_TRUE(compareCalls(groups).isOk());
}

// ---- send/recv groups ---------------------------------------------------------------------------

P2pFingerprint send(int peer, uint64_t bytes) { return P2pFingerprint{peer, 1, bytes}; }
P2pFingerprint recv(int peer, uint64_t bytes) { return P2pFingerprint{peer, 0, bytes}; }

void expectGroupMismatch(const std::vector<std::vector<P2pFingerprint>>& perRank, const std::string& problems) {
  Status s = compareSendRecv(3, perRank);
  EXPECT_EQ(s.code(), Code::kInvalidUsage);
  EXPECT_EQ(s.message(), "send/recv group (call 3) does not match across ranks: " + problems);
}

TEST(CallCheckSendRecv, FingerprintsCountBytes) {
  std::vector<P2pRequest> requests(2);
  requests[0].isSend = true;
  requests[0].count = 1000;
  requests[0].type = braidInt32;
  requests[0].peer = 1;
  requests[1].isSend = false;
  requests[1].count = 3;
  requests[1].type = braidFloat64;
  requests[1].peer = 2;
  std::vector<P2pFingerprint> f = p2pFingerprints(requests);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].peer, 1);
  EXPECT_EQ(f[0].isSend, 1);
  EXPECT_EQ(f[0].bytes, 4000u);
  EXPECT_EQ(f[1].peer, 2);
  EXPECT_EQ(f[1].isSend, 0);
  EXPECT_EQ(f[1].bytes, 24u);
}

TEST(CallCheckSendRecv, MatchingGroupPasses) {
  // A ring exchange with two messages per pair, receives posted first, and a self message.
  std::vector<std::vector<P2pFingerprint>> perRank(3);
  for (int r = 0; r < 3; ++r) {
    int next = (r + 1) % 3, prev = (r + 2) % 3;
    perRank[r] = {recv(prev, 100 + prev), send(r, 8), send(next, 100 + r), recv(r, 8), recv(prev, 5), send(next, 5)};
  }
  EXPECT_TRUE(compareSendRecv(3, perRank).isOk());
  EXPECT_TRUE(compareSendRecv(1, {{}}).isOk());
}

TEST(CallCheckSendRecv, SizeMismatch) {
  expectGroupMismatch({{send(1, 4000), recv(1, 8)}, {recv(0, 400), send(0, 8)}},
                      "rank 0 sends 4000 bytes to rank 1, which receives 400 bytes from rank 0");
}

TEST(CallCheckSendRecv, MessagesBetweenTwoRanksMatchInPostingOrder) {
  // Same sizes, other order: the first send meets the first receive.
  expectGroupMismatch({{send(1, 100), send(1, 200)}, {recv(0, 200), recv(0, 100)}},
                      "rank 0 sends 100 bytes to rank 1, which receives 200 bytes from rank 0 (message 1 from rank 0 "
                      "to rank 1)");
  // Interleaving with other peers does not matter.
  EXPECT_TRUE(
      compareSendRecv(3, {{send(1, 100), recv(1, 1), send(1, 200)}, {recv(0, 100), send(0, 1), recv(0, 200)}}).isOk());
}

TEST(CallCheckSendRecv, MissingSendsAndReceives) {
  expectGroupMismatch({{send(1, 4000)}, {}}, "rank 0 sends 4000 bytes to rank 1, which posts no receive from rank 0");
  expectGroupMismatch({{}, {recv(0, 1)}}, "rank 1 receives 1 byte from rank 0, which posts no send to rank 1");
  expectGroupMismatch({{send(1, 8), send(1, 8)}, {recv(0, 8)}},
                      "rank 0 sends 2 messages to rank 1, which receives 1 message from rank 0");
  expectGroupMismatch({{send(0, 8)}}, "rank 0 sends 8 bytes to rank 0, which posts no receive from rank 0");
}

TEST(CallCheckSendRecv, EveryPairIsReportedUpToALimit) {
  expectGroupMismatch({{send(1, 1), recv(2, 9)}, {recv(0, 2)}, {send(0, 9), send(5, 1)}},
                      "rank 2 sends to rank 5, which is not in the communicator; rank 0 sends 1 byte to rank 1, "
                      "which receives 2 bytes from rank 0");
  // Seven ranks all sending one byte too many to their next: four pairs listed, the rest counted.
  std::vector<std::vector<P2pFingerprint>> perRank(7);
  for (int r = 0; r < 7; ++r) perRank[r] = {send((r + 1) % 7, 2), recv((r + 6) % 7, 1)};
  Status s = compareSendRecv(3, perRank);
  EXPECT_EQ(s.code(), Code::kInvalidUsage);
  EXPECT_NE(s.message().find("rank 0 sends 2 bytes to rank 1, which receives 1 byte from rank 0"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("; and 3 more"), std::string::npos) << s.message();
}

// ---- end to end: ranks as threads ---------------------------------------------------------------

// Host communicators made with BRAID_CHECK=1 (unset again once they exist: the comm reads it at init).
class CheckedRanks : public braid::test::ThreadRanks {
 public:
  explicit CheckedRanks(int n) : ThreadRanks(n, nullptr, {{"BRAID_CHECK", "1"}}) {}
};

// The API puts the function's name in front of the check's message (possibly more than once: a
// collective adds it for calls held in a group, the C entry point for every failure).
void expectError(const std::string& error, const std::string& function, const std::string& message) {
  EXPECT_EQ(error.rfind(function + ": ", 0), 0u) << error;
  EXPECT_GE(error.size(), message.size() + 2) << error;
  EXPECT_EQ(error.substr(error.size() - std::min(error.size(), message.size() + 2)), ": " + message) << error;
}

float input(int rank, size_t i) { return static_cast<float>(rank * 10 + static_cast<int>(i % 7)); }

TEST(CallCheckEndToEnd, AllReduceCountMismatchFailsEverywhereThenACorrectCallWorks) {
  CheckedRanks ranks(4);
  const size_t count = 1024;
  std::vector<std::vector<float>> in(4, std::vector<float>(count)), out(4, std::vector<float>(count, -1));
  for (int r = 0; r < 4; ++r) {
    for (size_t i = 0; i < count; ++i) in[r][i] = input(r, i);
  }
  std::vector<std::string> errors;
  auto rc = ranks.each(
      [&](int r) {
        return braidAllReduce(in[r].data(), out[r].data(), r == 2 ? 1000 : count, braidFloat32, braidSum, ranks[r],
                              nullptr);
      },
      &errors);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(rc[r], braidInvalidUsage) << "rank " << r;
    expectError(errors[r], "braidAllReduce",
                "call 1 does not match across ranks: count is 1024 on ranks 0,1,3 but 1000 on rank 2");
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[r][i], -1) << "data moved on rank " << r << " element " << i;
  }

  rc = ranks.each(
      [&](int r) {
        return braidAllReduce(in[r].data(), out[r].data(), count, braidFloat32, braidSum, ranks[r], nullptr);
      },
      &errors);
  for (int r = 0; r < 4; ++r) {
    ASSERT_EQ(rc[r], braidSuccess) << errors[r];
    for (size_t i = 0; i < count; ++i) {
      float expected = input(0, i) + input(1, i) + input(2, i) + input(3, i);
      ASSERT_EQ(out[r][i], expected) << "rank " << r << " element " << i;
    }
  }
}

TEST(CallCheckEndToEnd, DatatypeMismatchOfTheSameSize) {
  // int32 and float32 move the same bytes: unchecked, this call would "work" and sum garbage.
  CheckedRanks ranks(4);
  const size_t count = 256;
  std::vector<std::vector<float>> in(4, std::vector<float>(count, 1)), out(4, std::vector<float>(count, -1));
  std::vector<std::string> errors;
  auto rc = ranks.each(
      [&](int r) {
        return braidAllReduce(in[r].data(), out[r].data(), count, r == 1 ? braidInt32 : braidFloat32, braidSum,
                              ranks[r], nullptr);
      },
      &errors);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(rc[r], braidInvalidUsage) << "rank " << r;
    EXPECT_NE(
        errors[r].find("call 1 does not match across ranks: datatype is float32 on ranks 0,2,3 but int32 on rank 1"),
        std::string::npos)
        << errors[r];
    EXPECT_EQ(out[r][0], -1) << "data moved on rank " << r;
  }
}

TEST(CallCheckEndToEnd, BroadcastRootMismatch) {
  CheckedRanks ranks(4);
  const size_t count = 100;
  std::vector<std::vector<int64_t>> buf(4, std::vector<int64_t>(count));
  for (int r = 0; r < 4; ++r) {
    for (size_t i = 0; i < count; ++i) buf[r][i] = r * 1000 + static_cast<int64_t>(i);
  }
  std::vector<std::string> errors;
  auto rc = ranks.each(
      [&](int r) {
        return braidBroadcast(buf[r].data(), buf[r].data(), count, braidInt64, r == 3 ? 1 : 0, ranks[r], nullptr);
      },
      &errors);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(rc[r], braidInvalidUsage) << "rank " << r;
    expectError(errors[r], "braidBroadcast",
                "call 1 does not match across ranks: root is 0 on ranks 0-2 but 1 on rank 3");
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(buf[r][i], r * 1000 + static_cast<int64_t>(i)) << "rank " << r;
  }

  rc = ranks.each(
      [&](int r) { return braidBroadcast(buf[r].data(), buf[r].data(), count, braidInt64, 3, ranks[r], nullptr); },
      &errors);
  for (int r = 0; r < 4; ++r) {
    ASSERT_EQ(rc[r], braidSuccess) << errors[r];
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(buf[r][i], 3000 + static_cast<int64_t>(i)) << "rank " << r;
  }
}

TEST(CallCheckEndToEnd, SendRecvSizeMismatchInAGroup) {
  // A ring exchange where rank 1 expects 100 elements from rank 0, which sends 1000.
  CheckedRanks ranks(4);
  const size_t count = 1000;
  std::vector<std::vector<int32_t>> mine(4, std::vector<int32_t>(count)), got(4, std::vector<int32_t>(count, -1));
  for (int r = 0; r < 4; ++r) {
    for (size_t i = 0; i < count; ++i) mine[r][i] = r * 10000 + static_cast<int32_t>(i);
  }
  auto exchange = [&](size_t rank1Receives) {
    return [&, rank1Receives](int r) {
      int next = (r + 1) % 4, prev = (r + 3) % 4;
      EXPECT_EQ(braidGroupStart(), braidSuccess);
      EXPECT_EQ(braidSend(mine[r].data(), count, braidInt32, next, ranks[r], nullptr), braidSuccess);
      EXPECT_EQ(braidRecv(got[r].data(), r == 1 ? rank1Receives : count, braidInt32, prev, ranks[r], nullptr),
                braidSuccess);
      return braidGroupEnd();
    };
  };
  std::vector<std::string> errors;
  auto rc = ranks.each(exchange(100), &errors);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(rc[r], braidInvalidUsage) << "rank " << r;
    expectError(errors[r], "braidGroupEnd",
                "send/recv group (call 1) does not match across ranks: rank 0 sends 4000 bytes to rank 1, which "
                "receives 400 bytes from rank 0");
    EXPECT_EQ(got[r][0], -1) << "data moved on rank " << r;
  }

  // Unchecked, the mismatch would have failed the communicators (braidRemoteError); checked, nothing ran.
  rc = ranks.each(exchange(count), &errors);
  for (int r = 0; r < 4; ++r) {
    ASSERT_EQ(rc[r], braidSuccess) << errors[r];
    int prev = (r + 3) % 4;
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(got[r][i], prev * 10000 + static_cast<int32_t>(i)) << "rank " << r;
  }
}

}  // namespace
}  // namespace braid::core
