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
// data share a cache line, so a small message crosses between cores as one line (a FIFO whose data
// lies apart, forDeviceData, keeps its headers in the block and its data elsewhere); the producer
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
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "core/status.h"

namespace braid::transport {

constexpr int kMaxSteps = 64;

/// Something to wake when a FIFO changes (a socket proxy thread sleeping in poll()).
class FifoObserver {
 public:
  virtual ~FifoObserver() = default;
  virtual void wake() = 0;
  /// The consumer freed a slot (the FIFO has room again). By default as wake().
  virtual void freed() { wake(); }
  /// A thread waits on the FIFO, polling: it may move the FIFO's bytes itself when no one else is
  /// (a network's lanes), which saves the hand-off through a sleeping proxy.
  virtual void stepInline() {}
  /// A connection to `peer` failed (`why`: what its network said): its FIFO is closed.
  virtual void failed(int peer, const std::string& why) {
    (void)peer;
    (void)why;
  }
  /// `peer` closed a connection to this rank, or went away (`why`): what it sent still arrives.
  virtual void peerGone(int peer, const std::string& why) {
    (void)peer;
    (void)why;
  }
};

class HostFifo;

/// What ends a wait early: the communicator's abort, a failure of the call in another lane, or a
/// close of another FIFO the waiting step uses (`watched`). The last spreads a failure along every
/// connection of a step: a rank that gave up on a call closes the FIFOs it opened, and a peer
/// waiting on one it never opened (two ranks in different calls, say) sees its other FIFO to that
/// rank closed, and stops too. Checked between a wait's naps, not in its first spins.
struct StopFlags {
  const std::atomic<bool>* abort = nullptr;
  const std::atomic<bool>* failed = nullptr;
  HostFifo* const* watched = nullptr;
  int nWatched = 0;
  bool raised() const;
};

/// The shared part of a FIFO, at the start of its block; the slots follow it.
struct FifoBlock {
  alignas(64) std::atomic<uint64_t> head;
  alignas(64) std::atomic<uint64_t> tail;
  alignas(64) std::atomic<int32_t> closedBy;  // 0: open; rank + 1 of the side that gave up
  // A GPU kernel's inbox (forDevice): the count its consumer waits for, so that a proxy can tell a
  // peer that went away with nothing more to send from one that leaves the kernel waiting.
  alignas(64) std::atomic<uint64_t> wanted;
  // A GPU kernel's outbox (forDevice): the bytes of each slot, written by the kernel before its
  // tail (the proxy reads them here, in host memory, wherever the slots' data lies).
  alignas(64) std::atomic<uint64_t> kernelSizes[kMaxSteps];
};

/// The call a slot belongs to, written by its sender beside the data. A receiver compares it with
/// its own call's on every slot, so ranks in different calls (another collective, count, type, op,
/// root, or a call skipped) fail at their first shared step naming both calls, instead of waiting
/// forever or mixing data. All zero: untagged (a tool's or a test's FIFO); the transport only
/// carries it, exec/host_prims gives the fields their meaning.
struct CallTag {
  uint64_t count = 0;  // elements of the call
  uint32_t seq = 0;    // the communicator's collective number, from 1; 0 for send/recv
  int32_t root = -1;   // -1 where the call has no root
  uint8_t kind = 0;    // 0: untagged; else the kind of call
  uint8_t type = 0;
  uint8_t op = 0;
  uint8_t unused = 0;
  uint32_t reserved = 0;  // no padding: the tag crosses sockets byte for byte
  bool operator==(const CallTag& o) const {
    return count == o.count && seq == o.seq && root == o.root && kind == o.kind && type == o.type && op == o.op;
  }
  bool operator!=(const CallTag& o) const { return !(*this == o); }
};

/// The start of every slot; the data follows it.
struct SlotHeader {
  std::atomic<uint64_t> seq;  // counter + 1 of the slot's content once published
  uint64_t size;              // bytes of data
  CallTag tag;                // the sender's call
};
static_assert(sizeof(CallTag) == 24, "CallTag has no padding");
static_assert(sizeof(SlotHeader) == sizeof(uint64_t) * 2 + sizeof(CallTag),
              "size and tag follow seq without padding: they travel as one piece with the data");
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
  ~HostFifo();
  HostFifo(const HostFifo&) = delete;
  HostFifo& operator=(const HostFifo&) = delete;

