// The copy-engine path's protocol on the CPU (device/ce_work.h, exec/ce_program.h): each rank's
// side streams run the very ops cuda_ce.cc queues (cePeerProgram), its reducer kernel is a model of
// ce.cuh's schedule on 1 or 3 CTAs (the same waits, moves and raises, in its order; each CTA moves
// its part of a chunk and arrives at the chunk's counter, and the one that completes the counter's
// round raises the words, those in a peer's block as a maximum), and each rank's call ends with the
// memset of its own words once its kernel and streams are done; the next call of a rank starts only
// then, while its peers may still be in the previous one. A random scheduler (agents of random
// speeds) runs one step of an agent that is not blocked, for many seeds: every call of every rank
// must end (no state where all wait, no counter past its round) with the result the reference
// gives, for all-reduce, reduce-scatter, all-gather and broadcast, out of place and in place, 2 to
// 4 ranks, one to many chunks per slot depth (and empty shards), and calls of the four mixed; ranks
// that abort at random times must still end every call. Programs with one kind of wait removed, or
// kernels that raise a peer's words by plain stores where ranks abort, must be caught.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "exec/ce_program.h"

namespace braid::exec {
namespace {

using device::CePlan;
using device::CeWords;
using device::kCeDepth;

// A step of a rank's reducer kernel (the model of ce.cuh): every CTA runs the same steps, each on
// its part of a chunk; after a chunk's moves it arrives at the chunk's counter, and the steps marked
// ifLast run only on the CTA that completed the counter's round.
struct KernelOp {
  enum class Kind { kWaitPeer, kReduce, kGather, kCopyOwn, kArrive, kClearCounters, kRaisePeer, kRaiseOwn } kind;
  int peer = 0;  // whose block: kWaitPeer, kRaisePeer; the sender: kGather
  CeWord word = CeWord::kSent;
  uint32_t value = 0;
  uint32_t chunk = 0;
  bool ifLast = false;
  uint32_t* (*counter)(CeWords*, int owner, uint32_t chunk) = nullptr;  // kArrive: which, in own words
  int owner = 0;                                                        // kArrive: agCtas' first index
  uint32_t round = 0;                                                   // kArrive
};

uint32_t* rsCounter(CeWords* w, int, uint32_t c) { return &w->rsCtas[c % kCeDepth]; }
uint32_t* agCounter(CeWords* w, int owner, uint32_t c) { return &w->agCtas[owner][c % kCeDepth]; }
uint32_t* exitCounter(CeWords* w, int, uint32_t) { return &w->exited; }

// ce.cuh's CeReducer::run, step by step: reduce chunk c (waiting for every peer's RS push), then
// gather chunk c - 1 from each peer (each after its AG push); at the end the last CTA clears its
// counters and the push words it waited on in each peer's block, and says done to each.
std::vector<KernelOp> kernelProgram(const CePlan& p, int me, int n) {
  std::vector<KernelOp> ops;
  auto peers = [&](const std::function<void(int)>& f) {
    for (int d = 1; d < n; ++d) f((me + d) % n);
  };
  auto raisePeer = [&](int q, CeWord w, uint32_t v) {
    KernelOp op{KernelOp::Kind::kRaisePeer, q, w, v};
    op.ifLast = true;
    ops.push_back(op);
  };
  auto arrive = [&](uint32_t* (*counter)(CeWords*, int, uint32_t), int owner, uint32_t c, uint32_t round) {
    KernelOp op{KernelOp::Kind::kArrive};
    op.counter = counter;
    op.owner = owner;
    op.chunk = c;
    op.round = round;
    ops.push_back(op);
  };
  auto reduce = [&](uint32_t c) {
    peers([&](int q) { ops.push_back({KernelOp::Kind::kWaitPeer, q, CeWord::kSent, c + 1}); });
    ops.push_back({KernelOp::Kind::kReduce, 0, CeWord::kSent, 0, c});
    arrive(rsCounter, 0, c, c / kCeDepth);
    peers([&](int q) { raisePeer(q, CeWord::kFreed, c + 1); });
    KernelOp own{KernelOp::Kind::kRaiseOwn, me, CeWord::kReduced, c + 1};
    own.ifLast = true;
    ops.push_back(own);
  };
  auto gather = [&](int q, uint32_t c) {
    ops.push_back({KernelOp::Kind::kWaitPeer, q, CeWord::kGsent, c + 1});
    ops.push_back({KernelOp::Kind::kGather, q, CeWord::kSent, 0, c});
    arrive(agCounter, device::ceSlotOwner(q, me, n), c, c / kCeDepth);
    raisePeer(q, CeWord::kGfreed, c + 1);
  };
  auto gatherAll = [&](uint32_t c) { peers([&](int q) { gather(q, c); }); };
  if (p.reduces && p.gathers) {
    for (uint32_t c = 0; c < p.chunks; ++c) {
      reduce(c);
      if (c > 0) gatherAll(c - 1);
    }
    if (p.chunks > 0) gatherAll(p.chunks - 1);
  } else if (p.reduces) {
    for (uint32_t c = 0; c < p.chunks; ++c) reduce(c);
  } else if (p.coll == static_cast<int>(algo::Coll::kBroadcast)) {
    peers([&](int q) { ops.push_back({KernelOp::Kind::kWaitPeer, q, CeWord::kSent, 1}); });
    for (uint32_t c = 0; c < p.chunks; ++c) {
      if (me == p.root) {
        ops.push_back({KernelOp::Kind::kCopyOwn, 0, CeWord::kSent, 0, c});
      } else {
        gather(p.root, c);
      }
    }
  } else {
    for (uint32_t c = 0; c < p.chunks; ++c) {
      ops.push_back({KernelOp::Kind::kCopyOwn, 0, CeWord::kSent, 0, c});
      gatherAll(c);
    }
  }
  arrive(exitCounter, 0, 0, 0);
  KernelOp clear{KernelOp::Kind::kClearCounters};
  clear.ifLast = true;
  ops.push_back(clear);
  peers([&](int q) {
    raisePeer(q, CeWord::kSent, 0);
    raisePeer(q, CeWord::kGsent, 0);
  });
  peers([&](int q) { raisePeer(q, CeWord::kDone, 1); });
  return ops;
}

struct Config {
  algo::Coll coll;
  int nranks;
  size_t count;       // the call's count (per rank's block for all-gather and reduce-scatter)
  size_t chunkElems;  // a slot's elements
  bool inPlace;
  int ctas = 1;  // the reducer's
};

std::string describe(const Config& c) {
  return std::string(algo::collName(c.coll)) + ", " + std::to_string(c.nranks) + " ranks count " +
         std::to_string(c.count) + " slot " + std::to_string(c.chunkElems) + (c.inPlace ? " in place" : "") + " " +
         std::to_string(c.ctas) + " CTAs";
}

// The world of the model: each rank's words, slots and one buffer holding its input and output
// (the same elements when in place, as the real call's pointers would be).
class Model {
 public:
  using Programs = std::function<std::vector<CeOp>(const CePlan&, int, int, int)>;

