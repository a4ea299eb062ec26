#include "topology/search.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

#include "topology/links.h"

namespace braid::topology {
namespace {

constexpr double kUnlimited = std::numeric_limits<double>::infinity();

// A directed share of the machine a ring edge uses.
enum class ResKind { kLink, kFabricOut, kFabricIn, kNicOut, kNicIn };
struct Resource {
  ResKind kind;
  int host;
  int index;  // link, GPU or NIC node index
  int dir;    // links: 0 a->b, 1 b->a
  bool operator<(const Resource& o) const {
    return std::tie(kind, host, index, dir) < std::tie(o.kind, o.host, o.index, o.dir);
  }
};

// The path of one edge: the resources it uses, its one-hop latency and the type of its slowest link.
struct Path {
  std::vector<Resource> uses;
  double latencyUs = 0;
  LinkKind kind = LinkKind::kNvLink;
};

class Searcher {
 public:
  Searcher(const System& system, const std::vector<RankPlace>& ranks) : system_(system), ranks_(ranks) {
    for (size_t h = 0; h < system.hosts.size(); ++h) initCapacities(static_cast<int>(h));
  }

  // The best ring for the current remaining capacities, and its bandwidth.
  RingChannel bestRing(int channel, std::vector<std::string>* reasons) {
    std::vector<int> hostOrder;
    for (const RankPlace& p : ranks_) {
      if (std::find(hostOrder.begin(), hostOrder.end(), p.host) == hostOrder.end()) hostOrder.push_back(p.host);
    }
    std::vector<int> order;
    for (int h : hostOrder) {
      std::vector<int> local = hostRing(h);
      if (hostOrder.size() > 1) rotateToNic(h, channel, &local, reasons);
      order.insert(order.end(), local.begin(), local.end());
    }
    RingChannel ring;
    ring.ranks = order;
    ring.bandwidth = ringBandwidth(order, &ring.slowest);
    return ring;
  }

  // Takes `bw` from every resource the ring uses.
  void consume(const std::vector<int>& order, double bw) {
    for (const auto& kv : uses(order)) remaining_[kv.first] -= bw * kv.second;
  }

  // What the ring `order` may carry per direction with what is left; `intraOnly`: counting only the
  // links inside hosts (not the NICs).
  double ringBandwidth(const std::vector<int>& order, LinkKind* slowest, bool intraOnly = false) {
    double bw = kUnlimited;
    std::map<Resource, int> u = uses(order);
    for (const auto& kv : u) {
      if (intraOnly && (kv.first.kind == ResKind::kNicOut || kv.first.kind == ResKind::kNicIn)) continue;
      double share = std::max(0.0, remaining_[kv.first]) / kv.second;
      if (share < bw) {
        bw = share;
        if (slowest != nullptr) *slowest = kindOf(kv.first);
      }
    }
    return bw;
  }

  // The least, over `hosts`, of a host's NICs' bandwidth in all (per direction).
  double netBandwidth(const std::vector<int>& hosts) const {
    double least = kUnlimited;
    for (int h : hosts) {
      double sum = 0;
      for (int n : system_.hosts[h].nodesOf(NodeKind::kNic))
        sum += network(system_.hosts[h].nodes[n].speedGbps).bandwidth;
      least = std::min(least, sum);
    }
    return least;
  }

  // Worst one-hop latency inside hosts and between them along `order`.
  void latencies(const std::vector<int>& order, double* intra, double* inter) {
    *intra = *inter = 0;
    for (size_t i = 0; i < order.size() && order.size() > 1; ++i) {
      int a = order[i], b = order[(i + 1) % order.size()];
      const Path& p = edge(a, b);
      double& worst = ranks_[a].host == ranks_[b].host ? *intra : *inter;
      worst = std::max(worst, p.latencyUs);
    }
  }

 private:
  void initCapacities(int h) {
    const Host& host = system_.hosts[h];
    for (size_t i = 0; i < host.links.size(); ++i) {
      const Link& l = host.links[i];
      for (int dir = 0; dir < 2; ++dir) remaining_[{ResKind::kLink, h, static_cast<int>(i), dir}] = l.bandwidth;
      for (int end : {l.a, l.b}) {
        int other = end == l.a ? l.b : l.a;
        if (l.kind == LinkKind::kNvLink && host.nodes[end].kind == NodeKind::kGpu &&
            host.nodes[other].kind == NodeKind::kNvSwitch) {
          remaining_[{ResKind::kFabricOut, h, end, 0}] += l.bandwidth;
          remaining_[{ResKind::kFabricIn, h, end, 0}] += l.bandwidth;
        }
      }
    }
    // Pairs of GPUs with no known path share one unknown path, taken as PCIe gen3 x16 through the CPU.
    remaining_[unknownPath(h)] = pcie(3, 16).bandwidth;
    for (int n : host.nodesOf(NodeKind::kNic)) {
      double bw = network(host.nodes[n].speedGbps).bandwidth;
      remaining_[{ResKind::kNicOut, h, n, 0}] = bw;
      remaining_[{ResKind::kNicIn, h, n, 0}] = bw;
    }
  }

