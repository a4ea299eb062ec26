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
// registered (a collective, as in NCCL: core/comm_windows.cc), and for buffers, which the
// registering rank exports to each other process's export service (core/comm_buffers.cc).
// Elsewhere calls on registered buffers run as on any other buffer. Within one process a buffer
// registration maps nothing, so deregistering while calls are queued is safe; across processes a
// deregistration waits for this rank's queued calls, as a window's does.
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
  /// Whether it lies inside a live registration of `kind`; `*handle` gets its handle (the first found).
  bool within(Kind kind, const void* p, size_t bytes, void** handle);

 private:
  struct Entry {
    Kind kind;
    uintptr_t base;
    size_t bytes;
    int refs;
  };
  const Entry* find(const void* p, size_t bytes, const Kind* only, uintptr_t* key);  // only: any kind if null
  std::mutex mu_;
  // By handle: a number never given twice in the process (not an address, which the allocator
  // would give again to a later registration), so an ended or foreign handle is never found.
  std::map<uintptr_t, Entry> byHandle_;
};

}  // namespace braid::core
