// The copy-engine path's plan and kernel parameter (device/ce.cuh, exec/cuda_ce.cc): plain structs
// and functions shared by the host, which queues the copies, and the reducer kernel, so this header
// includes no CUDA header.
//
// A call within one host whose ranks reach each other's memory moves its bulk bytes with the copy
// engines (cudaMemcpyAsync on side streams, one per peer) and keeps the SMs for reducing, in one
// reducer kernel per call on the call's stream:
//   reduce-scatter half  rank r's copy engine pushes chunk k of shard q of its input into q's RS slot
//                        for r, then raises its word sent[q]; q's kernel waits for every peer's
//                        word, reduces its own input's chunk with the slots into its output, and
//                        raises freed[q] in each peer's words (the slot may be refilled);
//   all-gather half      rank r's copy engine pushes chunk k of its result (all-reduce: its reduced
//                        shard, once its kernel raised `reduced`; all-gather: its input) into q's
//                        AG slot for r and raises gsent[q]; q's kernel copies the slot into its
//                        output and raises gfreed[q] in r's words;
//   broadcast            an all-gather half with one sender: the root's copy engine pushes each
//                        chunk of its input into every peer's AG slot for it; the root's kernel
//                        copies its input into its output (out of place).
// Each chunk of a shard goes through slot k % depth, so at most `depth` chunks per peer are in
// flight. Words count chunks from 0 within a call and start every call at 0, so a CUDA graph
// replays the same values: a kernel clears the words it waited on in its peers' blocks before it
// tells each peer it is done (done[...]); a rank's call ends, on its stream, when each peer said
// done, with a memset of the words its own streams waited on.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/collectives.h"
#include "algo/work.h"
#include "device/device_work.h"

