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
  // Read-modify-writes on both sides (here and prepareSleep): they are ordered, so either the
  // sleeper's check sees the change this wake is for, or this sees the sleeper.
  if (sleeping_.fetch_add(0, std::memory_order_acq_rel) == 0 || fd_ < 0) return;
  uint64_t one = 1;
  ssize_t n = ::write(fd_, &one, sizeof(one));
  (void)n;  // EAGAIN: the counter is already non-zero, poll() returns anyway
}

void Waker::prepareSleep() { sleeping_.exchange(1, std::memory_order_acq_rel); }

void Waker::endSleep() {
  sleeping_.store(0, std::memory_order_relaxed);
  uint64_t value = 0;
  ssize_t n = ::read(fd_, &value, sizeof(value));
  (void)n;  // EAGAIN: nobody wrote
}

}  // namespace braid::transport
