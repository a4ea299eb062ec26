// The cost model: predicted time = latency + bytes / bandwidth for one (collective, algorithm,
// protocol, channel count) on a communicator's machine.
//
//   latency   = base (a kernel launch, or a host call)
//             + sequential steps (the trace backend's count) x hop latency of the links crossed,
//               scaled by the protocol (LL one way, Simple a handshake round trip)
//   bandwidth = channels x per-channel bandwidth (the search's, capped by one CTA) x protocol
//               efficiency (LL 1/2, LL128 120/128)
//   bytes     = what the busiest rank sends for the message (ring all-reduce 2(n-1)/n of it, a
//               tree's interior rank 3x, the double tree 2x, recursive doubling once per step)
//   network   = across hosts, the same message also passes each host's NICs: what the busiest host
//               sends out (hostLinkFactor: the flat ring 2(n-1)/n, the hierarchical all-reduce
//               2(N-1)/N, a tree the edges that leave the host) over the host's network bandwidth
//               (its NICs in all, or what the channels' crossings reach of it); the time is the
//               slower of the two, so the steps inside hosts are no longer taken as free
//
// A machine is summarised by what the model uses; the selection (tuner.h) minimises the prediction.
#pragma once

#include <cstddef>
#include <string>

#include "algo/collectives.h"
#include "topology/search.h"

namespace braid::tune {

using Proto = algo::Proto;
const char* protoName(Proto proto);

/// How a protocol scales a GPU machine's hop latency and bandwidth, and how many bytes a channel
/// should carry before another one pays for itself. The defaults are constants.h's; a tune file
/// (BRAID_TUNE_FILE, fit.h) may replace any of them.
struct ProtoModel {
  double hopFactor = 1;
  double hopExtraUs = 0;
  double efficiency = 1;
  double bytesPerChannel = 256 * 1024;
};
/// constants.h's model of `proto` on GPUs.
ProtoModel defaultProtoModel(Proto proto);
/// constants.h's model of the one-shot algorithm (its efficiency and bytes per channel; LL).
ProtoModel defaultOneShotModel();

/// What the model needs of a communicator's machine.
struct Machine {
  int nranks = 1;
  int hosts = 1;
  bool gpu = true;            // GPU buffers (kernels, protocols); false: host memory
  bool ll128Capable = false;  // every hop inside hosts is NVLink (128-byte stores arrive whole)
  int channels = 1;           // what the search found
  int ringChannels = 0;       // the most a ring may use (0: `channels`; more over NVLink)
  int perHost = 1;            // the most ranks on one host (hosts are taken as even, in ring order)
  double channelGBs = 1;      // per channel inside hosts, channel 0's
  double intraHopUs = 1;      // one hop inside a host
  double interHopUs = 0;      // one hop between hosts
  double netGBs = 0;          // a host's network bandwidth per direction, all its NICs (0: unlimited)
  double netChannelGBs = 0;   // what one channel's crossing of a host's boundary gets (0: netGBs)
  double baseUs = 0;          // per call
  double reduceGBs = 0;       // how fast one rank reduces (0: free)
  bool doubling = false;      // recursive doubling available
  size_t oneShotBytes = 0;    // the largest block the one-shot moves per peer (0: not offered)
  int oneShotChannels = 0;    // the most CTAs it may use (it needs no FIFOs, so not `channels`)
  double ceGBs = 0;           // the copy-engine path's rate per direction, where it is offered
  int ceCtas = 0;             // its reducer's CTAs unless the configured bounds say otherwise (0: not offered)
  ProtoModel protos[static_cast<int>(Proto::kNumProtos)] = {
      defaultProtoModel(Proto::kSimple), defaultProtoModel(Proto::kLL),
      defaultProtoModel(Proto::kLL128)};  // GPU communicators, by Proto
  ProtoModel oneShot = defaultOneShotModel();
};

/// The GPU machine of a search result for `nranks` ranks.
Machine gpuMachine(const topology::SearchResult& search, int nranks);
/// A host-memory communicator: `hosts` hosts, sockets between them (and within, with `sockets`);
/// `netGBs`: a host's network bandwidth per direction where known (the network device's speed; 0:
/// constants.h's kHostNetGBs); `netLatencyUs`: the latency the network reports, added to braid's
/// own hop between hosts (kHostSocketHopUs).
Machine hostMachine(int nranks, int hosts, bool socketsWithinHost, double netGBs = 0, double netLatencyUs = 0);

/// Sequential dependent hops of one chunk (equal to the trace backend's count; tests check it).
int sequentialSteps(algo::Coll coll, algo::Algo algo, int nranks);
/// The same for a hierarchical collective (hier.h) on `hosts` hosts of `perHost` ranks.
int hierSteps(algo::Coll coll, int hosts, int perHost);
/// The same for the cross-host tree's all-reduce (up and down its deeper tree).
int crossTreeSteps(int hosts, int perHost);
/// Sequential steps of (coll, algo) on `machine`, whichever of the three above applies.
int stepsOn(const Machine& machine, algo::Coll coll, algo::Algo algo);
/// Bytes a protocol's FIFO slots carry per byte of data, over the network as well (LL's lines are
/// half flags; GPU communicators only).
double wireFactor(const Machine& machine, Proto proto);
/// Of those, the steps that cross between hosts (0 on one host).
int interHostSteps(const Machine& machine, algo::Coll coll, algo::Algo algo);
/// Bytes the busiest host sends to other hosts, per byte of the message (0 on one host).
double hostLinkFactor(const Machine& machine, algo::Coll coll, algo::Algo algo);
/// Bytes the busiest rank sends, per byte of the message (the nccl-tests message size).
double busiestRankFactor(algo::Coll coll, algo::Algo algo, int nranks);
/// Bytes the busiest rank reduces, per byte of the message.
double reduceFactor(algo::Coll coll, algo::Algo algo, int nranks);

/// How a protocol and an algorithm scale the machine's hop latency and bandwidth on `machine`:
/// hop = link latency x hopFactor + hopExtraUs; bandwidth = channel bandwidth x efficiency.
struct Factors {
  double hopFactor = 1;
  double hopExtraUs = 0;
  double efficiency = 1;
};
Factors factorsFor(const Machine& machine, algo::Algo algo, Proto proto);

struct Prediction {
  double us = 0;
  double latencyUs = 0;
  double bandwidthGBs = 0;  // through the channels
  double netUs = 0;         // the busiest host's bytes over its network (0 on one host)
  int steps = 0;
};

/// Whether `proto` may run on `machine` (host memory: Simple only; LL128: NVLink only).
bool protocolApplies(const Machine& machine, Proto proto);
/// Whether `algo` runs `coll` on `machine`.
bool algorithmApplies(const Machine& machine, algo::Coll coll, algo::Algo algo);
/// Whether (algo, proto) may run a `coll` message of `bytes` on `machine`: the one-shot runs LL
/// only, with each rank's block (all of it for all-reduce) up to machine.oneShotBytes.
bool sizeApplies(const Machine& machine, algo::Coll coll, algo::Algo algo, Proto proto, size_t bytes);

/// The predicted time of `bytes` (the collective's message size) on `channels` channels.
Prediction predict(const Machine& machine, algo::Coll coll, algo::Algo algo, Proto proto, size_t bytes, int channels);

}  // namespace braid::tune