  static Resource unknownPath(int h) { return Resource{ResKind::kLink, h, -1, 0}; }

  LinkKind kindOf(const Resource& r) const {
    switch (r.kind) {
      case ResKind::kLink: return r.index < 0 ? LinkKind::kPcie : system_.hosts[r.host].links[r.index].kind;
      case ResKind::kFabricOut:
      case ResKind::kFabricIn: return LinkKind::kNvLink;
      default: return LinkKind::kNet;
    }
  }

  // How many times the ring `order` uses each resource.
  std::map<Resource, int> uses(const std::vector<int>& order) {
    std::map<Resource, int> u;
    for (size_t i = 0; i < order.size() && order.size() > 1; ++i) {
      for (const Resource& r : edge(order[i], order[(i + 1) % order.size()]).uses) ++u[r];
    }
    return u;
  }

  // The path from rank a to rank b (cached).
  const Path& edge(int a, int b) {
    auto key = std::make_pair(a, b);
    auto it = paths_.find(key);
    if (it != paths_.end()) return it->second;
    Path p;
    const RankPlace& x = ranks_[a];
    const RankPlace& y = ranks_[b];
    if (x.host != y.host) {
      p.uses.push_back(Resource{ResKind::kNicOut, x.host, nicOf(x.host, a), 0});
      p.uses.push_back(Resource{ResKind::kNicIn, y.host, nicOf(y.host, b), 0});
      p.latencyUs = network(0).latencyUs;
      p.kind = LinkKind::kNet;
    } else if (x.gpu != y.gpu) {
      p = gpuPath(x.host, x.gpu, y.gpu);
    }
    return paths_[key] = p;
  }

  // Within a host: a direct NVLink, else the NVSwitch fabric, else the widest PCIe/CPU path.
  Path gpuPath(int h, int a, int b) {
    const Host& host = system_.hosts[h];
    Path p;
    for (size_t i = 0; i < host.links.size(); ++i) {
      const Link& l = host.links[i];
      if (l.kind == LinkKind::kNvLink && ((l.a == a && l.b == b) || (l.a == b && l.b == a))) {
        p.uses.push_back(Resource{ResKind::kLink, h, static_cast<int>(i), l.a == a ? 0 : 1});
        p.latencyUs = l.latencyUs;
        return p;
      }
    }
    if (remaining_.count({ResKind::kFabricOut, h, a, 0}) != 0 && remaining_.count({ResKind::kFabricIn, h, b, 0}) != 0) {
      p.uses.push_back(Resource{ResKind::kFabricOut, h, a, 0});
      p.uses.push_back(Resource{ResKind::kFabricIn, h, b, 0});
      p.latencyUs = nvlinkPerLink(host.nodes[a].sm).latencyUs;
      return p;
    }
    return widestPath(h, a, b);
  }

  // Max-min bandwidth path over PCIe and CPU links, not through other GPUs, NICs or NVSwitches.
  Path widestPath(int h, int from, int to) {
    const Host& host = system_.hosts[h];
    int n = static_cast<int>(host.nodes.size());
    std::vector<double> best(n, -1);
    std::vector<int> viaLink(n, -1), prev(n, -1);
    best[from] = kUnlimited;
    std::vector<bool> done(n, false);
    for (int round = 0; round < n; ++round) {
      int u = -1;
      for (int v = 0; v < n; ++v) {
        if (!done[v] && best[v] >= 0 && (u < 0 || best[v] > best[u])) u = v;
      }
      if (u < 0 || u == to) break;
      done[u] = true;
      if (u != from && host.nodes[u].kind != NodeKind::kPciSwitch && host.nodes[u].kind != NodeKind::kCpu) continue;
      for (size_t i = 0; i < host.links.size(); ++i) {
        const Link& l = host.links[i];
        if (l.kind == LinkKind::kNvLink || (l.a != u && l.b != u)) continue;
        int v = l.a == u ? l.b : l.a;
        double w = std::min(best[u], l.bandwidth);
        if (!done[v] && w > best[v]) {
          best[v] = w;
          viaLink[v] = static_cast<int>(i);
          prev[v] = u;
        }
      }
    }
    Path p;
    p.kind = LinkKind::kPcie;
    if (best[to] < 0) {  // no known path: the fallback (the ring still forms)
      p.uses.push_back(unknownPath(h));
      p.latencyUs = pcie(3, 16).latencyUs;
      return p;
    }
    double slowest = kUnlimited;
    for (int v = to; v != from; v = prev[v]) {
      const Link& l = host.links[viaLink[v]];
      p.uses.push_back({ResKind::kLink, h, viaLink[v], l.b == v ? 0 : 1});
      p.latencyUs += l.latencyUs;
      if (l.bandwidth < slowest) {
        slowest = l.bandwidth;
        p.kind = l.kind;
      }
    }
    return p;
  }

