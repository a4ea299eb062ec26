// End-to-end collectives on host memory, ranks as threads of this process over the loopback
// transport (Gloo-style sweep): rank counts x collectives x algorithms x types/ops x counts x
// in/out-of-place, each result compared with a plain loop in this file. BRAID_CHUNK_BYTES is
// shrunk so that multi-chunk pipelines and multi-round rings run on small inputs.
#include <braid/braid.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/datatype.h"
#include "core/host_engine.h"
#include "core/log.h"
#include "exec/host_reduce.h"
#include "thread_ranks.h"

namespace {

// ---- typed values through double --------------------------------------------------------------

double decode(const void* p, braidDataType_t t) { return braid::exec::elementToDouble(p, t); }
void encode(double v, void* p, braidDataType_t t) { braid::exec::elementFromDouble(v, p, t); }

bool isInt(braidDataType_t t) { return t <= braidUint64; }

// Inputs chosen so that every partial sum is exact in every float type but fp8, and products
// stay +-1: the reduction order then cannot change the answer.
// Unsigned types get the same values shifted to be non-negative (exact in double after wrapping).
double inputValue(int rank, size_t i, braidDataType_t t, braidRedOp_t op) {
  bool isUnsigned = t == braidUint8 || t == braidUint32 || t == braidUint64;
  switch (op) {
    case braidProd: return isUnsigned ? 1.0 + static_cast<double>((rank + i) % 2) : ((rank + i) % 3 == 0 ? -1.0 : 1.0);
    case braidMax:
    case braidMin: return static_cast<double>((rank * 13 + i * 7) % 31) - (isUnsigned ? 0 : 15);
    default: return static_cast<double>((rank * 7 + i * 3) % 7) - (isUnsigned ? 0 : 3);
  }
}

// The reference: op over ranks in double, or in wrapped 64-bit integers for integer types.
double reference(const std::vector<double>& xs, braidDataType_t t, braidRedOp_t op) {
  double r = xs[0];
  for (size_t k = 1; k < xs.size(); ++k) {
    double x = xs[k];
    if (op == braidSum || op == braidAvg) r += x;
    if (op == braidProd) r *= x;
    if (op == braidMax) r = x > r ? x : r;
    if (op == braidMin) r = x < r ? x : r;
  }
  if (op == braidAvg) {
    if (!isInt(t)) return r / static_cast<double>(xs.size());
    // Integer avg: the sum (exact here: no wraparound with these inputs) divided, truncated to zero.
    return std::trunc(r / static_cast<double>(xs.size()));
  }
  return r;
}

// fp8 sums round at every hop and avg rounds a division; everything else must match exactly.
double tolerance(braidDataType_t t, braidRedOp_t op, double ref, int n) {
  double mag = std::fabs(ref) + 1;
  if (t == braidFloat8e4m3) return (op == braidSum || op == braidAvg) ? 0.125 * mag * n : 0;
  if (t == braidFloat8e5m2) return (op == braidSum || op == braidAvg) ? 0.25 * mag * n : 0;
  if (op != braidAvg) return 0;
  if (t == braidFloat16) return mag / 1024;
  if (t == braidBfloat16) return mag / 128;
  if (t == braidFloat32) return mag * 1e-6;
  if (t == braidFloat64) return mag * 1e-14;
  return 0;
}

// ---- ranks as threads --------------------------------------------------------------------------

using ThreadComms = braid::test::ThreadRanks;

enum class C { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter };
const char* name(C c) {
  const char* names[] = {"allreduce", "broadcast", "reduce", "allgather", "reducescatter"};
  return names[static_cast<int>(c)];
}

struct TypeOp {
  braidDataType_t type;
  braidRedOp_t op;
};

// Runs one collective on every rank and checks every rank's output against the reference.
void checkCollective(const ThreadComms& comms, C coll, TypeOp to, size_t count, bool inPlace, int root) {
  const int n = comms.size();
  const size_t es = braid::core::typeSize(to.type);
  const size_t inElems = coll == C::kReduceScatter ? count * n : count;
  const size_t outElems = coll == C::kAllGather ? count * n : count;
  // Buffers start one byte into an allocation: collectives must not need aligned buffers.
  std::vector<std::vector<char>> store(n, std::vector<char>(1 + (inElems + outElems + 1) * es, 0x5a));
  std::vector<char*> in(n), out(n);
  for (int r = 0; r < n; ++r) {
    char* base = store[r].data() + 1;
    out[r] = base;
    // In place: the input is the output itself, or its own slot of it (all-gather), or the output is
    // the rank's slot of the input (reduce-scatter).
    in[r] = !inPlace ? base + outElems * es : coll == C::kAllGather ? base + r * count * es : base;
    if (inPlace && coll == C::kReduceScatter) out[r] = base + r * count * es;
    for (size_t i = 0; i < inElems; ++i) encode(inputValue(r, i, to.type, to.op), in[r] + i * es, to.type);
  }
  std::vector<std::vector<double>> inputs(n, std::vector<double>(inElems));  // what the ranks really hold
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < inElems; ++i) inputs[r][i] = decode(in[r] + i * es, to.type);
  }
  std::vector<braidResult_t> rc(n);
  comms.run([&](int r) {
    switch (coll) {
      case C::kAllReduce: rc[r] = braidAllReduce(in[r], out[r], count, to.type, to.op, comms[r], nullptr); break;
      case C::kBroadcast: rc[r] = braidBroadcast(in[r], out[r], count, to.type, root, comms[r], nullptr); break;
      case C::kReduce: rc[r] = braidReduce(in[r], out[r], count, to.type, to.op, root, comms[r], nullptr); break;
      case C::kAllGather: rc[r] = braidAllGather(in[r], out[r], count, to.type, comms[r], nullptr); break;
      case C::kReduceScatter:
        rc[r] = braidReduceScatter(in[r], out[r], count, to.type, to.op, comms[r], nullptr);
        break;
    }
  });
  for (int r = 0; r < n; ++r) ASSERT_EQ(rc[r], braidSuccess) << "rank " << r << ": " << braidGetLastError();
  std::vector<double> xs(n);
  for (int r = 0; r < n; ++r) {
    if (coll == C::kReduce && r != root) continue;
    for (size_t e = 0; e < outElems; ++e) {
      double want = 0;
      switch (coll) {
        case C::kBroadcast: want = inputs[root][e]; break;
        case C::kAllGather: want = inputs[e / count][e % count]; break;
        default: {
          size_t src = coll == C::kReduceScatter ? r * count + e : e;
          for (int q = 0; q < n; ++q) xs[q] = inputs[q][src];
          want = reference(xs, to.type, to.op);
        }
      }
      // Round the exact answer into the type the way a single final store would.
      char buf[8];
      encode(want, buf, to.type);
      double wantTyped = decode(buf, to.type);
      double got = decode(out[r] + e * es, to.type);
      double tol = tolerance(to.type, to.op, wantTyped, n);
      ASSERT_LE(std::fabs(got - wantTyped), tol)
          << name(coll) << " " << braid::core::typeName(to.type) << " " << braid::core::opName(to.op) << " n=" << n
          << " count=" << count << (inPlace ? " in-place" : " out-of-place") << " root=" << root << ": rank " << r
          << " element " << e << " got " << got << " want " << wantTyped;
    }
  }
}

