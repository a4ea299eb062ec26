// What the direct-call tests (registered_test.cc, windows_test.cc) share: the calls, each rank's
// inputs, the reference, and running and checking a call on every rank of this process.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gpu_world.h"

namespace braid::gputest {

// Each rank's input and output buffers, registered one way or another (null where the rank lives
// in another process).
class RankBuffers {
 public:
  virtual ~RankBuffers() = default;
  virtual float* in(int r) = 0;
  virtual float* out(int r) = 0;
  virtual size_t bytes() const = 0;
};

enum class Coll { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce };

inline const char* collName(Coll c) {
  static const char* names[] = {"all-reduce", "all-gather", "reduce-scatter", "broadcast", "reduce"};
  return names[static_cast<int>(c)];
}

// Rank r's input element i: small integers, so that every sum is exact in any order.
inline float x(int r, size_t i) { return static_cast<float>(static_cast<int>((i * 7 + r * 3) % 11) - 5); }

struct Call {
  Coll coll;
  size_t count;  // per rank's block for all-gather and reduce-scatter
  bool inPlace;
  braidRedOp_t op = braidSum;
  int root = 0;
};

// Where rank r's call reads and writes, in place or not (NCCL's in-place layouts).
inline void buffersOf(RankBuffers& b, const Call& c, int r, const float** in, float** out) {
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

inline size_t inputElems(const Call& c, int n) { return c.coll == Coll::kReduceScatter ? c.count * n : c.count; }

inline braidResult_t issue(World& w, int r, const Call& c, const float* in, float* out) {
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

inline float combine(braidRedOp_t op, float a, float b) {
  if (op == braidMax) return a > b ? a : b;
  if (op == braidMin) return a < b ? a : b;
  if (op == braidProd) return a * b;
  return a + b;
}

// The reference: element i of rank r's output (NaN where the call leaves it alone).
inline float expected(const Call& c, int n, int r, size_t i) {
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

inline size_t outputElems(const Call& c, int n) { return c.coll == Coll::kAllGather ? c.count * n : c.count; }

// Fills every rank's buffers (poisoned output, the input where the call reads it).
inline void prepare(World& w, RankBuffers& b, const Call& c) {
  const int n = w.size();
  for (int r = 0; r < n; ++r) {
    if (!w.local(r)) continue;
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
inline void check(World& w, RankBuffers& b, const Call& c, const std::string& what) {
  ASSERT_TRUE(w.sync()) << w.error;
  const int n = w.size();
  for (int r = 0; r < n; ++r) {
    if (!w.local(r)) continue;
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

inline std::string runAll(World& w, RankBuffers& b, const Call& c) {
  if (braidGroupStart() != braidSuccess) return braidGetLastError();
  for (int r = 0; r < w.size(); ++r) {
    if (!w.local(r)) continue;
    const float* in;
    float* out;
    buffersOf(b, c, r, &in, &out);
    if (issue(w, r, c, in, out) != braidSuccess) return braidGetLastError();
  }
  return braidGroupEnd() == braidSuccess ? std::string() : braidGetLastError();
}

// Each collective (all-reduce by sum, max and average, all-gather, reduce-scatter, broadcast from
// the last rank, reduce by product to the middle one), out of place and in place, at each count:
// every local rank's call in one group, then checked against the reference.
inline void checkEveryCollective(World& w, RankBuffers& b, const std::vector<size_t>& counts) {
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
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// A graph of call `c` captured on every local rank, replayed three times with the inputs rewritten
// between replays: each replay must read the current inputs (the addresses travel as the kernels
// run).
inline void checkGraphReplays(World& w, RankBuffers& b, const Call& c) {
  std::vector<cudaGraphExec_t> graphs(w.size(), nullptr);
  for (int r = 0; r < w.size(); ++r) {
    if (!w.local(r)) continue;
    ASSERT_EQ(
        captureGraph(
            w.devices[r], w.streams[r],
            [&] { return issue(w, r, c, b.in(r), b.out(r)) == braidSuccess ? std::string() : braidGetLastError(); },
            &graphs[r]),
        "");
  }
  for (int replay = 0; replay < 3 && !::testing::Test::HasFatalFailure(); ++replay) {
    prepare(w, b, c);
    for (int r = 0; r < w.size(); ++r) {
      if (graphs[r] == nullptr) continue;
      ASSERT_EQ(cudaGraphLaunch(graphs[r], w.streams[r]), cudaSuccess);
    }
    check(w, b, c, "replay " + std::to_string(replay));
  }
  for (cudaGraphExec_t g : graphs) {
    if (g != nullptr) cudaGraphExecDestroy(g);
  }
}

}  // namespace braid::gputest