namespace braid::device {

constexpr int kCeDepth = 4;     // slots per (peer, half)
constexpr int kMaxCeCtas = 64;  // the reducer's most CTAs
constexpr size_t kCeWordsBytes = 1024;

/// A rank's words, at the start of its copy-engine region; each indexed by the other rank p. The
/// words a rank's own streams wait on (freed, gfreed, done, reduced) come first, so one memset
/// clears them; the kernel's own counters after them.
struct CeWords {
  uint32_t freed[kMaxOneShotRanks];   // p's kernel: chunks of this rank's RS pushes it consumed
  uint32_t gfreed[kMaxOneShotRanks];  // p's kernel: chunks of this rank's AG pushes it copied out
  uint32_t done[kMaxOneShotRanks];    // p's kernel: 1 once its call is over
  uint32_t reduced;                   // this rank's kernel: chunks of its own shard reduced
  uint32_t pad0[7];
  // Cleared by the kernels that read them (the words above by this rank's stream):
  uint32_t sent[kMaxOneShotRanks];   // this rank's copy engine: RS chunks pushed to p
  uint32_t gsent[kMaxOneShotRanks];  // this rank's copy engine: AG chunks pushed to p
  // This rank's kernel alone (its last CTA clears them): CTAs done with each slot's chunk.
  uint32_t rsCtas[kCeDepth];
  uint32_t agCtas[kMaxOneShotRanks][kCeDepth];
  uint32_t exited;
};
static_assert(sizeof(CeWords) <= kCeWordsBytes, "the words fit their block");
/// Bytes of CeWords a rank's stream clears at the end of each call.
constexpr size_t kCeClearedBytes = offsetof(CeWords, sent);

/// Where a call's chunks lie: every rank's shard has `chunks` chunks of `chunkElems` elements (the
/// last ones of a short shard may be empty).
struct CePlan {
  int coll = 0;           // algo::Coll: all-reduce, reduce-scatter, all-gather or broadcast
  size_t count = 0;       // the call's count (per rank's block for all-gather and reduce-scatter)
  size_t chunkElems = 0;  // a slot's elements
  uint32_t chunks = 0;    // per shard
  bool reduces = false;   // a reduce-scatter half
  bool gathers = false;   // an all-gather half (broadcast: the root's pushes)
  int root = 0;           // broadcast
};

/// Rank q's shard of the call, in elements of the input's (RS) or output's (AG) layout.
BRAID_HOST_DEVICE inline algo::Range ceShard(const CePlan& p, int q, int nranks) {
  if (p.coll == static_cast<int>(algo::Coll::kAllReduce)) return algo::channelRange(p.count, q, nranks);
  if (p.coll == static_cast<int>(algo::Coll::kBroadcast)) return algo::Range{0, q == p.root ? p.count : 0};
  return algo::Range{p.count * static_cast<size_t>(q), p.count * static_cast<size_t>(q + 1)};
}

/// Chunk k of rank q's shard (maybe empty).
BRAID_HOST_DEVICE inline algo::Range ceChunk(const CePlan& p, int q, int nranks, uint32_t k) {
  const algo::Range s = ceShard(p, q, nranks);
  size_t b = s.begin + static_cast<size_t>(k) * p.chunkElems;
  size_t e = b + p.chunkElems;
  if (b > s.end) b = s.end;
  if (e > s.end) e = s.end;
  return algo::Range{b, e};
}

/// The plan of `coll` over `count` elements of `elemSize` bytes with slots of `slotBytes` (`root`:
/// broadcast's).
BRAID_HOST_DEVICE inline CePlan cePlan(algo::Coll coll, size_t count, size_t elemSize, int nranks, size_t slotBytes,
                                       int root = 0) {
  CePlan p;
  p.coll = static_cast<int>(coll);
  p.count = count;
  p.root = root;
  p.chunkElems = slotBytes / elemSize > 0 ? slotBytes / elemSize : 1;
  p.reduces = coll == algo::Coll::kAllReduce || coll == algo::Coll::kReduceScatter;
  p.gathers = coll == algo::Coll::kAllReduce || coll == algo::Coll::kAllGather || coll == algo::Coll::kBroadcast;
  size_t most = 0;
  for (int q = 0; q < nranks; ++q) {
    const algo::Range s = ceShard(p, q, nranks);
    if (s.size() > most) most = s.size();
  }
  p.chunks = static_cast<uint32_t>((most + p.chunkElems - 1) / p.chunkElems);
  return p;
}

/// Index of sender `from`'s slots in receiver `to`'s region: 0 .. nranks - 2.
BRAID_HOST_DEVICE inline int ceSlotOwner(int from, int to, int nranks) { return (from - to + nranks) % nranks - 1; }

/// A rank's copy-engine region: its words, then the RS slots and the AG slots, (nranks - 1) x
/// kCeDepth of `slotBytes` each, by ceSlotOwner.
BRAID_HOST_DEVICE inline size_t ceRegionBytes(int nranks, size_t slotBytes) {
  return kCeWordsBytes + 2 * static_cast<size_t>(nranks - 1) * kCeDepth * slotBytes;
}
BRAID_HOST_DEVICE inline size_t ceSlotOffset(bool gather, int owner, int slot, int nranks, size_t slotBytes) {
  const size_t perHalf = static_cast<size_t>(nranks - 1) * kCeDepth * slotBytes;
  return kCeWordsBytes + (gather ? perHalf : 0) + (static_cast<size_t>(owner) * kCeDepth + slot) * slotBytes;
}

/// The reducer kernel's parameter.
struct CeKernelArgs {
  KernelArgs base;
  CallArgs call;
  CePlan plan;
  size_t slotBytes = 0;
  char* regions[kMaxOneShotRanks] = {};  // by rank: its copy-engine region as mapped here
};

/// Launches the reducer kernel on `ctas` CTAs of args.base.laneThreads threads. Returns the
/// cudaError_t of the launch.
int launchCeKernel(int ctas, const CeKernelArgs& args, void* stream);
/// The reducer kernel's name ("braid_CopyEngine").
const char* ceKernelName();
/// The kernel, for loadKernels.
const void* ceKernel();

}  // namespace braid::device
