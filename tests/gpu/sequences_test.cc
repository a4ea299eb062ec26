// Several calls in sequence on GPUs: the one-shot's buffer reuse across collectives, sizes and
// graph replays, one-way calls between two-way ones, a group of collectives on one communicator, and
// send/recv messages of uneven sizes across ranks. Each output is checked against the reference.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu_cases.h"

namespace braid::gputest {
namespace {

WorldOptions oneShotWorld(int nranks) {
  WorldOptions o;
  o.nranks = nranks;
  o.algorithm = "oneshot";
  o.protocol = "ll";
  return o;
}

// The one-shot's buffers are reused without counters, by alternating parities and a per-channel
// epoch: calls of different collectives and sizes (so different channel counts) back to back
// without waiting, then a graph of two calls replayed three times, must all match the reference.
// Broadcast and reduce send one way; their senders wait for the receivers' "started" words.
TEST(GpuOneShot, MixedSizesBackToBackAndGraphReplays) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  World w(oneShotWorld(2));
  ASSERT_EQ(w.error, "");
  CallSet set(w, {{Coll::kAllReduce, 1, 0},
                  {Coll::kAllReduce, 70001, 0},
                  {Coll::kAllReduce, 7, 0},
                  {Coll::kAllReduce, 262144, 0},
                  {Coll::kAllReduce, 1023, 0},
                  {Coll::kAllReduce, 65, 0},
                  {Coll::kBroadcast, 70001, 0},
                  {Coll::kReduce, 1023, 1},
                  {Coll::kBroadcast, 7, 1},
                  {Coll::kAllGather, 65, 0},
                  {Coll::kReduce, 30000, 0},
                  {Coll::kReduceScatter, 1000, 0}});
  ASSERT_EQ(set.issueAll(w, 3, false), "");
  ASSERT_EQ(set.syncAndCheck(w), "");
  std::vector<cudaGraphExec_t> graphs(w.size());
  for (int r = 0; r < w.size(); ++r) {
    ASSERT_EQ(captureGraph(
                  w.devices[r], w.streams[r],
                  [&] {
                    std::string e = set.issueOne(w, 0, r);
                    return e.empty() ? set.issueOne(w, 1, r) : e;
                  },
                  &graphs[r]),
              "");
  }
  for (int replay = 0; replay < 3; ++replay) {
    for (int k = 0; k < 2; ++k) {
      set.cases[k].salt = 100 + replay + k;
      set.bufs[k]->upload(set.cases[k], w);
    }
    for (int r = 0; r < w.size(); ++r) {
      cudaSetDevice(w.devices[r]);
      ASSERT_EQ(cudaGraphLaunch(graphs[r], w.streams[r]), cudaSuccess);
    }
    ASSERT_TRUE(w.sync()) << w.error;
    for (int k = 0; k < 2; ++k) ASSERT_EQ(set.bufs[k]->check(set.cases[k], w), "") << "replay " << replay;
  }
  for (auto g : graphs) cudaGraphExecDestroy(g);
}

// One-way calls (broadcast, reduce) between two-way ones, many times back to back: a sender must
// not reuse a parity its receiver may still read (the one-shot waits for the receiver's "started"
// word; a review found the data-only argument hangs here).
TEST(GpuOneShot, OneWayAndTwoWayCallsInterleaved) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  for (int nranks : {2, 3}) {
    World w(oneShotWorld(nranks));
    ASSERT_EQ(w.error, "");
    CallSet set(w, {{Coll::kAllReduce, 4099, 0},
                    {Coll::kBroadcast, 4099, 0},
                    {Coll::kAllReduce, 33, 0},
                    {Coll::kReduce, 4099, -1},
                    {Coll::kBroadcast, 65, -1},
                    {Coll::kAllGather, 1000, 0}});
    ASSERT_EQ(set.issueAll(w, 50, false), "");
    EXPECT_EQ(set.syncAndCheck(w), "") << nranks << " ranks";
  }
}