  // `sequence`: the collectives of the calls, in order (the same on every rank); Config::coll is
  // ignored.
  Model(const Config& c, std::vector<algo::Coll> sequence, Programs programs, uint32_t seed)
      : c_(c),
        n_(c.nranks),
        sequence_(std::move(sequence)),
        calls_(static_cast<int>(sequence_.size())),
        programs_(std::move(programs)),
        rng_(seed),
        ranks_(c.nranks) {
    for (int r = 0; r < n_; ++r) {
      Rank& k = ranks_[r];
      k.slots.assign(2 * (n_ - 1) * kCeDepth, std::vector<int64_t>(c.chunkElems, -1));
      k.mem.assign(2 * c.count * n_, 0);
      startCall(r);
    }
  }
  Model(const Config& c, int calls, Programs programs, uint32_t seed)
      : Model(c, std::vector<algo::Coll>(calls, c.coll), std::move(programs), seed) {}

  // Each rank aborts at a random step below `before` (each at its own; one that ends first does
  // not): its host raises its words to the top once (CudaEngine::unblockCopyEngines), and each of
  // its CTAs, at its next step, does the same and exits (ce.cuh's releaseStreams). Results are no
  // longer checked once a rank aborted; every call of every rank must still end. `maxRaises`: the
  // kernels raise a peer's freed, gfreed and done words as a maximum (ce.cuh's atomicMax), which a
  // later raise cannot lower; false: plain stores.
  void abortEach(long before, bool maxRaises) {
    std::uniform_int_distribution<long> at(0, before);
    for (Rank& k : ranks_) k.abortAt = at(rng_);
    maxRaises_ = maxRaises;
  }

