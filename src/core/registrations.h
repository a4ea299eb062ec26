// The buffers registered with a communicator (braidCommRegister, braidCommWindowRegister), as NCCL
// keeps them: each registration gets a handle; the same range registered again gets the same handle
// and one more reference, and needs one more deregistration; a handle that is not a live
// registration of this communicator (never made, deregistered already, another communicator's, the
// other kind's) is refused with an error, never dereferenced.
//
// Today braid keeps the record only: calls on registered buffers run as on any other buffer (through
// the FIFOs), so a registration costs nothing and changes nothing a call does (docs/nccl-compat.md).
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

 private:
  struct Entry {
    Kind kind;
    uintptr_t base;
    size_t bytes;
    int refs;
  };
  std::mutex mu_;
  // By handle: a number never given twice in the process (not an address, which the allocator
  // would give again to a later registration), so an ended or foreign handle is never found.
  std::map<uintptr_t, Entry> byHandle_;
};

}  // namespace braid::core