// Several collectives of one communicator in a group: launched in posting order on every rank
// (braidGroupEnd runs each communicator's calls on one thread), so sizes that differ still pair up.
TEST(GpuGroup, CollectivesOfOneCommunicatorKeepTheirOrder) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  WorldOptions o;
  o.nranks = 2;
  World w(o);
  ASSERT_EQ(w.error, "");
  CallSet set(w, {{Coll::kAllReduce, 1, 0},
                  {Coll::kAllReduce, 100003, 0},
                  {Coll::kAllGather, 7, 0},
                  {Coll::kAllReduce, 4099, 0},
                  {Coll::kReduceScatter, 70001, 0},
                  {Coll::kBroadcast, 1 << 20, 0}});
  ASSERT_EQ(set.issueAll(w, 10, true), "");
  EXPECT_EQ(set.syncAndCheck(w), "");
}

// Captures rank r's calls of `set`, in one group, into `exec`; the number of kernel nodes the capture
// made, or -1 (and `error` set).
int captureGroup(World& w, CallSet& set, int r, cudaGraphExec_t* exec, std::string* error) {
  cudaSetDevice(w.devices[r]);
  if (cudaStreamBeginCapture(w.streams[r], cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    *error = "cudaStreamBeginCapture failed";
    return -1;
  }
  braidGroupStart();
  for (size_t i = 0; i < set.cases.size() && error->empty(); ++i) *error = set.issueOne(w, i, r);
  if (braidGroupEnd() != braidSuccess && error->empty()) *error = std::string("braidGroupEnd: ") + braidGetLastError();
  cudaGraph_t g = nullptr;
  if (cudaStreamEndCapture(w.streams[r], &g) != cudaSuccess && error->empty()) *error = "cudaStreamEndCapture failed";
  if (!error->empty()) return -1;
  const int kernels = static_cast<int>(graphNodesOfType(g, cudaGraphNodeTypeKernel));
  if (cudaGraphInstantiate(exec, g, 0) != cudaSuccess) *error = "cudaGraphInstantiate failed";
  cudaGraphDestroy(g);
  return error->empty() ? kernels : -1;
}

// A group's collectives of one kernel and protocol on one stream are one launch: a capture of the
// group holds `launches` kernel nodes on every rank. Then the graph replays (new inputs each time)
// and the group runs eagerly, all checked against the reference.
void expectGroupLaunches(World& w, CallSet& set, int launches) {
  std::vector<cudaGraphExec_t> graphs(w.size());
  for (int r = 0; r < w.size(); ++r) {
    std::string error;
    EXPECT_EQ(captureGroup(w, set, r, &graphs[r], &error), launches) << "rank " << r << " " << error;
    ASSERT_EQ(error, "");
  }
  for (int replay = 0; replay < 2; ++replay) {
    for (size_t k = 0; k < set.cases.size(); ++k) {
      set.cases[k].salt = static_cast<int>(100 * (replay + 1) + k);
      set.bufs[k]->upload(set.cases[k], w);
    }
    for (int r = 0; r < w.size(); ++r) {
      cudaSetDevice(w.devices[r]);
      ASSERT_EQ(cudaGraphLaunch(graphs[r], w.streams[r]), cudaSuccess);
    }
    ASSERT_TRUE(w.sync()) << w.error;
    for (size_t k = 0; k < set.cases.size(); ++k)
      ASSERT_EQ(set.bufs[k]->check(set.cases[k], w), "") << "replay " << replay;
  }
  for (auto g : graphs) cudaGraphExecDestroy(g);
  ASSERT_EQ(set.issueAll(w, 3, true), "");
  EXPECT_EQ(set.syncAndCheck(w), "");
}

// Gives calls 1-4 of a five-call set other types and operations (f16; int32 max; bf16; avg) and
// makes their buffers again.
void mixTypesAndOps(CallSet& set, World& w) {
  set.cases[1].type = braidFloat16;
  set.cases[2].type = braidInt32;
  set.cases[2].op = braidMax;
  set.cases[3].type = braidBfloat16;
  set.cases[4].op = braidAvg;
  for (size_t k = 0; k < set.cases.size(); ++k) set.bufs[k] = std::make_unique<CaseBuffers>(set.cases[k], w);
}

TEST(GpuGroup, CollectivesOfOneKernelShareOneLaunch) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  const std::pair<const char*, const char*> configs[] = {{"ring", "simple"}, {"ring", "ll"},       {"ring", "ll128"},
                                                         {"tree", "ll"},     {"dbtree", "simple"}, {"doubling", "ll"}};
  for (auto [algorithm, protocol] : configs) {
    SCOPED_TRACE(std::string(algorithm) + " " + protocol);
    WorldOptions o;
    o.nranks = 2;
    o.algorithm = algorithm;
    o.protocol = protocol;
    World w(o);
    ASSERT_EQ(w.error, "");
    // Sizes that the tuner gives different channel counts, and several types and operations.
    CallSet set(w, {{Coll::kAllReduce, 1, 0},
                    {Coll::kAllReduce, 100003, 0},
                    {Coll::kAllReduce, 4099, 0},
                    {Coll::kAllReduce, 7, 0},
                    {Coll::kAllReduce, (1 << 20) + 3, 0}});
    mixTypesAndOps(set, w);
    expectGroupLaunches(w, set, 1);
  }
}