  // Runs to the end under `seed`'s schedule: "" or what went wrong. Each agent (a kernel or a side
  // stream, of one call) draws a speed between 1 and 2^-12 when its call starts, and the next step
  // goes to a runnable agent with odds in proportion: some agent is often far behind the others,
  // the schedules a uniform draw almost never makes (a rank through a whole call while one peer's
  // stream sits still).
  std::string run() {
    std::vector<Agent*> runnable;
    std::uniform_real_distribution<double> draw(0, 1);
    for (long steps = 0; steps < 10'000'000; ++steps) {
      for (int r = 0; r < n_; ++r) {
        if (ranks_[r].abortAt == steps) abort(r);
      }
      runnable.clear();
      double total = 0;
      bool allDone = true;
      for (Rank& k : ranks_) {
        if (k.call >= calls_) continue;
        allDone = false;
        for (Agent& a : k.agents) {
          if (a.finished() || blocked(a)) continue;
          runnable.push_back(&a);
          total += a.speed;
        }
      }
      if (allDone) return "";
      if (runnable.empty()) {
        // Time passes: the next abort due comes now, or nothing will move again.
        int next = -1;
        for (int r = 0; r < n_; ++r) {
          if (ranks_[r].abortAt > steps && (next < 0 || ranks_[r].abortAt < ranks_[next].abortAt)) next = r;
        }
        if (next < 0) return "no agent can move (a deadlock): " + state();
        abort(next);
        continue;
      }
      double at = draw(rng_) * total;
      Agent* a = runnable.back();
      for (Agent* b : runnable) {
        if ((at -= b->speed) < 0) {
          a = b;
          break;
        }
      }
      if (std::string e = step(*a); !e.empty()) return e;
      Rank& k = ranks_[a->rank];
      bool over = true;
      for (const Agent& b : k.agents) over = over && b.finished();
      if (over) {
        if (std::string e = endCall(a->rank); !e.empty()) return e;
      }
    }
    return "no end within the step bound";
  }

 private:
  struct Agent {
    int rank = 0;
    int peer = -1;  // -1: a CTA of the kernel
    int cta = 0;
    bool last = false;  // this CTA completed the round of its latest arrival
    std::vector<CeOp> side;
    std::vector<KernelOp> kernel;
    size_t pc = 0;
    double speed = 1;
    bool finished() const { return peer < 0 ? pc >= kernel.size() : pc >= side.size(); }
  };
  struct Rank {
    CeWords words{};
    std::vector<std::vector<int64_t>> slots;
    std::vector<int64_t> mem;
    // The current call's collective, plan and buffers.
    algo::Coll coll = algo::Coll::kAllReduce;
    CePlan plan;
    size_t inElems = 0, outElems = 0, inAt = 0, outAt = 0;
    int call = 0;
    long abortAt = -1;  // the step at which it aborts (-1: never)
    bool aborted = false;
    std::vector<Agent> agents;
  };

