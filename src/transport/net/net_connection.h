// One directed connection of the network transport, and the lanes (network connections) that
// carry it.
//
//   sender rank                                                     receiver rank
//   algorithm --publish--> [outgoing HostFifo]                      [incoming HostFifo] --> algorithm
//                               |  slot k, B bytes                        ^
//                               +--> lane 0: size, tag + piece 0 --------+  (sendComm 0 -> recvComm 0)
//                               +--> lane 1: piece 1 --------------------+  (sendComm 1 -> recvComm 1)
//                               +--> ...                                  |
//
// Each side's algorithm sees an ordinary HostFifo on its own heap; proxy threads move the slots
// with the network's isend / irecv / test (transport/net/net_abi.h), one message per lane and slot
// at most. A slot of B bytes is cut into pieces of at least kMinPieceBytes, piece i going on lane i
// (a small slot uses lane 0 only and costs one message). Lane 0's message is the slot's size and
// call tag as they lie ahead of its data in the FIFO (HostFifo::wireAt) followed by piece 0, so it
// needs no copy; the receiver's other lanes learn the size from it. A slot published by reference
// (HostFifo::publishRef; built-in network only) has its data in the caller's memory: every lane
// sends its piece from there, lane 0 its size and tag from the slot in the same message. Every lane keeps up to a
// FIFO's worth of slots posted (receives into free slots, sends of full ones); slot k is released (sender) or published
// (receiver) once every lane has finished it. Flow control is the FIFO's: a receive is posted only into a free slot.
//
// A lane whose request fails closes the FIFO in the peer's name: the algorithm waiting on it stops
// with an error naming the peer. A receive that fails as its peer goes away, between slots, first
// lets the slots the other lanes are finishing through (a peer that sent its last slot and closed
// is seen by some lane before the others have finished it). A FIFO closed by this rank (a failed
// call, an abort) closes its lanes' network connections, which the peer sees: failures spread.
#pragma once

#include <poll.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/host_fifo.h"
#include "transport/net/network.h"

namespace braid::transport {

constexpr int kMaxLanesPerConnection = 64;
constexpr size_t kMinPieceBytes = 64 * 1024;

/// The byte range [begin, end) of lane `lane` of `lanes` in a slot of `bytes`.
void pieceOf(size_t bytes, int lane, int lanes, size_t* begin, size_t* end);

class NetConnection {
 public:
  /// `outgoing`: this rank sends (the FIFO's consumer is the proxy); else it receives. `lanes` may
  /// be 0 for an incoming connection until the first lane tells how many the sender uses.
  NetConnection(bool outgoing, int peer, int slots, size_t slotBytes, int lanes, FifoObserver* observer);
  /// The same over a FIFO made elsewhere (one a GPU kernel shares: HostFifo::forDevice).
  NetConnection(bool outgoing, int peer, std::unique_ptr<HostFifo> fifo, int lanes, FifoObserver* observer);

  /// Its end is no failure of the calls: fail() closes the FIFO and tells the observer nothing.
  /// The peer's leaving is still told (peerGone): a peer leaves with all its connections at once,
  /// and whichever sees it first says so for the others. Before the first lane.
  void setQuiet() { quiet_ = true; }
  bool outgoing() const { return outgoing_; }
  int peer() const { return peer_; }
  HostFifo& fifo() { return *fifo_; }

  int lanes() const { return lanes_.load(std::memory_order_acquire); }
  /// Incoming: the sender's lane count, from its first lane; false when a later lane disagrees.
  bool agreeLanes(int lanes);

  /// A lane closed its network connection: once all have, nothing reads the FIFO's slots (or the
  /// caller's memory they name) any more (HostFifo::markReadersDone).
  void laneFinished();
  /// Lane `lane` has moved every slot before `slots`: release (outgoing) or publish (incoming)
  /// the slots that every lane has finished.
  void laneDone(int lane, uint64_t slots);

  /// Incoming: lane 0 received the size (and call tag) of slot `counter`; the other lanes wait for it.
  void setSlotSize(uint64_t counter, uint64_t bytes, const CallTag& tag);
  /// Incoming: the size of slot `counter` once lane 0 received it.
  bool slotSize(uint64_t counter, uint64_t* bytes) const;

