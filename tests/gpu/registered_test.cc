// Collectives on registered buffers (braidCommRegister) between thread ranks of this process: the
// direct kernels (device/direct.cuh) read and write the peers' user buffers by their addresses.
// Every collective, in place and out, counts from 1 to past a million, 2-4 ranks (4 takes the
// passes of more than three sources), against a reference computed here; eager, in a CUDA graph
// replayed with new inputs, and between calls on unregistered buffers in one group. A rank whose
// buffers are registered beside one whose are not is a mismatch the call ledger names. (Ranks split
// between processes run registered buffers through the FIFOs: GpuRegistration in sequences_test.cc
// runs there too.)
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gpu_world.h"

namespace braid::gputest {
namespace {

enum class Coll { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce };

const char* collName(Coll c) {
  static const char* names[] = {"all-reduce", "all-gather", "reduce-scatter", "broadcast", "reduce"};
  return names[static_cast<int>(c)];
}

// Rank r's input element i: small integers, so that every sum is exact in any order.
float x(int r, size_t i) { return static_cast<float>(static_cast<int>((i * 7 + r * 3) % 11) - 5); }

struct Call {
  Coll coll;
  size_t count;  // per rank's block for all-gather and reduce-scatter
  bool inPlace;
  braidRedOp_t op = braidSum;
  int root = 0;
};

// Each rank's registered input and output, big enough for every call of the test.
class Registered {
 public:
  Registered(World& w, size_t maxCount) : w_(w) {
    const size_t bytes = maxCount * w.size() * sizeof(float);
    for (int r = 0; r < w.size(); ++r) {
      in_.push_back(std::make_unique<DeviceBuffer>(w.devices[r], bytes));
      out_.push_back(std::make_unique<DeviceBuffer>(w.devices[r], bytes));
      handles_.emplace_back(2, nullptr);
      EXPECT_EQ(braidCommRegister(w.comms[r], in_[r]->ptr, bytes, &handles_[r][0]), braidSuccess)
          << braidGetLastError();
      EXPECT_EQ(braidCommRegister(w.comms[r], out_[r]->ptr, bytes, &handles_[r][1]), braidSuccess)
          << braidGetLastError();
    }
    bytes_ = bytes;
  }
  ~Registered() {
    for (int r = 0; r < w_.size(); ++r) {
      for (void* h : handles_[r]) EXPECT_EQ(braidCommDeregister(w_.comms[r], h), braidSuccess);
    }
  }
  float* in(int r) { return static_cast<float*>(in_[r]->ptr); }
  float* out(int r) { return static_cast<float*>(out_[r]->ptr); }
  size_t bytes() const { return bytes_; }

