#include "tune/cost.h"

#include <algorithm>
#include <cmath>
#include <vector>

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
  m.channels = static_cast<int>(search.rings.size());
  // Rings inside one NVLink host take more channels than the search's per-channel figure gives:
  // each ring channel's FIFOs are one connection, and more CTAs keep more stores in flight.
  m.ringChannels = oneNvlinkHost ? std::max(m.channels, static_cast<int>(kNvlinkRingChannels.value)) : m.channels;
  m.channelGBs = search.rings.empty() ? 1 : std::max(1e-3, search.rings[0].bandwidth);
  m.intraHopUs = search.intraLatencyUs;
  m.interHopUs = search.interLatencyUs;
  m.baseUs = kGpuLaunchUs.value;
  m.reduceGBs = kGpuReduceGBs.value;
  // Recursive doubling inside one host (NVLink/PCIe peers); across hosts its partners change every
  // step, so each step would cross the network.
  m.doubling = search.hosts == 1;
  return m;
}

Machine hostMachine(int nranks, int hosts, bool socketsWithinHost) {
  Machine m;
  m.nranks = nranks;
  m.hosts = hosts;
  m.gpu = false;
  m.channels = 2;
  bool sockets = socketsWithinHost || hosts > 1;
  m.channelGBs = sockets ? kHostSocketChannelGBs.value : kHostShmChannelGBs.value;
  m.intraHopUs = socketsWithinHost ? kHostSocketHopUs.value : kHostShmHopUs.value;
  m.interHopUs = hosts > 1 ? kHostSocketHopUs.value : 0;
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
    case algo::Algo::kDoubleTree: return n == 2 ? 1 : 2;         // 1.5 in one tree, 0.5 in the other
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
    case algo::Algo::kDoubleTree: return n == 2 ? 1 : 1.5;
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

bool algorithmApplies(const Machine& m, algo::Coll coll, algo::Algo a) {
  // The hierarchical all-reduce, across hosts.
  return algo::supports(coll, a) && (a != algo::Algo::kDoubling || m.doubling) &&
         (a != algo::Algo::kOneShot || m.oneShotBytes > 0) && (a != algo::Algo::kHier || m.hosts > 1);
}

bool sizeApplies(const Machine& m, algo::Coll coll, algo::Algo a, Proto proto, size_t bytes) {
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
  if (a == algo::Algo::kTree || a == algo::Algo::kDoubleTree) f.efficiency *= kTreeBandwidthFactor.value;
  if (a == algo::Algo::kDoubling && m.gpu) f.efficiency *= kDoublingBandwidthFactor.value;
  if (a == algo::Algo::kOneShot) f.efficiency = m.oneShot.efficiency;
  return f;
}

Prediction predict(const Machine& m, algo::Coll coll, algo::Algo a, Proto proto, size_t bytes, int channels) {
  const Factors f = factorsFor(m, a, proto);
  Prediction p;
  p.steps = sequentialSteps(coll, a, m.nranks);
  // Hops between hosts: a ring crosses each boundary once per pass; trees and doubling cross them
  // in about log2(hosts) of their steps.
  int interSteps = 0;
  if (m.hosts > 1) {
    bool logarithmic = a != algo::Algo::kRing;
    interSteps = std::min(
        p.steps, logarithmic ? 2 * algo::floorLog2(m.hosts) + 1 : (coll == algo::Coll::kAllReduce ? 2 : 1) * m.hosts);
  }
  // Hierarchical: all-reduce 2(k-1) steps inside hosts and 2(N-1) across, all-gather, broadcast
  // and reduce half of each; what crosses a host's link per direction is 2(N-1)/N (all-gather
  // (N-1)/N) of the message, where the flat ring's every edge carries 2(n-1)/n ((n-1)/n); the
  // steps inside are taken as free beside it (shared memory outruns the network).
  double factor = busiestRankFactor(coll, a, m.nranks);
  if (a == algo::Algo::kHier && m.hosts > 1) {
    const double passes = coll == algo::Coll::kAllReduce ? 2 : 1;
    p.steps = hierSteps(coll, m.hosts, (m.nranks + m.hosts - 1) / m.hosts);
    interSteps = static_cast<int>(passes) * (m.hosts - 1);
    // A broadcast's or a reduce's rail chain carries the whole message over each host's link, as
    // the flat chain.
    const bool chain = coll == algo::Coll::kBroadcast || coll == algo::Coll::kReduce;
    factor = chain ? 1.0 : passes * (m.hosts - 1) / m.hosts;
  }
  double hop = m.intraHopUs * f.hopFactor + f.hopExtraUs;
  double interHop = m.interHopUs * f.hopFactor + f.hopExtraUs;
  p.latencyUs = m.baseUs + (p.steps - interSteps) * hop + interSteps * interHop;
  p.bandwidthGBs = std::max(1, channels) * m.channelGBs * f.efficiency;
  double moved = static_cast<double>(bytes) * factor;
  p.us = p.latencyUs + moved / (p.bandwidthGBs * 1e3);  // GB/s = 1e3 bytes per microsecond
  if (m.reduceGBs > 0) p.us += static_cast<double>(bytes) * reduceFactor(coll, a, m.nranks) / (m.reduceGBs * 1e3);
  return p;
}

}  // namespace braid::tune
