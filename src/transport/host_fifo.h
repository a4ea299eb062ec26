// HostFifo: one directed connection's FIFO in host memory, BRAID_STEPS slots of slotBytes each.
//
//        head (consumer)            tail (producer)
//          v                          v
//   [ slot 0 | slot 1 | slot 2 | ... | slot S-1 ]      ring of S slots, counters grow forever
//
//   slot k % S:  [ seq | size | data ............ ]    seq = k + 1 once slot k is published
//
// The producer fills slot (tail % S) when tail - head < S, then publishes it by writing its size
// and, last (release), its sequence number; the consumer waits for the sequence number of slot
// (head % S), reads it, then frees it by advancing head. The flag, the size and the first bytes of
// data share a cache line, so a small message crosses between cores as one line; the producer
// keeps its last view of head and reads the consumer's line only when the FIFO looks full. tail is
// kept too, for the socket proxy's view. Each word is written by one side only.
//
// The counters and slots live in one block (FifoBlock below, then the slots), either on this
// process's heap (loopback: both sides share the HostFifo object) or in a shared-memory segment
// mapped by two processes (each side has its own HostFifo over the same block). A waiting side
// spins briefly, then sleeps: on a condition variable within a process, in short growing naps
// across processes (a condition variable cannot be shared between them), checking between naps
// that the peer process still lives. A side that gives up on a call closes the FIFO, which ends the
// other side's wait too: one failure spreads to every rank instead of leaving them waiting.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "core/status.h"

namespace braid::transport {

constexpr int kMaxSteps = 64;

/// Something to wake when a FIFO changes (a socket proxy thread sleeping in poll()).
class FifoObserver {
 public:
  virtual ~FifoObserver() = default;
  virtual void wake() = 0;
};

/// What ends a wait early: the communicator's abort, or a failure of the call in another lane.
struct StopFlags {
  const std::atomic<bool>* abort = nullptr;
  const std::atomic<bool>* failed = nullptr;
  bool raised() const {
    return (abort != nullptr && abort->load(std::memory_order_acquire)) ||
           (failed != nullptr && failed->load(std::memory_order_acquire));
  }
};

/// The shared part of a FIFO, at the start of its block; the slots follow it.
struct FifoBlock {
  alignas(64) std::atomic<uint64_t> head;
  alignas(64) std::atomic<uint64_t> tail;
  alignas(64) std::atomic<int32_t> closedBy;  // 0: open; rank + 1 of the side that gave up
};

/// The start of every slot; the data follows it.
struct SlotHeader {
  std::atomic<uint64_t> seq;  // counter + 1 of the slot's content once published
  uint64_t size;              // bytes of data
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "FIFO counters must work across processes");

/// True when process `pid` has exited (gone, or a zombie its parent has not reaped yet).
bool processGone(long pid);

class HostFifo {
 public:
  /// Bytes of a block for `slots` slots of `slotBytes`.
  static size_t blockBytes(int slots, size_t slotBytes);

  /// A FIFO on this process's heap, shared by threads.
  HostFifo(int slots, size_t slotBytes);
  /// A FIFO over `block` (zero-initialised by its creator), shared with process `peerPid` (rank
  /// `peerRank`), whose death ends every wait on this FIFO.
  HostFifo(void* block, int slots, size_t slotBytes, int peerRank, long peerPid);

  int slots() const { return slots_; }
  size_t slotBytes() const { return slotBytes_; }

  /// Waits until a slot is free; returns it for writing (nullptr once stopped).
  char* waitWritable(const StopFlags& stop);
  /// Publishes the slot from waitWritable with `bytes` of data.
  void publish(size_t bytes);

  /// Waits until a slot holds data; returns it and its size (nullptr once stopped).
  const char* waitReadable(size_t* bytes, const StopFlags& stop);
  /// Frees the slot from waitReadable.
  void release();

  /// Wakes every waiter of this process (abort).
  void wakeAll();

  // A non-blocking view for a proxy that moves slots between this FIFO and sockets (heap FIFOs
  // only). The proxy is the consumer of an outgoing FIFO (it calls release) or the producer of an
  // incoming one (it calls publish), and learns of the other side's progress through the observer.
  uint64_t headCount() const { return block_->head.load(std::memory_order_acquire); }
  uint64_t tailCount() const { return block_->tail.load(std::memory_order_acquire); }
  char* slotAt(uint64_t counter) const { return slot(counter); }
  size_t sizeAt(uint64_t counter) const { return header(counter)->size; }
  /// Set before the FIFO is used; woken by every publish, release and close.
  void setObserver(FifoObserver* observer) { observer_ = observer; }

  /// How many times a wait polls with a CPU pause before it starts yielding the core: worth it
  /// only when every rank of the host has a core to itself (0, the default, yields at once).
  void setPauseSpins(int spins) { pauseSpins_.store(spins, std::memory_order_relaxed); }
  static constexpr int kBusyPauseSpins = 2000;  // tens of microseconds

  /// Marks the FIFO unusable because `rank` gave up on the call: both sides' waits end at once.
  void close(int rank);
  /// The rank that closed the FIFO, or -1.
  int closedBy() const { return block_->closedBy.load(std::memory_order_acquire) - 1; }
  /// True once a wait found the peer process gone.
  bool peerDied() const { return peerDied_.load(std::memory_order_acquire); }
  int peerRank() const { return peerRank_; }
  long peerPid() const { return peerPid_; }

 private:
  void notify();
  template <class Ready>
  bool wait(Ready ready, const StopFlags& stop);
  SlotHeader* header(uint64_t counter) const {
    return reinterpret_cast<SlotHeader*>(slots_ptr_ + (counter % slots_) * stride_);
  }
  char* slot(uint64_t counter) const { return reinterpret_cast<char*>(header(counter)) + sizeof(SlotHeader); }

  const int slots_;
  const size_t slotBytes_;
  const size_t stride_;  // bytes from one slot header to the next
  const bool crossProcess_;
  const int peerRank_ = -1;
  const long peerPid_ = 0;
  std::atomic<bool> peerDied_{false};
  std::unique_ptr<char[]> owned_;  // heap block (loopback)
  FifoBlock* block_;
  char* slots_ptr_;
  alignas(64) uint64_t producerHead_ = 0;  // the producer's last view of head (its side only)
  FifoObserver* observer_ = nullptr;
  std::atomic<int> pauseSpins_{0};
  std::atomic<int> sleepers_{0};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace braid::transport
