// HostPrims: the Prims contract (algo/prims.h) on real data in host memory, over HostFifos.
//
// Every operation waits for its slots, moves or reduces `n` elements, and hands the slots on. A
// reduce writes straight into its destination (the next rank's slot, or the output), so data is
// read once and written once per hop. Once the communicator is aborted every wait returns at once
// and the remaining operations do nothing; the backend then reports the abort.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "algo/collectives.h"
#include "algo/prims.h"
#include "braid/braid.h"
#include "transport/host_fifo.h"
#include "transport/host_transport.h"

namespace braid::exec {

/// Why a call stopped, filled by the lane that gave up first.
struct CallFailure {
  std::atomic<bool> failed{false};
  std::atomic<int> deadRank{-1};  // a peer process exited
  std::atomic<long> deadPid{0};
  std::atomic<int> stoppedBy{-1};  // a peer gave up on the call and closed the connection (or its socket ended)
  std::atomic<const transport::HostFifo*> stoppedFifo{nullptr};  // the FIFO it closed (its closeReason)
  // A peer's slot carried another call's tag: the first lane to see one claims these and fills them
  // (read once every lane has returned).
  std::atomic<bool> mismatchClaimed{false};
  int mismatchPeer = -1;
  transport::CallTag theirs;
};

/// What a call's FIFO steps tell the progress watchdog (core/watchdog.h) while it runs: relaxed
/// atomics, one add per slot taken.
struct CallProgress {
  std::atomic<uint64_t> steps{0};
  std::atomic<int> waitingOn{-1};  // the peer of the FIFO last waited on
  std::atomic<int> channel{-1};    // ... its channel
  std::atomic<int> sending{0};     // ... 1: a send slot to free up, 0: a slot to arrive
};

/// The tag kind of send/recv slots (collectives: 1 + their algo::Coll).
constexpr uint8_t kP2pTagKind = 0xff;
/// Set in a GPU collective's tag kind when it runs direct on registered buffers: the call ledger
/// then finds a rank whose buffers are registered beside one whose are not (mismatched calls).
constexpr uint8_t kDirectTagBit = 0x40;

/// What one call's programs on one rank share.
struct HostCall {
  const char* input = nullptr;
  char* output = nullptr;
  size_t elemSize = 1;
  braidDataType_t type = braidFloat32;
  braidRedOp_t op = braidSum;
  int nranks = 1;
  int rank = 0;
  const std::atomic<bool>* abort = nullptr;  // the communicator's
  CallFailure* failure = nullptr;            // the call's: set by the lane that fails, stops the others
  transport::CallTag tag;                    // carried in every slot this rank sends, checked in every one it reads
  std::string (*describeTag)(const transport::CallTag&) = nullptr;  // names a tag in errors
  CallProgress* progress = nullptr;                                 // the watchdog's (null: off)
  // Large sends over connections that allow it (HostFifo::byReference) leave the data where it
  // lies: set where no other lane of the call writes what a lane sends (one lane a channel;
  // send/recv, whose receives may not write what its sends read).
  bool sendsByReference = false;

  transport::StopFlags stop() const {
    return transport::StopFlags{abort, failure != nullptr ? &failure->failed : nullptr};
  }
};

/// One lane's slots sent by reference (HostFifo::publishRef) that the network may still be reading:
/// the caller's bytes they name must stay as they are until each slot is freed. A lane writes
/// nothing over them (clear) and ends its call only once all are freed (drain).
class RefLedger {
 public:
  void add(transport::HostFifo* fifo, uint64_t counter, const char* data, size_t bytes);
  /// Waits until no slot in flight names any byte of [dst, dst + bytes): false if stopped first,
  /// with `*failed` the FIFO whose wait ended.
  bool clear(const char* dst, size_t bytes, const transport::StopFlags& stop, const transport::HostFifo** failed);
  /// Waits until every slot is freed. If the call stops first (it failed, was aborted, or the
  /// watchdog ended it), the connections of the slots still in flight are closed in `rank`'s name
  /// (the peer then fails instead of receiving bytes the caller may change once the call returns),
  /// and this waits until the network has stopped reading them (HostFifo::readersDone; its
  /// proxies see a close at once), at most 10 s. False when it stopped.
  bool drain(const transport::StopFlags& stop, int rank);
  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    transport::HostFifo* fifo;
    uint64_t counter;
    const char* begin;
    const char* end;
  };
  void prune();
  std::vector<Entry> entries_;
};

