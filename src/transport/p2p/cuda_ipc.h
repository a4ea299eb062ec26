// CUDA IPC mappings of other processes' allocations, counted per device of this process. Every rank
// of a process on one device that reaches the same allocation of another process (its FIFO arena, a
// window) opens it here: the first opens the handle (in that device's context), the others share
// the mapping, the last release closes it. One lock for all of them, so two ranks of a process never
// open one handle at the same time (the driver then refused the second thread with "resource
// already mapped"). Ranks on different devices map it each in their own context.
#pragma once

#include <string>

#include "core/status.h"

namespace braid::transport {

/// The bytes of a cudaIpcMemHandle_t.
constexpr size_t kIpcHandleBytes = 64;

/// Maps the allocation of `handle` for CUDA device `device` of this process, which is current (or
/// counts one more user of its mapping), and sets `*at` to where it lies; `what` names it in an error.
Status openIpcMapping(int device, const unsigned char* handle, const std::string& what, void** at);
/// One user fewer of `device`'s mapping of `handle` (the device current); the last closes it.
void closeIpcMapping(int device, const unsigned char* handle);

}  // namespace braid::transport
