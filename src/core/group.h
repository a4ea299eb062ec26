// Group state of the calling thread. braidGroupStart/End nest; calls made inside a group are held
// and issued together at the outermost braidGroupEnd, each on its own thread, so that calls that
// wait on each other (several communicators driven by one thread, matching sends and receives)
// all complete. Outside a group a call runs at once.
#pragma once

#include <functional>
#include <memory>

#include "core/host_engine.h"
#include "core/status.h"

namespace braid::core {

Status groupStart();

/// Ends one level; the outermost end runs the held calls and returns the first error.
Status groupEnd();

/// Runs `call` now, or holds it until the group ends.
Status runOrDefer(std::function<Status()> call);

class Comm;

/// Runs `request` on `comm` now, or adds it to the group's batch for that communicator: a group's
/// sends and receives on one communicator run together, as one call, at the group's end.
Status runOrDeferP2p(std::shared_ptr<Comm> comm, P2pRequest request);

/// Nesting depth of the calling thread's group (0 outside any group).
int groupDepth();

/// Adds a held call's predicted time (the tuner's) to the group's estimate.
void addToGroupEstimate(double us);

/// Ends one level like groupEnd, but the outermost end runs nothing: the held calls are dropped
/// and `*estimatedUs` gets their predicted time (ncclGroupSimulateEnd).
Status groupSimulateEnd(double* estimatedUs);

}  // namespace braid::core
