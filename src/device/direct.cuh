// Direct calls: collectives whose buffers every rank registered (braidCommRegister, or windows
// across the processes of one host) so that each rank's kernel reaches every peer's input and
// output by its address. No FIFO, no staging: the bytes go from the input that
// holds them to every output that needs them.
//
// CTA c of every rank handles the same part of the call (the same CTA count on every rank: the
// engine derives it from the call alone). It
//   1. announces its call (the rank's direct call number, from 1, kept per CTA in its own region)
//      with its input and output, at the addresses where that peer sees them (the same within one
//      process; across processes the peer's mapping of this rank's window, DirectKernelArgs), in
//      slot (this rank, c) of every peer's region, and waits for each
//      peer's slot (peer, c) of its own region to name the same call: then every peer's kernel has
//      begun, so whatever its stream ran before the call (the writes of the input, the last reads
//      of the output) is over;
//   2. moves its part:
//      all-reduce      shard `rank` of the elements: every rank's input reduced (this rank's first)
//                      and the result written into every rank's output
//      all-gather      this rank's input written into block `rank` of every output
//      reduce-scatter  block `rank` of every input reduced into this rank's output
//      broadcast       the root writes its input into every output
//      reduce          the root reduces every input into its output
//   3. fences, writes "done" into its slot of every peer's region and waits for every peer's
//      "done": then no peer reads this rank's input or writes its output any more, and this rank's
//      output is complete when the kernel ends. The next call's addresses cannot overwrite a slot a
//      peer has not read: the peer wrote "done" after it read them.
// A Moves carries at most three sources and three destinations: with more ranks, the result is
// built in this rank's output (its own input read first, so an in-place call reads it before it is
// overwritten) and copied from there.
#pragma once

#include "algo/work.h"
#include "device/move_many.cuh"
#include "device/moves.cuh"
#include "device/prims.cuh"

namespace braid::device {
namespace {

__device__ __forceinline__ uint64_t* directCalls(char* region) {
  return reinterpret_cast<uint64_t*>(region + kDirectOffset);
}
__device__ __forceinline__ DirectSlot* directSlot(char* region, int sender, int cta) {
  auto* slots = reinterpret_cast<DirectSlot*>(region + kDirectOffset + kMaxDirectCtas * sizeof(uint64_t));
  return slots + sender * kMaxDirectCtas + cta;
}

template <algo::Coll C>
__device__ void directCall(const DirectKernelArgs& k) {
  KernelMark mark(k.base);
  const KernelArgs& a = k.base;
  const CallArgs& call = k.call;
  const OneShotArgs& o = a.oneShot;
  const int n = a.work.nranks, me = a.work.rank, c = blockIdx.x, t = threadIdx.x;
  __shared__ const char* ins[kMaxOneShotRanks];
  __shared__ char* outs[kMaxOneShotRanks];
  __shared__ uint64_t number;
  __shared__ int aborted;
  if (t == 0) {
    number = loadVolatile64(directCalls(o.regions[0]) + c) + 1;
    aborted = 0;
    ins[me] = static_cast<const char*>(call.input);
    outs[me] = static_cast<char*>(call.output);
  }
  __syncthreads();
  const uint64_t call1 = number;
  LaneWait* wait = laneWait(a, 0);
  // 1. Thread k (1..n-1) deals with rank (me + k) % n, whose region is regions[k].
  if (t >= 1 && t < n) {
    const int q = (me + t) % n;
    DirectSlot* theirs = directSlot(o.regions[t], me, c);
    storeVolatile64(&theirs->input, k.input[t]);  // as rank q sees them
    storeVolatile64(&theirs->output, k.output[t]);
    __threadfence_system();
    storeVolatile64(&theirs->call, call1);
    DirectSlot* mine = directSlot(o.regions[0], q, c);
    if (waitAtLeast(&mine->call, call1, true, a.abortFlag, wait, a.launch, WaitWhat::kPeerStarted, q)) {
      ins[q] = reinterpret_cast<const char*>(loadVolatile64(&mine->input));
      outs[q] = reinterpret_cast<char*>(loadVolatile64(&mine->output));
    } else {
      aborted = 1;
    }
  }
  __syncthreads();
  if (aborted) return;  // the communicator is unusable from here on

  // 2. This CTA's part.
  const size_t es = elemSizeOf(call.type), count = call.count;
  const LaneCtx lane{t, static_cast<int>(blockDim.x), 1, a.abortFlag, wait, a.launch};
  const int postDivisor = call.postOp ? n : 0;
  const char* srcs[kMaxOneShotRanks];
  char* dsts[kMaxOneShotRanks];
  if (C == algo::Coll::kAllReduce) {
    const algo::Range shard = algo::channelRange(count, me, n);
    const algo::Range part = algo::channelRange(shard.size(), c, call.nChannels);
    const size_t off = (shard.begin + part.begin) * es;
    for (int k = 0; k < n; ++k) {
      const int q = (me + k) % n;  // this rank's own first: an in-place call reads it before it writes
      srcs[k] = ins[q] + off;
      dsts[k] = outs[q] + off;
    }
    if (part.size() > 0) directMove(srcs, n, dsts, n, part.size(), call.type, call.op, postDivisor, lane);
  } else if (C == algo::Coll::kAllGather || C == algo::Coll::kBroadcast) {
    const bool sends = C == algo::Coll::kAllGather || me == call.root;
    const algo::Range part = algo::channelRange(count, c, call.nChannels);
    const size_t off = ((C == algo::Coll::kAllGather ? me * count : 0) + part.begin) * es;
    int m = 0;
    for (int k = 0; k < n; ++k) {
      const int q = (me + k) % n;
      if (q != me || ins[me] != outs[me] + (C == algo::Coll::kAllGather ? me * count * es : 0))
        dsts[m++] = outs[q] + off;
    }
    srcs[0] = ins[me] + part.begin * es;
    if (sends && m > 0 && part.size() > 0) directMove(srcs, 1, dsts, m, part.size(), call.type, call.op, 0, lane);
  } else {  // reduce-scatter, reduce
    const bool receives = C == algo::Coll::kReduceScatter || me == call.root;
    const algo::Range part = algo::channelRange(count, c, call.nChannels);
    const size_t block = C == algo::Coll::kReduceScatter ? me * count * es : 0;
    for (int k = 0; k < n; ++k) srcs[k] = ins[(me + k) % n] + block + part.begin * es;
    dsts[0] = outs[me] + part.begin * es;
    if (receives && part.size() > 0) directMove(srcs, n, dsts, 1, part.size(), call.type, call.op, postDivisor, lane);
  }

  // 3. Done: this CTA's writes reach the peers before its "done" does.
  __threadfence_system();
  __syncthreads();
  if (t >= 1 && t < n) {
    const int q = (me + t) % n;
    storeVolatile64(&directSlot(o.regions[t], me, c)->done, call1);
    // (An abort ends the wait; the communicator is unusable from here on.)
    waitAtLeast(&directSlot(o.regions[0], q, c)->done, call1, true, a.abortFlag, wait, a.launch, WaitWhat::kPeerDone,
                q);
  }
  __syncthreads();
  if (t == 0) storeVolatile64(directCalls(o.regions[0]) + c, call1);
}

}  // namespace
}  // namespace braid::device
