#include "tune/cost.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "algo/tree_builder.h"
#include "tune/constants.h"

namespace braid::tune {
const char* protoName(Proto proto) {
  switch (proto) {
    case Proto::kSimple: return "simple";
    case Proto::kLL: return "ll";
    case Proto::kLL128: return "ll128";
    default: return "?";
  }
}

Machine gpuMachine(const topology::SearchResult& search, int nranks) {
  Machine m;
  m.nranks = nranks;
  m.hosts = search.hosts;
  m.gpu = true;
  const bool oneNvlinkHost = search.hosts == 1 && search.intraKind == topology::LinkKind::kNvLink;
  // LL128 needs 128-byte stores that arrive whole: NVLink (or ranks sharing one GPU), one host.
  m.ll128Capable = oneNvlinkHost;
  m.perHost = (nranks + search.hosts - 1) / std::max(1, search.hosts);
  m.channels = static_cast<int>(search.rings.size());
  // Rings inside one NVLink host take more channels than the search's per-channel figure gives:
  // each ring channel's FIFOs are one connection, and more CTAs keep more stores in flight.
  m.ringChannels = oneNvlinkHost ? std::max(m.channels, static_cast<int>(kNvlinkRingChannels.value)) : m.channels;
  // Across hosts the channels' own bandwidth is what they reach inside a host; the NICs are the
  // network term's (netGBs: the host's NICs in all; netChannelGBs: one channel's crossing).
  const double ringGBs = search.rings.empty() ? 1 : search.rings[0].bandwidth;
  m.channelGBs = std::max(1e-3, search.hosts > 1 ? search.intraBandwidth : ringGBs);
  m.intraHopUs = search.intraLatencyUs;
  m.interHopUs = search.interLatencyUs;
  m.netGBs = search.netBandwidth;
  m.netChannelGBs = search.interBandwidth;
  m.baseUs = kGpuLaunchUs.value;
  m.reduceGBs = kGpuReduceGBs.value;
  // Recursive doubling inside one host (NVLink/PCIe peers); across hosts its partners change every
  // step, so each step would cross the network.
  m.doubling = search.hosts == 1;
  // The copy engines over NVLink (the probes' figure); over PCIe a ring's channels in all.
  m.ceGBs = oneNvlinkHost ? kCeGBs.value : m.channelGBs * m.channels;
  return m;
}

Machine hostMachine(int nranks, int hosts, bool socketsWithinHost, double netGBs, double netLatencyUs) {
  Machine m;
  m.nranks = nranks;
  m.hosts = hosts;
  m.perHost = (nranks + hosts - 1) / std::max(1, hosts);
  m.gpu = false;
  m.channels = 2;
  m.channelGBs = socketsWithinHost ? kHostSocketChannelGBs.value : kHostShmChannelGBs.value;
  m.intraHopUs = socketsWithinHost ? kHostSocketHopUs.value : kHostShmHopUs.value;
  m.interHopUs = hosts > 1 ? kHostSocketHopUs.value + netLatencyUs : 0;
  m.netGBs = hosts > 1 ? (netGBs > 0 ? netGBs : kHostNetGBs.value) : 0;
  m.netChannelGBs = hosts > 1 ? kHostSocketChannelGBs.value : 0;
  m.baseUs = kHostCallUs.value;
  m.reduceGBs = kHostReduceGBs.value;
  m.doubling = true;
  return m;
}

namespace {

// Recursive doubling's dependency depth: each of the P = 2^k ranks starts at depth 1 if it took an
// extra rank's input (0 otherwise); an exchange gives max(own, partner's + 1); the extra ranks get
// their partner's result one hop later. O(P log P), exact for any n.
int doublingSteps(int n) {
  int p = 1 << algo::floorLog2(n), extra = n - p;
  std::vector<int> depth(p), next(p);
  for (int i = 0; i < p; ++i) depth[i] = i < extra ? 1 : 0;
  for (int bit = 1; bit < p; bit *= 2) {
    for (int i = 0; i < p; ++i) next[i] = std::max(depth[i], depth[i ^ bit] + 1);
    depth.swap(next);
  }
  int steps = 0;
  for (int i = 0; i < p; ++i) steps = std::max(steps, depth[i] + (i < extra ? 1 : 0));
  return steps;
}

}  // namespace

int sequentialSteps(algo::Coll coll, algo::Algo a, int n) {
  if (n <= 1) return 0;
  switch (a) {
    case algo::Algo::kTree:
    case algo::Algo::kDoubleTree: return 2 * algo::floorLog2(n);
    case algo::Algo::kDoubling: return doublingSteps(n);
    case algo::Algo::kOneShot: return 1;
    default: break;
  }
  return coll == algo::Coll::kAllReduce ? 2 * (n - 1) : n - 1;
}

double busiestRankFactor(algo::Coll coll, algo::Algo a, int n) {
  if (n <= 1) return 0;
  switch (a) {
    case algo::Algo::kTree: return n == 2 ? 1 : n == 3 ? 2 : 3;  // up to the parent and down to 2 children
    case algo::Algo::kDoubleTree:
    case algo::Algo::kCrossTree: return n == 2 ? 1 : 2;  // 1.5 in one tree, 0.5 in the other
    case algo::Algo::kDoubling: {
      int l = algo::floorLog2(n);
      return l + ((1 << l) == n ? 0 : 1);
    }
    case algo::Algo::kOneShot:  // the whole message to (reduce: from) every peer; a block each for
                                // all-gather and reduce-scatter
      return coll == algo::Coll::kAllGather || coll == algo::Coll::kReduceScatter ? static_cast<double>(n - 1) / n
                                                                                  : n - 1;
    default: break;
  }
  switch (coll) {
    case algo::Coll::kAllReduce: return 2.0 * (n - 1) / n;
    case algo::Coll::kAllGather:
    case algo::Coll::kReduceScatter: return static_cast<double>(n - 1) / n;
    default: return 1;  // broadcast and reduce chains pass the whole message on
  }
}

double reduceFactor(algo::Coll coll, algo::Algo a, int n) {
  if (n <= 1 || coll == algo::Coll::kBroadcast || coll == algo::Coll::kAllGather) return 0;
  switch (a) {
    case algo::Algo::kTree: return n == 2 ? 1 : 2;  // two children's contributions
    case algo::Algo::kDoubleTree:
    case algo::Algo::kCrossTree: return n == 2 ? 1 : 1.5;
    case algo::Algo::kDoubling: return busiestRankFactor(coll, a, n);
    case algo::Algo::kOneShot: return coll == algo::Coll::kReduceScatter ? static_cast<double>(n - 1) / n : n - 1;
    default: break;
  }
  return coll == algo::Coll::kReduce ? 1 : static_cast<double>(n - 1) / n;
}

int hierSteps(algo::Coll coll, int hosts, int perHost) {
  int pass = (perHost - 1) + (hosts - 1);
  return coll == algo::Coll::kAllReduce ? 2 * pass : pass;
}

namespace {

// Ring positions 0..n-1 on hosts of `perHost` consecutive positions (the last may have fewer).
std::vector<std::vector<int>> evenHosts(int n, int perHost) {
  std::vector<std::vector<int>> hosts;
  for (int p = 0; p < n; ++p) {
    if (p % perHost == 0) hosts.emplace_back();
    hosts.back().push_back(p);
  }
  return hosts;
}

// The trees `a` runs over positions laid out as evenHosts, and each one's share of the message.
std::vector<algo::PositionTree> treesOf(algo::Algo a, int n, int perHost, double* share) {
  std::vector<algo::PositionTree> trees;
  *share = 0.5;
  if (a == algo::Algo::kTree) {
    trees.push_back(algo::buildInOrderTree(n));
    *share = 1;
  } else if (a == algo::Algo::kDoubleTree) {
    for (int t = 0; t < 2; ++t) trees.push_back(algo::buildDoubleTree(n, t));
  } else {
    for (int t = 0; t < 2; ++t) trees.push_back(algo::buildCrossHostTree(evenHosts(n, perHost), n, t));
  }
  return trees;
}

// What the costs need of the trees `a` runs on n positions in hosts of perHost: the deepest tree
// and the most any host sends over tree edges that leave it (in shares of the message). Built once
// per (algorithm, n, perHost) and kept: building the trees is O(n log n), and every decision the
// tuner has not cached asks (braid-sim's 4096-rank tables asked thousands of times).
struct TreeFacts {
  int depth = 0;
  double hostOut = 0;
};

TreeFacts treeFacts(algo::Algo a, int n, int perHost) {
  static std::mutex mu;
  static auto* known = new std::map<std::tuple<int, int, int>, TreeFacts>;  // never destroyed
  const auto key = std::make_tuple(static_cast<int>(a), n, perHost);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = known->find(key);
    if (it != known->end()) return it->second;
  }
  TreeFacts f;
  double share = 0;
  std::vector<double> out((n + perHost - 1) / perHost + 1, 0);
  for (const algo::PositionTree& t : treesOf(a, n, perHost, &share)) {
    f.depth = std::max(f.depth, algo::treeDepth(t));
    // Every tree edge between two hosts carries the tree's share up one way and down the other: a
    // host sends its share once per such edge it has.
    for (int x = 0; x < n; ++x) {
      const int p = t.parent[x];
      if (p >= 0 && x / perHost != p / perHost) out[x / perHost] += share, out[p / perHost] += share;
    }
  }
  f.hostOut = *std::max_element(out.begin(), out.end());
  std::lock_guard<std::mutex> lock(mu);
  (*known)[key] = f;
  return f;
}

}  // namespace

