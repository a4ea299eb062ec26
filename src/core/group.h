// Group state of the calling thread. braidGroupStart/End nest; calls made inside a group are held
// and issued together at the outermost braidGroupEnd: each communicator's calls on a thread of
// their own, in the order they were posted (its collectives, then its sends and receives as one
// batch). Communicators that wait on each other (several driven by one thread) all complete, and
// every rank issues one communicator's calls in the same order. Outside a group a call runs at once.
#pragma once

#include <functional>
#include <memory>

#include "core/host_engine.h"
#include "core/status.h"

namespace braid::core {

Status groupStart();

/// Ends one level; the outermost end runs the held calls and returns the first error.
Status groupEnd();

class Comm;

/// Runs `call` (a call of `comm`) now, or holds it until the group ends.
Status runOrDefer(const Comm* comm, std::function<Status()> call);

/// Runs collective `request` on `comm` now, or holds it until the group ends: consecutive held
/// collectives of a communicator run as one Comm::collectives (on a GPU, one launch where they share
/// a kernel). `function` names the call in errors.
Status runOrDeferCollective(std::shared_ptr<Comm> comm, const CollRequest& request, const char* function);

/// Runs `request` on `comm` now, or adds it to the group's batch for that communicator: a group's
/// sends and receives on one communicator run together, as one call, at the group's end.
Status runOrDeferP2p(std::shared_ptr<Comm> comm, P2pRequest request);

/// Inside a group: `comm`'s init was started without waiting (a blocking init of one rank would wait
/// for ranks the same thread creates later in the group); the outermost end waits for it first and
/// returns its failure, if any.
void addGroupInit(std::shared_ptr<Comm> comm);

/// Returns `s`. Inside a group, a failed call is also recorded: the outermost end then issues none of
/// the group's calls and returns the first failure (as ncclGroupEnd does), so that no rank issues
/// part of a group its peers issue whole.
Status failGroup(Status s);

/// Nesting depth of the calling thread's group (0 outside any group).
int groupDepth();

/// Adds a held call's predicted time (the tuner's) to the group's estimate.
void addToGroupEstimate(double us);

/// Ends one level like groupEnd, but the outermost end runs nothing: the held calls are dropped
/// and `*estimatedUs` gets their predicted time (ncclGroupSimulateEnd).
Status groupSimulateEnd(double* estimatedUs);

}  // namespace braid::core