// One-shot calls of a group are one launch (one epoch, their lines one after another in each block)
// while they fit in a block together: 4 MiB for 2 ranks. Broadcasts from different roots in one
// launch wait for the "started" word of every rank any of them sends to.
TEST(GpuGroup, OneShotCallsShareALaunchWhileTheyFit) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  World w(oneShotWorld(2));
  ASSERT_EQ(w.error, "");
  {
    SCOPED_TRACE("all-reduces of mixed types");
    CallSet set(w, {{Coll::kAllReduce, 1, 0},
                    {Coll::kAllReduce, 100003, 0},
                    {Coll::kAllReduce, 4099, 0},
                    {Coll::kAllReduce, 7, 0},
                    {Coll::kAllReduce, 70001, 0}});
    mixTypesAndOps(set, w);
    expectGroupLaunches(w, set, 1);
  }
  {
    SCOPED_TRACE("broadcasts from both roots");
    CallSet set(w, {{Coll::kBroadcast, 4099, 0}, {Coll::kBroadcast, 65, 1}, {Coll::kBroadcast, 1000, 0}});
    expectGroupLaunches(w, set, 1);
  }
  {
    SCOPED_TRACE("2.4 MB each: one per launch");
    CallSet set(w, {{Coll::kAllReduce, 600000, 0}, {Coll::kAllReduce, 600000, 0}, {Coll::kAllReduce, 400000, 0}});
    expectGroupLaunches(w, set, 2);  // the third (1.6 MB) joins the second
  }
}

// Each rank picks its own streams: rank 1 posts its second one-shot call on another stream, rank 0
// all three on one. A group's one-shot calls are one launch (one epoch) on each rank all the same;
// cut where rank 1's stream changes, the ranks' epochs would part and both would wait forever.
TEST(GpuGroup, OneShotCallsOnEachRanksOwnStreams) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  World w(oneShotWorld(2));
  ASSERT_EQ(w.error, "");
  CallSet set(w, {{Coll::kAllReduce, 4099, 0}, {Coll::kAllReduce, 1000, 0}, {Coll::kAllReduce, 7, 0}});
  cudaSetDevice(w.devices[1]);
  cudaStream_t extra = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&extra, cudaStreamNonBlocking), cudaSuccess);
  for (int round = 0; round < 10; ++round) {
    ASSERT_EQ(braidGroupStart(), braidSuccess);
    for (int r = 0; r < w.size(); ++r) {
      for (size_t i = 0; i < set.cases.size(); ++i) {
        cudaStream_t s = r == 1 && i == 1 ? extra : w.streams[r];
        ASSERT_EQ(issue(set.cases[i], w, r, set.bufs[i]->send[r], set.bufs[i]->recv[r], s), braidSuccess)
            << braidGetLastError();
      }
    }
    ASSERT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
  }
  ASSERT_TRUE(w.sync()) << w.error;
  cudaSetDevice(w.devices[1]);
  ASSERT_EQ(cudaStreamSynchronize(extra), cudaSuccess);
  cudaStreamDestroy(extra);
  for (size_t i = 0; i < set.cases.size(); ++i) EXPECT_EQ(set.bufs[i]->check(set.cases[i], w), "") << "call " << i;
}