int crossTreeSteps(int hosts, int perHost) {
  if (hosts * perHost <= 1) return 0;
  return 2 * treeFacts(algo::Algo::kCrossTree, hosts * perHost, perHost).depth;
}

int stepsOn(const Machine& m, algo::Coll coll, algo::Algo a) {
  if (a == algo::Algo::kHier && m.hosts > 1) return hierSteps(coll, m.hosts, m.perHost);
  if (a == algo::Algo::kCrossTree) return crossTreeSteps(m.hosts, m.perHost);
  return sequentialSteps(coll, a, m.nranks);
}

double hostLinkFactor(const Machine& m, algo::Coll coll, algo::Algo a) {
  const int n = m.nranks, hosts = m.hosts;
  if (hosts <= 1 || n <= 1) return 0;
  const bool allReduce = coll == algo::Coll::kAllReduce;
  switch (a) {
    case algo::Algo::kHier:
      // Each rail carries its shard round the hosts: a host sends 2(N-1)/N of the message in all
      // (all-gather and reduce-scatter (N-1)/N); a broadcast's or reduce's rail chain passes the
      // whole message on.
      if (coll == algo::Coll::kBroadcast || coll == algo::Coll::kReduce) return 1;
      return (allReduce ? 2.0 : 1.0) * (hosts - 1) / hosts;
    case algo::Algo::kTree:
    case algo::Algo::kDoubleTree:
    case algo::Algo::kCrossTree: return treeFacts(a, n, m.perHost).hostOut;
    case algo::Algo::kDoubling:
      // Of its log2 n exchanges, those across hosts send the whole message from every rank.
      return static_cast<double>(m.perHost) * algo::floorLog2(hosts) + (hosts & (hosts - 1) ? m.perHost : 0);
    default: break;
  }
  // A ring over hosts in turn crosses each host's boundary once each way, carrying what every
  // edge of the ring does.
  return busiestRankFactor(coll, algo::Algo::kRing, n);
}

