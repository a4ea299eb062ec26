// The cost model and the tuner: step counts equal the trace backend's, data factors match the
// traced link loads, and on the one-node fixtures small all-reduces pick a tree or LL, 1 GB the ring
// with Simple, with the change between 64 KB and 64 MB; overrides are honoured, bad ones refused;
// decisions are pure functions; the fit and tune files. Across nodes: tune_hosts_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "algo/trace.h"
#include "topology/search.h"
#include "topology/topo_xml.h"
#include "tune/cluster.h"
#include "tune/fit.h"
#include "tune/tuner.h"
#include "tune_fixtures.h"

namespace braid::tune {
namespace {

using algo::Algo;
using algo::Coll;
using namespace braid::tune::testing;

TEST(TuneModel, StepCountsAreTheTraceBackends) {
  struct Case {
    Coll coll;
    Algo algo;
  };
  const Case cases[] = {{Coll::kAllReduce, Algo::kRing},       {Coll::kAllReduce, Algo::kTree},
                        {Coll::kAllReduce, Algo::kDoubleTree}, {Coll::kAllReduce, Algo::kDoubling},
                        {Coll::kBroadcast, Algo::kRing},       {Coll::kReduce, Algo::kRing},
                        {Coll::kAllGather, Algo::kRing},       {Coll::kReduceScatter, Algo::kRing}};
  for (int n = 1; n <= 64; ++n) {
    for (const Case& c : cases) {
      algo::TraceResult t = algo::traceCollective(
          algo::defaultGeometry(n), algo::CallShape{c.coll, c.algo, size_t(n) * 4, 0, 1, 1 << 20, false}, 8);
      ASSERT_TRUE(t.ok) << t.error;
      EXPECT_EQ(sequentialSteps(c.coll, c.algo, n), t.steps)
          << algo::collName(c.coll) << "/" << algo::algoName(c.algo) << " n=" << n;
    }
  }
  EXPECT_EQ(sequentialSteps(Coll::kAllReduce, Algo::kRing, 64), 126);
  EXPECT_EQ(sequentialSteps(Coll::kAllReduce, Algo::kTree, 64), 12);
}

// The busiest rank's bytes per message byte, against the traced link loads (one chunk per message,
// so the trace's per-rank egress is the algorithm's whole traffic).
TEST(TuneModel, DataFactorsMatchTheTracedLoads) {
  for (int n : {2, 3, 4, 8, 16, 64}) {
    for (Algo a : {Algo::kRing, Algo::kDoubling, Algo::kDoubleTree}) {
      const size_t count = size_t(n) * 64;
      algo::TraceResult t = algo::traceCollective(algo::defaultGeometry(n),
                                                  algo::CallShape{Coll::kAllReduce, a, count, 0, 1, count, false}, 8);
      ASSERT_TRUE(t.ok) << t.error;
      double traced = static_cast<double>(t.maxRankSendElems) / count;
      EXPECT_NEAR(busiestRankFactor(Coll::kAllReduce, a, n), traced, 0.51) << algo::algoName(a) << " n=" << n;
    }
  }
}

// On every GPU fixture: 8 B picks a tree or LL; 1 GB the ring with Simple; and the all-reduce
// decision becomes 1 GB's somewhere between 64 KB and 64 MB.
TEST(Tuner, SmallTreeOrLlLargeRingSimpleCrossoverInTheMiddle) {
  for (const char* name : {"h200-2gpu.xml", "nvswitch-8gpu.xml", "pcie-4gpu-2socket.xml"}) {
    SCOPED_TRACE(name);
    Tuner t = tunerFor(machineOf(fixture(name)));
    Decision small = t.decide(Coll::kAllReduce, 8);
    EXPECT_TRUE(small.algo == Algo::kTree || small.algo == Algo::kDoubleTree || small.proto == Proto::kLL)
        << describe(small);
    Decision large = t.decide(Coll::kAllReduce, size_t(1) << 30);
    EXPECT_EQ(large.algo, Algo::kRing) << describe(large);
    EXPECT_EQ(large.proto, Proto::kSimple) << describe(large);
    size_t from = 0;
    for (size_t bytes = size_t(1) << 30; bytes >= 8; bytes /= 2) {
      Decision d = t.decide(Coll::kAllReduce, bytes);
      if (d.algo != Algo::kRing || d.proto != Proto::kSimple) break;
      from = bytes;
    }
    EXPECT_GE(from, size_t(64) << 10);
    EXPECT_LE(from, size_t(64) << 20);
  }
}

TEST(Tuner, OverridesAreHonouredAndReported) {
  Machine m = machineOf(fixture("nvswitch-8gpu.xml"));
  TunerConfig ringOnly;
  ringOnly.algorithm = "ring";
  EXPECT_EQ(tunerFor(m, ringOnly).decide(Coll::kAllReduce, 8).algo, Algo::kRing);
  TunerConfig simple;
  simple.protocol = "simple";
  EXPECT_EQ(tunerFor(m, simple).decide(Coll::kAllReduce, 8).proto, Proto::kSimple);
  TunerConfig noLl;
  noLl.protocol = "^ll,ll128";
  EXPECT_EQ(tunerFor(m, noLl).decide(Coll::kAllReduce, 8).proto, Proto::kSimple);
  TunerConfig perColl;
  perColl.algorithm = "allreduce:tree;broadcast:ring";
  EXPECT_EQ(tunerFor(m, perColl).decide(Coll::kAllReduce, size_t(1) << 30).algo, Algo::kTree);
  TunerConfig channels;
  channels.minCTAs = channels.maxCTAs = 3;
  Decision d = tunerFor(m, channels).decide(Coll::kAllReduce, size_t(1) << 30);
  EXPECT_EQ(d.channels, 3);
  TunerConfig none;
  none.algorithm = "tree";  // trees implement all-reduce only
  Decision b = tunerFor(m, none).decide(Coll::kBroadcast, 8);
  EXPECT_EQ(b.algo, Algo::kRing);
  EXPECT_NE(b.note.find("nothing allowed"), std::string::npos);
  // LL128 is never chosen off NVLink.
  Tuner pcie = tunerFor(machineOf(fixture("pcie-4gpu-2socket.xml")));
  for (size_t bytes = 8; bytes <= (size_t(1) << 30); bytes *= 4)
    EXPECT_NE(pcie.decide(Coll::kAllReduce, bytes).proto, Proto::kLL128);
}

// LL128 runs where NVLink joins the ranks, unless the executor's FIFOs fell back to host memory.
TEST(Tuner, Ll128OnlyOverNvlinkAndGpuMemory) {
  Machine m = machineOf(fixture("h200-2gpu.xml"));
  EXPECT_TRUE(m.ll128Capable);
  TunerConfig only;
  only.protocol = "ll128";
  EXPECT_EQ(tunerFor(m, only).decide(Coll::kAllReduce, size_t(1) << 20).proto, Proto::kLL128);
  Tuner hostFifos = tunerFor(m, only);
  hostFifos.setLl128Capable(false);
  Decision d = hostFifos.decide(Coll::kAllReduce, size_t(1) << 20);
  EXPECT_NE(d.proto, Proto::kLL128);
  EXPECT_NE(d.note.find("nothing allowed"), std::string::npos) << d.note;
  EXPECT_FALSE(machineOf(fixture("pcie-4gpu-2socket.xml")).ll128Capable);
}

// What the GPU executor laid out bounds every decision: its channels per algorithm (even against a
// configured minimum) and its slot per protocol as the chunk, so the executor runs the decision
// as it is (it refuses a shape outside its limits rather than clamping it).
TEST(Tuner, DecisionsStayWithinTheEngine) {
  Machine m = machineOf(fixture("nvswitch-8gpu.xml"));
  TunerConfig many;
  many.minCTAs = 8;
  for (const char* algorithm : {"ring", "dbtree"}) {
    many.algorithm = algorithm;
    Tuner t = tunerFor(m, many);
    Tuner::EngineLimits limits;
    limits.ringChannels = 3;
    limits.channels = 2;
    limits.slotBytes[static_cast<int>(Proto::kSimple)] = 96 * 1024;
    limits.slotBytes[static_cast<int>(Proto::kLL)] = 7 * 1024;
    limits.slotBytes[static_cast<int>(Proto::kLL128)] = 120 * 1024;
    t.setEngineLimits(limits);
    for (size_t bytes = 8; bytes <= (size_t(1) << 30); bytes *= 8) {
      Decision d = t.decide(Coll::kAllReduce, bytes);
      EXPECT_EQ(d.channels, std::string(algorithm) == "ring" ? 3 : 2) << describe(d);
      EXPECT_EQ(d.chunkBytes, limits.slotBytes[static_cast<int>(d.proto)]) << describe(d);
    }
  }
}

// A call's plan is the decision for its message (all-gather's output, reduce-scatter's input, the
// buffer of the others: the collective's count is per rank's block for the first two), in elements;
// a direct call runs Simple on a CTA per 256 KiB of the count, within the engine's direct CTAs.
TEST(Tuner, APlanIsTheDecisionForItsMessageOrTheDirectKernel) {
  Machine m = machineOf(fixture("nvswitch-8gpu.xml"));
  Tuner t = tunerFor(m);
  Tuner::EngineLimits limits;
  limits.directChannels = 5;
  t.setEngineLimits(limits);
  const size_t n = static_cast<size_t>(m.nranks);
  for (Coll coll : {Coll::kAllReduce, Coll::kAllGather, Coll::kReduceScatter, Coll::kBroadcast}) {
    for (size_t count : {size_t{1}, size_t{1000}, size_t{200000}, size_t{1} << 22}) {  // 1, 1, 4 and 5 CTAs
      const size_t message = (coll == Coll::kAllGather || coll == Coll::kReduceScatter ? count * n : count) * 4;
      const Decision d = t.decide(coll, message);
      algo::Call p;
      p.coll = coll;
      p.count = count;
      p.type = braidFloat32;
      p.op = braidAvg;
      p.root = 2;
      EXPECT_EQ(t.plan(&p, 4), d.predictedUs);
      EXPECT_EQ(p.algo, d.algo) << describe(d);
      EXPECT_EQ(p.proto, d.proto) << describe(d);
      EXPECT_EQ(p.nChannels, d.channels) << describe(d);
      EXPECT_EQ(p.chunkElems, std::max<size_t>(1, d.chunkBytes / 4)) << describe(d);
      EXPECT_EQ(p.count, count);  // what the call asked stays
      EXPECT_EQ(p.root, 2);
      EXPECT_TRUE(p.postOp);
      algo::Call direct;
      direct.coll = coll;
      direct.count = count;
      direct.op = braidSum;
      direct.direct = true;
      t.plan(&direct, 4);
      EXPECT_EQ(direct.algo, algo::Algo::kOneShot);
      EXPECT_EQ(direct.proto, Proto::kSimple);
      EXPECT_FALSE(direct.postOp);
      EXPECT_EQ(direct.nChannels, static_cast<int>(std::min<size_t>(5, (count * 4 + 262143) / 262144))) << count;
    }
  }
}

// The one-shot: offered only once the executor reserved its buffers, only with LL and only up to the
// reserved size per block; forcing it beyond that size falls back to the ring.
TEST(Tuner, OneShotOnlyWhereItsBuffersReach) {
  Machine m = machineOf(fixture("h200-2gpu.xml"));
  Tuner without = tunerFor(m);
  for (size_t bytes = 8; bytes <= (size_t(1) << 30); bytes *= 4)
    EXPECT_NE(without.decide(Coll::kAllReduce, bytes).algo, Algo::kOneShot) << bytes;
  Tuner with = tunerFor(m);
  with.setOneShot(size_t(1) << 20, 64);
  Decision small = with.decide(Coll::kAllReduce, 8);
  EXPECT_EQ(small.algo, Algo::kOneShot) << describe(small);
  EXPECT_EQ(small.proto, Proto::kLL) << describe(small);
  EXPECT_EQ(predict(with.machine(), Coll::kAllReduce, Algo::kOneShot, Proto::kLL, 8, 1).steps, 1);
  EXPECT_NE(with.decide(Coll::kAllReduce, (size_t(1) << 20) + 8).algo, Algo::kOneShot);
  for (Coll c : {Coll::kBroadcast, Coll::kReduce}) {
    EXPECT_EQ(with.decide(c, 8).algo, Algo::kOneShot) << algo::collName(c);
    EXPECT_NE(with.decide(c, (size_t(1) << 20) + 8).algo, Algo::kOneShot) << algo::collName(c);
  }
  // All-gather and reduce-scatter: each rank's block (half of the message on 2 ranks) must fit.
  for (Coll c : {Coll::kAllGather, Coll::kReduceScatter}) {
    EXPECT_EQ(with.decide(c, 64).algo, Algo::kOneShot) << algo::collName(c);
    EXPECT_TRUE(sizeApplies(with.machine(), c, Algo::kOneShot, Proto::kLL, size_t(2) << 20));
    EXPECT_FALSE(sizeApplies(with.machine(), c, Algo::kOneShot, Proto::kSimple, 64));
    EXPECT_FALSE(sizeApplies(with.machine(), c, Algo::kOneShot, Proto::kLL, (size_t(2) << 20) + 16));
    EXPECT_NE(with.decide(c, (size_t(2) << 20) + 16).algo, Algo::kOneShot) << algo::collName(c);
  }
  TunerConfig forced;
  forced.algorithm = "oneshot";
  Tuner only = tunerFor(m, forced);
  only.setOneShot(size_t(1) << 20, 64);
  EXPECT_EQ(only.decide(Coll::kAllReduce, 1 << 20).algo, Algo::kOneShot);
  Decision big = only.decide(Coll::kAllReduce, 4 << 20);
  EXPECT_EQ(big.algo, Algo::kRing);
  EXPECT_NE(big.note.find("nothing allowed"), std::string::npos) << describe(big);
  // Host-memory communicators never reserve the buffers.
  Tuner host = tunerFor(hostMachine(2, 1, false), forced);
  EXPECT_EQ(host.decide(Coll::kAllReduce, 8).algo, Algo::kRing);
}

TEST(Tuner, BadOverridesAreErrors) {
  Machine m = machineOf(fixture("h200-2gpu.xml"));
  for (const char* bad : {"ring,spiral", "^", "allreduce:", "gather:ring", ""}) {
    TunerConfig c;
    c.algorithm = bad;
    Tuner t;
    Status st = Tuner::create(m, c, &t);
    EXPECT_EQ(st.isOk(), std::string(bad).empty()) << bad << ": " << st.message();
  }
  setenv("BRAID_PROTO", "ll256", 1);
  Tuner t;
  Status st = Tuner::create(m, {}, &t);
  unsetenv("BRAID_PROTO");
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("BRAID_PROTO"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("ll256"), std::string::npos) << st.message();
  setenv("BRAID_MIN_CTAS", "9", 1);
  setenv("BRAID_MAX_CTAS", "4", 1);
  st = Tuner::create(m, {}, &t);
  unsetenv("BRAID_MIN_CTAS");
  unsetenv("BRAID_MAX_CTAS");
  EXPECT_FALSE(st.isOk());
}

TEST(Tuner, DecisionsArePureFunctionsOfMachineAndCall) {
  Machine m = machineOf(fixture("nvswitch-2x8gpu.xml"));
  Tuner a = tunerFor(m), b = tunerFor(machineOf(fixture("nvswitch-2x8gpu.xml")));
  for (int c = 0; c < kNumColls; ++c) {
    for (size_t bytes = 8; bytes <= (size_t(1) << 32); bytes *= 2) {
      Decision x = a.decide(static_cast<Coll>(c), bytes), y = b.decide(static_cast<Coll>(c), bytes),
               z = a.decide(static_cast<Coll>(c), bytes);
      EXPECT_EQ(describe(x), describe(y));
      EXPECT_EQ(describe(x), describe(z));
    }
  }
}

// Decisions come from a cache after the first (DecisionCache): they must equal the cost model's
// (a copy of a tuner starts with an empty cache, so its first answer is the model's), also after
// evictions, under concurrent callers, and after the tuner's inputs change.
TEST(Tuner, CachedDecisionsAreTheModelsAndFollowItsInputs) {
  Tuner a = tunerFor(machineOf(fixture("h200-2gpu.xml")));
  auto same = [](const Decision& x, const Decision& y) {
    return x.algo == y.algo && x.proto == y.proto && x.channels == y.channels && x.chunkBytes == y.chunkBytes &&
           x.predictedUs == y.predictedUs && x.note == y.note;
  };
  std::vector<std::pair<Coll, size_t>> calls;  // 7 x 66 calls for 64 entries: entries are replaced
  for (int c = 0; c < kNumColls; ++c) {
    for (size_t bytes = 8; bytes <= (size_t(1) << 32); bytes *= 2) {
      calls.emplace_back(static_cast<Coll>(c), bytes);
      calls.emplace_back(static_cast<Coll>(c), bytes + 24);
    }
  }
  std::vector<Decision> model;
  for (const auto& [coll, bytes] : calls) {
    Tuner fresh = a;
    model.push_back(fresh.decide(coll, bytes));
  }
  for (int pass = 0; pass < 3; ++pass) {
    for (size_t i = 0; i < calls.size(); ++i) {
      size_t k = pass == 1 ? calls.size() - 1 - i : (i * 7919) % calls.size();
      Decision d = a.decide(calls[k].first, calls[k].second);
      EXPECT_TRUE(same(d, model[k])) << "pass " << pass << " " << algo::collName(calls[k].first) << " "
                                     << calls[k].second << ": " << describe(d) << " vs " << describe(model[k]);
    }
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < 20000; ++i) {
        size_t k = (i * 104729 + static_cast<size_t>(t) * 31) % calls.size();
        if (!same(a.decide(calls[k].first, calls[k].second), model[k])) wrong.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  // A one-shot reserved after the first decisions changes them: the cache must not keep the old.
  EXPECT_NE(a.decide(Coll::kAllReduce, 8).algo, Algo::kOneShot);
  a.setOneShot(size_t(1) << 20, 64);
  EXPECT_EQ(a.decide(Coll::kAllReduce, 8).algo, Algo::kOneShot) << describe(a.decide(Coll::kAllReduce, 8));
  // A forced choice keeps saying so on every call.
  TunerConfig forced;
  forced.algorithm = "oneshot";
  Tuner only = tunerFor(machineOf(fixture("h200-2gpu.xml")), forced);
  for (int i = 0; i < 2; ++i)
    EXPECT_NE(only.decide(Coll::kAllReduce, 8).note.find("nothing allowed"), std::string::npos);
}

// Clusters of 64 and 4096 GPUs: built, searched and tuned (the work of one braid-sim run) in under
// a second each.
TEST(TuneSim, LargeClustersBuildAndTune) {
  // (How fast is braid-sim's to say, not a unit test's: this one ran 8 s under the sanitizers.)
  for (int n : {64, 4096}) {
    ClusterSpec spec;
    spec.ranks = n;
    topology::System s;
    ASSERT_TRUE(buildCluster(spec, &s).isOk());
    Machine m = machineOf(s);
    Tuner t = tunerFor(m);
    EXPECT_FALSE(t.table(size_t(1) << 32).empty());
    EXPECT_EQ(m.nranks, n);
    EXPECT_EQ(m.hosts, n / 8);
  }
  topology::System s;
  EXPECT_FALSE(buildCluster(ClusterSpec{8, 8, "infiniband", 400}, &s).isOk());
}

// Points made by the model itself with a known hop latency and channel bandwidth: the fit gets
// them back.
TEST(TuneFit, RecoversTheModelsOwnConstants) {
  Machine truth = hostMachine(4, 1, false);
  truth.intraHopUs = 0.9;
  truth.channelGBs = 3.5;
  std::vector<Point> points;
  for (double bytes = 8; bytes <= (1 << 26); bytes *= 4) {
    points.push_back({bytes, predict(truth, Coll::kAllReduce, Algo::kRing, Proto::kSimple, size_t(bytes), 1).us});
  }
  LineFit line = fitLine(points);
  for (double e : line.relativeError) EXPECT_LT(std::fabs(e), 1e-6);
  Machine start = hostMachine(4, 1, false);
  TuneFile t = tuneFromFit(start, Coll::kAllReduce, Algo::kRing, Proto::kSimple, 1, line);
  EXPECT_NEAR(t.hopUs, 0.9, 1e-6);
  EXPECT_NEAR(t.channelGBs, 3.5, 1e-6);
}

// Across hosts the fit gives the hop between hosts and a host's network: points made by the model
// of 2 hosts x 2 ranks with a slow network (the ring and hier, each network-bound) come back.
TEST(TuneFit, RecoversTheNetworkAcrossHosts) {
  for (Algo a : {Algo::kRing, Algo::kHier}) {
    Machine truth = hostMachine(4, 2, false);
    truth.interHopUs = 75;
    truth.netGBs = 0.25;
    std::vector<Point> points;
    for (double bytes = 8; bytes <= (1 << 26); bytes *= 4) {
      points.push_back({bytes, predict(truth, Coll::kAllReduce, a, Proto::kSimple, size_t(bytes), 1).us});
    }
    LineFit line = fitLine(points);
    for (double e : line.relativeError) EXPECT_LT(std::fabs(e), 1e-6) << algo::algoName(a);
    TuneFile t = tuneFromFit(hostMachine(4, 2, false), Coll::kAllReduce, a, Proto::kSimple, 1, line);
    EXPECT_NEAR(t.interHopUs, 75, 1e-4) << algo::algoName(a);
    EXPECT_NEAR(t.netGBs, 0.25, 1e-6) << algo::algoName(a);
    EXPECT_LT(t.channelGBs, 0) << "not fitted across hosts";
    Machine back = hostMachine(4, 2, false);
    TuneFile parsed;
    ASSERT_TRUE(parseTuneFile(writeTuneFile(t), "fit", &parsed).isOk());
    applyTuneFile(parsed, &back);
    EXPECT_NEAR(back.netGBs, 0.25, 1e-6);
  }
}

TEST(TuneFit, ReadsBraidPerfJson) {
  std::ifstream in(std::string(BRAID_SOURCE_DIR) + "/tests/fixtures/perf-allreduce-ring-2proc.json");
  std::stringstream text;
  text << in.rdbuf();
  std::vector<Point> points;
  int ranks = 0;
  ASSERT_TRUE(readPerfJson(text.str(), "allreduce", &points, &ranks).isOk());
  EXPECT_EQ(ranks, 2);
  ASSERT_EQ(points.size(), 12u);
  EXPECT_EQ(points[0].bytes, 8);
  EXPECT_FALSE(readPerfJson(text.str(), "broadcast", &points, &ranks).isOk());  // none of those
  EXPECT_FALSE(
      readPerfJson("[\n  {\"collective\": \"allreduce\", \"bytes\": 8}\n]", "allreduce", &points, &ranks).isOk());
}

// Found by fuzz_tune_file (a rank count of 2.2e47, cast to int: undefined behaviour): a rank count
// that is not a positive int of sane size is an error naming the line.
TEST(TuneFit, PerfJsonRankCountsOutOfRangeAreErrors) {
  std::vector<Point> points;
  int ranks = 0;
  for (const char* value : {"222222222222222222222222222222222222222222222222", "-3", "0", "2.5", "1e300"}) {
    std::string line = std::string("{\"collective\": \"allreduce\", \"bytes\": 8, \"ranks\": ") + value +
                       ", \"out_of_place\": {\"time_us\": 1.1}}";
    Status s = readPerfJson("[\n  " + line + ",\n  " + line + "\n]", "allreduce", &points, &ranks);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << value;
    EXPECT_NE(s.message().find("is not a rank count"), std::string::npos) << s.message();
  }
}

TEST(TuneFit, TuneFilesRoundTripAndApply) {
  TuneFile f;
  f.hopUs = 0.46;
  f.channelGBs = 10.15;
  TuneFile back;
  ASSERT_TRUE(parseTuneFile(writeTuneFile(f), "written", &back).isOk());
  EXPECT_DOUBLE_EQ(back.hopUs, 0.46);
  EXPECT_DOUBLE_EQ(back.channelGBs, 10.15);
  EXPECT_LT(back.baseUs, 0);
  for (const char* bad : {"hop_us 3", "hop_us = fast", "speed = 3", "channel_gbs = 0", "hop_us = -1"}) {
    TuneFile x;
    Status st = parseTuneFile(std::string("# fitted\n") + bad + "\n", "t.txt", &x);
    EXPECT_FALSE(st.isOk()) << bad;
    EXPECT_NE(st.message().find("t.txt:2:"), std::string::npos) << st.message();
  }
  // Through BRAID_TUNE_FILE the tuner's machine takes the values.
  std::string path = "/tmp/braid-tune-test-" + std::to_string(getpid()) + ".txt";
  {
    std::ofstream out(path);
    out << writeTuneFile(f);
  }
  setenv("BRAID_TUNE_FILE", path.c_str(), 1);
  Tuner t;
  Status st = Tuner::create(hostMachine(2, 1, false), {}, &t);
  unsetenv("BRAID_TUNE_FILE");
  std::remove(path.c_str());
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_DOUBLE_EQ(t.machine().intraHopUs, 0.46);
  EXPECT_DOUBLE_EQ(t.machine().channelGBs, 10.15);
  setenv("BRAID_TUNE_FILE", "/nonexistent/tune.txt", 1);
  EXPECT_FALSE(Tuner::create(hostMachine(2, 1, false), {}, &t).isOk());
  unsetenv("BRAID_TUNE_FILE");
}

// A tune file may replace the protocol models' constants, so that a GPU run can try other values
// without a rebuild. On 2 x H200 the built-in models make all-reduce 2 MB a one-shot and 8 MB a
// ring on Simple (each measured fastest there, with every algorithm forced); the fifth session's
// LL128 fit (efficiency 0.92) made 8 MB ring/LL128, measured slower (50.4 us against 44.9).
// And more one-shot bytes per channel give an 8 KB call fewer CTAs.
TEST(TuneFit, TuneFilesReplaceProtocolModels) {
  TuneFile f;
  f.model["ll128_efficiency"] = 0.92;
  f.model["oneshot_bytes_per_channel"] = 8192;
  TuneFile back;
  ASSERT_TRUE(parseTuneFile(writeTuneFile(f), "written", &back).isOk());
  EXPECT_EQ(back.model, f.model);
  for (const char* bad :
       {"ll128_hop = 2", "ll128_efficiency = 0", "oneshot_bytes_per_channel = 0", "ll64_efficiency = 1"}) {
    TuneFile x;
    EXPECT_FALSE(parseTuneFile(std::string(bad) + "\n", "t.txt", &x).isOk()) << bad;
  }
  const Machine m = machineOf(fixture("h200-2gpu.xml"));
  auto decide = [&](const TuneFile* file, size_t bytes) {
    std::string path = "/tmp/braid-tune-model-" + std::to_string(getpid()) + ".txt";
    if (file != nullptr) {
      std::ofstream out(path);
      out << writeTuneFile(*file);
      setenv("BRAID_TUNE_FILE", path.c_str(), 1);
    }
    Tuner t;
    EXPECT_TRUE(Tuner::create(m, {}, &t).isOk());
    unsetenv("BRAID_TUNE_FILE");
    std::remove(path.c_str());
    t.setOneShot(size_t(4) << 20, 64);
    return t.decide(Coll::kAllReduce, bytes);
  };
  const Decision mid = decide(nullptr, 2 << 20);
  EXPECT_EQ(mid.algo, Algo::kOneShot) << describe(mid);
  const Decision large = decide(nullptr, 8 << 20), largeFitted = decide(&f, 8 << 20);
  EXPECT_EQ(large.algo, Algo::kRing) << describe(large);
  EXPECT_EQ(large.proto, Proto::kSimple) << describe(large);
  EXPECT_EQ(largeFitted.algo, Algo::kRing) << describe(largeFitted);
  EXPECT_EQ(largeFitted.proto, Proto::kLL128) << describe(largeFitted);
  const Decision small = decide(nullptr, 8192);
  EXPECT_EQ(small.algo, Algo::kOneShot) << describe(small);
  EXPECT_EQ(small.channels, 4) << describe(small);
  EXPECT_EQ(decide(&f, 8192).channels, 1);
}

}  // namespace
}  // namespace braid::tune