  /// Stops the connection: the FIFO is closed in the peer's name, so the algorithm's wait ends
  /// with an error naming it (and `why`: what the network said).
  void fail(const std::string& why = std::string());
  /// Incoming: a lane's peer went away before slot `counter`. The slots before it that other lanes
  /// are still finishing are delivered first; then the connection fails (see checkEnded()).
  void endBefore(uint64_t counter, const std::string& why);
  /// Outgoing: the peer went away while nothing was in flight; the connection fails once this
  /// rank publishes a slot that cannot be sent (see checkEnded()).
  void peerLeft(const std::string& why);
  /// A connection whose peer left fails only once its side needs what will never come: a slot at
  /// or after the end (an incoming FIFO a kernel shares: the kernel waits for it,
  /// FifoBlock::wanted) or a published slot that cannot be sent (outgoing, host or GPU). An
  /// incoming host FIFO fails once the slots before the end are in it. A peer that destroyed its
  /// communicator after its last call leaves like one that died. This checks; true if it failed
  /// the connection now. Both ends tell the observer (FifoObserver::peerGone).
  bool checkEnded();
  /// Outgoing: the transport learned that `peer` went away (from any connection with it): every
  /// slot published from now on can go nowhere. Records the FIFO's tail (the first call counts).
  void notePeerGone();
  /// After notePeerGone: fails the connection (with `why`) once this rank has published a slot
  /// past that tail; true if it failed it now.
  bool checkGone(const std::string& why);

 private:
  const bool outgoing_;
  const int peer_;
  bool quiet_ = false;
  std::unique_ptr<HostFifo> fifo_;
  FifoObserver* observer_;
  std::atomic<int> lanes_;
  std::atomic<uint64_t> laneDone_[kMaxLanesPerConnection] = {};
  std::atomic<int> lanesFinished_{0};
  uint64_t sizes_[kMaxSteps] = {};
  CallTag tags_[kMaxSteps] = {};
  std::atomic<uint64_t> sizeKnown_[kMaxSteps] = {};  // counter + 1 of the slot whose size is in sizes_
  void endNow();                                     // mu_ held
  std::atomic<bool> ended_{false};                   // shared with a kernel: ended, not yet failed
  uint64_t endAt_ = 0;                               // endBefore_ when ended_ was set (then fixed)
  uint64_t endBefore_ = UINT64_MAX;                  // guarded by mu_
  std::atomic<uint64_t> goneAt_{UINT64_MAX};         // notePeerGone's tail
  std::string endWhy_;                               // guarded by mu_
  std::mutex mu_;                                    // releases / publishes in order
};

/// One network connection (a sendComm or a recvComm) of a NetConnection and where it is in the
/// stream of slots. Driven by one proxy thread; it closes its network connection when destroyed.
class NetLane {
 public:
  /// `comm` is connected; `index` is its lane number.
  NetLane(std::shared_ptr<NetConnection> connection, int index, const network::Network* network, void* comm);
  ~NetLane();
  NetLane(const NetLane&) = delete;
  NetLane& operator=(const NetLane&) = delete;

  /// Posts and tests what it can without blocking. Returns true if anything moved. A failure fails
  /// the connection (or ends it, see NetConnection::endBefore) and makes the lane finished().
  bool step();
  bool finished() const { return finished_; }
  bool sends() const { return connection_->outgoing(); }
  /// True while requests are in flight (the proxy must watch them).
  bool busy() const { return !finished_ && !posted_.empty(); }
  /// For the built-in socket network: the descriptor to sleep on and the events that would mean
  /// work (fd -1: nothing to wait for but the FIFO, or a network without descriptors).
  pollfd pollEntry() const;
  /// After poll() reported `revents` for an outgoing lane with nothing in flight: a peer that
  /// closed or died shows here first.
  void checkIdle(short revents);
  /// False for a plugin's lane: it has no descriptor, the proxy naps instead of sleeping in poll().
  bool pollable() const { return network_->builtIn(); }
  const NetConnection& connection() const { return *connection_; }

 private:
  struct Posted {
    uint64_t slot;
    void* request;          // nullptr: this lane has no piece of the slot
    void* flush = nullptr;  // the received slot's iflush, while it runs
  };
  bool post();
  bool complete();
  bool postSend(uint64_t slot);
  bool postRecv(uint64_t slot);
  Status registerSlot(int k, void** mh);
  bool startFlush(Posted& p, int size);
  bool testFlush(Posted& p);
  void finish(bool failConnection, const std::string& why = std::string());
  void closeComm();
  void* memoryOf(uint64_t slot);

  std::shared_ptr<NetConnection> connection_;
  const int index_;
  const network::Network* network_;
  void* comm_;
  std::vector<void*> mhandles_;        // one registration per slot
  std::deque<Posted> posted_;          // in slot order
  uint64_t next_ = 0;                  // the next slot to post
  uint64_t done_ = 0;                  // slots finished
  uint64_t drainBefore_ = UINT64_MAX;  // the peer went away: finish what was posted, end before this slot
  std::string drainWhy_;
  bool finished_ = false;
  bool flushes_ = false;  // receives into GPU memory: each is flushed (iflush) before it is published
};

}  // namespace braid::transport
