// The buffers registered with a communicator (braidCommRegister, braidCommWindowRegister), as NCCL
// keeps them: each registration gets a handle; the same range registered again gets the same handle
// and one more reference, and needs one more deregistration; a handle that is not a live
// registration of this communicator (never made, deregistered already, another communicator's, the
// other kind's) is refused with an error, never dereferenced.
//
// A GPU communicator whose ranks all live in one process runs a collective whose buffers are
// registered (buffers or windows) by its direct kernel: each rank reads and writes its peers' user
// buffers by their addresses, no FIFO between (device/direct.cuh, docs/nccl-compat.md). Across the
// processes of one host the same holds for windows, which are exported by CUDA IPC as they are
// registered (a collective, as in NCCL: core/comm_windows.cc). Elsewhere calls on registered
// buffers run as on any other buffer. A buffer registration maps nothing, so deregistering while
// calls are queued is safe; a window's deregistration waits for this rank's queued calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "core/status.h"

namespace braid::core {

class Registrations {
 public:
  enum class Kind { kBuffer, kWindow };

  /// Registers [base, base + bytes); `*handle` gets the registration's handle.
  Status add(Kind kind, const void* base, size_t bytes, void** handle);
  /// Drops one reference of `handle`; the last one ends the registration.
  Status remove(Kind kind, const void* handle);
  /// Whether [p, p + bytes) lies inside one live registration of either kind (bytes 0: p inside).
  bool covers(const void* p, size_t bytes);
  /// Whether it lies inside a live window; `*handle` gets the window's (the first found).
  bool inWindow(const void* p, size_t bytes, void** handle);

 private:
  struct Entry {
    Kind kind;
    uintptr_t base;
    size_t bytes;
    int refs;
  };
  const Entry* find(const void* p, size_t bytes, bool windowsOnly, uintptr_t* key);
  std::mutex mu_;
  // By handle: a number never given twice in the process (not an address, which the allocator
  // would give again to a later registration), so an ended or foreign handle is never found.
  std::map<uintptr_t, Entry> byHandle_;
};

}  // namespace braid::core
