// Communicator handles. A braidComm_t is a number handed out once (never reused), mapped to a live
// Comm here; so a destroyed, aborted or made-up handle is recognised and refused instead of being
// dereferenced. Calls hold a shared_ptr for their duration, so abort from another thread never frees
// a Comm under a running call.
#pragma once

#include <memory>

#include "braid/braid.h"
#include "core/comm.h"
#include "core/status.h"

namespace braid::api {

braidComm_t registerComm(std::shared_ptr<core::Comm> comm);

/// Finds a live communicator; errors name the argument `name`.
Status lookupComm(braidComm_t handle, const char* name, std::shared_ptr<core::Comm>* out);

/// As lookupComm, and the communicator must be able to take calls (ready, not finalized).
Status usableComm(braidComm_t handle, std::shared_ptr<core::Comm>* out);

/// Removes the handle; returns the communicator (null if the handle was not live).
std::shared_ptr<core::Comm> unregisterComm(braidComm_t handle);

}  // namespace braid::api
