// HostFifo: one directed connection's FIFO in host memory, BRAID_STEPS slots of slotBytes each.
//
//        head (consumer)            tail (producer)
//          v                          v
//   [ slot 0 | slot 1 | slot 2 | ... | slot S-1 ]      ring of S slots, counters grow forever
//
// The producer fills slot (tail % S) when tail - head < S, then publishes it by advancing tail;
// the consumer reads slot (head % S) when head < tail, then frees it by advancing head. Each
// counter is written by one side only (release) and read by the other (acquire). A waiting side
// spins briefly, then sleeps on a condition variable until the other side moves or the
// communicator is aborted.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/status.h"

namespace braid::transport {

/// What ends a wait early: the communicator's abort, or a failure of the call in another lane.
struct StopFlags {
  const std::atomic<bool>* abort = nullptr;
  const std::atomic<bool>* failed = nullptr;
  bool raised() const {
    return (abort != nullptr && abort->load(std::memory_order_acquire)) ||
           (failed != nullptr && failed->load(std::memory_order_acquire));
  }
};

class HostFifo {
 public:
  HostFifo(int slots, size_t slotBytes);

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

  /// Wakes every waiter (abort).
  void wakeAll();

 private:
  void notify();
  template <class Ready>
  bool wait(Ready ready, const StopFlags& stop);

  const int slots_;
  const size_t slotBytes_;
  std::unique_ptr<char[]> data_;
  std::vector<size_t> sizes_;
  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
  std::atomic<int> sleepers_{0};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace braid::transport
