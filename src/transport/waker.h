// Waker: lets a thread sleep in poll() until another thread has news for it, without a lost wake-up.
//
// The sleeper announces itself (sleeping = true), checks once more for work, then polls fd() among
// its sockets. A producer that changes something first publishes its change, then calls wake():
// it writes the eventfd only when the sleeper announced itself, so a busy proxy costs producers one
// atomic load. The fence pairs the two sides: either the sleeper's last check sees the change, or
// the producer sees `sleeping` and the eventfd makes poll() return.
#pragma once

#include <atomic>

#include "core/status.h"

namespace braid::transport {

class Waker {
 public:
  Waker();
  ~Waker();
  Waker(const Waker&) = delete;
  Waker& operator=(const Waker&) = delete;

  /// Whether the eventfd could be made (it fails only when the process is out of descriptors).
  Status status() const { return status_; }
  int fd() const { return fd_; }

  void wake();
  /// Before the sleeper's last check.
  void prepareSleep();
  /// After poll() returned: clears the eventfd.
  void endSleep();

 private:
  int fd_ = -1;
  Status status_;
  std::atomic<int> sleeping_{0};  // 1 between prepareSleep and endSleep
};

}  // namespace braid::transport