  // The NIC a rank uses to leave or enter its host: the current channel's (set by rotateToNic).
  int nicOf(int h, int /*rank*/) {
    auto it = channelNic_.find(h);
    return it == channelNic_.end() ? -1 : it->second;
  }

  // Bandwidth of the path a -> b with the current remaining capacities.
  double edgeBandwidth(int a, int b) {
    double bw = kUnlimited;
    for (const Resource& r : edge(a, b).uses) bw = std::min(bw, std::max(0.0, remaining_[r]));
    return bw;
  }

  // The best ring over the host's ranks: device order first, then greedy from every start, then
  // 2-opt; a candidate replaces the best only when strictly better.
  std::vector<int> hostRing(int h) {
    std::vector<int> local;
    for (size_t r = 0; r < ranks_.size(); ++r) {
      if (ranks_[r].host == h) local.push_back(static_cast<int>(r));
    }
    if (local.size() <= 2) return local;
    std::vector<int> best = local;
    double bestBw = localBandwidth(best);
    if (bestBw >= kChannelBandwidth) return best;  // a channel cannot use more: device order it is
    for (size_t s = 0; s < local.size(); ++s) {
      std::vector<int> ring = {local[s]};
      std::vector<bool> used(local.size(), false);
      used[s] = true;
      while (ring.size() < local.size()) {
        int pick = -1;
        double pickBw = -1;
        for (size_t j = 0; j < local.size(); ++j) {
          if (used[j]) continue;
          double bw = edgeBandwidth(ring.back(), local[j]);
          if (bw > pickBw + 1e-9) pick = static_cast<int>(j), pickBw = bw;
        }
        used[pick] = true;
        ring.push_back(local[pick]);
      }
      improve(&ring);
      double bw = localBandwidth(ring);
      if (bw > bestBw + 1e-9) best = ring, bestBw = bw;
    }
    return best;
  }

  void improve(std::vector<int>* ring) {
    double bw = localBandwidth(*ring);
    for (bool better = true; better;) {
      better = false;
      for (size_t i = 1; i + 1 < ring->size(); ++i) {
        for (size_t j = i + 1; j < ring->size(); ++j) {
          std::reverse(ring->begin() + i, ring->begin() + j + 1);
          double b = localBandwidth(*ring);
          if (b > bw + 1e-9) {
            bw = b;
            better = true;
          } else {
            std::reverse(ring->begin() + i, ring->begin() + j + 1);
          }
        }
      }
    }
  }

  double localBandwidth(const std::vector<int>& ring) { return ringBandwidth(ring, nullptr); }

  // Picks the channel's NIC in host h (round robin over the host's NICs) and rotates the host's
  // ring so that it ends at the GPU with the widest path to that NIC and starts after it.
  void rotateToNic(int h, int channel, std::vector<int>* local, std::vector<std::string>* reasons) {
    std::vector<int> nics = system_.hosts[h].nodesOf(NodeKind::kNic);
    if (nics.empty() || local->empty()) return;
    int nic = nics[channel % nics.size()];
    channelNic_[h] = nic;
    paths_.clear();  // inter-host edges depend on the channel's NIC
    size_t exit = 0;
    double bestBw = -1, bestLatency = kUnlimited;
    for (size_t i = 0; i < local->size(); ++i) {
      int gpu = ranks_[(*local)[i]].gpu;
      Path p = gpu >= 0 ? widestPath(h, gpu, nic) : Path{};
      double bw = kUnlimited;
      for (const Resource& r : p.uses) bw = std::min(bw, remaining_[r]);
      // The widest path, then the shortest (the GPU behind the NIC's own switch).
      if (bw > bestBw + 1e-9 || (bw > bestBw - 1e-9 && p.latencyUs < bestLatency - 1e-9)) {
        bestBw = bw;
        bestLatency = p.latencyUs;
        exit = i;
      }
    }
    std::rotate(local->begin(), local->begin() + (exit + 1) % local->size(), local->end());
    if (reasons != nullptr) {
      reasons->push_back("channel " + std::to_string(channel) + ": host " + system_.hosts[h].id + " leaves through " +
                         system_.hosts[h].nodes[nic].id + " from rank " + std::to_string(local->back()));
    }
  }