  /// A FIFO whose other side is a GPU kernel, over `block` (zeroed, kDeviceAlign-aligned, mapped
  /// for the device; deviceBlockBytes long): a network proxy moves its slots, the kernel writes or
  /// reads them and their counters through the offsets of deviceLayout. Each slot's data starts on
  /// a kDeviceAlign boundary (LL128's lines); its header lies just ahead of it, as everywhere.
  static std::unique_ptr<HostFifo> forDevice(void* block, int slots, size_t slotBytes);
  /// The same with the slots' data apart, at `data` (slot k at data + k x deviceDataStride; GPU
  /// memory that the network reads and writes itself: GPUDirect RDMA), registered with the network
  /// as `memType` (net_abi.h's kPtr*). The counters and the slots' headers stay in `block`
  /// (deviceControlBytes long, host memory), so the network carries the data alone
  /// (wireContiguous() is false): a message's size is the slot's.
  /// `dmabufFd` (>= 0): a DMA-BUF of the data, slot 0 at offset 0, to register it by
  /// (regMrDmaBuf); the FIFO owns it, and closes it once the network has registered the slots
  /// (releaseDmabuf: a registration keeps what it needs, as NCCL closes its descriptors after
  /// regMrDmaBuf), or with itself.
  static std::unique_ptr<HostFifo> forDeviceData(void* block, char* data, int slots, size_t slotBytes, int memType,
                                                 int dmabufFd = -1);
  static constexpr size_t kDeviceAlign = 128;
  struct DeviceLayout {
    size_t head = 0;         // the consumer's counter
    size_t tail = 0;         // the producer's counter
    size_t firstData = 0;    // slot 0's data
    size_t stride = 0;       // from one slot's data to the next
    size_t kernelSizes = 0;  // FifoBlock::kernelSizes
    size_t wanted = 0;       // the consumer's count waited for (FifoBlock::wanted)
  };
  static DeviceLayout deviceLayout(size_t slotBytes);
  static size_t deviceBlockBytes(int slots, size_t slotBytes);
  static size_t deviceControlBytes(int slots);
  static size_t deviceDataStride(size_t slotBytes);

  int slots() const { return slots_; }
  size_t slotBytes() const { return slotBytes_; }

  /// Waits until a slot is free; returns it for writing (nullptr once stopped).
  char* waitWritable(const StopFlags& stop);
  /// Publishes the slot from waitWritable with `bytes` of data of the call `tag`.
  void publish(size_t bytes, const CallTag& tag = CallTag{});

  /// Sending by reference: a FIFO whose consumer is a network proxy of this process (an outgoing
  /// connection of the built-in socket network) may carry a slot's data where it lies instead of
  /// copying it into the slot: the network sends the slot's size and tag from the slot and the data
  /// from the caller's memory. Set before the FIFO is used.
  void allowByReference() { byReference_ = true; }
  bool byReference() const { return byReference_; }
  /// Below this, a copy costs less than keeping the caller's bytes unchanged until they are sent.
  static constexpr size_t kMinReferenceBytes = 64 * 1024;
  /// True when `bytes` are worth publishing by reference.
  bool referenceSaves(size_t bytes) const { return byReference_ && bytes >= kMinReferenceBytes; }
  /// Publishes the slot from waitWritable with the `bytes` at `data` (byReference() FIFOs): the
  /// caller leaves them unchanged and alive until the slot is freed (released(counter)). Returns
  /// the slot's counter.
  uint64_t publishRef(const char* data, size_t bytes, const CallTag& tag = CallTag{});
  /// Where slot `counter`'s data lies when it was published by reference (nullptr: in the slot).
  const char* refAt(uint64_t counter) const { return byReference_ ? refs_[counter % slots_] : nullptr; }
  /// True once the consumer freed slot `counter`.
  bool released(uint64_t counter) const { return headCount() > counter; }
  /// The consumer (a network's lanes) reads no slot's data any more: every lane is closed. Set by
  /// the transport; a call that gives up with slots still published by reference waits for it.
  void markReadersDone() { readersDone_.store(true, std::memory_order_release); }
  bool readersDone() const { return readersDone_.load(std::memory_order_acquire); }
  /// Waits until slot `counter` is freed: false if the FIFO closed or `stop` was raised first.
  bool waitReleased(uint64_t counter, const StopFlags& stop);

