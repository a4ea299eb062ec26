// The copy-engine path's reducer kernel (ce_work.h has the scheme): one launch per call, on the
// call's stream, while the rank's copy engines push the bulk bytes. Every CTA takes its part of each
// chunk (the same cut on every CTA count) and waits for the chunk's words itself; the last CTA done
// with a chunk raises the words that tell the copy engines (its own and its peers'):
//   all-reduce      for each chunk k: reduce k (own input with each peer's RS slot into the output),
//                   then copy chunk k - 1 of each peer's shard out of its AG slot
//   reduce-scatter  reduce each chunk
//   all-gather      for each chunk: copy the own input's chunk into the output (out of place), then
//                   each peer's chunk out of its AG slot
//   broadcast       once every peer's streams began the call, the root copies each chunk of its
//                   input into its output (out of place); every other rank copies each chunk out
//                   of its AG slot for the root
// The AG copies trail the reductions by one chunk so that a peer's AG push (which waits for its
// own reduction of that chunk) is not awaited before this rank has reduced the chunk that peer
// needed from it. At the end the last CTA clears its counters and the words it waited on in its
// peers' blocks, then tells each peer it is done.
#pragma once

#include "algo/work.h"
#include "device/ce_work.h"
#include "device/move_many.cuh"
#include "device/moves.cuh"
#include "device/prims.cuh"

namespace braid::device {
namespace {

__device__ __forceinline__ CeWords* ceWords(char* region) { return reinterpret_cast<CeWords*>(region); }

__device__ __forceinline__ void storeVolatile32(uint32_t* p, uint32_t v) { *static_cast<volatile uint32_t*>(p) = v; }

// A raise of a word in a peer's block that its side streams wait on: a maximum, so that a peer that
// aborted and raised its words to the top (releaseStreams, or its host) keeps them there while this
// rank still runs (a plain store could lower one under a stream that then waits forever: the CPU
// model in tests/unit/copy_engine_protocol_test.cc found it). Needs native peer atomics
// (openCopyEngines checks).
__device__ __forceinline__ void raisePeerWord(uint32_t* p, uint32_t v) { atomicMax_system(p, v); }

// Spins until *p >= target (a peer's word); false on abort.
__device__ __forceinline__ bool waitWord(const uint32_t* p, uint32_t target, const KernelArgs& a, LaneWait* wait,
                                         int peer) {
  int spins = 0;
  uint32_t seen;
  while ((seen = *static_cast<const volatile uint32_t*>(p)) < target) {
    if (++spins == 4096) {
      spins = 0;
      noteWait(wait, a.launch, WaitWhat::kSlotFilled, peer, target, seen);
      if (*a.abortFlag) return false;
    }
  }
  return true;
}

class CeReducer {
 public:
  __device__ explicit CeReducer(const CeKernelArgs& k)
      : k_(k),
        a_(k.base),
        p_(k.plan),
        n_(k.base.work.nranks),
        me_(k.base.work.rank),
        es_(elemSizeOf(k.call.type)),
        wait_(laneWait(k.base, 0)),
        lane_{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), 1, k.base.abortFlag, wait_, k.base.launch} {}

  __device__ void run() {
    aborted_ = *a_.abortFlag != 0;
    if (!ok()) {
      releaseStreams();
      return;
    }
    if (p_.reduces && p_.gathers) {
      for (uint32_t c = 0; c < p_.chunks && ok(); ++c) {
        reduce(c);
        if (c > 0) gatherAll(c - 1);
      }
      if (p_.chunks > 0) gatherAll(p_.chunks - 1);
    } else if (p_.reduces) {
      for (uint32_t c = 0; c < p_.chunks && ok(); ++c) reduce(c);
    } else if (p_.coll == static_cast<int>(algo::Coll::kBroadcast)) {
      // Every peer's streams began this call (exec/ce_program.cc says why).
      waitPeers([&](CeWords* w) { return &w->sent[me_]; }, -1, 1);
      for (uint32_t c = 0; c < p_.chunks && ok(); ++c) me_ == p_.root ? copyOwn(c) : gather(p_.root, c);
    } else {
      for (uint32_t c = 0; c < p_.chunks && ok(); ++c) {
        copyOwn(c);
        gatherAll(c);
      }
    }
    finish();
  }