// Calls of different kernels keep their order: each run of one kernel is a launch.
TEST(GpuGroup, MixedCollectivesLaunchEachRunOfOneKernel) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  WorldOptions o;
  o.nranks = 2;
  o.algorithm = "ring";
  o.protocol = "simple";
  World w(o);
  ASSERT_EQ(w.error, "");
  CallSet set(w, {{Coll::kAllReduce, 4099, 0},
                  {Coll::kAllReduce, 1000, 0},
                  {Coll::kAllGather, 7, 0},
                  {Coll::kAllGather, 70001, 0},
                  {Coll::kAllReduce, 65, 0},
                  {Coll::kReduceScatter, 1023, 0}});
  expectGroupLaunches(w, set, 4);
}

// Send/recv with uneven sizes (an MoE-style all-to-all): each rank sees only its own messages, so
// both ends of a message must cut it alike whatever else either of them sends.
TEST(GpuSendRecv, UnevenMessagesAcrossRanks) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  WorldOptions o;
  o.nranks = 3;
  World w(o);
  ASSERT_EQ(w.error, "");
  const int n = w.size();
  auto bytesOf = [](int from, int to) -> size_t {
    return from == 0 && to == 1 ? size_t{1} << 20 : 4096 + 7 * from + 3 * to;
  };
  auto byteOf = [](int from, int to, size_t i) { return static_cast<unsigned char>(from * 31 + to * 7 + i * 13); };
  std::vector<std::unique_ptr<DeviceBuffer>> send, recv;
  std::vector<std::vector<size_t>> sendOff(n, std::vector<size_t>(n)), recvOff(n, std::vector<size_t>(n));
  for (int r = 0; r < n; ++r) {
    size_t sTotal = 0, rTotal = 0;
    for (int q = 0; q < n; ++q) {
      sendOff[r][q] = sTotal;
      recvOff[r][q] = rTotal;
      sTotal += q == r ? 0 : bytesOf(r, q);
      rTotal += q == r ? 0 : bytesOf(q, r);
    }
    std::vector<unsigned char> host(sTotal);
    for (int q = 0; q < n; ++q) {
      for (size_t i = 0; q != r && i < bytesOf(r, q); ++i) host[sendOff[r][q] + i] = byteOf(r, q, i);
    }
    send.push_back(std::make_unique<DeviceBuffer>(w.devices[r], sTotal));
    recv.push_back(std::make_unique<DeviceBuffer>(w.devices[r], rTotal));
    writeDevice(w.devices[r], send[r]->ptr, host.data(), sTotal);
    poison(w.devices[r], recv[r]->ptr, rTotal);
  }
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(braidGroupStart(), braidSuccess);
    for (int r = 0; r < n; ++r) {
      braidStream_t s = reinterpret_cast<braidStream_t>(w.streams[r]);
      for (int q = 0; q < n; ++q) {
        if (q == r) continue;
        ASSERT_EQ(
            braidSend(static_cast<char*>(send[r]->ptr) + sendOff[r][q], bytesOf(r, q), braidUint8, q, w.comms[r], s),
            braidSuccess)
            << braidGetLastError();
        ASSERT_EQ(
            braidRecv(static_cast<char*>(recv[r]->ptr) + recvOff[r][q], bytesOf(q, r), braidUint8, q, w.comms[r], s),
            braidSuccess)
            << braidGetLastError();
      }
    }
    ASSERT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
  }
  ASSERT_TRUE(w.sync()) << w.error;
  for (int r = 0; r < n; ++r) {
    for (int q = 0; q < n; ++q) {
      if (q == r) continue;
      std::vector<unsigned char> got(bytesOf(q, r));
      readDevice(w.devices[r], got.data(), static_cast<char*>(recv[r]->ptr) + recvOff[r][q], got.size());
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], byteOf(q, r, i)) << "rank " << r << " from " << q << " byte " << i;
    }
  }
}

}  // namespace
}  // namespace braid::gputest