bool algorithmApplies(const Machine& m, algo::Coll coll, algo::Algo a) {
  if (a == algo::Algo::kCopyEngine) return m.ceCtas > 0 && m.ceGBs > 0 && algo::copyEngineRuns(coll);
  // The hierarchical algorithms and the cross-host tree (the table's kAcrossHosts), across hosts only.
  const bool levelled = algo::scopeOf(a) == algo::AlgoScope::kAcrossHosts;
  return algo::supports(coll, a) && (a != algo::Algo::kDoubling || m.doubling) &&
         (a != algo::Algo::kOneShot || m.oneShotBytes > 0) && (!levelled || m.hosts > 1);
}

bool sizeApplies(const Machine& m, algo::Coll coll, algo::Algo a, Proto proto, size_t bytes) {
  if (a == algo::Algo::kCopyEngine) return proto == Proto::kSimple;  // (no protocol: one entry)
  if (a != algo::Algo::kOneShot) return true;
  const bool perRank = coll == algo::Coll::kAllGather || coll == algo::Coll::kReduceScatter;
  size_t block = perRank ? bytes / std::max(1, m.nranks) : bytes;
  return proto == Proto::kLL && block <= m.oneShotBytes;
}

bool protocolApplies(const Machine& m, Proto proto) {
  if (!m.gpu) return proto == Proto::kSimple;
  return proto != Proto::kLL128 || m.ll128Capable;
}

