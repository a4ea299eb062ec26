#include "algo/trace.h"

#include <algorithm>

namespace braid::algo {
namespace {

// An element's longest chain of hops so far.
struct Depth {
  int hops = 0;
  static Depth reduce(Depth a, Depth b) { return Depth{std::max(a.hops, b.hops)}; }
  static Depth post(Depth a) { return a; }
  static Depth hop(Depth a) { return Depth{a.hops + 1}; }
  static Depth store(Depth, Depth v) { return v; }
};

}  // namespace

TraceResult traceCollective(const Geometry& g, const CallShape& call, int fifoSlots) {
  const int n = static_cast<int>(g.ringOrder.size());
  std::vector<std::vector<Depth>> inputs(n), outputs(n);
  for (int r = 0; r < n; ++r) {
    inputs[r].assign(inputElems(call.coll, call.count, n), Depth{});
    outputs[r].assign(outputElems(call.coll, call.count, n), Depth{});
  }
  Simulator<Depth> sim(recordCall(g, call), fifoSlots, &inputs, &outputs);
  TraceResult t;
  if (!sim.run()) {
    t.error = sim.error();
    return t;
  }
  for (const auto& out : outputs) {
    for (const Depth& d : out) t.steps = std::max(t.steps, d.hops);
  }
  t.links = sim.links();
  t.maxLinkElems = t.links.maxElems();
  std::vector<size_t> egress(n, 0);
  for (const auto& kv : t.links.elems) {
    t.totalElems += kv.second;
    egress[kv.first.first] += kv.second;
  }
  for (size_t e : egress) t.maxRankSendElems = std::max(t.maxRankSendElems, e);
  t.ok = true;
  return t;
}

}  // namespace braid::algo
