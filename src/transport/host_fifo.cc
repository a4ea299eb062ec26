#include "transport/host_fifo.h"

#include <chrono>
#include <thread>

namespace braid::transport {
namespace {
constexpr int kSpins = 2000;  // ~microseconds of polling before sleeping
}

HostFifo::HostFifo(int slots, size_t slotBytes)
    : slots_(slots), slotBytes_(slotBytes), data_(new char[static_cast<size_t>(slots) * slotBytes]), sizes_(slots, 0) {}

template <class Ready>
bool HostFifo::wait(Ready ready, const StopFlags& stop) {
  for (int i = 0; i < kSpins; ++i) {
    if (ready()) return true;
    if (i > kSpins / 2) std::this_thread::yield();
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
  // Pairs with the waiter's seq_cst increment of sleepers_ before its last check: either the
  // waiter sees the new counter, or this sees the waiter.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

char* HostFifo::waitWritable(const StopFlags& stop) {
  uint64_t tail = tail_.load(std::memory_order_relaxed);
  auto ready = [&] { return tail - head_.load(std::memory_order_acquire) < static_cast<uint64_t>(slots_); };
  if (!wait(ready, stop)) return nullptr;
  return data_.get() + (tail % slots_) * slotBytes_;
}

void HostFifo::publish(size_t bytes) {
  uint64_t tail = tail_.load(std::memory_order_relaxed);
  sizes_[tail % slots_] = bytes;
  tail_.store(tail + 1, std::memory_order_release);
  notify();
}

const char* HostFifo::waitReadable(size_t* bytes, const StopFlags& stop) {
  uint64_t head = head_.load(std::memory_order_relaxed);
  auto ready = [&] { return tail_.load(std::memory_order_acquire) > head; };
  if (!wait(ready, stop)) return nullptr;
  *bytes = sizes_[head % slots_];
  return data_.get() + (head % slots_) * slotBytes_;
}

void HostFifo::release() {
  head_.store(head_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  notify();
}

void HostFifo::wakeAll() {
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

}  // namespace braid::transport