  /// Waits until a slot holds data; returns it, its size and (if asked) its sender's call tag
  /// (nullptr once stopped).
  const char* waitReadable(size_t* bytes, const StopFlags& stop, CallTag* tag = nullptr);
  /// Frees the slot from waitReadable.
  void release();
  /// Waits at most `timeout` for a slot to hold data: true if one does (false also once closed).
  /// For a reader of a heap FIFO that has other work too (the call ledger's links).
  bool readableWithin(std::chrono::milliseconds timeout);

  /// Wakes every waiter of this process (abort).
  void wakeAll();

  // A non-blocking view for a proxy that moves slots between this FIFO and sockets (heap FIFOs
  // only). The proxy is the consumer of an outgoing FIFO (it calls release) or the producer of an
  // incoming one (it calls publish), and learns of the other side's progress through the observer.
  uint64_t headCount() const { return block_->head.load(std::memory_order_acquire); }
  uint64_t tailCount() const { return block_->tail.load(std::memory_order_acquire); }
  uint64_t wantedCount() const { return block_->wanted.load(std::memory_order_acquire); }
  /// True for a FIFO made by forDevice (a GPU kernel is its other side).
  bool sharedWithDevice() const { return device_; }
  char* slotAt(uint64_t counter) const { return slot(counter); }
  size_t sizeAt(uint64_t counter) const { return header(counter)->size; }
  /// A GPU kernel's outbox: the bytes the kernel put in slot `counter` (FifoBlock::kernelSizes).
  size_t kernelSizeAt(uint64_t counter) const {
    return block_->kernelSizes[counter % slots_].load(std::memory_order_acquire);
  }
  /// Writes a slot's size into its header without publishing it (a proxy sending a kernel's slot
  /// with its header: wireAt).
  void setSizeAt(uint64_t counter, size_t bytes) { header(counter)->size = bytes; }
  /// False when the slots' data lies apart from their headers (forDeviceData): the network then
  /// carries [slotAt(c), slotAt(c) + bytes) alone, registered as dataMemType().
  bool wireContiguous() const { return contiguous_; }
  int dataMemType() const { return memType_; }
  /// forDeviceData's DMA-BUF of the data (-1: none); slot c's offset in it: slotOffset(c).
  int dmabufFd() const { return dmabufFd_; }
  /// Closes the DMA-BUF (after the one lane of a data-apart FIFO registered every slot by it).
  void releaseDmabuf();
  size_t slotOffset(uint64_t counter) const { return (counter % slots_) * stride_; }
  const CallTag& tagAt(uint64_t counter) const { return header(counter)->tag; }
  /// The slot's size and call tag as they lie in memory just ahead of its data (wireContiguous()
  /// FIFOs; forDeviceData's headers lie apart from the data and never travel): a network sends
  /// [wireAt(c), slotAt(c) + bytes) as one message, and a receiver takes one into the same place of
  /// its own slot (publish then writes the same size and tag again, and makes the slot readable).
  char* wireAt(uint64_t counter) const { return reinterpret_cast<char*>(&header(counter)->size); }
  static constexpr size_t kWireBytes = sizeof(uint64_t) + sizeof(CallTag);
  /// Set before the FIFO is used; woken by every publish, release and close.
  void setObserver(FifoObserver* observer) { observer_ = observer; }

