// The cost model and the tuner across nodes: the network term (the busiest node's bytes over its
// NICs) follows the NIC count and makes the hierarchical all-reduce win large messages on few
// nodes, trees and the cross-host tree on many; hier and crosstree only across hosts.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tune/cluster.h"
#include "tune/constants.h"
#include "tune/tuner.h"
#include "tune_fixtures.h"

namespace braid::tune {
namespace {

using algo::Algo;
using algo::Coll;
using namespace braid::tune::testing;

// 64 GPUs on 8 nodes: the tree's 12 steps beat the ring's 126 below the crossover; at 1 GB the
// hierarchical all-reduce, whose nodes send 2 x 7/8 of the message where the ring's send 2 x 63/64.
TEST(Tuner, SixtyFourRanksOnEightNodesPreferTheTreeWhenSmall) {
  Machine m = machineOf(nvswitchNodes(8));
  ASSERT_EQ(m.nranks, 64);
  ASSERT_EQ(m.hosts, 8);
  Tuner t = tunerFor(m);
  Decision small = t.decide(Coll::kAllReduce, 64 << 10);
  EXPECT_TRUE(small.algo == Algo::kTree || small.algo == Algo::kDoubleTree || small.algo == Algo::kCrossTree)
      << describe(small);
  Prediction ring = predict(m, Coll::kAllReduce, Algo::kRing, Proto::kLL, 8, 1);
  Prediction tree = predict(m, Coll::kAllReduce, Algo::kTree, Proto::kLL, 8, 1);
  EXPECT_EQ(ring.steps, 126);
  EXPECT_EQ(tree.steps, 12);
  EXPECT_LT(tree.us, ring.us);
  EXPECT_EQ(t.decide(Coll::kAllReduce, size_t(1) << 30).algo, Algo::kHier)
      << describe(t.decide(Coll::kAllReduce, 1 << 30));
}

// The hierarchical all-reduce: chosen on host memory across hosts from a few KB (recursive
// doubling below), never on one host; on two GPU nodes for large messages, where what leaves each
// node falls from 2 x 15/16 of the message to 1; forced, at any size.
TEST(Tuner, HierarchicalAcrossHostsOnly) {
  TunerConfig none;
  Tuner twoHosts = tunerFor(hostMachine(4, 2, false), none);
  EXPECT_EQ(twoHosts.decide(Coll::kAllReduce, size_t(128) << 20).algo, Algo::kHier);
  EXPECT_EQ(twoHosts.decide(Coll::kAllReduce, 8).algo, Algo::kDoubling);
  EXPECT_EQ(twoHosts.decide(Coll::kAllGather, size_t(128) << 20).algo, Algo::kHier);
  EXPECT_EQ(twoHosts.decide(Coll::kReduceScatter, size_t(128) << 20).algo, Algo::kHier);
  Tuner oneHost = tunerFor(hostMachine(4, 1, false), none);
  for (size_t bytes : {size_t(8), size_t(1) << 20, size_t(1) << 30})
    EXPECT_NE(oneHost.decide(Coll::kAllReduce, bytes).algo, Algo::kHier);
  Machine gpus = machineOf(fixture("nvswitch-2x8gpu.xml"));
  EXPECT_EQ(tunerFor(gpus, none).decide(Coll::kAllReduce, size_t(1) << 30).algo, Algo::kHier);
  Machine oneNode = machineOf(fixture("nvswitch-8gpu.xml"));
  EXPECT_NE(tunerFor(oneNode, none).decide(Coll::kAllReduce, size_t(1) << 30).algo, Algo::kHier);
  TunerConfig hier;
  hier.algorithm = "hier";
  EXPECT_EQ(tunerFor(gpus, hier).decide(Coll::kAllReduce, 8).algo, Algo::kHier);
  TunerConfig crossTree;
  crossTree.algorithm = "crosstree";
  EXPECT_EQ(tunerFor(gpus, crossTree).decide(Coll::kAllReduce, 8).algo, Algo::kCrossTree);
  // The cross-host tree implements all-reduce only; one node offers neither.
  EXPECT_EQ(tunerFor(gpus, crossTree).decide(Coll::kAllGather, 8).algo, Algo::kRing);
  EXPECT_EQ(tunerFor(oneNode, crossTree).decide(Coll::kAllReduce, 8).algo, Algo::kRing);
}

// 512 nodes of 8 GPUs, one 400 Gb/s NIC each: a tree for small messages (the ring's 8190 steps and
// hier's 1022 across nodes lose to 2 log2 steps), and for large ones the cross-host tree, whose
// nodes send their share once per tree edge to another node, where the flat double tree's cross
// nodes at every level above the node.
TEST(Tuner, FiveHundredTwelveNodesTakeTreesAndTheCrossHostTreeWhenLarge) {
  ClusterSpec spec;
  spec.ranks = 4096;
  spec.nicsPerNode = 1;
  topology::System s;
  ASSERT_TRUE(buildCluster(spec, &s).isOk());
  Machine m = machineOf(s);
  ASSERT_EQ(m.hosts, 512);
  Tuner t = tunerFor(m);
  for (size_t bytes : {size_t(8), size_t(64) << 10}) {
    Decision d = t.decide(Coll::kAllReduce, bytes);
    EXPECT_TRUE(d.algo == Algo::kTree || d.algo == Algo::kDoubleTree) << bytes << ": " << describe(d);
  }
  Decision large = t.decide(Coll::kAllReduce, size_t(512) << 20);
  EXPECT_EQ(large.algo, Algo::kCrossTree) << describe(large);
  EXPECT_LT(hostLinkFactor(m, Coll::kAllReduce, Algo::kCrossTree),
            hostLinkFactor(m, Coll::kAllReduce, Algo::kDoubleTree));
}

// A host-memory communicator across hosts takes its network's speed and latency where the network
// reports them (HostEngine::setPeers, from every rank's identity), the model's constants where not;
// and a slower network makes a large all-reduce slower, by its bytes over the link.
TEST(TuneModel, HostMachineTakesTheNetworksSpeedAndLatency) {
  const Machine unknown = hostMachine(2, 2, false);
  EXPECT_EQ(unknown.netGBs, kHostNetGBs.value);
  EXPECT_EQ(unknown.interHopUs, kHostSocketHopUs.value);
  const Machine reported = hostMachine(2, 2, false, 12.5, 3.0);  // 100 Gb/s, 3 us
  EXPECT_EQ(reported.netGBs, 12.5);
  EXPECT_EQ(reported.interHopUs, kHostSocketHopUs.value + 3.0);
  EXPECT_EQ(hostMachine(2, 1, false, 12.5, 3.0).interHopUs, 0.0) << "one host: no hop between hosts";
  const Machine slow = hostMachine(2, 2, false, 0.125, 0);  // 1 Gb/s
  const size_t big = size_t(128) << 20;
  EXPECT_GT(predict(slow, Coll::kAllReduce, Algo::kRing, Proto::kSimple, big, 1).us,
            2 * predict(reported, Coll::kAllReduce, Algo::kRing, Proto::kSimple, big, 1).us);
}

// The network term: a node's NICs in all (1, 4 or 8 NICs of 400 Gb/s per 8-GPU node) against what
// the channels move inside it. Where the NICs are the bottleneck the ring's 1 GB all-reduce takes
// the busiest node's 2(n-1)/n of the message over them; eight NICs leave the channels slower.
TEST(TuneModel, TheNetworkTermFollowsTheNics) {
  const size_t bytes = size_t(1) << 30;
  double previous = 0;
  for (int nics : {1, 4, 8}) {
    ClusterSpec spec;
    spec.ranks = 16;
    spec.nicsPerNode = nics;
    topology::System s;
    ASSERT_TRUE(buildCluster(spec, &s).isOk());
    Machine m = machineOf(s);
    EXPECT_NEAR(m.netGBs, nics * 400 / 8.0 * 0.9, 1e-6) << nics;  // links.cc: line rate / 8 x 0.9
    Prediction ring = predict(m, Coll::kAllReduce, Algo::kRing, Proto::kSimple, bytes, m.channels);
    const double overNics = bytes * 2.0 * 15 / 16 / (std::min(m.netGBs, m.channels * m.netChannelGBs) * 1e3);
    EXPECT_NEAR(ring.netUs, overNics, 1e-6 * overNics) << nics;
    if (previous > 0) {
      EXPECT_LE(ring.us, previous) << nics;
    }
    previous = ring.us;
    Prediction hier = predict(m, Coll::kAllReduce, Algo::kHier, Proto::kSimple, bytes, m.channels);
    EXPECT_NEAR(hier.netUs / ring.netUs, 1.0 / (2.0 * 15 / 16), 0.05) << nics;  // 1 against 2 x 15/16
    // LL's lines are half flags on the wire too: twice Simple's network time, so a message the
    // network holds back never goes by LL for its shorter hops.
    Prediction ll = predict(m, Coll::kAllReduce, Algo::kRing, Proto::kLL, bytes, m.channels);
    EXPECT_NEAR(ll.netUs, 2 * ring.netUs, 1e-6 * ring.netUs) << nics;
    Decision d = tunerFor(m).decide(Coll::kAllReduce, size_t(16) << 20);
    EXPECT_EQ(d.proto, Proto::kSimple) << nics << ": " << describe(d);
  }
}

// braid-sim's model on the 2-node fixture: at 1 GB the ring is all bandwidth, within 10% of the
// bytes each rank must send (2(n-1)/n of the message) over the slower of the channels' bandwidth
// and the node's NICs.
TEST(TuneSim, OneGigabyteRingIsBytesOverBandwidth) {
  Machine m = machineOf(fixture("nvswitch-2x8gpu.xml"));
  const size_t bytes = size_t(1) << 30;
  Prediction p = predict(m, Coll::kAllReduce, Algo::kRing, Proto::kSimple, bytes, m.channels);
  const double perByte = 2.0 * (m.nranks - 1) / m.nranks;
  double ideal = std::max(bytes * perByte / (m.channels * m.channelGBs * 1e3),
                          bytes * perByte / (std::min(m.netGBs, m.channels * m.netChannelGBs) * 1e3));
  EXPECT_NEAR(p.us, ideal, 0.1 * ideal);
  EXPECT_GT(m.netGBs, 0);
}

}  // namespace
}  // namespace braid::tune
