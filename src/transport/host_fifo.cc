#include "transport/host_fifo.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <new>
#include <thread>

namespace braid::transport {
namespace {

// Polling before sleeping: first pauseSpins_ checks with a CPU pause between them (when every rank
// of the host has a core of its own, the peer answers within microseconds), then kYieldSpins checks
// that yield the core between them (the peer may be waiting for this core).
constexpr int kYieldSpins = 1000;
// ... except where every rank has a core of its own (pauseSpins_ > 0): there the yields go on for
// kBusyYieldMicros. A wait that ends in the sleep makes its wake-up slow (a futex wake, and on a VM
// a halted virtual CPU to restart: hundreds of microseconds), which makes the peer's next wait
// long enough to sleep too: on the 2-core VM, 8 B all-reduces between two namespaced hosts fell
// into runs of ~300 us calls (p99 315-333 us, once a median of 145 us) with 1000 yields (about
// 200 us), and kept a p99 of 24-34 us when the yields lasted some milliseconds (bench/NOTES.md).
constexpr int64_t kBusyYieldMicros = 4000;
constexpr int kYieldsPerClockRead = 64;
// A network FIFO's bytes move only when someone steps its lanes, and a caller that pauses while
// its proxy waits for a core moves none: its pauses step the lanes every kPausesPerStep (a step is
// a few system calls), for at most kObservedPauseMicros, before the yields. On the 2-core VM
// (two namespaced hosts, one rank each), medians of 12 runs: 8 B all-reduce 28 us against 41 us
// with pauses alone; 128 MB busbw 1.02 GB/s against 0.90 (without the time bound, 0.89, with a
// slow tail; bench/NOTES.md).
constexpr int kPausesPerStep = 16;
constexpr int64_t kObservedPauseMicros = 100;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

constexpr size_t kLine = 64;

size_t roundUp(size_t bytes, size_t to = kLine) { return (bytes + to - 1) / to * to; }
// The counters' block, then the slots: each [header | data], the data `align`-aligned (a host FIFO:
// right after its header, so that a small message shares its header's cache line).
size_t headerBytes(size_t align = 0) { return roundUp(sizeof(FifoBlock), std::max(kLine, align)); }
size_t dataOffsetFor(size_t align) { return align == 0 ? sizeof(SlotHeader) : roundUp(sizeof(SlotHeader), align); }
size_t strideFor(size_t slotBytes, size_t align = 0) {
  return roundUp(dataOffsetFor(align) + slotBytes, std::max(kLine, align));
}

}  // namespace

size_t HostFifo::blockBytes(int slots, size_t slotBytes) { return headerBytes() + slots * strideFor(slotBytes); }

size_t HostFifo::deviceBlockBytes(int slots, size_t slotBytes) {
  return headerBytes(kDeviceAlign) + slots * strideFor(slotBytes, kDeviceAlign);
}

// forDeviceData: the counters' block, then one line per slot header.
size_t HostFifo::deviceControlBytes(int slots) {
  return headerBytes(kDeviceAlign) + slots * roundUp(sizeof(SlotHeader));
}
// Whole pages: a network maps each slot of a DMA-BUF from its own page-aligned offset.
size_t HostFifo::deviceDataStride(size_t slotBytes) { return roundUp(slotBytes, 4096); }

HostFifo::DeviceLayout HostFifo::deviceLayout(size_t slotBytes) {
  DeviceLayout l;
  l.head = offsetof(FifoBlock, head);
  l.tail = offsetof(FifoBlock, tail);
  l.firstData = headerBytes(kDeviceAlign) + dataOffsetFor(kDeviceAlign);
  l.stride = strideFor(slotBytes, kDeviceAlign);
  l.kernelSizes = offsetof(FifoBlock, kernelSizes);
  l.wanted = offsetof(FifoBlock, wanted);
  return l;
}

std::unique_ptr<HostFifo> HostFifo::forDevice(void* block, int slots, size_t slotBytes) {
  return std::unique_ptr<HostFifo>(new HostFifo(block, slots, slotBytes, nullptr, 0, -1));
}

std::unique_ptr<HostFifo> HostFifo::forDeviceData(void* block, char* data, int slots, size_t slotBytes, int memType,
                                                  int dmabufFd) {
  return std::unique_ptr<HostFifo>(new HostFifo(block, slots, slotBytes, data, memType, dmabufFd));
}

HostFifo::HostFifo(void* block, int slots, size_t slotBytes, char* data, int memType, int dmabufFd)
    : slots_(slots),
      slotBytes_(slotBytes),
      crossProcess_(true),  // no waiter here to notify: the kernel polls
      device_(true),
      block_(new (block) FifoBlock{}) {
  char* first = static_cast<char*>(block) + headerBytes(kDeviceAlign);
  if (data == nullptr) {
    stride_ = strideFor(slotBytes, kDeviceAlign);
    placeSlots(first, dataOffsetFor(kDeviceAlign));
    return;
  }
  headers_ = first;
  headerStride_ = roundUp(sizeof(SlotHeader));
  data_ = data;
  stride_ = deviceDataStride(slotBytes);
  contiguous_ = false;
  memType_ = memType;
  dmabufFd_ = dmabufFd;
}

HostFifo::~HostFifo() { releaseDmabuf(); }

void HostFifo::releaseDmabuf() {
  if (dmabufFd_ >= 0) ::close(dmabufFd_);
  dmabufFd_ = -1;
}

// Slots of [header | data] from `first`, the data `dataOffset` into each.
void HostFifo::placeSlots(char* first, size_t dataOffset) {
  data_ = first + dataOffset;
  headers_ = data_ - sizeof(SlotHeader);
  headerStride_ = stride_;
}

HostFifo::HostFifo(int slots, size_t slotBytes)
    : slots_(slots),
      slotBytes_(slotBytes),
      stride_(strideFor(slotBytes)),
      crossProcess_(false),
      owned_(new char[blockBytes(slots, slotBytes) + kLine]()) {
  // Align the block to a cache line and construct the counters in it (the slots are zeroed).
  void* p = owned_.get();
  size_t space = blockBytes(slots, slotBytes) + kLine;
  p = std::align(kLine, blockBytes(slots, slotBytes), p, space);
  block_ = new (p) FifoBlock{};
  placeSlots(static_cast<char*>(p) + headerBytes(), dataOffsetFor(0));
}

HostFifo::HostFifo(void* block, int slots, size_t slotBytes, int peerRank, long peerPid)
    : slots_(slots),
      slotBytes_(slotBytes),
      stride_(strideFor(slotBytes)),
      crossProcess_(true),
      peerRank_(peerRank),
      peerPid_(peerPid),
      block_(static_cast<FifoBlock*>(block)) {
  placeSlots(static_cast<char*>(block) + headerBytes(), dataOffsetFor(0));
}

bool processGone(long pid) {
  if (pid <= 0) return false;
  if (kill(static_cast<pid_t>(pid), 0) != 0) return errno == ESRCH;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
  std::FILE* f = std::fopen(path, "r");
  if (f == nullptr) return true;
  char state = '?';
  int got = std::fscanf(f, "%*d (%*[^)]) %c", &state);
  std::fclose(f);
  return got == 1 && (state == 'Z' || state == 'X');
}

template <class Ready>
bool HostFifo::wait(Ready ready, const StopFlags& stop) {
  auto done = [&] { return ready() || block_->closedBy.load(std::memory_order_acquire) != 0; };
  const int pauseSpins = pauseSpins_.load(std::memory_order_relaxed);
  std::chrono::steady_clock::time_point pauseUntil;  // read at the first step: most waits end before
  for (int i = 0; i < pauseSpins; ++i) {
    if (done()) return ready();
    if (observer_ != nullptr && i % kPausesPerStep == kPausesPerStep - 1) {
      observer_->stepInline();
      const auto now = std::chrono::steady_clock::now();
      if (i == kPausesPerStep - 1) pauseUntil = now + std::chrono::microseconds(kObservedPauseMicros);
      if (now > pauseUntil) break;
      continue;
    }
    cpuRelax();
  }
  const bool busy = pauseSpins > 0;
  std::chrono::steady_clock::time_point yieldUntil;
  for (int i = 0; busy || i < kYieldSpins; ++i) {
    if (done()) return ready();
    if (busy && i % kYieldsPerClockRead == 0) {
      const auto now = std::chrono::steady_clock::now();
      if (i == 0) yieldUntil = now + std::chrono::microseconds(kBusyYieldMicros);
      if (now > yieldUntil) break;
      if (stop.raised()) return false;
    }
    if (observer_ != nullptr && i % 4 == 0) {
      observer_->stepInline();
      continue;
    }
    std::this_thread::yield();
  }
  if (crossProcess_) {
    // Naps growing to 200 us: the other side is in another process, no condition variable reaches it.
    // About every 20 ms, check that it still exists.
    auto nextCheck = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    for (int us = 1; !done(); us = us < 200 ? us * 2 : 200) {
      if (stop.raised()) return false;
      if (std::chrono::steady_clock::now() > nextCheck) {
        // A peer that published what this side waits for and then exited (its call done) is not a
        // failure: look once more after seeing it gone. (Between this loop's last look and the
        // check, the peer may have done both; nccl_host_processes failed so once under load.)
        if (processGone(peerPid_)) {
          if (ready()) return true;
          peerDied_.store(true, std::memory_order_release);
          return false;
        }
        nextCheck = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(us));
    }
    return ready();
  }
  std::unique_lock<std::mutex> lock(mu_);
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  while (!done()) {
    if (stop.raised()) {
      sleepers_.fetch_sub(1);
      return false;
    }
    // The timeout bounds how late a stop is seen; notify() wakes the normal case at once.
    cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
  sleepers_.fetch_sub(1);
  return ready();
}

void HostFifo::notify(bool freed) {
  if (crossProcess_) return;
  if (observer_ != nullptr) freed ? observer_->freed() : observer_->wake();
  // A read-modify-write of sleepers_, like the waiter's increment before its last check: the two
  // are ordered, so either the waiter's check sees what this side published, or this sees the
  // waiter. (An RMW rather than a fence and a load: ThreadSanitizer follows RMWs, not fences.)
  if (sleepers_.fetch_add(0, std::memory_order_acq_rel) == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

char* HostFifo::waitWritable(const StopFlags& stop) {
  uint64_t tail = block_->tail.load(std::memory_order_relaxed);
  const uint64_t slots = static_cast<uint64_t>(slots_);
  if (tail - producerHead_ >= slots) {
    // Looks full from here: read the consumer's head (only then, so as not to pull its line over).
    auto ready = [&] {
      producerHead_ = block_->head.load(std::memory_order_acquire);
      return tail - producerHead_ < slots;
    };
    if (!wait(ready, stop)) return nullptr;
  } else if (block_->closedBy.load(std::memory_order_acquire) != 0) {
    return nullptr;
  }
  return slot(tail);
}

void HostFifo::publish(size_t bytes, const CallTag& tag) { publishSlot(bytes, tag, nullptr); }

uint64_t HostFifo::publishRef(const char* data, size_t bytes, const CallTag& tag) {
  return publishSlot(bytes, tag, data);
}

uint64_t HostFifo::publishSlot(size_t bytes, const CallTag& tag, const char* ref) {
  uint64_t tail = block_->tail.load(std::memory_order_relaxed);
  if (byReference_) refs_[tail % slots_] = ref;  // before the tail's release: read after acquiring it
  SlotHeader* h = header(tail);
  h->size = bytes;
  h->tag = tag;
  h->seq.store(tail + 1, std::memory_order_release);
  block_->tail.store(tail + 1, std::memory_order_release);
  notify();
  return tail;
}

bool HostFifo::waitReleased(uint64_t counter, const StopFlags& stop) {
  if (released(counter)) return true;
  return wait([&] { return released(counter); }, stop);
}

const char* HostFifo::waitReadable(size_t* bytes, const StopFlags& stop, CallTag* tag) {
  uint64_t head = block_->head.load(std::memory_order_relaxed);
  SlotHeader* h = header(head);
  auto ready = [&] { return h->seq.load(std::memory_order_acquire) == head + 1; };
  if (!wait(ready, stop)) return nullptr;
  *bytes = h->size;
  if (tag != nullptr) *tag = h->tag;
  return slot(head);
}

bool HostFifo::readableWithin(std::chrono::milliseconds timeout) {
  const uint64_t head = block_->head.load(std::memory_order_relaxed);
  SlotHeader* h = header(head);
  auto ready = [&] { return h->seq.load(std::memory_order_acquire) == head + 1; };
  auto done = [&] { return ready() || block_->closedBy.load(std::memory_order_acquire) != 0; };
  if (done() || crossProcess_) return ready();
  std::unique_lock<std::mutex> lock(mu_);
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  cv_.wait_for(lock, timeout, done);
  sleepers_.fetch_sub(1);
  return ready();
}

void HostFifo::release() {
  block_->head.store(block_->head.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  notify(true);
}

void HostFifo::close(int rank, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(reasonMu_);
    if (reason_.empty() && closedBy() < 0) reason_ = reason;
  }
  int32_t open = 0;
  block_->closedBy.compare_exchange_strong(open, rank + 1, std::memory_order_acq_rel);
  wakeAll();
}

std::string HostFifo::closeReason() const {
  std::lock_guard<std::mutex> lock(reasonMu_);
  return reason_;
}

void HostFifo::wakeAll() {
  if (observer_ != nullptr) observer_->wake();
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

}  // namespace braid::transport