  /// How many times a wait polls with a CPU pause before it starts yielding the core: worth it
  /// only when every rank of the host has a core to itself (0, the default, yields at once). With
  /// pauses the yields too go on for longer (milliseconds, not a thousand) before the wait sleeps.
  void setPauseSpins(int spins) { pauseSpins_.store(spins, std::memory_order_relaxed); }
  static constexpr int kBusyPauseSpins = 2000;  // tens of microseconds

  /// Marks the FIFO unusable because `rank` gave up on the call: both sides' waits end at once.
  /// `reason` (a transport's words: what its network said) is kept for the error of the call
  /// that finds the FIFO closed; in this process only.
  void close(int rank, const std::string& reason = std::string());
  /// The reason given to the first close ("" if none).
  std::string closeReason() const;
  /// The rank that closed the FIFO, or -1.
  int closedBy() const { return block_->closedBy.load(std::memory_order_acquire) - 1; }
  /// True once a wait found the peer process gone.
  bool peerDied() const { return peerDied_.load(std::memory_order_acquire); }
  int peerRank() const { return peerRank_; }
  long peerPid() const { return peerPid_; }

 private:
  void notify(bool freed = false);                                          // freed: by the consumer's release
  uint64_t publishSlot(size_t bytes, const CallTag& tag, const char* ref);  // its counter
  template <class Ready>
  bool wait(Ready ready, const StopFlags& stop);
  HostFifo(void* block, int slots, size_t slotBytes, char* data, int memType, int dmabufFd);
  SlotHeader* header(uint64_t counter) const {
    return reinterpret_cast<SlotHeader*>(headers_ + (counter % slots_) * headerStride_);
  }
  char* slot(uint64_t counter) const { return data_ + (counter % slots_) * stride_; }
  void placeSlots(char* first, size_t dataOffset);

  const int slots_;
  const size_t slotBytes_;
  size_t stride_ = 0;        // bytes from one slot's data to the next
  size_t headerStride_ = 0;  // bytes from one slot's header to the next
  const bool crossProcess_;
  const bool device_ = false;
  const int peerRank_ = -1;
  const long peerPid_ = 0;
  std::atomic<bool> peerDied_{false};
  mutable std::mutex reasonMu_;
  std::string reason_;
  std::unique_ptr<char[]> owned_;  // heap block (loopback)
  FifoBlock* block_;
  char* headers_ = nullptr;                // slot 0's header
  char* data_ = nullptr;                   // slot 0's data
  bool contiguous_ = true;                 // each slot's data right after its header
  int memType_ = 1;                        // the data's memory as the network's regMr names it (kPtrHost)
  int dmabufFd_ = -1;                      // forDeviceData: the DMA-BUF of the data, or -1
  alignas(64) uint64_t producerHead_ = 0;  // the producer's last view of head (its side only)
  FifoObserver* observer_ = nullptr;
  bool byReference_ = false;  // allowByReference
  std::atomic<bool> readersDone_{false};
  const char* refs_[kMaxSteps] = {};  // publishRef's data, per slot (written before its tail)
  std::atomic<int> pauseSpins_{0};
  std::atomic<int> sleepers_{0};
  std::mutex mu_;
  std::condition_variable cv_;
};

inline bool StopFlags::raised() const {
  if ((abort != nullptr && abort->load(std::memory_order_acquire)) ||
      (failed != nullptr && failed->load(std::memory_order_acquire))) {
    return true;
  }
  for (int i = 0; i < nWatched; ++i) {
    if (watched[i] != nullptr && watched[i]->closedBy() >= 0) return true;
  }
  return false;
}

}  // namespace braid::transport
