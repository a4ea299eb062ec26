#include "transport/host_fifo.h"

#include <chrono>
#include <new>
#include <thread>

namespace braid::transport {
namespace {

constexpr int kSpins = 2000;  // ~microseconds of polling before sleeping

size_t headerBytes() { return (sizeof(FifoBlock) + 63) / 64 * 64; }

}  // namespace

size_t HostFifo::blockBytes(int slots, size_t slotBytes) { return headerBytes() + slots * slotBytes; }

HostFifo::HostFifo(int slots, size_t slotBytes)
    : slots_(slots), slotBytes_(slotBytes), crossProcess_(false), owned_(new char[blockBytes(slots, slotBytes) + 64]) {
  // Align the block to a cache line and construct the counters in it.
  void* p = owned_.get();
  size_t space = blockBytes(slots, slotBytes) + 64;
  p = std::align(64, blockBytes(slots, slotBytes), p, space);
  block_ = new (p) FifoBlock{};
  data_ = static_cast<char*>(p) + headerBytes();
}

HostFifo::HostFifo(void* block, int slots, size_t slotBytes)
    : slots_(slots),
      slotBytes_(slotBytes),
      crossProcess_(true),
      block_(static_cast<FifoBlock*>(block)),
      data_(static_cast<char*>(block) + headerBytes()) {}

template <class Ready>
bool HostFifo::wait(Ready ready, const StopFlags& stop) {
  for (int i = 0; i < kSpins; ++i) {
    if (ready()) return true;
    if (i > kSpins / 2) std::this_thread::yield();
  }
  if (crossProcess_) {
    // Naps growing to 200 us: the other side is in another process, no condition variable reaches it.
    for (int us = 1; !ready(); us = us < 200 ? us * 2 : 200) {
      if (stop.raised()) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(us));
    }
    return true;
  }
  std::unique_lock<std::mutex> lock(mu_);
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  while (!ready()) {
    if (stop.raised()) {
      sleepers_.fetch_sub(1);
      return false;
    }
    // The timeout bounds how late a stop is seen; notify() wakes the normal case at once.
    cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
  sleepers_.fetch_sub(1);
  return true;
}

void HostFifo::notify() {
  if (crossProcess_) return;
  // Pairs with the waiter's seq_cst increment of sleepers_ before its last check: either the
  // waiter sees the new counter, or this sees the waiter.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

char* HostFifo::waitWritable(const StopFlags& stop) {
  uint64_t tail = block_->tail.load(std::memory_order_relaxed);
  auto ready = [&] { return tail - block_->head.load(std::memory_order_acquire) < static_cast<uint64_t>(slots_); };
  if (!wait(ready, stop)) return nullptr;
  return slot(tail);
}

void HostFifo::publish(size_t bytes) {
  uint64_t tail = block_->tail.load(std::memory_order_relaxed);
  block_->sizes[tail % slots_] = bytes;
  block_->tail.store(tail + 1, std::memory_order_release);
  notify();
}

const char* HostFifo::waitReadable(size_t* bytes, const StopFlags& stop) {
  uint64_t head = block_->head.load(std::memory_order_relaxed);
  auto ready = [&] { return block_->tail.load(std::memory_order_acquire) > head; };
  if (!wait(ready, stop)) return nullptr;
  *bytes = block_->sizes[head % slots_];
  return slot(head);
}

void HostFifo::release() {
  block_->head.store(block_->head.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  notify();
}

void HostFifo::wakeAll() {
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

}  // namespace braid::transport