ProtoModel defaultProtoModel(Proto proto) {
  ProtoModel p;
  switch (proto) {
    case Proto::kLL:
      p.hopFactor = kLlHopFactor.value, p.efficiency = kLlEfficiency.value;
      p.bytesPerChannel = kLlBytesPerChannel.value;
      break;
    case Proto::kLL128:
      p.hopFactor = kLl128HopFactor.value, p.efficiency = kLl128Efficiency.value;
      p.bytesPerChannel = kLl128BytesPerChannel.value;
      break;
    default:
      p.hopFactor = kSimpleHopFactor.value, p.hopExtraUs = kSimpleHopExtraUs.value;
      p.efficiency = kSimpleEfficiency.value, p.bytesPerChannel = kSimpleBytesPerChannel.value;
  }
  return p;
}

ProtoModel defaultOneShotModel() {
  ProtoModel p = defaultProtoModel(Proto::kLL);
  p.efficiency = kOneShotEfficiency.value;
  p.bytesPerChannel = kOneShotBytesPerChannel.value;
  return p;
}

Factors factorsFor(const Machine& m, algo::Algo a, Proto proto) {
  Factors f;
  if (m.gpu) {
    const ProtoModel& p = m.protos[static_cast<int>(proto)];
    f.hopFactor = p.hopFactor, f.hopExtraUs = p.hopExtraUs, f.efficiency = p.efficiency;
  }
  if (a == algo::Algo::kTree || a == algo::Algo::kDoubleTree || a == algo::Algo::kCrossTree)
    f.efficiency *= kTreeBandwidthFactor.value;
  if (a == algo::Algo::kDoubling && m.gpu) f.efficiency *= kDoublingBandwidthFactor.value;
  if (a == algo::Algo::kOneShot) f.efficiency = m.oneShot.efficiency;
  return f;
}

int interHostSteps(const Machine& m, algo::Coll coll, algo::Algo a) {
  if (m.hosts <= 1) return 0;
  // A ring crosses each boundary once per pass; the trees (flat and cross-host) and doubling in
  // about log2(hosts) of their steps, up and down; the hierarchical algorithms on their rails,
  // (N-1) per pass.
  const int passes = coll == algo::Coll::kAllReduce ? 2 : 1;
  const int inter = a == algo::Algo::kRing   ? passes * m.hosts
                    : a == algo::Algo::kHier ? passes * (m.hosts - 1)
                                             : 2 * algo::floorLog2(m.hosts) + 1;
  return std::min(stepsOn(m, coll, a), inter);
}

