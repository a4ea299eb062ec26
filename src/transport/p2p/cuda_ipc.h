// CUDA IPC mappings of other processes' allocations, counted process-wide. Every rank of a process
// that reaches the same allocation of another process (its FIFO arena, a window) opens it here: the
// first opens the handle, the others share the mapping, the last release closes it. One lock for
// all of them, so two ranks of a process never open one handle at the same time (the driver then
// refused the second thread with "resource already mapped").
#pragma once

#include <string>

#include "core/status.h"

namespace braid::transport {

/// The bytes of a cudaIpcMemHandle_t.
constexpr size_t kIpcHandleBytes = 64;

/// Maps the allocation of `handle` into this process (or counts one more user of its mapping) and
/// sets `*at` to where it lies; `what` names it in an error.
Status openIpcMapping(const unsigned char* handle, const std::string& what, void** at);
/// One user fewer of the mapping of `handle`; the last closes it.
void closeIpcMapping(const unsigned char* handle);

}  // namespace braid::transport
