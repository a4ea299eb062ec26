// Every collective on GPU buffers against the host reference (gpu_cases.h): algorithms x protocols
// x types x ops x counts, outputs poisoned first so that every element is checked written, in place,
// at unaligned offsets, at CTA counts 1..32, and inside a CUDA graph replayed with new data. Ranks
// are threads of this process on devices r % devices, so one GPU runs 2, 3 or 4 ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/datatype.h"
#include "exec/host_reduce.h"
#include "gpu_cases.h"

namespace braid::gputest {
namespace {

struct Config {
  int nranks;
  const char* algorithm;
  const char* protocol;
};

std::string configName(const testing::TestParamInfo<Config>& info) {
  return std::to_string(info.param.nranks) + "ranks_" + info.param.algorithm + "_" + info.param.protocol;
}

class GpuCollectives : public testing::TestWithParam<Config> {
 protected:
  void SetUp() override {
    if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  }
  WorldOptions options() const {
    WorldOptions o;
    o.nranks = GetParam().nranks;
    o.algorithm = GetParam().algorithm;
    o.protocol = GetParam().protocol;
    return o;
  }
  bool ringOnly() const { return std::string(GetParam().algorithm) == "ring"; }
  // The ring, the one-shot and the hierarchical algorithms run every collective they have (the
  // hierarchical one all five, algo/algorithm_table.def); the others all-reduce only.
  bool everyCollective() const {
    const std::string a = GetParam().algorithm;
    return ringOnly() || a == "oneshot" || a == "hier";
  }
};

const braidDataType_t kAllTypes[] = {braidInt8,    braidUint8,    braidInt32,      braidUint32,
                                     braidInt64,   braidUint64,   braidFloat16,    braidFloat32,
                                     braidFloat64, braidBfloat16, braidFloat8e4m3, braidFloat8e5m2};
const size_t kCounts[] = {1, 7, 1023, (1u << 20) + 3};

// The dtype/op matrix: every type with sum and max, every op on float32.
std::vector<std::pair<braidDataType_t, braidRedOp_t>> typeOps() {
  std::vector<std::pair<braidDataType_t, braidRedOp_t>> out;
  for (braidDataType_t t : kAllTypes) {
    out.push_back({t, braidSum});
    out.push_back({t, braidMax});
  }
  for (braidRedOp_t op : {braidProd, braidMin, braidAvg}) out.push_back({braidFloat32, op});
  return out;
}

TEST_P(GpuCollectives, AllReduceMatrix) {
  World w(options());
  ASSERT_EQ(w.error, "");
  for (auto [type, op] : typeOps()) {
    for (size_t count : kCounts) {
      if (count > 4096 && type != braidFloat32 && type != braidBfloat16 && type != braidInt8) continue;
      Case c;
      c.type = type;
      c.op = op;
      c.count = count;
      ASSERT_EQ(runCase(c, w), "");
    }
  }
}

TEST_P(GpuCollectives, OtherCollectives) {
  if (!everyCollective()) GTEST_SKIP() << "broadcast, reduce, all-gather and reduce-scatter run as rings";
  World w(options());
  ASSERT_EQ(w.error, "");
  for (Coll coll : {Coll::kBroadcast, Coll::kReduce, Coll::kAllGather, Coll::kReduceScatter}) {
    bool hasOp = coll == Coll::kReduce || coll == Coll::kReduceScatter;
    for (auto [type, op] : typeOps()) {
      if (!hasOp && op != braidSum) continue;
      for (size_t count : kCounts) {
        if (count > 4096 && type != braidFloat32) continue;
        Case c;
        c.coll = coll;
        c.type = type;
        c.op = op;
        c.count = count;
        c.root = w.size() - 1;
        ASSERT_EQ(runCase(c, w), "");
      }
    }
  }
}

TEST_P(GpuCollectives, InPlaceAndUnaligned) {
  World w(options());
  ASSERT_EQ(w.error, "");
  for (Coll coll : {Coll::kAllReduce, Coll::kBroadcast, Coll::kReduce, Coll::kAllGather, Coll::kReduceScatter}) {
    if (coll != Coll::kAllReduce && !everyCollective()) continue;
    for (braidDataType_t type : {braidFloat32, braidFloat16, braidInt8}) {
      for (size_t count : {size_t{7}, size_t{1023}, size_t{70001}}) {
        Case c;
        c.coll = coll;
        c.type = type;
        c.count = count;
        c.root = 1 % w.size();
        c.inPlace = true;
        ASSERT_EQ(runCase(c, w), "");
        c.inPlace = false;
        c.offset = 1;
        ASSERT_EQ(runCase(c, w), "");
      }
    }
  }
}

// Several calls back to back without waiting: the FIFO steps carry over from one kernel to the next.
TEST_P(GpuCollectives, BackToBackCalls) {
  World w(options());
  ASSERT_EQ(w.error, "");
  Case c;
  c.count = 100003;
  CaseBuffers b(c, w);
  for (int iter = 0; iter < 20; ++iter) {
    for (int r = 0; r < w.size(); ++r) {
      if (!w.local(r)) continue;
      ASSERT_EQ(issue(c, w, r, b.send[r], b.recv[r]), braidSuccess) << braidGetLastError();
    }
  }
  ASSERT_TRUE(w.sync()) << w.error;
  EXPECT_EQ(b.check(c, w), "");
}

// Captured once into a CUDA graph per rank, replayed with new inputs each time.
TEST_P(GpuCollectives, GraphCaptureAndReplay) {
  World w(options());
  ASSERT_EQ(w.error, "");
  for (size_t count : {size_t{1023}, size_t{(1u << 20) + 3}}) {
    Case c;
    c.count = count;
    CaseBuffers b(c, w);
    std::vector<cudaGraphExec_t> graphs(w.size());
    for (int r = 0; r < w.size(); ++r) {
      if (!w.local(r)) continue;
      ASSERT_EQ(captureGraph(
                    w.devices[r], w.streams[r],
                    [&] {
                      return issue(c, w, r, b.send[r], b.recv[r]) == braidSuccess ? std::string() : braidGetLastError();
                    },
                    &graphs[r]),
                "");
    }
    for (int replay = 0; replay < 3; ++replay) {
      c.salt = replay;
      b.upload(c, w);
      for (int r = 0; r < w.size(); ++r) {
        if (!w.local(r)) continue;
        cudaSetDevice(w.devices[r]);
        ASSERT_EQ(cudaGraphLaunch(graphs[r], w.streams[r]), cudaSuccess);
      }
      ASSERT_TRUE(w.sync()) << w.error;
      ASSERT_EQ(b.check(c, w), "") << "replay " << replay;
    }
    for (auto g : graphs) {
      if (g != nullptr) cudaGraphExecDestroy(g);
    }
  }
}

// Send/recv on GPU buffers: a ring shift (each rank to the next) and an exchange with every rank
// (all-to-all, which includes a message to oneself), each checked byte for byte.
TEST_P(GpuCollectives, SendRecvAndAllToAll) {
  if (!ringOnly() || std::string(GetParam().protocol) != "simple")
    GTEST_SKIP() << "send/recv has its own protocol choice";
  World w(options());
  ASSERT_EQ(w.error, "");
  const int n = w.size();
  for (braidDataType_t type : {braidFloat32, braidInt8}) {
    for (size_t count : {size_t{1}, size_t{1023}, size_t{(1u << 20) + 3}}) {
      const size_t es = core::typeSize(type), bytes = count * es;
      std::vector<std::vector<unsigned char>> in(n);
      std::vector<std::unique_ptr<DeviceBuffer>> send, recv, shiftOut;
      for (int r = 0; r < n; ++r) {
        fillInput(&in[r], count * n, type, r, 7);
        if (!w.local(r)) {
          send.emplace_back();
          recv.emplace_back();
          shiftOut.emplace_back();
          continue;
        }
        send.push_back(std::make_unique<DeviceBuffer>(w.devices[r], bytes * n));
        recv.push_back(std::make_unique<DeviceBuffer>(w.devices[r], bytes * n));
        shiftOut.push_back(std::make_unique<DeviceBuffer>(w.devices[r], bytes));
        writeDevice(w.devices[r], send[r]->ptr, in[r].data(), bytes * n);
        poison(w.devices[r], recv[r]->ptr, bytes * n);
        poison(w.devices[r], shiftOut[r]->ptr, bytes);
      }
      // Ring shift: rank r sends its first block to r+1 and receives r-1's.
      ASSERT_EQ(braidGroupStart(), braidSuccess);
      for (int r = 0; r < n; ++r) {
        if (!w.local(r)) continue;
        braidStream_t s = reinterpret_cast<braidStream_t>(w.streams[r]);
        ASSERT_EQ(braidSend(send[r]->ptr, count, type, (r + 1) % n, w.comms[r], s), braidSuccess)
            << braidGetLastError();
        ASSERT_EQ(braidRecv(shiftOut[r]->ptr, count, type, (r + n - 1) % n, w.comms[r], s), braidSuccess)
            << braidGetLastError();
      }
      ASSERT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
      // All-to-all: block q of rank r's input lands in block r of rank q's output.
      ASSERT_EQ(braidGroupStart(), braidSuccess);
      for (int r = 0; r < n; ++r) {
        if (!w.local(r)) continue;
        ASSERT_EQ(braidAllToAll(send[r]->ptr, recv[r]->ptr, count, type, w.comms[r],
                                reinterpret_cast<braidStream_t>(w.streams[r])),
                  braidSuccess)
            << braidGetLastError();
      }
      ASSERT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
      ASSERT_TRUE(w.sync()) << w.error;
      for (int r = 0; r < n; ++r) {
        if (!w.local(r)) continue;
        std::vector<unsigned char> shift(bytes), all(bytes * n);
        readDevice(w.devices[r], shift.data(), shiftOut[r]->ptr, bytes);
        readDevice(w.devices[r], all.data(), recv[r]->ptr, bytes * n);
        const std::vector<unsigned char>& from = in[(r + n - 1) % n];
        EXPECT_TRUE(std::equal(shift.begin(), shift.end(), from.begin()))
            << "shift into rank " << r << " count " << count;
        for (int q = 0; q < n; ++q) {
          EXPECT_TRUE(std::equal(all.begin() + q * bytes, all.begin() + (q + 1) * bytes, in[q].begin() + r * bytes))
              << "all-to-all block from rank " << q << " at rank " << r << " count " << count;
        }
      }
    }
  }
  // In place: every block but a rank's own is replaced by its peer's, eagerly and from a graph
  // (the input is staged on the stream, then freed on it).
  for (bool graph : {false, true}) {
    for (size_t count : {size_t{1}, size_t{7}, size_t{1023}, size_t{1} << 20}) {
      const size_t bytes = count * sizeof(float);
      std::vector<std::vector<unsigned char>> in(n);
      std::vector<std::unique_ptr<DeviceBuffer>> buf(n);
      for (int r = 0; r < n; ++r) {
        fillInput(&in[r], count * n, braidFloat32, r, 11);
        if (!w.local(r)) continue;
        buf[r] = std::make_unique<DeviceBuffer>(w.devices[r], bytes * n);
        writeDevice(w.devices[r], buf[r]->ptr, in[r].data(), bytes * n);
      }
      std::vector<cudaGraphExec_t> graphs(n, nullptr);
      ASSERT_EQ(braidGroupStart(), braidSuccess);
      for (int r = 0; r < n; ++r) {
        if (!w.local(r)) continue;
        ASSERT_EQ(cudaSetDevice(w.devices[r]), cudaSuccess);
        if (graph) {
          ASSERT_EQ(cudaStreamBeginCapture(w.streams[r], cudaStreamCaptureModeRelaxed), cudaSuccess);
        }
        ASSERT_EQ(braidAllToAll(buf[r]->ptr, buf[r]->ptr, count, braidFloat32, w.comms[r],
                                reinterpret_cast<braidStream_t>(w.streams[r])),
                  braidSuccess)
            << braidGetLastError();
      }
      ASSERT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
      for (int r = 0; r < n && graph; ++r) {
        if (!w.local(r)) continue;
        cudaGraph_t g = nullptr;
        ASSERT_EQ(cudaStreamEndCapture(w.streams[r], &g), cudaSuccess);
        ASSERT_EQ(cudaGraphInstantiate(&graphs[r], g, 0), cudaSuccess);
        cudaGraphDestroy(g);
        ASSERT_EQ(cudaGraphLaunch(graphs[r], w.streams[r]), cudaSuccess);
      }
      ASSERT_TRUE(w.sync()) << w.error;
      for (cudaGraphExec_t g : graphs) {
        if (g != nullptr) cudaGraphExecDestroy(g);
      }
      for (int r = 0; r < n; ++r) {
        if (!w.local(r)) continue;
        std::vector<unsigned char> all(bytes * n);
        readDevice(w.devices[r], all.data(), buf[r]->ptr, bytes * n);
        for (int q = 0; q < n; ++q) {
          EXPECT_TRUE(std::equal(all.begin() + q * bytes, all.begin() + (q + 1) * bytes, in[q].begin() + r * bytes))
              << "in-place all-to-all block from rank " << q << " at rank " << r << " count " << count
              << (graph ? " (graph)" : "");
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    , GpuCollectives,
    testing::Values(Config{2, "ring", "simple"}, Config{2, "ring", "ll"}, Config{2, "tree", "simple"},
                    Config{2, "tree", "ll"}, Config{2, "dbtree", "simple"}, Config{2, "dbtree", "ll"},
                    Config{2, "doubling", "simple"}, Config{2, "doubling", "ll"}, Config{3, "ring", "simple"},
                    Config{3, "ring", "ll"}, Config{3, "dbtree", "simple"}, Config{3, "doubling", "ll"},
                    Config{4, "ring", "simple"}, Config{4, "ring", "ll"}, Config{4, "tree", "simple"},
                    Config{4, "dbtree", "ll"}, Config{4, "doubling", "simple"}, Config{2, "oneshot", "ll"},
                    Config{3, "oneshot", "ll"}, Config{4, "oneshot", "ll"}, Config{2, "ring", "ll128"},
                    Config{2, "tree", "ll128"}, Config{2, "doubling", "ll128"}, Config{3, "ring", "ll128"},
                    Config{4, "ring", "ll128"}, Config{4, "dbtree", "ll128"},
                    // Across pretended hosts (gpu_across_hosts) the hierarchical all-reduce,
                    // all-gather, reduce-scatter, broadcast and reduce and the cross-host tree's
                    // all-reduce; on one host the tuner falls back to the ring.
                    Config{4, "hier", "simple"}, Config{4, "hier", "ll"}, Config{4, "hier", "ll128"},
                    Config{3, "hier", "simple"}, Config{4, "crosstree", "simple"}, Config{4, "crosstree", "ll"},
                    Config{3, "crosstree", "ll128"}),
    configName);

// CTA counts: the channel count is what the config pins.
class GpuCtas : public testing::TestWithParam<int> {};

TEST_P(GpuCtas, AllReduceOnPinnedCtaCount) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  for (const char* proto : {"simple", "ll", "ll128"}) {
    WorldOptions o;
    o.nranks = 2;
    o.algorithm = "ring";
    o.protocol = proto;
    o.minCTAs = o.maxCTAs = GetParam();
    World w(o);
    ASSERT_EQ(w.error, "");
    for (size_t count : {size_t{1023}, size_t{(1u << 20) + 3}}) {
      Case c;
      c.count = count;
      c.type = braidBfloat16;
      ASSERT_EQ(runCase(c, w), "") << proto;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(, GpuCtas, testing::Values(1, 2, 4, 8, 16, 32));

// BRAID_P2P_DISABLE=1: the FIFOs live in pinned, mapped host memory; every collective still
// matches the reference, on both protocols. ctest's gpu_host_memory runs it with the variable set
// from the start (a setenv beside the threads of earlier cases could crash their getenv).
TEST(GpuHostMemory, CollectivesOverMappedHostMemory) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  const char* disabled = std::getenv("BRAID_P2P_DISABLE");
  ASSERT_TRUE(disabled != nullptr && std::string(disabled) == "1") << "run it with BRAID_P2P_DISABLE=1";
  for (const char* proto : {"simple", "ll"}) {
    WorldOptions o;
    o.nranks = 2;
    o.algorithm = "ring";
    o.protocol = proto;
    World w(o);
    ASSERT_EQ(w.error, "");
    for (Coll coll : {Coll::kAllReduce, Coll::kBroadcast, Coll::kReduce, Coll::kAllGather, Coll::kReduceScatter}) {
      for (size_t count : {size_t{7}, size_t{70001}}) {
        Case c;
        c.coll = coll;
        c.count = count;
        c.root = 1;
        EXPECT_EQ(runCase(c, w), "") << proto;
      }
    }
  }
}

// A collective that can never complete (its peer never calls) ends when the communicators are
// aborted from another thread: the kernel sees the abort flag and returns.
TEST(GpuAbort, StuckCollectiveEndsOnAbort) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  WorldOptions o;
  o.nranks = 2;
  World w(o);
  ASSERT_EQ(w.error, "");
  DeviceBuffer buf(w.devices[0], 4 << 20);
  ASSERT_EQ(braidAllReduce(buf.ptr, buf.ptr, 1 << 20, braidFloat32, braidSum, w.comms[0],
                           reinterpret_cast<braidStream_t>(w.streams[0])),
            braidSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  cudaSetDevice(w.devices[0]);
  ASSERT_EQ(cudaStreamQuery(w.streams[0]), cudaErrorNotReady) << "rank 0's all-reduce finished without its peer";
  auto start = std::chrono::steady_clock::now();
  std::thread aborter([&] {
    for (braidComm_t c : w.comms) EXPECT_EQ(braidCommAbort(c), braidSuccess);
  });
  aborter.join();
  ASSERT_EQ(cudaStreamSynchronize(w.streams[0]), cudaSuccess);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(s, 10.0) << "the stuck kernel took " << s << " s to end after the abort";
  w.comms.assign(2, nullptr);  // aborted: nothing left to destroy
}

// Ranks 0 and 1 of three sharing the GPU queue an all-reduce that rank 2 never joins; each then
// shrinks with BRAID_SHRINK_ABORT on a thread of its own: the stuck kernels end, and the new
// two-rank communicator's all-reduce on the same streams gives the sum.
TEST(GpuShrink, AbortFirstReleasesAStuckKernelAndTheSurvivorsGoOn) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  WorldOptions o;
  o.nranks = 3;
  World w(o);
  ASSERT_EQ(w.error, "");
  const size_t count = (size_t{1} << 20) + 5;
  std::vector<std::unique_ptr<DeviceBuffer>> buf;
  for (int r = 0; r < 2; ++r) {
    buf.push_back(std::make_unique<DeviceBuffer>(w.devices[r], count * sizeof(float)));
    ASSERT_EQ(braidAllReduce(buf[r]->ptr, buf[r]->ptr, count, braidFloat32, braidSum, w.comms[r],
                             reinterpret_cast<braidStream_t>(w.streams[r])),
              braidSuccess);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  cudaSetDevice(w.devices[0]);
  ASSERT_EQ(cudaStreamQuery(w.streams[0]), cudaErrorNotReady) << "rank 0's all-reduce finished without rank 2";
  std::vector<braidComm_t> child(2, nullptr);
  std::vector<braidResult_t> rc(2, braidInternalError);
  std::vector<std::string> errors(2);
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      cudaSetDevice(w.devices[r]);
      int excluded[] = {2};
      rc[r] = braidCommShrink(w.comms[r], excluded, 1, &child[r], nullptr, BRAID_SHRINK_ABORT);
      errors[r] = braidGetLastError();
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) ASSERT_EQ(rc[r], braidSuccess) << "rank " << r << ": " << errors[r];
  for (int r = 0; r < 2; ++r) {
    cudaSetDevice(w.devices[r]);
    ASSERT_EQ(cudaStreamSynchronize(w.streams[r]), cudaSuccess);
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(s, 10.0) << "the stuck kernels took " << s << " s to end after the shrink";
  std::vector<float> host(count);
  ASSERT_EQ(braidGroupStart(), braidSuccess);
  for (int r = 0; r < 2; ++r) {
    for (size_t i = 0; i < count; ++i) host[i] = static_cast<float>((i + r * 3) % 17);
    writeDevice(w.devices[r], buf[r]->ptr, host.data(), count * sizeof(float));
    ASSERT_EQ(braidAllReduce(buf[r]->ptr, buf[r]->ptr, count, braidFloat32, braidSum, child[r],
                             reinterpret_cast<braidStream_t>(w.streams[r])),
              braidSuccess);
  }
  ASSERT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
  ASSERT_TRUE(w.sync()) << w.error;
  for (int r = 0; r < 2; ++r) {
    readDevice(w.devices[r], host.data(), buf[r]->ptr, count * sizeof(float));
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(host[i], static_cast<float>(i % 17 + (i + 3) % 17)) << "rank " << r << " element " << i;
    }
    EXPECT_EQ(braidCommDestroy(child[r]), braidSuccess);
  }
}

// The largest count of the matrix: 256 MB of float32.
TEST(GpuCollectivesLarge, AllReduce256MB) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  for (const char* algo : {"ring", "dbtree"}) {
    WorldOptions o;
    o.algorithm = algo;
    o.protocol = "simple";
    World w(o);
    ASSERT_EQ(w.error, "");
    Case c;
    c.count = (256u << 20) / 4;
    ASSERT_EQ(runCase(c, w), "") << algo;
  }
}

}  // namespace
}  // namespace braid::gputest
