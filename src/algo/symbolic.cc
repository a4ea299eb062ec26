#include "algo/symbolic.h"

#include <algorithm>
#include <cstdint>
#include <map>

#include "algo/simulator.h"

namespace braid::algo {
namespace {

enum Fault : uint8_t { kNone = 0, kDuplicate, kMixedIndex, kReduceAfterPost, kDoublePost, kDoubleWrite };

const char* faultName(uint8_t f) {
  switch (f) {
    case kDuplicate: return "a rank's contribution counted twice";
    case kMixedIndex: return "elements of different source indices reduced together";
    case kReduceAfterPost: return "a post-processed (averaged) value reduced again";
    case kDoublePost: return "the post-operation applied twice";
    case kDoubleWrite: return "written twice";
    default: return "no fault";
  }
}

// One modelled element.
struct Sym {
  int64_t index = -1;  // source index; -1 = never written
  uint64_t mask = 0;   // contributing ranks
  bool posted = false;
  uint8_t fault = kNone;

  static Sym input(int rank, size_t i) { return Sym{static_cast<int64_t>(i), uint64_t{1} << rank, false, kNone}; }
  static Sym withFault(Sym s, uint8_t f) {
    if (s.fault == kNone) s.fault = f;
    return s;
  }
  static Sym reduce(Sym a, Sym b) {
    Sym r = a;
    r.fault = a.fault != kNone ? a.fault : b.fault;
    if (a.index != b.index) r = withFault(r, kMixedIndex);
    if ((a.mask & b.mask) != 0) r = withFault(r, kDuplicate);
    if (a.posted || b.posted) r = withFault(r, kReduceAfterPost);
    r.mask = a.mask | b.mask;
    return r;
  }
  static Sym post(Sym a) {
    if (a.posted) return withFault(a, kDoublePost);
    a.posted = true;
    return a;
  }
  static Sym hop(Sym a) { return a; }
  static Sym store(Sym old, Sym v) { return old.index >= 0 ? withFault(v, kDoubleWrite) : v; }
};

std::string describe(const Sym& s) {
  if (s.index < 0) return "nothing (never written)";
  std::string ranks;
  for (int r = 0; r < 64; ++r) {
    if (s.mask >> r & 1) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
  }
  return "index " + std::to_string(s.index) + " from ranks {" + ranks + "}" + (s.posted ? " posted" : "") +
         (s.fault != kNone ? std::string(" [") + faultName(s.fault) + "]" : "");
}

uint64_t allRanks(int n) { return n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

// What output element e of `rank` must hold; index -1 means "must stay unwritten".
Sym expected(const CallShape& c, int n, int rank, size_t e) {
  bool reduction = c.coll != Coll::kBroadcast && c.coll != Coll::kAllGather;
  Sym s{static_cast<int64_t>(e), allRanks(n), reduction && c.postOp, kNone};
  switch (c.coll) {
    case Coll::kBroadcast: s.mask = uint64_t{1} << c.root; break;
    case Coll::kReduce:
      if (rank != c.root) s = Sym{};
      break;
    case Coll::kAllGather:
      s.index = static_cast<int64_t>(e % c.count);
      s.mask = uint64_t{1} << (e / c.count);
      break;
    case Coll::kReduceScatter: s.index = static_cast<int64_t>(rank * c.count + e); break;
    default: break;
  }
  return s;
}

bool same(const Sym& a, const Sym& b) {
  return a.index == b.index && (a.index < 0 || (a.mask == b.mask && a.posted == b.posted)) && a.fault == kNone;
}

}  // namespace

ProofResult proveCollective(const Geometry& g, const CallShape& call, int fifoSlots) {
  const int n = static_cast<int>(g.ringOrder.size());
  ProofResult result;
  if (n < 1 || n > kMaxSymbolicRanks) {
    result.error = "symbolic proofs cover 1.." + std::to_string(kMaxSymbolicRanks) + " ranks";
    return result;
  }
  std::vector<std::vector<Sym>> inputs(n), outputs(n);
  for (int r = 0; r < n; ++r) {
    inputs[r].resize(inputElems(call.coll, call.count, n));
    for (size_t i = 0; i < inputs[r].size(); ++i) inputs[r][i] = Sym::input(r, i);
    outputs[r].assign(outputElems(call.coll, call.count, n), Sym{});
  }
  Simulator<Sym> sim(recordCall(g, call), fifoSlots, &inputs, &outputs);
  if (!sim.run()) {
    result.error = sim.error();
    return result;
  }
  for (int r = 0; r < n; ++r) {
    for (size_t e = 0; e < outputs[r].size(); ++e) {
      Sym want = expected(call, n, r, e);
      if (!same(outputs[r][e], want)) {
        result.error = "rank " + std::to_string(r) + " output element " + std::to_string(e) + " holds " +
                       describe(outputs[r][e]) + ", expected " + describe(want);
        return result;
      }
    }
  }
  result.ok = true;
  return result;
}

namespace {

// Records the two p2p lanes of every rank and channel.
std::vector<Program> recordP2p(const std::vector<P2pRank>& ranks, int nChannels, size_t chunkElems) {
  int n = static_cast<int>(ranks.size());
  std::vector<Program> programs;
  for (int r = 0; r < n; ++r) {
    std::vector<P2pOp> sends = ranks[r].sends, recvs = ranks[r].recvs;
    orderP2p(r, n, &sends, &recvs);
    for (int ch = 0; ch < nChannels; ++ch) {
      WorkArgs w;
      w.rank = r;
      w.nranks = n;
      w.channel = ch;
      w.nChannels = nChannels;
      w.chunkElems = chunkElems;
      Recorder sendRec, recvRec;
      p2pSendLane(sendRec, w, sends.data(), static_cast<int>(sends.size()));
      p2pRecvLane(recvRec, w, recvs.data(), static_cast<int>(recvs.size()));
      if (!sendRec.ops.empty()) programs.push_back(Program{r, ch, 0, std::move(sendRec.ops)});
      if (!recvRec.ops.empty()) programs.push_back(Program{r, ch, 1, std::move(recvRec.ops)});
    }
  }
  return programs;
}

}  // namespace

ProofResult proveP2p(const std::vector<P2pRank>& ranks, int nChannels, size_t chunkElems, int fifoSlots) {
  const int n = static_cast<int>(ranks.size());
  ProofResult result;
  if (n < 1 || n > kMaxSymbolicRanks) {
    result.error = "symbolic proofs cover 1.." + std::to_string(kMaxSymbolicRanks) + " ranks";
    return result;
  }
  // The k-th receive at t from q must hold the k-th send from q to t, element by element.
  std::map<std::pair<int, int>, std::vector<P2pOp>> sent;  // (q, t) -> q's sends to t, posting order
  for (int q = 0; q < n; ++q) {
    for (const P2pOp& s : ranks[q].sends) sent[{q, s.peer}].push_back(s);
  }
  std::vector<std::vector<Sym>> inputs(n), outputs(n), want(n);
  for (int r = 0; r < n; ++r) {
    inputs[r].resize(ranks[r].inputElems);
    for (size_t i = 0; i < inputs[r].size(); ++i) inputs[r][i] = Sym::input(r, i);
    outputs[r].assign(ranks[r].outputElems, Sym{});
    want[r].assign(ranks[r].outputElems, Sym{});
  }
  for (int t = 0; t < n; ++t) {
    std::map<int, size_t> taken;
    for (const P2pOp& rv : ranks[t].recvs) {
      auto& list = sent[{rv.peer, t}];
      size_t k = taken[rv.peer]++;
      if (k >= list.size() || list[k].count != rv.count) {
        result.error = "rank " + std::to_string(t) + " posts a receive from rank " + std::to_string(rv.peer) +
                       " that no send matches";
        return result;
      }
      for (size_t e = 0; e < rv.count; ++e) want[t][rv.offset + e] = Sym::input(rv.peer, list[k].offset + e);
    }
  }
  Simulator<Sym> sim(recordP2p(ranks, nChannels, chunkElems), fifoSlots, &inputs, &outputs);
  if (!sim.run()) {
    result.error = sim.error();
    return result;
  }
  for (int r = 0; r < n; ++r) {
    for (size_t e = 0; e < outputs[r].size(); ++e) {
      if (!same(outputs[r][e], want[r][e])) {
        result.error = "rank " + std::to_string(r) + " output element " + std::to_string(e) + " holds " +
                       describe(outputs[r][e]) + ", expected " + describe(want[r][e]);
        return result;
      }
    }
  }
  result.ok = true;
  return result;
}

std::vector<P2pRank> allToAllMessages(int nranks, size_t count) {
  std::vector<P2pRank> ranks(nranks);
  for (int r = 0; r < nranks; ++r) {
    ranks[r].inputElems = ranks[r].outputElems = count * nranks;
    for (int q = 0; q < nranks; ++q) {
      ranks[r].sends.push_back(P2pOp{q, q * count, count});
      ranks[r].recvs.push_back(P2pOp{q, q * count, count});
    }
  }
  return ranks;
}

}  // namespace braid::algo