namespace braid::gputest {
namespace {

// The nodes a capture of `call` on `stream` records (the graph is destroyed after counting).
size_t nodesCaptured(cudaStream_t stream, const std::function<braidResult_t()>& call, cudaGraphNodeType* first) {
  EXPECT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(call(), braidSuccess) << braidGetLastError();
  cudaGraph_t g = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(stream, &g), cudaSuccess);
  size_t n = 0;
  EXPECT_EQ(cudaGraphGetNodes(g, nullptr, &n), cudaSuccess);
  if (n > 0) {
    std::vector<cudaGraphNode_t> nodes(n);
    EXPECT_EQ(cudaGraphGetNodes(g, nodes.data(), &n), cudaSuccess);
    EXPECT_EQ(cudaGraphNodeGetType(nodes[0], first), cudaSuccess);
  }
  cudaGraphDestroy(g);
  return n;
}

// A one-rank communicator: every collective out of place gives its input (one copy, no kernel),
// in place enqueues nothing at all (a captured graph of it is empty).
TEST(GpuOneRank, OutOfPlaceIsOneCopyInPlaceIsNothing) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  WorldOptions o;
  o.nranks = 1;
  World w(o);
  ASSERT_EQ(w.error, "");
  const size_t count = (size_t{1} << 20) + 3;
  std::vector<float> in(count), got(count);
  for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>(i % 977) - 300.0f;
  DeviceBuffer src(w.devices[0], count * sizeof(float)), dst(w.devices[0], count * sizeof(float));
  writeDevice(w.devices[0], src.ptr, in.data(), count * sizeof(float));
  braidComm_t c = w.comms[0];
  braidStream_t s = reinterpret_cast<braidStream_t>(w.streams[0]);
  const std::vector<std::pair<const char*, std::function<braidResult_t(void*, void*)>>> calls = {
      {"allreduce", [&](void* a, void* b) { return braidAllReduce(a, b, count, braidFloat32, braidAvg, c, s); }},
      {"reduce", [&](void* a, void* b) { return braidReduce(a, b, count, braidFloat32, braidMax, 0, c, s); }},
      {"reducescatter",
       [&](void* a, void* b) { return braidReduceScatter(a, b, count, braidFloat32, braidSum, c, s); }},
      {"broadcast", [&](void* a, void* b) { return braidBroadcast(a, b, count, braidFloat32, 0, c, s); }},
      {"allgather", [&](void* a, void* b) { return braidAllGather(a, b, count, braidFloat32, c, s); }},
      {"alltoall", [&](void* a, void* b) { return braidAllToAll(a, b, count, braidFloat32, c, s); }},
  };
  for (const auto& [name, call] : calls) {
    fillDevice(w.devices[0], dst.ptr, 0xA5, count * sizeof(float));
    ASSERT_EQ(call(src.ptr, dst.ptr), braidSuccess) << name << ": " << braidGetLastError();
    ASSERT_TRUE(w.sync()) << w.error;
    readDevice(w.devices[0], got.data(), dst.ptr, count * sizeof(float));
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(got[i], in[i]) << name << " element " << i;
    cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    EXPECT_EQ(nodesCaptured(
                  w.streams[0], [&] { return call(src.ptr, dst.ptr); }, &type),
              1u)
        << name;
    EXPECT_EQ(type, cudaGraphNodeTypeMemcpy) << name;
    EXPECT_EQ(nodesCaptured(
                  w.streams[0], [&] { return call(src.ptr, src.ptr); }, &type),
              0u)
        << name << " in place";
  }
  // In place, eagerly: the buffer keeps its values.
  ASSERT_EQ(braidAllReduce(src.ptr, src.ptr, count, braidFloat32, braidSum, c, s), braidSuccess);
  ASSERT_TRUE(w.sync()) << w.error;
  readDevice(w.devices[0], got.data(), src.ptr, count * sizeof(float));
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(got[i], in[i]) << "in place, element " << i;
}

}  // namespace
}  // namespace braid::gputest