  int64_t inputValue(int call, int r, size_t i) const {
    return static_cast<int64_t>(call + 1) * 1000003 + r * 1009 + static_cast<int64_t>(i);
  }
  std::vector<int64_t>& slot(int receiver, bool gather, int from, uint32_t chunk) {
    const int owner = device::ceSlotOwner(from, receiver, n_);
    return ranks_[receiver].slots[(gather ? (n_ - 1) * kCeDepth : 0) + owner * kCeDepth + chunk % kCeDepth];
  }
  int64_t& in(int r, size_t i) { return ranks_[r].mem[ranks_[r].inAt + i]; }
  int64_t& out(int r, size_t i) { return ranks_[r].mem[ranks_[r].outAt + i]; }

  void startCall(int r) {
    Rank& k = ranks_[r];
    k.agents.clear();
    if (k.call >= calls_) return;
    const size_t count = c_.count;
    k.coll = sequence_[k.call];
    k.plan = device::cePlan(k.coll, count, sizeof(int64_t), n_, c_.chunkElems * sizeof(int64_t), k.call % n_);
    const bool whole = k.coll == algo::Coll::kAllReduce || k.coll == algo::Coll::kBroadcast;
    const size_t total = whole ? count : count * n_;
    k.inElems = k.coll == algo::Coll::kAllGather ? count : total;
    k.outElems = k.coll == algo::Coll::kReduceScatter ? count : total;
    k.inAt = c_.inPlace && k.coll == algo::Coll::kAllGather ? count * r : 0;
    k.outAt = !c_.inPlace ? k.inElems : k.coll == algo::Coll::kReduceScatter ? count * r : 0;
    for (size_t i = 0; i < k.inElems; ++i) in(r, i) = inputValue(k.call, r, i);
    std::uniform_real_distribution<double> exponent(0, 12);
    const std::vector<KernelOp> program = kernelProgram(k.plan, r, n_);
    for (int cta = 0; cta < c_.ctas; ++cta) {
      Agent kernel;
      kernel.rank = r;
      kernel.cta = cta;
      kernel.speed = std::exp2(-exponent(rng_));
      kernel.kernel = program;
      k.agents.push_back(kernel);
    }
    for (int q = 0; q < n_; ++q) {
      if (q == r) continue;
      Agent side;
      side.rank = r;
      side.peer = q;
      side.speed = std::exp2(-exponent(rng_));
      side.side = programs_(k.plan, r, q, n_);
      k.agents.push_back(side);
    }
  }

  // This rank's own words raised to the top: what its host does once at an abort and each of its
  // CTAs on its way out.
  void release(int r) {
    CeWords& w = ranks_[r].words;
    for (int q = 0; q < n_; ++q) w.freed[q] = w.gfreed[q] = w.done[q] = 0x7fffffffu;
    w.reduced = 0x7fffffffu;
  }
  void abort(int r) {
    ranks_[r].aborted = anyAborted_ = true;
    ranks_[r].abortAt = -1;
    release(r);
  }

  // The call's stream: the memset of the words its streams waited on, the result checked against
  // the reference, then the next call.
  std::string endCall(int r) {
    Rank& k = ranks_[r];
    std::memset(&k.words, 0, device::kCeClearedBytes);
    const int call = k.call;
    for (size_t i = 0; i < k.outElems && !anyAborted_; ++i) {
      int64_t want = 0;
      if (k.coll == algo::Coll::kAllGather) {
        want = inputValue(call, static_cast<int>(i / c_.count), i % c_.count);
      } else if (k.coll == algo::Coll::kBroadcast) {
        want = inputValue(call, k.plan.root, i);
      } else {
        const size_t at = k.coll == algo::Coll::kReduceScatter ? c_.count * r + i : i;
        for (int q = 0; q < n_; ++q) want += inputValue(call, q, at);
      }
      if (out(r, i) != want) {
        return std::string(algo::collName(k.coll)) + " call " + std::to_string(call) + " rank " + std::to_string(r) +
               " element " + std::to_string(i) + ": " + std::to_string(out(r, i)) + ", the reference " +
               std::to_string(want);
      }
    }
    ++k.call;
    startCall(r);
    return "";
  }