const TypeOp kTypeOps[] = {
    {braidFloat32, braidSum},  {braidFloat32, braidProd}, {braidFloat32, braidMax},    {braidFloat32, braidMin},
    {braidFloat32, braidAvg},  {braidFloat64, braidSum},  {braidInt32, braidSum},      {braidInt32, braidMax},
    {braidInt8, braidMin},     {braidInt64, braidAvg},    {braidUint8, braidSum},      {braidUint64, braidSum},
    {braidInt64, braidProd},   {braidUint32, braidMax},   {braidFloat16, braidSum},    {braidFloat16, braidAvg},
    {braidBfloat16, braidSum}, {braidBfloat16, braidMin}, {braidFloat8e4m3, braidSum}, {braidFloat8e5m2, braidMax},
};

struct Param {
  int nranks;
  const char* algorithm;  // config.algorithm: which all-reduce algorithm runs
};

class HostCollectives : public ::testing::TestWithParam<Param> {
 protected:
  static void SetUpTestSuite() {
    setenv("BRAID_CHUNK_BYTES", "64", 1);  // 64-byte slots: pipelines of many chunks on small inputs
    setenv("BRAID_STEPS", "2", 1);         // the smallest FIFO that can work: the hardest schedule
  }
  static void TearDownTestSuite() {
    unsetenv("BRAID_CHUNK_BYTES");
    unsetenv("BRAID_STEPS");
  }
};