double wireFactor(const Machine& m, Proto proto) {
  if (!m.gpu) return 1;
  switch (proto) {
    case Proto::kLL: return 16.0 / 8;        // a 16-byte line carries 8 bytes of data and their flags
    case Proto::kLL128: return 128.0 / 120;  // a 128-byte line carries 120
    default: return 1;
  }
}

// The copy-engine path: the calls's fixed cost (its stream operations) and the busiest rank's
// bytes at the slower of the copy engines and what the reducer's CTAs reduce.
Prediction predictCopyEngine(const Machine& m, algo::Coll coll, size_t bytes, int ctas) {
  Prediction p;
  p.steps = 1;
  p.latencyUs = m.baseUs + kCeCallUs.value;
  p.bandwidthGBs = std::min(m.ceGBs, std::max(1, ctas) * kCeCtaGBs.value);
  // The busiest rank's bytes: the ring's, but a broadcast's root pushes the message to every peer.
  const double factor =
      coll == algo::Coll::kBroadcast ? m.nranks - 1 : busiestRankFactor(coll, algo::Algo::kRing, m.nranks);
  p.us = p.latencyUs + static_cast<double>(bytes) * factor / (p.bandwidthGBs * 1e3);
  return p;
}

Prediction predict(const Machine& m, algo::Coll coll, algo::Algo a, Proto proto, size_t bytes, int channels) {
  if (a == algo::Algo::kCopyEngine) return predictCopyEngine(m, coll, bytes, channels);
  const Factors f = factorsFor(m, a, proto);
  Prediction p;
  p.steps = stepsOn(m, coll, a);
  const bool hier = a == algo::Algo::kHier && m.hosts > 1;
  const int interSteps = interHostSteps(m, coll, a);
  // What the busiest rank moves through its channels: the hierarchical algorithms its host's ring
  // steps (a chain's rail member, which takes the message on along the rail and into its host,
  // twice) and its rail's share of what leaves the host.
  double factor = busiestRankFactor(coll, a, m.nranks);
  if (hier) {
    const bool chain = coll == algo::Coll::kBroadcast || coll == algo::Coll::kReduce;
    factor = chain ? (coll == algo::Coll::kBroadcast && m.perHost > 1 ? 2 : 1)
                   : busiestRankFactor(coll, algo::Algo::kRing, m.perHost) + hostLinkFactor(m, coll, a) / m.perHost;
  }
  double hop = m.intraHopUs * f.hopFactor + f.hopExtraUs;
  double interHop = m.interHopUs * f.hopFactor + f.hopExtraUs;
  p.latencyUs = m.baseUs + (p.steps - interSteps) * hop + interSteps * interHop;
  p.bandwidthGBs = std::max(1, channels) * m.channelGBs * f.efficiency;
  const double channelUs = static_cast<double>(bytes) * factor / (p.bandwidthGBs * 1e3);  // GB/s = 1e3 B/us
  // The network: the busiest host's bytes out over what its channels' crossings reach of its NICs
  // (a ring crosses once per channel, each tree once, each hierarchical rail once).
  if (m.hosts > 1 && m.netGBs > 0) {
    const int crossings = hier ? m.perHost : a == algo::Algo::kDoubleTree || a == algo::Algo::kCrossTree ? 2 : 1;
    double net = m.netGBs;
    if (m.netChannelGBs > 0) net = std::min(net, std::max(1, channels) * crossings * m.netChannelGBs);
    p.netUs = static_cast<double>(bytes) * hostLinkFactor(m, coll, a) * wireFactor(m, proto) / (net * 1e3);
  }
  p.us = p.latencyUs + std::max(channelUs, p.netUs);
  if (m.reduceGBs > 0) p.us += static_cast<double>(bytes) * reduceFactor(coll, a, m.nranks) / (m.reduceGBs * 1e3);
  return p;
}

}  // namespace braid::tune