  bool blocked(const Agent& a) {
    if (a.peer >= 0) {
      const CeOp& op = a.side[a.pc];
      return op.kind == CeOp::Kind::kWait && *ceWordIn(&ranks_[a.rank].words, op.word, op.peer) < op.value;
    }
    const KernelOp& op = a.kernel[a.pc];
    if (ranks_[a.rank].aborted) return false;  // it sees the abort flag while it waits
    // A rank's word for this rank (`me`) in peer q's block.
    return op.kind == KernelOp::Kind::kWaitPeer && *ceWordIn(&ranks_[op.peer].words, op.word, a.rank) < op.value;
  }

  std::string step(Agent& a) {
    const int me = a.rank;
    if (a.peer >= 0) {
      const CeOp& op = a.side[a.pc++];
      if (op.kind == CeOp::Kind::kRaise) *ceWordIn(&ranks_[me].words, op.word, op.peer) = op.value;
      if (op.kind == CeOp::Kind::kCopy) {
        if (op.elems > c_.chunkElems) return "a copy larger than its slot";
        std::vector<int64_t>& dst = slot(op.peer, op.gather, me, op.chunk);
        for (size_t i = 0; i < op.elems; ++i) dst[i] = op.fromOutput ? out(me, op.srcElem + i) : in(me, op.srcElem + i);
      }
      return "";
    }
    if (ranks_[me].aborted) {
      release(me);
      a.pc = a.kernel.size();
      return "";
    }
    const KernelOp& op = a.kernel[a.pc++];
    if (op.ifLast && !a.last) return "";
    // This CTA's part of a chunk of `elems` elements.
    auto part = [&](size_t elems) { return algo::channelRange(elems, a.cta, c_.ctas); };
    switch (op.kind) {
      case KernelOp::Kind::kWaitPeer: break;
      case KernelOp::Kind::kArrive: {
        uint32_t* counter = op.counter(&ranks_[me].words, op.owner, op.chunk);
        const uint32_t before = (*counter)++;
        const uint32_t roundEnd = (op.round + 1) * static_cast<uint32_t>(c_.ctas);
        // (Once a peer aborted, its pushes no longer wait for this rank's kernel, whose CTAs may then
        // mix rounds: garbage that this rank's own abort ends.)
        if (before + 1 > roundEnd && !anyAborted_)
          return "rank " + std::to_string(me) + " CTA " + std::to_string(a.cta) + ": a counter past its round";
        a.last = before + 1 == roundEnd;
        break;
      }
      case KernelOp::Kind::kClearCounters: {
        CeWords& w = ranks_[me].words;
        std::memset(w.rsCtas, 0, sizeof(w.rsCtas));
        std::memset(w.agCtas, 0, sizeof(w.agCtas));
        w.exited = 0;
        break;
      }
      case KernelOp::Kind::kRaisePeer: {
        uint32_t* word = ceWordIn(&ranks_[op.peer].words, op.word, me);
        const bool max = maxRaises_ && op.word != CeWord::kSent && op.word != CeWord::kGsent;
        *word = max ? std::max(*word, op.value) : op.value;
        break;
      }
      case KernelOp::Kind::kRaiseOwn: *ceWordIn(&ranks_[me].words, op.word, 0) = op.value; break;
      case KernelOp::Kind::kReduce: {
        const algo::Range chunk = device::ceChunk(ranks_[me].plan, me, n_, op.chunk);
        const size_t shift = ranks_[me].coll == algo::Coll::kAllReduce ? 0 : c_.count * me;
        const algo::Range mine = part(chunk.size());
        for (size_t i = mine.begin; i < mine.end; ++i) {
          int64_t sum = in(me, chunk.begin + i);
          for (int q = 0; q < n_; ++q) {
            if (q != me) sum += slot(me, false, q, op.chunk)[i];
          }
          out(me, chunk.begin - shift + i) = sum;
        }
        break;
      }
      case KernelOp::Kind::kGather: {
        const algo::Range chunk = device::ceChunk(ranks_[me].plan, op.peer, n_, op.chunk);
        const algo::Range mine = part(chunk.size());
        for (size_t i = mine.begin; i < mine.end; ++i) out(me, chunk.begin + i) = slot(me, true, op.peer, op.chunk)[i];
        break;
      }
      case KernelOp::Kind::kCopyOwn: {
        const algo::Range chunk = device::ceChunk(ranks_[me].plan, me, n_, op.chunk);
        const size_t shift = ranks_[me].coll == algo::Coll::kAllGather ? c_.count * me : 0;
        const algo::Range mine = part(chunk.size());
        for (size_t i = mine.begin; i < mine.end; ++i) out(me, chunk.begin + i) = in(me, chunk.begin - shift + i);
        break;
      }
    }
    return "";
  }

