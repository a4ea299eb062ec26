// TracePrims: what a call costs, counted on the same programs the symbolic proof checks.
//
//   steps        the longest chain of link hops any output element depends on (ring all-reduce:
//                2(n-1); tree: 2 x depth) -- the latency term of the cost model
//   link load    elements sent over each (rank -> peer) link, and the largest
//   rank egress  elements each rank sends in all (what its NIC or NVLink port carries), the largest
//                -- with the link load, the bandwidth term
#pragma once

#include <string>

#include "algo/geometry.h"
#include "algo/simulator.h"

namespace braid::algo {

struct TraceResult {
  bool ok = false;
  std::string error;
  int steps = 0;
  size_t maxLinkElems = 0;
  size_t maxRankSendElems = 0;
  size_t totalElems = 0;
  LinkLoad links;
};

TraceResult traceCollective(const Geometry& g, const CallShape& call, int fifoSlots);

}  // namespace braid::algo