namespace braid::gputest {
namespace {

// Pre-multiplied sums on GPUs: 3 ranks sharing the GPU, each scalar in device memory, an
// all-reduce, a reduce-scatter and a reduce captured into one graph per rank, replayed after the
// scalars changed (the kernels read the current values); then an immediate scalar, eagerly.
// Inputs and scalars are small integers and halves, so float32 sums are exact.
TEST(GpuPreMulSum, DeviceScalarsInAGraphReplayTheCurrentValue) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  WorldOptions o;
  o.nranks = 3;
  World w(o);
  ASSERT_EQ(w.error, "");
  const int n = w.size();
  const size_t count = (size_t{1} << 16) + 5;
  std::vector<std::unique_ptr<DeviceBuffer>> in, ar, rs, rd, scalars;
  std::vector<braidRedOp_t> ops(n);
  auto x = [](int r, size_t i) { return static_cast<float>((i * 5 + r) % 11); };
  for (int r = 0; r < n; ++r) {
    std::vector<float> host(count * n);
    for (size_t i = 0; i < host.size(); ++i) host[i] = x(r, i);
    in.push_back(std::make_unique<DeviceBuffer>(w.devices[r], host.size() * sizeof(float)));
    writeDevice(w.devices[r], in[r]->ptr, host.data(), host.size() * sizeof(float));
    ar.push_back(std::make_unique<DeviceBuffer>(w.devices[r], count * sizeof(float)));
    rs.push_back(std::make_unique<DeviceBuffer>(w.devices[r], count * sizeof(float)));
    rd.push_back(std::make_unique<DeviceBuffer>(w.devices[r], count * sizeof(float)));
    scalars.push_back(std::make_unique<DeviceBuffer>(w.devices[r], sizeof(float)));
    ASSERT_EQ(braidRedOpCreatePreMulSum(&ops[r], scalars[r]->ptr, braidFloat32, braidScalarDevice, w.comms[r]),
              braidSuccess)
        << braidGetLastError();
  }
  auto setScalars = [&](float base) {
    for (int r = 0; r < n; ++r) {
      const float s = base + 0.5f * r;
      writeDevice(w.devices[r], scalars[r]->ptr, &s, sizeof(s));
    }
  };
  std::vector<cudaGraphExec_t> graphs(n);
  ASSERT_EQ(braidGroupStart(), braidSuccess);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(cudaSetDevice(w.devices[r]), cudaSuccess);
    ASSERT_EQ(cudaStreamBeginCapture(w.streams[r], cudaStreamCaptureModeRelaxed), cudaSuccess);
  }
  for (int r = 0; r < n; ++r) {
    braidStream_t s = reinterpret_cast<braidStream_t>(w.streams[r]);
    ASSERT_EQ(braidAllReduce(in[r]->ptr, ar[r]->ptr, count, braidFloat32, ops[r], w.comms[r], s), braidSuccess);
    ASSERT_EQ(braidReduceScatter(in[r]->ptr, rs[r]->ptr, count, braidFloat32, ops[r], w.comms[r], s), braidSuccess);
    ASSERT_EQ(braidReduce(in[r]->ptr, rd[r]->ptr, count, braidFloat32, ops[r], 2, w.comms[r], s), braidSuccess);
  }
  ASSERT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
  for (int r = 0; r < n; ++r) {
    cudaGraph_t g = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(w.streams[r], &g), cudaSuccess);
    ASSERT_EQ(cudaGraphInstantiate(&graphs[r], g, 0), cudaSuccess);
    cudaGraphDestroy(g);
  }
  for (float base : {1.0f, 3.0f}) {
    setScalars(base);
    for (int r = 0; r < n; ++r) ASSERT_EQ(cudaGraphLaunch(graphs[r], w.streams[r]), cudaSuccess);
    ASSERT_TRUE(w.sync()) << w.error;
    auto expected = [&](size_t i) {
      float sum = 0;
      for (int q = 0; q < n; ++q) sum += (base + 0.5f * q) * x(q, i);
      return sum;
    };
    std::vector<float> got(count);
    for (int r = 0; r < n; ++r) {
      readDevice(w.devices[r], got.data(), ar[r]->ptr, count * sizeof(float));
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(got[i], expected(i)) << "allreduce rank " << r << " element " << i;
      readDevice(w.devices[r], got.data(), rs[r]->ptr, count * sizeof(float));
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(got[i], expected(r * count + i)) << "reducescatter rank " << r << " element " << i;
    }
    readDevice(w.devices[2], got.data(), rd[2]->ptr, count * sizeof(float));
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(got[i], expected(i)) << "reduce at root 2, element " << i;
  }
  for (int r = 0; r < n; ++r) {
    cudaGraphExecDestroy(graphs[r]);
    EXPECT_EQ(braidRedOpDestroy(ops[r], w.comms[r]), braidSuccess);
  }
  // An immediate scalar, taken at creation, in place.
  ASSERT_EQ(braidGroupStart(), braidSuccess);
  for (int r = 0; r < n; ++r) {
    const float s = 2.0f + r;
    ASSERT_EQ(
        braidRedOpCreatePreMulSum(&ops[r], const_cast<float*>(&s), braidFloat32, braidScalarHostImmediate, w.comms[r]),
        braidSuccess);
    ASSERT_EQ(braidAllReduce(in[r]->ptr, in[r]->ptr, count, braidFloat32, ops[r], w.comms[r],
                             reinterpret_cast<braidStream_t>(w.streams[r])),
              braidSuccess);
  }
  ASSERT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
  ASSERT_TRUE(w.sync()) << w.error;
  std::vector<float> got(count);
  readDevice(w.devices[1], got.data(), in[1]->ptr, count * sizeof(float));
  for (size_t i = 0; i < count; ++i) {
    float sum = 0;
    for (int q = 0; q < n; ++q) sum += (2.0f + q) * x(q, i);
    ASSERT_EQ(got[i], sum) << "in place, element " << i;
  }
}

}  // namespace
}  // namespace braid::gputest

