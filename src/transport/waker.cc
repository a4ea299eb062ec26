#include "transport/waker.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace braid::transport {

Waker::Waker() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (fd_ < 0) status_ = errnoError("eventfd for a socket proxy thread", errno);
}

Waker::~Waker() {
  if (fd_ >= 0) ::close(fd_);
}

void Waker::wake() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!sleeping_.load(std::memory_order_seq_cst) || fd_ < 0) return;
  uint64_t one = 1;
  ssize_t n = ::write(fd_, &one, sizeof(one));
  (void)n;  // EAGAIN: the counter is already non-zero, poll() returns anyway
}

void Waker::prepareSleep() {
  sleeping_.store(true, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void Waker::endSleep() {
  sleeping_.store(false, std::memory_order_relaxed);
  uint64_t value = 0;
  ssize_t n = ::read(fd_, &value, sizeof(value));
  (void)n;  // EAGAIN: nobody wrote
}

}  // namespace braid::transport