 private:
  __device__ bool ok() const { return !aborted_; }
  __device__ CeWords* words(int q) const { return ceWords(k_.regions[q]); }
  __device__ const char* input(size_t elem) const { return static_cast<const char*>(k_.call.input) + elem * es_; }
  __device__ char* output(size_t elem) const { return static_cast<char*>(k_.call.output) + elem * es_; }
  __device__ char* slot(bool gather, int from, uint32_t chunk) const {
    return k_.regions[me_] +
           ceSlotOffset(gather, ceSlotOwner(from, me_, n_), static_cast<int>(chunk % kCeDepth), n_, k_.slotBytes);
  }
  // This CTA's part of a chunk of `elems` elements.
  __device__ algo::Range part(size_t elems) const {
    return algo::channelRange(elems, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x));
  }
  // Thread 0 waits for word `field` of each listed peer's block (for this rank) to reach target.
  template <class Field>
  __device__ void waitPeers(Field field, int only, uint32_t target) {
    __shared__ int stop;
    if (threadIdx.x == 0) {
      stop = 0;
      for (int d = 1; d < n_ && !stop; ++d) {
        const int q = (me_ + d) % n_;
        if (only >= 0 && q != only) continue;
        if (!waitWord(field(words(q)), target, a_, wait_, q)) stop = 1;
      }
    }
    __syncthreads();
    aborted_ = aborted_ || stop;
  }
  // After this CTA's moves of a chunk: the CTA that completes `counter`'s round (round + 1 CTAs each)
  // returns true on thread 0, every write of every CTA of the round visible to the system.
  __device__ bool lastOfRound(uint32_t* counter, uint32_t round) {
    __syncthreads();
    if (threadIdx.x != 0) return false;
    // System scope: a remote word this CTA raised as the last of an earlier round is ordered
    // before this arrival too, so the CTA that says `done` to a peer comes after it.
    __threadfence_system();
    const uint32_t before = atomicAdd(counter, 1u);
    if (before + 1 != (round + 1) * gridDim.x) return false;
    __threadfence_system();
    return true;
  }

  // Chunk c of this rank's shard: its own input's and every peer's RS slot, reduced into the output.
  __device__ void reduce(uint32_t c) {
    waitPeers([&](CeWords* w) { return &w->sent[me_]; }, -1, c + 1);
    if (!ok()) return;
    const algo::Range chunk = ceChunk(p_, me_, n_, c);
    const algo::Range mine = part(chunk.size());
    const size_t out = p_.coll == static_cast<int>(algo::Coll::kAllReduce) ? 0 : p_.count * me_;
    if (mine.size() > 0) {
      const char* srcs[kMaxOneShotRanks];
      srcs[0] = input(chunk.begin + mine.begin);
      for (int d = 1; d < n_; ++d) srcs[d] = slot(false, (me_ + d) % n_, c) + mine.begin * es_;
      char* dst = output(chunk.begin - out + mine.begin);
      directMove(srcs, n_, &dst, 1, mine.size(), k_.call.type, k_.call.op, k_.call.postOp ? n_ : 0, lane_);
    }
    if (lastOfRound(&words(me_)->rsCtas[c % kCeDepth], c / kCeDepth)) {
      for (int d = 1; d < n_; ++d) raisePeerWord(&words((me_ + d) % n_)->freed[me_], c + 1);
      storeVolatile32(&words(me_)->reduced, c + 1);
    }
  }