  const System& system_;
  const std::vector<RankPlace>& ranks_;
  std::map<Resource, double> remaining_;
  std::map<std::pair<int, int>, Path> paths_;
  std::map<int, int> channelNic_;
};

std::string formatBw(double bw) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", bw);
  return buf;
}

}  // namespace

std::vector<RankPlace> oneRankPerGpu(const System& system) {
  std::vector<RankPlace> ranks;
  for (size_t h = 0; h < system.hosts.size(); ++h) {
    std::vector<int> gpus = system.hosts[h].nodesOf(NodeKind::kGpu);
    std::stable_sort(gpus.begin(), gpus.end(),
                     [&](int a, int b) { return system.hosts[h].nodes[a].index < system.hosts[h].nodes[b].index; });
    for (int g : gpus) ranks.push_back(RankPlace{static_cast<int>(h), g});
  }
  return ranks;
}

Status searchRings(const System& system, const std::vector<RankPlace>& ranks, int maxChannels, SearchResult* out) {
  if (ranks.empty()) return invalidArgument("topology search: no ranks");
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RankPlace& p = ranks[r];
    if (p.host < 0 || p.host >= static_cast<int>(system.hosts.size()) || p.gpu < -1 ||
        p.gpu >= static_cast<int>(system.hosts[p.host].nodes.size()) ||
        (p.gpu >= 0 && system.hosts[p.host].nodes[p.gpu].kind != NodeKind::kGpu)) {
      return invalidArgument("topology search: rank " + std::to_string(r) + " is not on a GPU of a known host");
    }
  }
  SearchResult result;
  Searcher searcher(system, ranks);
  std::vector<int> hostsSeen;
  for (const RankPlace& p : ranks) {
    if (std::find(hostsSeen.begin(), hostsSeen.end(), p.host) == hostsSeen.end()) hostsSeen.push_back(p.host);
  }
  result.hosts = static_cast<int>(hostsSeen.size());
  double first = 0;
  for (int c = 0; c < std::max(1, maxChannels); ++c) {
    RingChannel ring = searcher.bestRing(c, &result.reasons);
    double bw = std::min(ring.bandwidth, kChannelBandwidth);
    if (c > 0 && (bw <= 0 || bw < 0.1 * first)) {
      result.reasons.push_back("stopped at " + std::to_string(c) + " channel(s): the next ring would carry " +
                               formatBw(bw) + " GB/s, less than a tenth of the first (" + formatBw(first) + ")");
      break;
    }
    if (c == 0) {
      first = bw;
      result.intraBandwidth = std::min(searcher.ringBandwidth(ring.ranks, nullptr, true), kChannelBandwidth);
      searcher.latencies(ring.ranks, &result.intraLatencyUs, &result.interLatencyUs);
      result.intraKind = ring.slowest;
    }
    ring.bandwidth = bw;
    searcher.consume(ring.ranks, bw);
    result.rings.push_back(ring);
  }
  if (static_cast<int>(result.rings.size()) == std::max(1, maxChannels)) {
    result.reasons.push_back("stopped at the channel limit (" + std::to_string(result.rings.size()) + ")");
  }
  result.interBandwidth = result.hosts > 1 ? result.rings[0].bandwidth : 0;
  result.netBandwidth = result.hosts > 1 ? searcher.netBandwidth(hostsSeen) : 0;
  *out = std::move(result);
  return Status::ok();
}

std::string describeSearch(const SearchResult& r) {
  std::ostringstream out;
  for (size_t c = 0; c < r.rings.size(); ++c) {
    char head[32];
    std::snprintf(head, sizeof(head), "Ring %02zu :", c);
    out << head;
    for (int rank : r.rings[c].ranks) out << " " << rank;
    out << "   (" << formatBw(r.rings[c].bandwidth) << " GB/s, bottleneck " << linkKindName(r.rings[c].slowest)
        << ")\n";
  }
  out << r.rings.size() << " channel(s) over " << r.hosts << " host(s); hop latency " << r.intraLatencyUs
      << " us inside a host";
  if (r.hosts > 1) out << ", " << r.interLatencyUs << " us between hosts";
  out << "\n";
  return out.str();
}

}  // namespace braid::topology