TEST_P(HostCollectives, MatchThePlainLoop) {
  const Param p = GetParam();
  ThreadComms comms(p.nranks, p.algorithm);
  const bool ringOnly = std::string(p.algorithm) == "ring";
  for (C coll : {C::kAllReduce, C::kBroadcast, C::kReduce, C::kAllGather, C::kReduceScatter}) {
    if (!ringOnly && coll != C::kAllReduce) continue;  // trees implement all-reduce only
    for (const TypeOp& to : kTypeOps) {
      bool reduces = coll != C::kBroadcast && coll != C::kAllGather;
      if (!reduces && to.op != braidSum) continue;  // the op does not matter to data movement
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}}) {
        for (bool inPlace : {false, true}) {
          for (int root : {0, p.nranks - 1}) {
            bool rooted = coll == C::kBroadcast || coll == C::kReduce;
            if (!rooted && root != 0) continue;
            checkCollective(comms, coll, to, count, inPlace, root);
            if (::testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Loopback, HostCollectives,
                         ::testing::Values(Param{1, "ring"}, Param{2, "ring"}, Param{3, "ring"}, Param{4, "ring"},
                                           Param{5, "ring"}, Param{7, "ring"}, Param{8, "ring"}, Param{13, "ring"},
                                           Param{16, "ring"}, Param{1, "tree"}, Param{2, "tree"}, Param{5, "tree"},
                                           Param{8, "tree"}, Param{13, "tree"}, Param{2, "dbtree"}, Param{3, "dbtree"},
                                           Param{7, "dbtree"}, Param{16, "dbtree"}, Param{1, "doubling"},
                                           Param{2, "doubling"}, Param{3, "doubling"}, Param{4, "doubling"},
                                           Param{5, "doubling"}, Param{7, "doubling"}, Param{8, "doubling"},
                                           Param{13, "doubling"}),
                         [](const ::testing::TestParamInfo<Param>& pi) {
                           return std::string(pi.param.algorithm) + "_" + std::to_string(pi.param.nranks);
                         });

// One large count per collective (a million-plus elements: rounds, channels and ragged tails at
// the real chunk size).
TEST(HostCollectivesLarge, MillionPlusThree) {
  ThreadComms comms(3, "ring");
  for (C coll : {C::kAllReduce, C::kBroadcast, C::kReduce, C::kAllGather, C::kReduceScatter}) {
    checkCollective(comms, coll, TypeOp{braidFloat32, braidSum}, (size_t{1} << 20) + 3, false, 1);
    if (::testing::Test::HasFatalFailure()) return;
  }
  // Recursive doubling when it is the only algorithm allowed, whatever the size (with a fold: 6 ranks).
  ThreadComms doubling(6, "doubling");
  checkCollective(doubling, C::kAllReduce, TypeOp{braidFloat32, braidSum}, (size_t{1} << 20) + 3, false, 0);
}

// BRAID_STEPS beyond the 64 slots a FIFO's per-slot state holds is brought to 64, with a warning
// that says so, and the collectives still match (a deeper FIFO overran that state before).
TEST(HostFifoDepth, StepsBeyondTheLimitAreBroughtInWithAWarning) {
  const std::string path = braid::log::expandFileName("/tmp/braid_steps_test.%p.log", "", getpid());
  std::remove(path.c_str());
  setenv("BRAID_DEBUG", "WARN", 1);
  setenv("BRAID_DEBUG_FILE", "/tmp/braid_steps_test.%p.log", 1);
  braid::log::reloadFromEnvironment();
  setenv("BRAID_STEPS", "200", 1);
  setenv("BRAID_CHUNK_BYTES", "64", 1);  // many slots a call: the counters wrap past 64
  {
    ThreadComms comms(2, "ring");
    checkCollective(comms, C::kAllReduce, TypeOp{braidFloat32, braidSum}, 4099, false, 0);
  }
  unsetenv("BRAID_STEPS");
  unsetenv("BRAID_CHUNK_BYTES");
  unsetenv("BRAID_DEBUG");
  unsetenv("BRAID_DEBUG_FILE");
  braid::log::reloadFromEnvironment();
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("BRAID_STEPS=200 is outside 2 to 64: using 64"), std::string::npos) << text;
  std::remove(path.c_str());
}

// The host engine's choices come from the tuner: recursive doubling for small all-reduces, the
// ring for large ones, the config's and BRAID_ALGO's lists respected, the ring (with a note) when
// nothing allowed implements a collective, and bad names refused when the engine is set up.
struct EngineForDecisions {
  std::atomic<bool> abort{false};
  std::unique_ptr<braid::core::HostEngine> engine;
  braid::Status status;
  explicit EngineForDecisions(const char* allowed) {
    braid::core::CommConfig config;
    config.algorithm = allowed;
    engine = std::make_unique<braid::core::HostEngine>(0x5eed, 0, 4, config, &abort);
    std::vector<braid::transport::PeerIdentity> peers(4);  // threads of one process: host 0, pid 0
    status = engine->setPeers(peers, std::vector<braid::transport::NetHandle>(4), 0x5eed);
  }
  braid::algo::Algo pick(braid::algo::Coll coll, size_t bytes) const {
    braid::core::CollRequest r;
    r.coll = coll;
    r.count = bytes / 4;
    return engine->planned(r).algo;
  }
};

TEST(HostDecision, SmallAllReducesDoubleLargeOnesRing) {
  using braid::algo::Algo;
  using braid::algo::Coll;
  auto pick = [](const char* allowed, Coll coll, size_t bytes) {
    EngineForDecisions e(allowed);
    EXPECT_TRUE(e.status.isOk()) << e.status.message();
    return e.pick(coll, bytes);
  };
  EXPECT_EQ(pick("", Coll::kAllReduce, 8), Algo::kDoubling);
  EXPECT_EQ(pick("", Coll::kAllReduce, 1 << 20), Algo::kRing);
  EXPECT_EQ(pick("", Coll::kAllGather, 8), Algo::kRing);
  EXPECT_EQ(pick("^doubling", Coll::kAllReduce, 8), Algo::kDoubleTree);  // 4 hops against the ring's 6
  EXPECT_EQ(pick("tree", Coll::kAllReduce, 8), Algo::kTree);
  EXPECT_EQ(pick("DBTREE,tree", Coll::kAllReduce, 1 << 20), Algo::kDoubleTree);  // 2x the data, not 3x
  EXPECT_EQ(pick("doubling", Coll::kAllReduce, 100 << 20), Algo::kDoubling);
  EXPECT_EQ(pick("doubling", Coll::kBroadcast, 8), Algo::kRing);  // every collective has a ring form
}

TEST(HostDecision, EnvironmentListsApplyPerCollectiveAndBadNamesFail) {
  using braid::algo::Algo;
  using braid::algo::Coll;
  setenv("BRAID_ALGO", "allreduce:tree;broadcast:ring", 1);
  {
    EngineForDecisions e("");
    ASSERT_TRUE(e.status.isOk()) << e.status.message();
    EXPECT_EQ(e.pick(Coll::kAllReduce, 8), Algo::kTree);
    EXPECT_EQ(e.pick(Coll::kAllReduce, 1 << 30), Algo::kTree);
  }
  {
    EngineForDecisions e("ring");  // config and environment must both allow: nothing left
    ASSERT_TRUE(e.status.isOk());
    braid::core::CollRequest r;
    r.count = 2;
    EXPECT_EQ(e.engine->planned(r).algo, Algo::kRing);
    EXPECT_NE(e.engine->tuner().decide(Coll::kAllReduce, 8).note.find("nothing allowed"), std::string::npos);
  }
  for (const char* bad : {"ring,spiral", "allreduce:", "gather:ring", "^"}) {
    setenv("BRAID_ALGO", bad, 1);
    EngineForDecisions e("");
    EXPECT_FALSE(e.status.isOk()) << bad;
    EXPECT_NE(e.status.message().find("BRAID_ALGO"), std::string::npos) << e.status.message();
  }
  unsetenv("BRAID_ALGO");
  setenv("BRAID_PROTO", "ll256", 1);
  EXPECT_FALSE(EngineForDecisions("").status.isOk());
  unsetenv("BRAID_PROTO");
  setenv("BRAID_MAX_CTAS", "65", 1);
  EXPECT_FALSE(EngineForDecisions("").status.isOk());
  unsetenv("BRAID_MAX_CTAS");
}

}  // namespace

// One rank: every collective's output is its input, out of place (one copy) and in place (nothing
// done); counts 1 and a million plus three; a reduction with every op (avg of one is the value).
TEST(HostOneRank, EveryCollectiveGivesTheInput) {
  braid::test::ThreadRanks ranks(1);
  for (size_t count : {size_t{1}, size_t{1000003}}) {
    std::vector<float> in(count), out(count, -1.0f);
    for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>(i % 1013) * 0.5f - 7.0f;
    auto expectInput = [&](const char* what) {
      for (size_t i = 0; i < count; ++i) {
        ASSERT_EQ(out[i], in[i]) << what << " count " << count << " element " << i;
      }
      std::fill(out.begin(), out.end(), -1.0f);
    };
    braidComm_t c = ranks[0];
    for (braidRedOp_t op : {braidSum, braidProd, braidMax, braidMin, braidAvg}) {
      ASSERT_EQ(braidAllReduce(in.data(), out.data(), count, braidFloat32, op, c, nullptr), braidSuccess);
      expectInput("allreduce");
      ASSERT_EQ(braidReduce(in.data(), out.data(), count, braidFloat32, op, 0, c, nullptr), braidSuccess);
      expectInput("reduce");
      ASSERT_EQ(braidReduceScatter(in.data(), out.data(), count, braidFloat32, op, c, nullptr), braidSuccess);
      expectInput("reducescatter");
    }
    ASSERT_EQ(braidBroadcast(in.data(), out.data(), count, braidFloat32, 0, c, nullptr), braidSuccess);
    expectInput("broadcast");
    ASSERT_EQ(braidAllGather(in.data(), out.data(), count, braidFloat32, c, nullptr), braidSuccess);
    expectInput("allgather");
    ASSERT_EQ(braidAllToAll(in.data(), out.data(), count, braidFloat32, c, nullptr), braidSuccess);
    expectInput("alltoall");
    // In place: the buffer keeps its values.
    out = in;
    ASSERT_EQ(braidAllReduce(out.data(), out.data(), count, braidFloat32, braidSum, c, nullptr), braidSuccess);
    ASSERT_EQ(braidAllGather(out.data(), out.data(), count, braidFloat32, c, nullptr), braidSuccess);
    ASSERT_EQ(braidBroadcast(out.data(), out.data(), count, braidFloat32, 0, c, nullptr), braidSuccess);
    ASSERT_EQ(braidAllToAll(out.data(), out.data(), count, braidFloat32, c, nullptr), braidSuccess);
    expectInput("in place");
  }
}

// Pre-multiplied sums (braidRedOpCreatePreMulSum) on 3 thread ranks: rank r's input times its own
// scalar, summed. Inputs and scalars are small enough that every product and sum is exact in each
// type, so the reference is plain double arithmetic.
namespace {

// `value` as one element of `type` (exact for the values used here).
std::vector<unsigned char> elementOf(double value, braidDataType_t type) {
  std::vector<unsigned char> e(braid::core::typeSize(type));
  auto put = [&](auto v) { std::memcpy(e.data(), &v, sizeof(v)); };
  switch (type) {
    case braidInt8: put(static_cast<int8_t>(value)); break;
    case braidUint8: put(static_cast<uint8_t>(value)); break;
    case braidInt32: put(static_cast<int32_t>(value)); break;
    case braidUint32: put(static_cast<uint32_t>(value)); break;
    case braidInt64: put(static_cast<int64_t>(value)); break;
    case braidUint64: put(static_cast<uint64_t>(value)); break;
    case braidFloat16: put(braid::exec::floatToHalf(static_cast<float>(value))); break;
    case braidFloat32: put(static_cast<float>(value)); break;
    case braidFloat64: put(value); break;
    case braidBfloat16: put(braid::exec::floatToBf16(static_cast<float>(value))); break;
    case braidFloat8e4m3: put(braid::exec::floatToFp8e4m3(static_cast<float>(value))); break;
    default: put(braid::exec::floatToFp8e5m2(static_cast<float>(value))); break;
  }
  return e;
}

bool isInteger(braidDataType_t t) { return t <= braidUint64; }

}  // namespace

TEST(HostPreMulSum, EveryTypeAllReduceReduceAndReduceScatter) {
  braid::test::ThreadRanks ranks(3);
  const int n = 3;
  const size_t count = 1000;  // per rank for reduce-scatter's output, whole for the others
  for (int t = 0; t < braidNumTypes; ++t) {
    const auto type = static_cast<braidDataType_t>(t);
    SCOPED_TRACE(braid::core::typeName(type));
    const bool fp8 = type == braidFloat8e4m3 || type == braidFloat8e5m2;
    auto x = [&](int r, size_t i) { return static_cast<double>(fp8 ? (i + r) % 2 : (i * 7 + r) % 9); };
    auto scalar = [&](int r) { return isInteger(type) ? 1.0 + r : fp8 ? 1.0 + (r % 2) : 0.5 * (r + 1); };
    const size_t es = braid::core::typeSize(type);
    std::vector<std::vector<unsigned char>> in(n), out(n), scalars(n);
    std::vector<braidRedOp_t> ops(n);
    for (int r = 0; r < n; ++r) {
      scalars[r] = elementOf(scalar(r), type);
      ASSERT_EQ(braidRedOpCreatePreMulSum(&ops[r], scalars[r].data(), type, braidScalarHostImmediate, ranks[r]),
                braidSuccess)
          << braidGetLastError();
      EXPECT_GE(static_cast<int>(ops[r]), static_cast<int>(braidNumOps));
      for (size_t i = 0; i < count * n; ++i) {
        std::vector<unsigned char> e = elementOf(x(r, i), type);
        in[r].insert(in[r].end(), e.begin(), e.end());
      }
      out[r].assign(count * n * es, 0xEE);
    }
    auto expected = [&](size_t i) {
      double sum = 0;
      for (int q = 0; q < n; ++q) sum += scalar(q) * x(q, i);
      return sum;
    };
    auto check = [&](const std::vector<unsigned char>& buf, size_t first, size_t elems, const char* what) {
      for (size_t i = 0; i < elems; ++i) {
        ASSERT_EQ(braid::exec::elementToDouble(buf.data() + i * es, type), expected(first + i))
            << what << " element " << i;
      }
    };
    std::vector<std::string> errors;
    auto rc = ranks.each(
        [&](int r) { return braidAllReduce(in[r].data(), out[r].data(), count, type, ops[r], ranks[r], nullptr); },
        &errors);
    for (int r = 0; r < n; ++r) ASSERT_EQ(rc[r], braidSuccess) << errors[r];
    for (int r = 0; r < n; ++r) check(out[r], 0, count, "allreduce");
    rc = ranks.each(
        [&](int r) { return braidReduceScatter(in[r].data(), out[r].data(), count, type, ops[r], ranks[r], nullptr); },
        &errors);
    for (int r = 0; r < n; ++r) ASSERT_EQ(rc[r], braidSuccess) << errors[r];
    for (int r = 0; r < n; ++r) check(out[r], r * count, count, "reducescatter");
    rc = ranks.each(
        [&](int r) { return braidReduce(in[r].data(), in[r].data(), count, type, ops[r], 1, ranks[r], nullptr); },
        &errors);  // in place: rank 1's input becomes the result
    for (int r = 0; r < n; ++r) ASSERT_EQ(rc[r], braidSuccess) << errors[r];
    check(in[1], 0, count, "reduce in place");
    for (int r = 0; r < n; ++r) EXPECT_EQ(braidRedOpDestroy(ops[r], ranks[r]), braidSuccess);
  }
}

// A scalar in "device" residence is read by each call as it runs (on host memory: from host memory),
// an immediate one once, at creation. Ops belong to their communicator and type; a destroyed op, one
// of another communicator, a built-in op and a wrong type are refused, naming the op.
TEST(HostPreMulSum, ResidenceOwnershipAndErrors) {
  braid::test::ThreadRanks ranks(2), other(1);
  float live[2] = {2.0f, 3.0f}, now[2] = {10.0f, 100.0f};
  braidRedOp_t byPointer[2], immediate[2];
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(braidRedOpCreatePreMulSum(&byPointer[r], &live[r], braidFloat32, braidScalarDevice, ranks[r]),
              braidSuccess);
    ASSERT_EQ(braidRedOpCreatePreMulSum(&immediate[r], &now[r], braidFloat32, braidScalarHostImmediate, ranks[r]),
              braidSuccess);
  }
  now[0] = now[1] = -1.0f;  // read at creation: no effect
  std::vector<float> data[2];
  auto run = [&](braidRedOp_t* ops) {
    std::vector<std::string> errors;
    auto rc = ranks.each(
        [&](int r) {
          data[r].assign(64, 1.0f + r);
          return braidAllReduce(data[r].data(), data[r].data(), 64, braidFloat32, ops[r], ranks[r], nullptr);
        },
        &errors);
    for (int r = 0; r < 2; ++r) EXPECT_EQ(rc[r], braidSuccess) << errors[r];
    return data[0][0];
  };
  EXPECT_EQ(run(byPointer), 2.0f * 1 + 3.0f * 2);
  live[0] = 5.0f;  // read by the next call
  EXPECT_EQ(run(byPointer), 5.0f * 1 + 3.0f * 2);
  EXPECT_EQ(run(immediate), 10.0f * 1 + 100.0f * 2);
  std::vector<float> x(4, 1.0f);
  auto refused = [&](braidRedOp_t op, braidDataType_t type, braidComm_t comm, const char* says) {
    EXPECT_EQ(braidAllReduce(x.data(), x.data(), type == braidFloat32 ? 4 : 2, type, op, comm, nullptr),
              braidInvalidArgument);
    EXPECT_NE(std::string(braidGetLastError()).find(says), std::string::npos) << braidGetLastError();
  };
  refused(byPointer[0], braidInt32, ranks[0], "was made for float32, not int32");
  refused(byPointer[0], braidFloat32, other[0], "nor a pre-multiplied sum of this communicator");
  ASSERT_EQ(braidRedOpDestroy(byPointer[0], ranks[0]), braidSuccess);
  refused(byPointer[0], braidFloat32, ranks[0], "destroyed, or made by another communicator");
  EXPECT_EQ(braidRedOpDestroy(byPointer[0], ranks[0]), braidInvalidArgument);
  EXPECT_EQ(braidRedOpDestroy(braidSum, ranks[0]), braidInvalidArgument);
  EXPECT_EQ(braidRedOpCreatePreMulSum(&immediate[0], nullptr, braidFloat32, braidScalarDevice, ranks[0]),
            braidInvalidArgument);
  EXPECT_EQ(
      braidRedOpCreatePreMulSum(&immediate[0], &now[0], braidFloat32, static_cast<braidScalarResidence_t>(7), ranks[0]),
      braidInvalidArgument);
  EXPECT_EQ(braidRedOpDestroy(byPointer[1], ranks[1]), braidSuccess);
}
