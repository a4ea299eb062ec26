// One directed connection of the socket transport, and the lanes (sockets) that carry it.
//
//   sender rank                                                     receiver rank
//   algorithm --publish--> [outgoing HostFifo]                      [incoming HostFifo] --> algorithm
//                               |  slot k, B bytes                        ^
//                               +--> lane 0: header(B) + piece 0 ---------+  (socket 0)
//                               +--> lane 1: piece 1 ---------------------+  (socket 1)
//                               +--> ...                                  |
//
// Each side's algorithm sees an ordinary HostFifo on its own heap; proxy threads move the slots.
// A slot of B bytes is cut into pieces of at least kMinPieceBytes, piece i going on socket i (so a
// small slot uses lane 0 only and costs one send). Lane 0 sends the slot's size and its sender's
// call tag (host_fifo.h) ahead of its piece;
// the receiver's other lanes learn it from lane 0, so every lane knows its piece. Each lane works
// through the slots in order on its own; slot k is released (sender) or published (receiver) once
// every lane has finished it. Flow control is TCP's: a receiving lane reads only into a free slot.
//
// A lane that hits an error or an end of stream closes the FIFO in the peer's name: the algorithm
// waiting on it stops with an error naming the peer. A FIFO closed by this rank (a failed call, an
// abort) shuts its sockets down, which the peer's lanes see as an end of stream: failures spread.
#pragma once

#include <poll.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "net/socket.h"
#include "transport/host_fifo.h"

namespace braid::transport {

constexpr int kMaxSocketsPerConnection = 64;
constexpr size_t kMinPieceBytes = 64 * 1024;

/// What lane 0 sends ahead of its piece of a slot.
struct SlotWireHeader {
  uint64_t size = 0;
  CallTag tag;
};

/// The byte range [begin, end) of lane `lane` of `lanes` in a slot of `bytes`.
void pieceOf(size_t bytes, int lane, int lanes, size_t* begin, size_t* end);

class SocketConnection {
 public:
  /// `outgoing`: this rank sends (the FIFO's consumer is the proxy); else it receives. `lanes` may
  /// be 0 for an incoming connection until the first socket tells how many the sender uses.
  SocketConnection(bool outgoing, int peer, int slots, size_t slotBytes, int lanes, FifoObserver* observer);

  bool outgoing() const { return outgoing_; }
  int peer() const { return peer_; }
  HostFifo& fifo() { return fifo_; }

  int lanes() const { return lanes_.load(std::memory_order_acquire); }
  /// Incoming: the sender's lane count, from its first socket; false when a later socket disagrees.
  bool agreeLanes(int lanes);

  /// Lane `lane` has moved every slot before `slots`: release (outgoing) or publish (incoming)
  /// the slots that every lane has finished.
  void laneDone(int lane, uint64_t slots);

  /// Incoming: lane 0 read the size (and call tag) of slot `counter`; the other lanes wait for it.
  void setSlotSize(uint64_t counter, uint64_t bytes, const CallTag& tag);
  /// Incoming: the size of slot `counter` once lane 0 read it.
  bool slotSize(uint64_t counter, uint64_t* bytes) const;

  /// Stops the connection: the FIFO is closed in the peer's name (error or end of stream), so the
  /// algorithm's wait ends with an error naming it.
  void fail();
  /// Incoming: a lane's stream ended between slots, before slot `counter`. The slots before it that
  /// other lanes are still finishing are delivered first; then the connection fails. (A peer that
  /// sent its last slot and closed is seen by some lane before the others have finished it.)
  void endBefore(uint64_t counter);

 private:
  const bool outgoing_;
  const int peer_;
  HostFifo fifo_;
  FifoObserver* observer_;
  std::atomic<int> lanes_;
  std::atomic<uint64_t> laneDone_[kMaxSocketsPerConnection] = {};
  uint64_t sizes_[kMaxSteps] = {};
  CallTag tags_[kMaxSteps] = {};
  std::atomic<uint64_t> sizeKnown_[kMaxSteps] = {};  // counter + 1 of the slot whose size is in sizes_
  uint64_t endBefore_ = UINT64_MAX;                  // guarded by mu_
  std::mutex mu_;                                    // releases / publishes in order
};

/// One socket of a connection and where it is in the stream of slots. Driven by one proxy thread.
class SocketLane {
 public:
  SocketLane(std::shared_ptr<SocketConnection> connection, int index, net::Socket socket)
      : connection_(std::move(connection)), index_(index), socket_(std::move(socket)) {}

  /// Moves what can be moved without blocking. Returns true if anything moved. Errors and ends of
  /// stream fail the connection and make the lane finished().
  bool step();
  /// What to wait for in poll() (events 0: nothing, wait for the FIFO to change).
  pollfd pollEntry() const;
  /// After poll() reported `revents` for an outgoing lane with nothing to send: a peer that closed
  /// or died shows here first.
  void checkIdle(short revents);
  bool finished() const { return finished_; }
  const SocketConnection& connection() const { return *connection_; }

 private:
  bool stepSend();
  bool stepRecv();
  bool canStartRecv() const;
  void finish(bool failConnection);

  std::shared_ptr<SocketConnection> connection_;
  const int index_;
  net::Socket socket_;
  uint64_t slot_ = 0;      // FIFO counter of the slot in progress (or next)
  bool active_ = false;    // slot_ is in progress
  size_t done_ = 0;        // bytes of header + piece moved for slot_
  SlotWireHeader header_;  // lane 0: the slot's size and call tag, as sent or received
  size_t begin_ = 0;       // this lane's piece of slot_
  size_t end_ = 0;
  bool finished_ = false;
};

}  // namespace braid::transport