 private:
  World& w_;
  std::vector<std::unique_ptr<DeviceBuffer>> in_, out_;
  std::vector<std::vector<void*>> handles_;
  size_t bytes_ = 0;
};

// Where rank r's call reads and writes, in place or not (NCCL's in-place layouts).
void buffersOf(Registered& b, const Call& c, int r, const float** in, float** out) {
  *out = b.out(r);
  *in = b.in(r);
  if (!c.inPlace) return;
  if (c.coll == Coll::kAllGather) {
    *in = b.out(r) + r * c.count;
  } else if (c.coll == Coll::kReduceScatter) {
    *in = b.in(r);
    *out = b.in(r) + r * c.count;
  } else {
    *in = b.out(r);
  }
}

size_t inputElems(const Call& c, int n) { return c.coll == Coll::kReduceScatter ? c.count * n : c.count; }

braidResult_t issue(World& w, int r, const Call& c, const float* in, float* out) {
  braidComm_t comm = w.comms[r];
  braidStream_t s = reinterpret_cast<braidStream_t>(w.streams[r]);
  switch (c.coll) {
    case Coll::kAllReduce: return braidAllReduce(in, out, c.count, braidFloat32, c.op, comm, s);
    case Coll::kAllGather: return braidAllGather(in, out, c.count, braidFloat32, comm, s);
    case Coll::kReduceScatter: return braidReduceScatter(in, out, c.count, braidFloat32, c.op, comm, s);
    case Coll::kBroadcast: return braidBroadcast(in, out, c.count, braidFloat32, c.root, comm, s);
    default: return braidReduce(in, out, c.count, braidFloat32, c.op, c.root, comm, s);
  }
}

float combine(braidRedOp_t op, float a, float b) {
  if (op == braidMax) return a > b ? a : b;
  if (op == braidMin) return a < b ? a : b;
  if (op == braidProd) return a * b;
  return a + b;
}

// The reference: element i of rank r's output (NaN where the call leaves it alone).
float expected(const Call& c, int n, int r, size_t i) {
  auto reduced = [&](size_t j) {
    float acc = x(0, j);
    for (int q = 1; q < n; ++q) acc = combine(c.op, acc, x(q, j));
    return c.op == braidAvg ? acc / static_cast<float>(n) : acc;
  };
  switch (c.coll) {
    case Coll::kAllReduce: return reduced(i);
    case Coll::kAllGather: return x(static_cast<int>(i / c.count), i % c.count);
    case Coll::kReduceScatter: return reduced(r * c.count + i);
    case Coll::kBroadcast: return x(c.root, i);
    default: return r == c.root ? reduced(i) : std::nanf("");
  }
}

size_t outputElems(const Call& c, int n) { return c.coll == Coll::kAllGather ? c.count * n : c.count; }

// Fills every rank's buffers (poisoned output, the input where the call reads it).
void prepare(World& w, Registered& b, const Call& c) {
  const int n = w.size();
  for (int r = 0; r < n; ++r) {
    fillDevice(w.devices[r], b.in(r), 0xff, b.bytes());
    fillDevice(w.devices[r], b.out(r), 0xff, b.bytes());
    const float* in;
    float* out;
    buffersOf(b, c, r, &in, &out);
    std::vector<float> mine(inputElems(c, n));
    for (size_t i = 0; i < mine.size(); ++i) mine[i] = x(r, i);
    writeDevice(w.devices[r], const_cast<float*>(in), mine.data(), mine.size() * sizeof(float));
  }
}

// Every rank's output against the reference.
void check(World& w, Registered& b, const Call& c, const std::string& what) {
  ASSERT_TRUE(w.sync()) << w.error;
  const int n = w.size();
  for (int r = 0; r < n; ++r) {
    const float* in;
    float* out;
    buffersOf(b, c, r, &in, &out);
    std::vector<float> got(outputElems(c, n));
    readDevice(w.devices[r], got.data(), out, got.size() * sizeof(float));
    for (size_t i = 0; i < got.size(); ++i) {
      const float want = expected(c, n, r, i);
      if (std::isnan(want)) continue;
      ASSERT_NEAR(got[i], want, std::fabs(want) * 1e-6f)
          << what << ": " << collName(c.coll) << " of " << c.count << (c.inPlace ? " in place" : "") << ", rank " << r
          << ", element " << i << " of " << n << " ranks";
    }
  }
}

std::string runAll(World& w, Registered& b, const Call& c) {
  if (braidGroupStart() != braidSuccess) return braidGetLastError();
  for (int r = 0; r < w.size(); ++r) {
    const float* in;
    float* out;
    buffersOf(b, c, r, &in, &out);
    if (issue(w, r, c, in, out) != braidSuccess) return braidGetLastError();
  }
  return braidGroupEnd() == braidSuccess ? std::string() : braidGetLastError();
}

// A world of GetParam() thread ranks, all of this process (else the test skips).
class GpuRegistered : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
    WorldOptions o;
    o.nranks = GetParam();
    w_ = std::make_unique<World>(o);
    ASSERT_EQ(w_->error, "");
    for (int r = 0; r < w_->size(); ++r) {
      if (!w_->local(r)) GTEST_SKIP() << "thread ranks of one process only";
    }
  }
  std::unique_ptr<World> w_;
};

TEST_P(GpuRegistered, EveryCollectiveMatchesTheReference) {
  World& w = *w_;
  const size_t counts[] = {1, 7, 1023, (size_t{1} << 20) + 3};
  Registered b(w, counts[3]);
  const int n = w.size();
  for (size_t count : counts) {
    for (bool inPlace : {false, true}) {
      const Call calls[] = {
          {Coll::kAllReduce, count, inPlace, braidSum},      {Coll::kAllReduce, count, inPlace, braidMax},
          {Coll::kAllReduce, count, inPlace, braidAvg},      {Coll::kAllGather, count, inPlace},
          {Coll::kReduceScatter, count, inPlace, braidSum},  {Coll::kBroadcast, count, inPlace, braidSum, n - 1},
          {Coll::kReduce, count, inPlace, braidProd, n / 2},
      };
      for (const Call& c : calls) {
        prepare(w, b, c);
        ASSERT_EQ(runAll(w, b, c), "");
        check(w, b, c, "eager");
      }
    }
  }
}

// Graphs of a direct all-reduce on every rank, replayed three times, the inputs rewritten between
// replays: each replay reads the current inputs (the addresses travel as the kernels run).
TEST_P(GpuRegistered, GraphsReplayWithNewInputs) {
  World& w = *w_;
  const int n = w.size();
  const Call c{Coll::kAllReduce, (size_t{1} << 18) + 5, false, braidSum};
  Registered b(w, c.count);
  std::vector<cudaGraphExec_t> graphs(n, nullptr);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(
        captureGraph(
            w.devices[r], w.streams[r],
            [&] { return issue(w, r, c, b.in(r), b.out(r)) == braidSuccess ? std::string() : braidGetLastError(); },
            &graphs[r]),
        "");
  }
  for (int replay = 0; replay < 3; ++replay) {
    prepare(w, b, c);
    for (int r = 0; r < n; ++r) ASSERT_EQ(cudaGraphLaunch(graphs[r], w.streams[r]), cudaSuccess);
    check(w, b, c, "replay " + std::to_string(replay));
  }
  for (cudaGraphExec_t g : graphs) cudaGraphExecDestroy(g);
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