  std::string state() {
    std::string s;
    for (const Rank& k : ranks_) {
      for (const Agent& a : k.agents) {
        s += "[rank " + std::to_string(a.rank) +
             (a.peer < 0 ? " CTA " + std::to_string(a.cta) : " stream to " + std::to_string(a.peer)) + " call " +
             std::to_string(k.call) + " op " + std::to_string(a.pc) + "] ";
      }
    }
    return s;
  }

  Config c_;
  int n_;
  std::vector<algo::Coll> sequence_;
  int calls_;
  Programs programs_;
  std::mt19937 rng_;
  bool maxRaises_ = true;
  bool anyAborted_ = false;
  std::vector<Rank> ranks_;
};

std::vector<Config> configs() {
  std::vector<Config> all;
  for (algo::Coll coll :
       {algo::Coll::kAllReduce, algo::Coll::kReduceScatter, algo::Coll::kAllGather, algo::Coll::kBroadcast}) {
    for (int n : {2, 3, 4}) {
      for (bool inPlace : {false, true}) {
        // Shards empty (all-reduce of 1 element); one chunk; a few (fewer than the slots); many (each
        // slot reused), with a short last one.
        for (size_t count : {size_t{1}, size_t{5}, size_t{23}, size_t{97}}) {
          for (int ctas : {1, 3}) all.push_back({coll, n, count, 3, inPlace, ctas});
        }
      }
    }
  }
  return all;
}

TEST(CopyEngineProtocol, EveryInterleavingDrawnEndsWithTheReference) {
  for (const Config& c : configs()) {
    for (uint32_t seed = 1; seed <= 30; ++seed) {
      Model m(c, 3, cePeerProgram, seed);
      ASSERT_EQ(m.run(), "") << describe(c) << ", seed " << seed;
    }
  }
}

// Calls of different collectives back to back, as a training step issues them: a rank may start an
// all-gather while a peer's kernel still finishes its all-reduce, so what one collective leaves in
// the words (or the counters) must be right for the next.
TEST(CopyEngineProtocol, MixedCollectivesBackToBack) {
  using C = algo::Coll;
  const std::vector<C> sequence = {C::kAllReduce, C::kAllGather,     C::kBroadcast, C::kReduceScatter, C::kAllReduce,
                                   C::kBroadcast, C::kReduceScatter, C::kAllGather, C::kAllGather,     C::kAllReduce};
  for (int n : {2, 3, 4}) {
    for (bool inPlace : {false, true}) {
      for (size_t count : {size_t{1}, size_t{23}, size_t{97}}) {
        for (int ctas : {1, 3}) {
          const Config c{C::kAllReduce, n, count, 3, inPlace, ctas};
          for (uint32_t seed = 1; seed <= 15; ++seed) {
            Model m(c, sequence, cePeerProgram, seed);
            ASSERT_EQ(m.run(), "") << "mixed, " << describe(c) << ", seed " << seed;
          }
        }
      }
    }
  }
}

// Ranks that abort at different times, mid-call or between calls, still end every call: no side
// stream is left waiting for a word. That needs the kernels' raises into a peer's words to be
// maxima: a plain store from a peer still running could lower a word the aborted rank had raised
// to the top, and that rank's stream would wait for it forever.
TEST(CopyEngineProtocol, RanksAbortingAtAnyTimeEndEveryCall) {
  using C = algo::Coll;
  for (C coll : {C::kAllReduce, C::kReduceScatter, C::kAllGather, C::kBroadcast}) {
    for (int n : {2, 3, 4}) {
      for (int ctas : {1, 3}) {
        const Config c{coll, n, 97, 3, false, ctas};
        for (uint32_t seed = 1; seed <= 20; ++seed) {
          Model m(c, 3, cePeerProgram, seed);
          m.abortEach(1500, true);
          ASSERT_EQ(m.run(), "") << "aborts, " << describe(c) << ", seed " << seed;
        }
      }
    }
  }
  int caught = 0;
  for (uint32_t seed = 1; seed <= 200 && caught == 0; ++seed) {
    Model m(Config{C::kAllReduce, 3, 97, 3, false, 1}, 3, cePeerProgram, seed);
    m.abortEach(1500, false);
    if (!m.run().empty()) ++caught;
  }
  EXPECT_GT(caught, 0) << "plain stores never stranded a stream";
}

TEST(CopyEngineProtocol, ThePlansUseEverySlotMoreThanOnce) {
  // (so that the test above reuses slots: chunks > kCeDepth for the largest count)
  const CePlan p = device::cePlan(algo::Coll::kAllReduce, 97, sizeof(int64_t), 2, 3 * sizeof(int64_t));
  EXPECT_GT(p.chunks, static_cast<uint32_t>(2 * kCeDepth));
}

// The model catches a broken protocol: side streams without one kind of wait go wrong under some
// schedule (a slot refilled before its chunk was consumed, a word cleared after a peer's next call
// raised it, a result pushed before it was reduced) for each collective that needs it, with one
// chunk or many. (All-reduce's slot waits are implied by its others: its gather push waits for the
// receiver to have gathered an earlier chunk, which that kernel does only after reducing the chunk
// the slot held. The model finds no schedule without them that fails.)
TEST(CopyEngineProtocol, EachWaitIsNeededByACollective) {
  struct Needed {
    CeWord word;
    algo::Coll coll;
  };
  for (const Needed& need :
       {Needed{CeWord::kFreed, algo::Coll::kReduceScatter}, Needed{CeWord::kGfreed, algo::Coll::kAllGather},
        Needed{CeWord::kGfreed, algo::Coll::kBroadcast}, Needed{CeWord::kReduced, algo::Coll::kAllReduce},
        Needed{CeWord::kDone, algo::Coll::kAllReduce}, Needed{CeWord::kDone, algo::Coll::kReduceScatter},
        Needed{CeWord::kDone, algo::Coll::kAllGather}, Needed{CeWord::kDone, algo::Coll::kBroadcast}}) {
    auto without = [&](const CePlan& p, int me, int q, int n) {
      std::vector<CeOp> ops;
      for (const CeOp& op : cePeerProgram(p, me, q, n)) {
        if (!(op.kind == CeOp::Kind::kWait && op.word == need.word)) ops.push_back(op);
      }
      return ops;
    };
    int caught = 0;
    for (size_t count : {size_t{5}, size_t{97}}) {
      for (uint32_t seed = 1; seed <= 50 && caught == 0; ++seed) {
        Model m(Config{need.coll, 3, count, 3, false}, 3, without, seed);
        if (!m.run().empty()) ++caught;
      }
    }
    EXPECT_GT(caught, 0) << algo::collName(need.coll) << " without waits on word " << static_cast<int>(need.word);
  }
}

}  // namespace
}  // namespace braid::exec