  // Chunk c of peer q's shard, out of its AG slot into the output.
  __device__ void gather(int q, uint32_t c) {
    waitPeers([&](CeWords* w) { return &w->gsent[me_]; }, q, c + 1);
    if (!ok()) return;
    const algo::Range chunk = ceChunk(p_, q, n_, c);
    const algo::Range mine = part(chunk.size());
    if (mine.size() > 0) {
      const char* src = slot(true, q, c) + mine.begin * es_;
      char* dst = output(chunk.begin + mine.begin);
      directMove(&src, 1, &dst, 1, mine.size(), k_.call.type, k_.call.op, 0, lane_);
    }
    if (lastOfRound(&words(me_)->agCtas[ceSlotOwner(q, me_, n_)][c % kCeDepth], c / kCeDepth))
      raisePeerWord(&words(q)->gfreed[me_], c + 1);
  }
  __device__ void gatherAll(uint32_t c) {
    for (int d = 1; d < n_ && ok(); ++d) gather((me_ + d) % n_, c);
  }

  // All-gather (broadcast's root): chunk c of this rank's own block, from its input into the output
  // (not in place).
  __device__ void copyOwn(uint32_t c) {
    const algo::Range chunk = ceChunk(p_, me_, n_, c);
    const size_t shift = p_.coll == static_cast<int>(algo::Coll::kAllGather) ? p_.count * me_ : 0;
    if (input(chunk.begin - shift) == output(chunk.begin)) return;
    const algo::Range mine = part(chunk.size());
    if (mine.size() == 0) return;
    const char* src = input(chunk.begin - shift + mine.begin);
    char* dst = output(chunk.begin + mine.begin);
    directMove(&src, 1, &dst, 1, mine.size(), k_.call.type, k_.call.op, 0, lane_);
    __syncthreads();  // (the next chunk's moves may use the same threads' shared state)
  }

  // After an abort: this rank's side streams of this call may wait for words no kernel will raise
  // now. Raised to the top, they drain (their data is of no use any more), and the call's memset,
  // queued after them, then runs, so a call queued behind this one finds its stream free to abort
  // the same way.
  __device__ void releaseStreams() {
    if (threadIdx.x != 0) return;
    CeWords* own = words(me_);
    for (int q = 0; q < n_; ++q) {
      storeVolatile32(&own->freed[q], 0x7fffffffu);
      storeVolatile32(&own->gfreed[q], 0x7fffffffu);
      storeVolatile32(&own->done[q], 0x7fffffffu);
    }
    storeVolatile32(&own->reduced, 0x7fffffffu);
    __threadfence_system();
  }

  // The call is over for this CTA; the last one clears the counters and the words it waited on
  // (before a peer's next call can raise them again: the peer waits for `done` first), then says
  // done to each peer.
  __device__ void finish() {
    if (!ok()) {  // the communicator is unusable from here on
      releaseStreams();
      return;
    }
    CeWords* own = words(me_);
    if (!lastOfRound(&own->exited, 0)) return;
    for (int i = 0; i < kCeDepth; ++i) {
      storeVolatile32(&own->rsCtas[i], 0);
      for (int q = 0; q < kMaxOneShotRanks; ++q) storeVolatile32(&own->agCtas[q][i], 0);
    }
    storeVolatile32(&own->exited, 0);
    for (int d = 1; d < n_; ++d) {
      CeWords* w = words((me_ + d) % n_);
      storeVolatile32(&w->sent[me_], 0);
      storeVolatile32(&w->gsent[me_], 0);
    }
    __threadfence_system();
    for (int d = 1; d < n_; ++d) raisePeerWord(&words((me_ + d) % n_)->done[me_], 1);
  }

  const CeKernelArgs& k_;
  const KernelArgs& a_;
  const CePlan& p_;
  const int n_, me_;
  const size_t es_;
  LaneWait* wait_;
  const LaneCtx lane_;
  bool aborted_ = false;
};

}  // namespace
}  // namespace braid::device
