// Calibration: fit the cost model's hop latency and per-channel bandwidth to measured times
// (braid-perf -J), and the tune file that carries the fitted values (BRAID_TUNE_FILE).
//
//   measured time(bytes) ~ a + b x bytes        (least squares over the points)
//   hop latency          = (a - base) / sequential steps of the algorithm
//   channel bandwidth    = bytes-moved factor / (b' x channels x protocol efficiency), where b' is
//                          b less the modelled reduction cost
//
// A tune file is lines of "name = value" ('#' starts a comment): base_us, hop_us, inter_hop_us,
// channel_gbs, reduce_gbs. Each value given replaces the machine's (host and GPU alike).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "tune/cost.h"

namespace braid::tune {

struct Point {
  double bytes = 0;
  double us = 0;
};

/// The points of one collective in a braid-perf -J file (out-of-place times) and its rank count.
Status readPerfJson(const std::string& text, const std::string& collective, std::vector<Point>* out, int* ranks);

struct LineFit {
  double intercept = 0;               // a, microseconds
  double slope = 0;                   // b, microseconds per byte
  std::vector<double> relativeError;  // per point: (fit - measured) / measured
};

/// Least squares of us = a + b x bytes, weighted so that every point counts relatively (small and
/// large sizes alike).
LineFit fitLine(const std::vector<Point>& points);

struct TuneFile {
  double baseUs = -1, hopUs = -1, interHopUs = -1, channelGBs = -1, reduceGBs = -1;  // -1: not given
  double netGBs = -1;  // a host's network (Machine::netGBs), from runs across hosts
  // The protocol models' values given (Machine::protos, Machine::oneShot), by name:
  // <simple|ll|ll128>_<hop_factor|hop_extra_us|efficiency|bytes_per_channel>,
  // oneshot_<efficiency|bytes_per_channel>.
  std::map<std::string, double> model;
};

/// The machine values a fit implies for `algo`/`proto` run on `channels` channels of `machine`: on
/// one host its hop latency and channel bandwidth; across hosts (machine.hosts > 1) the hop between
/// hosts and the network's bandwidth (the slope taken as the busiest host's bytes over its NICs).
TuneFile tuneFromFit(const Machine& machine, algo::Coll coll, algo::Algo algo, Proto proto, int channels,
                     const LineFit& fit);

Status parseTuneFile(const std::string& text, const std::string& source, TuneFile* out);
std::string writeTuneFile(const TuneFile& file);
/// Replaces what the file gives.
void applyTuneFile(const TuneFile& file, Machine* machine);

}  // namespace braid::tune
