// DevicePrims: the Prims contract (algo/prims.h) on a GPU, one lane of one channel's CTA.
//
// Every operation:
//   1. thread 0 waits until each receive slot is filled (Simple: the tail counter; LL and LL128:
//      each thread instead waits on the flags of its own lines) and each send slot is free (the head
//      counter);
//   2. the lane's threads move the data (moves.cuh), reading the receive slots and the user's
//      buffers, writing the output and the peers' slots directly (stores over NVLink/PCIe);
//   3. thread 0 publishes: Simple sends get a system fence and then the tail; receives report the
//      slot consumed by writing the sender's head.
// An end to a peer on another host (netStride, device_work.h) waits for and publishes the tail in
// every protocol, and writes each step's size for the network proxy.
// Step counts live in registers while a Prims is open and in the connection's memory otherwise.
#pragma once

#include "algo/collectives.h"
#include "device/moves.cuh"

namespace braid::device {

// barrier.sync without .aligned: a warp may reach it diverged (byte-wise copies of unaligned words),
// where bar.sync (= barrier.sync.aligned) would be undefined.
__device__ __forceinline__ void laneBarrier(const LaneCtx& lane) {
  asm volatile("barrier.sync %0, %1;" ::"r"(lane.barrier), "r"(lane.nthreads) : "memory");
}

__device__ __forceinline__ uint64_t loadAcquire(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint64_t loadVolatile64(const uint64_t* p) {
  return *static_cast<const volatile uint64_t*>(p);
}

__device__ __forceinline__ void storeVolatile64(uint64_t* p, uint64_t v) { *static_cast<volatile uint64_t*>(p) = v; }

// Spins until *p >= target; false on abort. `acquire`: later loads of this CTA (after its barrier)
// see what the writer published before the counter (Simple's data); otherwise a plain poll. A long
// wait tells `wait` (the watchdog's record, may be null) that it waits for `peer`.
__device__ __forceinline__ bool waitAtLeast(const uint64_t* p, uint64_t target, bool acquire,
                                            const volatile int* abortFlag, LaneWait* wait = nullptr,
                                            uint64_t launch = 0, WaitWhat what = WaitWhat::kNone, int peer = -1) {
  if (target == 0) return true;  // a slot never used yet: nothing to wait for, no load
  int spins = 0;
  uint64_t seen;
  while ((seen = acquire ? loadAcquire(p) : loadVolatile64(p)) < target) {
    if (++spins == 4096) {
      spins = 0;
      noteWait(wait, launch, what, peer, target, seen);
      if (*abortFlag) return false;
    }
  }
  return true;
}

template <Proto P>
class DevicePrims {
 public:
  __device__ DevicePrims(const KernelArgs& a, const CallArgs& call, const LaneCtx& lane, int channel,
                         const int* recvPeers, const int* recvConns, int nRecv, const int* sendPeers, int nSend,
                         int connId)
      : a_(a), call_(call), lane_(lane), nRecv_(nRecv), nSend_(nSend) {
    const int n = a.work.nranks;
    for (int i = 0; i < nRecv; ++i) {
      rpeer_[i] = recvPeers[i];
      recv_[i] = a.conns[connIndex(channel, recvConns != nullptr ? recvConns[i] : connId, recvPeers[i], n)].recv;
      rstep_[i] = *static_cast<volatile uint64_t*>(recv_[i].step);
    }
    for (int i = 0; i < nSend; ++i) {
      speer_[i] = sendPeers[i];
      send_[i] = a.conns[connIndex(channel, connId, sendPeers[i], n)].send;
      sstep_[i] = *static_cast<volatile uint64_t*>(send_[i].step);
    }
  }
  DevicePrims(const DevicePrims&) = delete;
  DevicePrims& operator=(const DevicePrims&) = delete;

  __device__ ~DevicePrims() {
    laneBarrier(lane_);
    if (lane_.tid == 0) {
      for (int i = 0; i < nRecv_; ++i) *recv_[i].step = rstep_[i];
      for (int i = 0; i < nSend_; ++i) *send_[i].step = sstep_[i];
    }
    laneBarrier(lane_);
  }

  __device__ void send(size_t in, size_t n) { step(input(in), false, nullptr, true, n, false); }
  __device__ void copySend(size_t in, size_t out, size_t n) { step(input(in), false, output(out), true, n, false); }
  __device__ void recv(size_t out, size_t n) { step(nullptr, true, output(out), false, n, false); }
  __device__ void recvCopySend(size_t out, size_t n) { step(nullptr, true, output(out), true, n, false); }
  __device__ void recvReduceSend(size_t in, size_t n) { step(input(in), true, nullptr, true, n, false); }
  __device__ void recvReduceCopy(size_t in, size_t out, size_t n, bool post) {
    step(input(in), true, output(out), false, n, post);
  }
  __device__ void recvReduceCopySend(size_t in, size_t out, size_t n, bool post) {
    step(input(in), true, output(out), true, n, post);
  }
  __device__ void copy(size_t in, size_t out, size_t n, bool post) {
    if (input(in) == output(out) && !post) return;
    step(input(in), false, output(out), false, n, post);
  }
  __device__ void sendOutput(size_t out, size_t n) { step(output(out), false, nullptr, true, n, false); }
  __device__ void recvReduceOutput(size_t out, size_t n, bool post) {
    step(output(out), true, output(out), false, n, post);
  }
  __device__ void recvReduceSendOutput(size_t out, size_t n) { step(output(out), true, nullptr, true, n, false); }
  __device__ void recvReduceOutputSend(size_t out, size_t n, bool post) {
    step(output(out), true, output(out), true, n, post);
  }
  __device__ void recvReplaceSend(size_t out, size_t n) { recvCopySend(out, n); }
  __device__ void recvReplace(size_t out, size_t n) { recv(out, n); }

 private:
  __device__ const char* input(size_t off) const { return static_cast<const char*>(call_.input) + off * elemSize(); }
  __device__ char* output(size_t off) const { return static_cast<char*>(call_.output) + off * elemSize(); }
  __device__ size_t elemSize() const { return elemSizeOf(call_.type); }
  __device__ size_t slotOffset(uint64_t step, uint64_t netStride) const {
    size_t slot = static_cast<size_t>(step % kSteps);
    return netStride != 0        ? slot * netStride
           : P == Proto::kSimple ? slot * a_.simpleSlotBytes
           : P == Proto::kLL     ? slot * a_.llSlotLines * kLlLineBytes
                                 : slot * a_.ll128SlotLines * kLl128LineBytes;
  }
  // Bytes of a slot that a step of n elements fills (what a network proxy sends).
  __device__ size_t stepBytes(size_t n) const {
    const size_t bytes = n * elemSize(), words = (bytes + 7) / 8;
    return P == Proto::kSimple ? bytes
           : P == Proto::kLL   ? words * kLlLineBytes
                               : (words + kLl128DataPerLine / 8 - 1) / (kLl128DataPerLine / 8) * kLl128LineBytes;
  }

  // The protocol's slots of one end of a connection.
  template <class End>
  __device__ static char* slots(const End& e) {
    return P == Proto::kSimple ? e.simple : P == Proto::kLL ? e.ll : e.ll128;
  }

  // One operation: sources are `local` (if any) then the receive slots (if `useRecv`); destinations
  // are `out` (if any) then the send slots (if `useSend`).
  __device__ void step(const char* local, bool useRecv, char* out, bool useSend, size_t n, bool post) {
    const int nr = useRecv ? nRecv_ : 0, ns = useSend ? nSend_ : 0;
    if (lane_.tid == 0 && !aborted_) {
      for (int i = 0; i < nr; ++i) {
        if (recv_[i].netStride != 0) storeVolatile64(recv_[i].wanted, rstep_[i] + 1);
        if (P == Proto::kSimple || recv_[i].netStride != 0)
          aborted_ = aborted_ || !waitAtLeast(recv_[i].tail, rstep_[i] + 1, true, lane_.abortFlag, lane_.wait,
                                              lane_.launch, WaitWhat::kSlotFilled, rpeer_[i]);
      }
      for (int i = 0; i < ns; ++i)
        aborted_ = aborted_ || !waitAtLeast(send_[i].head, sstep_[i] < kSteps ? 0 : sstep_[i] + 1 - kSteps, false,
                                            lane_.abortFlag, lane_.wait, lane_.launch, WaitWhat::kSlotFree, speer_[i]);
    }
    laneBarrier(lane_);
    Moves m;
    m.nSrc = 0;
    m.nDst = 0;
    m.n = n;
    m.postDivisor = post ? a_.work.nranks : 0;
    if (local != nullptr) {
      m.srcPeer[m.nSrc] = -1;
      m.srcFlag[m.nSrc] = 0;
      m.src[m.nSrc++] = local;
    }
    for (int i = 0; i < nr; ++i) {
      m.srcPeer[m.nSrc] = rpeer_[i];
      m.srcFlag[m.nSrc] = P != Proto::kSimple ? static_cast<uint32_t>(rstep_[i] + 1) : 0;
      m.src[m.nSrc++] = slots(recv_[i]) + slotOffset(rstep_[i], recv_[i].netStride);
    }
    if (out != nullptr) {
      m.dstFlag[m.nDst] = 0;
      m.dst[m.nDst++] = out;
    }
    for (int i = 0; i < ns; ++i) {
      m.dstFlag[m.nDst] = P != Proto::kSimple ? static_cast<uint32_t>(sstep_[i] + 1) : 0;
      m.dst[m.nDst++] = slots(send_[i]) + slotOffset(sstep_[i], send_[i].netStride);
    }
    if (n > 0 && m.nDst > 0 && !moveData<P>(m, call_.type, call_.op, lane_)) aborted_ = true;
    laneBarrier(lane_);
    if (lane_.tid == 0) {
      // Simple: the lane's data stores (ordered before this thread by the barrier) reach the peer
      // before the tail does. LL and LL128 lines carry their own flags, except to a network proxy,
      // which reads the step's size and then the slot once the tail says so. A head needs no
      // fence: the slot's data was read before the barrier.
      bool fence = P == Proto::kSimple && ns > 0;
      for (int i = 0; i < ns; ++i) {
        if (send_[i].netStride == 0) continue;
        storeVolatile64(send_[i].tail + kNetSizesAfterTail + sstep_[i] % kSteps, stepBytes(n));
        fence = true;
      }
      if (fence) __threadfence_system();
      for (int i = 0; i < ns; ++i) {
        if (P == Proto::kSimple || send_[i].netStride != 0) storeVolatile64(send_[i].tail, sstep_[i] + 1);
      }
      for (int i = 0; i < nr; ++i) storeVolatile64(recv_[i].head, rstep_[i] + 1);
    }
    for (int i = 0; i < nr; ++i) ++rstep_[i];
    for (int i = 0; i < ns; ++i) ++sstep_[i];
  }

  const KernelArgs& a_;
  const CallArgs& call_;
  const LaneCtx& lane_;
  RecvEnd recv_[algo::kMaxPeers];
  SendEnd send_[algo::kMaxPeers];
  uint64_t rstep_[algo::kMaxPeers] = {0, 0};
  uint64_t sstep_[algo::kMaxPeers] = {0, 0};
  int rpeer_[algo::kMaxPeers] = {-1, -1};
  int speer_[algo::kMaxPeers] = {-1, -1};
  int nRecv_;
  int nSend_;
  bool aborted_ = false;
};

/// The Backend the algorithm templates open their Prims from.
template <Proto P>
struct DeviceBackend {
  const KernelArgs& args;
  const CallArgs& call;
  const LaneCtx& lane;
  int channel;
  __device__ DevicePrims<P> open(const int* recvPeers, int nRecv, const int* sendPeers, int nSend, int connId) {
    return DevicePrims<P>(args, call, lane, channel, recvPeers, nullptr, nRecv, sendPeers, nSend, connId);
  }
  __device__ DevicePrims<P> open(const int* recvPeers, const int* recvConns, int nRecv, const int* sendPeers, int nSend,
                                 int connId) {
    return DevicePrims<P>(args, call, lane, channel, recvPeers, recvConns, nRecv, sendPeers, nSend, connId);
  }
};

}  // namespace braid::device
