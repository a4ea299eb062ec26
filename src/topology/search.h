// Search: the rings (one per channel) and trees a communicator's GPUs use, from the machine graph.
//
// Every ring edge a -> b travels a path whose links are "resources" with a remaining bandwidth in
// that direction: a direct NVLink; or the NVSwitch fabric, as a's egress and b's ingress (the sum
// of the GPU's NVLinks to the switches); or the widest path over PCIe and CPU links; between hosts,
// the exit GPU's NIC out and the entry GPU's NIC in. A ring's bandwidth is the least
// remaining / uses over its resources, capped at what one channel (one CTA) moves; the search
// takes the best ring it finds (greedy from every start, then 2-opt), subtracts its bandwidth
// from every resource it crosses, and repeats for the next channel until maxChannels or until the
// next ring would carry less than a tenth of the first. Within a host GPUs go in the order that
// keeps the best ring (ties: device order); hosts follow each other in rank order, each entered
// and left through GPUs near the channel's NIC. A ring always exists: when every path is used up
// the search stops with at least one channel.
//
// Trees are built over channel 0's ring order (algo/geometry.cc, algo/tree_builder.h; the plan's
// log in core/plan.cc shows them): positions follow the ring, so trees follow locality too.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "topology/graph.h"

namespace braid::topology {

/// Where each rank of a communicator runs: a host of the System, and a GPU node of it.
struct RankPlace {
  int host = 0;
  int gpu = -1;  // node index in the host
};

/// One channel's ring.
struct RingChannel {
  std::vector<int> ranks;                // ring order
  double bandwidth = 0;                  // GB/s per direction this channel may use
  LinkKind slowest = LinkKind::kNvLink;  // type of its bottleneck hop
};

struct SearchResult {
  std::vector<RingChannel> rings;
  int hosts = 1;
  double intraBandwidth = 0;  // channel 0's bottleneck inside hosts, its NICs left out (GB/s)
  double interBandwidth = 0;  // channel 0's bottleneck, NICs included (0: one host)
  double netBandwidth = 0;    // a host's NICs in all, per direction, the least over hosts (0: one host)
  LinkKind intraKind = LinkKind::kNvLink;
  double intraLatencyUs = 0;         // one hop inside a host, along channel 0's ring (worst)
  double interLatencyUs = 0;         // one hop between hosts
  std::vector<std::string> reasons;  // why each choice was made (logged under GRAPH)
};

/// Most bandwidth one channel (one CTA) moves: 16 GB/s, what braid's ring all-reduce (Simple,
/// 512 KiB steps) moved per CTA at 8 CTAs on the 2 x H200 machine (130 GB/s, bench/NOTES.md). A
/// plain store loop reaches 46 GB/s per CTA (../shared/PERFORMANCE.md); the FIFO handshakes cost the
/// rest, so a link needs about three times as many channels as the store figure suggests.
constexpr double kChannelBandwidth = 16.0;

/// Rings and trees for `ranks` on `system`, at most `maxChannels` channels (>= 1).
Status searchRings(const System& system, const std::vector<RankPlace>& ranks, int maxChannels, SearchResult* out);

/// Ranks on `system` in order: every GPU of every host, hosts in file order, GPUs in device order.
std::vector<RankPlace> oneRankPerGpu(const System& system);

/// The readable report: "Ring 00 : 0 1 2 3", each channel's bandwidth and bottleneck link type.
std::string describeSearch(const SearchResult& result);

}  // namespace braid::topology