namespace braid::gputest {
namespace {

// Registered device buffers (issue 19 item 4): every collective on a sub-range of a registered
// buffer, deregistered while the calls are still queued on the stream, gives the reference's
// result; the same buffer registered twice is one handle.
TEST(GpuRegistration, CallsOnRegisteredSubRangesDeregisteredWhileQueued) {
  if (deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device";
  WorldOptions o;
  o.nranks = 2;
  World w(o);
  ASSERT_EQ(w.error, "");
  const int n = w.size();
  const size_t count = (size_t{1} << 18) + 3, offset = 64;
  const size_t total = (count * n + 2 * offset) * sizeof(float);
  std::vector<std::unique_ptr<DeviceBuffer>> buf, out;
  std::vector<void*> handles(n);
  auto x = [](int r, size_t i) { return static_cast<float>((i * 3 + r) % 7); };
  for (int r = 0; r < n; ++r) {
    buf.push_back(std::make_unique<DeviceBuffer>(w.devices[r], total));
    out.push_back(std::make_unique<DeviceBuffer>(w.devices[r], total));
    std::vector<float> host(count * n);
    for (size_t i = 0; i < host.size(); ++i) host[i] = x(r, i);
    writeDevice(w.devices[r], static_cast<float*>(buf[r]->ptr) + offset, host.data(), host.size() * sizeof(float));
    void* again = nullptr;
    ASSERT_EQ(braidCommRegister(w.comms[r], buf[r]->ptr, total, &handles[r]), braidSuccess) << braidGetLastError();
    ASSERT_EQ(braidCommRegister(w.comms[r], buf[r]->ptr, total, &again), braidSuccess) << braidGetLastError();
    ASSERT_EQ(again, handles[r]);
    ASSERT_EQ(braidCommRegister(w.comms[r], out[r]->ptr, total, &again), braidSuccess) << braidGetLastError();
  }
  ASSERT_EQ(braidGroupStart(), braidSuccess);
  for (int r = 0; r < n; ++r) {
    braidStream_t s = reinterpret_cast<braidStream_t>(w.streams[r]);
    const float* in = static_cast<const float*>(buf[r]->ptr) + offset;
    float* dst = static_cast<float*>(out[r]->ptr) + offset;
    ASSERT_EQ(braidAllGather(in, dst, count, braidFloat32, w.comms[r], s), braidSuccess);
  }
  ASSERT_EQ(braidGroupEnd(), braidSuccess) << braidGetLastError();
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(braidCommDeregister(w.comms[r], handles[r]), braidSuccess);
    EXPECT_EQ(braidCommDeregister(w.comms[r], handles[r]), braidSuccess);
  }
  ASSERT_TRUE(w.sync()) << w.error;
  std::vector<float> got(count * n);
  for (int r = 0; r < n; ++r) {
    readDevice(w.devices[r], got.data(), static_cast<float*>(out[r]->ptr) + offset, got.size() * sizeof(float));
    for (int q = 0; q < n; ++q) {
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(got[q * count + i], x(q, i)) << "rank " << r << " from " << q;
    }
    EXPECT_EQ(braidCommDeregister(w.comms[r], handles[r]), braidInvalidArgument) << "a third deregistration";
  }
}

}  // namespace
}  // namespace braid::gputest