class HostPrims {
 public:
  /// `refs`: where sends by reference are recorded (null: every send is copied into its slots).
  HostPrims(const HostCall& call, const int* recvPeers, transport::HostFifo* const* recv, int nRecv,
            const int* sendPeers, transport::HostFifo* const* send, int nSend, int channel = -1,
            RefLedger* refs = nullptr);

  void send(size_t in, size_t n);
  void copySend(size_t in, size_t out, size_t n);
  void recv(size_t out, size_t n);
  void recvCopySend(size_t out, size_t n);
  void recvReduceSend(size_t in, size_t n);
  void recvReduceCopy(size_t in, size_t out, size_t n, bool post);
  void recvReduceCopySend(size_t in, size_t out, size_t n, bool post);
  void copy(size_t in, size_t out, size_t n, bool post);
  void sendOutput(size_t out, size_t n);
  void recvReduceOutput(size_t out, size_t n, bool post);
  void recvReduceSendOutput(size_t out, size_t n);
  void recvReduceOutputSend(size_t out, size_t n, bool post);
  void recvReplaceSend(size_t out, size_t n) { recvCopySend(out, n); }
  void recvReplace(size_t out, size_t n) { recv(out, n); }

 private:
  const char* in(size_t off) const { return call_.input + off * call_.elemSize; }
  char* out(size_t off) const { return call_.output + off * call_.elemSize; }
  // Waits for every receive slot; false (and failed) on abort or a size mismatch.
  bool takeRecv(size_t bytes, const char** slots);
  void releaseRecv();
  // Waits for every send slot; false (and failed) on abort.
  bool takeSend(char** slots);
  void publishSend(char** slots, size_t bytes);
  // Publishes the send slots by reference to `bytes` at `src` when that saves copying; false (nothing
  // done) otherwise.
  bool publishByReference(const char* src, size_t bytes);
  // Before writing `bytes` at `dst` (the output): waits until no slot sent by reference names them.
  bool writable(const char* dst, size_t bytes);
  // Waits for the send slots and sends `n` elements from `src`.
  void sendFrom(const char* src, size_t n);
  void recvReduceSendFrom(const char* src, size_t n);
  void recvReduceCopySendFrom(const char* src, size_t outOff, size_t n, bool post);
  // dst = recv slots reduced with `src` (the input, or the output for an accumulation); then the
  // post-op if asked.
  void reduceInto(char* dst, const char** slots, const char* src, size_t n, bool post);
  // The watchdog's view (call_.progress set): the FIFO this rank waits on now.
  void noteWait(int peer, bool sending) {
    call_.progress->waitingOn.store(peer, std::memory_order_relaxed);
    call_.progress->channel.store(channel_, std::memory_order_relaxed);
    call_.progress->sending.store(sending ? 1 : 0, std::memory_order_relaxed);
  }

  const HostCall& call_;
  int channel_ = -1;  // for the watchdog
  int recvPeer_[algo::kMaxPeers] = {-1, -1};
  int sendPeer_[algo::kMaxPeers] = {-1, -1};
  transport::HostFifo* recv_[algo::kMaxPeers] = {nullptr, nullptr};
  transport::HostFifo* send_[algo::kMaxPeers] = {nullptr, nullptr};
  transport::HostFifo* watched_[2 * algo::kMaxPeers] = {};  // recv_ then send_
  int nRecv_;
  int nSend_;
  RefLedger* refs_ = nullptr;
  bool stopped() const { return call_.stop().raised(); }
  // What ends this step's waits: the call's stop, or a close of any FIFO of these prims.
  transport::StopFlags stepStop() const;
  // Records why `fifo` (may be null) ended the wait, then stops the call's other lanes.
  void fail(const transport::HostFifo* fifo);
  // Records that rank `peer` sent a slot of the call `theirs`, then stops the call's other lanes.
  void failMismatch(int peer, const transport::CallTag& theirs);
};

/// The Backend an algorithm runs on for one (rank, channel) of a call.
class HostBackend {
 public:
  HostBackend(const HostCall& call, transport::FifoResolver& fifos, int channel)
      : call_(call), fifos_(fifos), channel_(channel) {}

  HostPrims open(const int* recvPeers, int nRecv, const int* sendPeers, int nSend, int connId);
  HostPrims open(const int* recvPeers, const int* recvConns, int nRecv, const int* sendPeers, int nSend, int connId);
  /// After the lane's program: waits until the network has sent what it sent by reference.
  void finish() { refs_.drain(call_.stop(), call_.rank); }

 private:
  const HostCall& call_;
  transport::FifoResolver& fifos_;
  int channel_;
  RefLedger refs_;
};

}  // namespace braid::exec
