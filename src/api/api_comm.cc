// C entry points that make, query and end communicators.
#include <cstring>
#include <vector>

#include "api/guard.h"
#include "api/handles.h"
#include "api/validate.h"
#include "core/comm_init.h"
#include "core/group.h"
#include "core/log.h"

namespace braid::api {
namespace {

// Init-time result: kInProgress for a non-blocking init that is still running.
Status started(const std::shared_ptr<core::Comm>& comm, braidComm_t* out) {
  *out = registerComm(comm);
  if (comm->state() == core::Comm::State::kInitializing) return Status(Code::kInProgress, "");
  return Status::ok();
}

// A communicator made from `parent` by every rank that takes part (split, shrink): `make` runs the
// parent's exchange and starts the child. Inside a group it is held like a collective of the
// parent: one thread may make several ranks' children (their exchanges meet once braidGroupEnd runs
// each parent's calls on a thread of its own); the child is made, and *newcomm written, before
// braidGroupEnd returns.
using MakeChild = std::function<Status(const core::CommConfig&, std::shared_ptr<core::Comm>*)>;

Status makeChild(const std::shared_ptr<core::Comm>& parent, braidConfig_t* config, braidComm_t* newcomm,
                 MakeChild make) {
  braid::log::ScopedRank scoped(parent->rank());
  core::CommConfig resolved;
  BRAID_RETURN_IF_ERROR(core::applyUserConfig(config, parent->config(), &resolved));
  if (core::groupDepth() > 0) {
    resolved.blocking = 1;
    return core::runOrDefer(parent.get(), [resolved, newcomm, make]() -> Status {
      std::shared_ptr<core::Comm> child;
      BRAID_RETURN_IF_ERROR(make(resolved, &child));
      if (child != nullptr) *newcomm = api::registerComm(child);
      return Status::ok();
    });
  }
  std::shared_ptr<core::Comm> child;
  BRAID_RETURN_IF_ERROR(make(resolved, &child));
  if (child == nullptr) return Status::ok();
  return api::started(child, newcomm);
}

Status initRank(braidComm_t* out, int nranks, const braidUniqueId& id, int rank, const braidConfig_t* config) {
  BRAID_RETURN_IF_ERROR(checkNotNull(out, "comm"));
  *out = nullptr;
  if (nranks < 1) return invalidArgument("'nranks' = " + std::to_string(nranks) + " must be >= 1");
  BRAID_RETURN_IF_ERROR(checkRank(rank, nranks, "rank"));
  log::ScopedRank scoped(rank);
  core::InitArgs args;
  static_assert(sizeof(args.id.bytes) == sizeof(id.internal), "unique id sizes agree");
  std::memcpy(args.id.bytes, id.internal, sizeof(id.internal));
  args.rank = rank;
  args.nranks = nranks;
  core::CommConfig defaults;
  BRAID_RETURN_IF_ERROR(core::defaultConfig(&defaults));
  BRAID_RETURN_IF_ERROR(core::applyUserConfig(config, defaults, &args.config));
  // Inside a group a blocking init starts without waiting: one thread may create several ranks of
  // the communicator in the group (ncclCommInitRank per device), and the group's end waits.
  const bool deferred = core::groupDepth() > 0 && args.config.blocking;
  if (deferred) args.config.blocking = 0;
  std::shared_ptr<core::Comm> comm;
  BRAID_RETURN_IF_ERROR(core::Comm::start(args, &comm));
  if (!deferred) return started(comm, out);
  *out = registerComm(comm);
  core::addGroupInit(comm);
  return Status::ok();
}

// Query entry points share this shape: a live comm (any state) and a non-null output.
template <class Get>
braidResult_t query(const char* function, braidComm_t handle, int* out, const char* outName, Get get) {
  return guard(function, [&]() -> Status {
    std::shared_ptr<core::Comm> comm;
    BRAID_RETURN_IF_ERROR(lookupComm(handle, "comm", &comm));
    BRAID_RETURN_IF_ERROR(checkNotNull(out, outName));
    *out = get(*comm);
    return Status::ok();
  });
}

// A window registration's arguments (the registration is collective: see braidCommWindowRegister).
Status checkWindowArgs(const void* buff, size_t size, const braidWindow_t* win, int winFlags) {
  BRAID_RETURN_IF_ERROR(checkNotNull(buff, "buff"));
  BRAID_RETURN_IF_ERROR(checkNotNull(win, "win"));
  if (size == 0) return invalidArgument("'size' is 0: there is nothing to register");
  if ((winFlags & ~BRAID_WIN_COLL_SYMMETRIC) != 0) {
    return invalidArgument("'winFlags' = " + std::to_string(winFlags) +
                           " has bits other than BRAID_WIN_COLL_SYMMETRIC (NCCL_WIN_COLL_SYMMETRIC)");
  }
  return Status::ok();
}

}  // namespace
}  // namespace braid::api

namespace api = braid::api;
namespace core = braid::core;
using braid::Status;

extern "C" {

braidResult_t braidGetUniqueId(braidUniqueId* uniqueId) {
  return api::guard("braidGetUniqueId", [&]() -> Status {
    BRAID_RETURN_IF_ERROR(api::checkNotNull(uniqueId, "uniqueId"));
    braid::bootstrap::UniqueIdBytes id;
    BRAID_RETURN_IF_ERROR(braid::bootstrap::createUniqueId(&id));
    std::memcpy(uniqueId->internal, id.bytes, sizeof(id.bytes));
    return Status::ok();
  });
}

braidResult_t braidCommInitRank(braidComm_t* comm, int nranks, braidUniqueId uniqueId, int rank) {
  return api::guard("braidCommInitRank", [&] { return api::initRank(comm, nranks, uniqueId, rank, nullptr); });
}

braidResult_t braidCommInitRankConfig(braidComm_t* comm, int nranks, braidUniqueId uniqueId, int rank,
                                      braidConfig_t* config) {
  return api::guard("braidCommInitRankConfig", [&] { return api::initRank(comm, nranks, uniqueId, rank, config); });
}

braidResult_t braidCommInitAll(braidComm_t* comms, int ndev, const int* devlist) {
  return api::guard("braidCommInitAll", [&]() -> Status {
    BRAID_RETURN_IF_ERROR(api::checkNotNull(comms, "comms"));
    std::vector<std::shared_ptr<core::Comm>> made;
    BRAID_RETURN_IF_ERROR(core::initAll(ndev, devlist, &made));
    for (int i = 0; i < ndev; ++i) comms[i] = api::registerComm(made[i]);
    return Status::ok();
  });
}

braidResult_t braidCommInitFromEnv(braidComm_t* comm, braidConfig_t* config) {
  return api::guard("braidCommInitFromEnv", [&]() -> Status {
    BRAID_RETURN_IF_ERROR(api::checkNotNull(comm, "comm"));
    *comm = nullptr;
    core::CommConfig defaults, resolved;
    BRAID_RETURN_IF_ERROR(core::defaultConfig(&defaults));
    BRAID_RETURN_IF_ERROR(core::applyUserConfig(config, defaults, &resolved));
    std::shared_ptr<core::Comm> made;
    BRAID_RETURN_IF_ERROR(core::initFromEnv(resolved, &made));
    return api::started(made, comm);
  });
}

braidResult_t braidCommSplit(braidComm_t comm, int color, int key, braidComm_t* newcomm, braidConfig_t* config) {
  return api::guard("braidCommSplit", [&]() -> Status {
    return core::failGroup([&]() -> Status {
      std::shared_ptr<core::Comm> parent;
      BRAID_RETURN_IF_ERROR(api::usableComm(comm, &parent));
      BRAID_RETURN_IF_ERROR(api::checkNotNull(newcomm, "newcomm"));
      *newcomm = nullptr;
      if (color < 0 && color != BRAID_SPLIT_NOCOLOR) {
        return braid::invalidArgument("'color' = " + std::to_string(color) + " must be >= 0 or BRAID_SPLIT_NOCOLOR");
      }
      return api::makeChild(parent, config, newcomm,
                            [parent, color, key](const core::CommConfig& c, std::shared_ptr<core::Comm>* child) {
                              return parent->split(color, key, c, child).withContext("braidCommSplit");
                            });
    }());
  });
}

braidResult_t braidCommShrink(braidComm_t comm, int* excludeRanksList, int excludeRanksCount, braidComm_t* newcomm,
                              braidConfig_t* config, int shrinkFlags) {
  return api::guard("braidCommShrink", [&]() -> Status {
    return core::failGroup([&]() -> Status {
      std::shared_ptr<core::Comm> parent;
      // A failed communicator may be shrunk (that is what shrink is for); the parent checks the rest.
      BRAID_RETURN_IF_ERROR(api::lookupComm(comm, "comm", &parent));
      BRAID_RETURN_IF_ERROR(api::checkNotNull(newcomm, "newcomm"));
      *newcomm = nullptr;
      if (excludeRanksCount < 0) {
        return braid::invalidArgument("'excludeRanksCount' = " + std::to_string(excludeRanksCount) + " is negative");
      }
      if (excludeRanksCount > 0) BRAID_RETURN_IF_ERROR(api::checkNotNull(excludeRanksList, "excludeRanksList"));
      if ((shrinkFlags & ~BRAID_SHRINK_ABORT) != 0) {
        return braid::invalidArgument("'shrinkFlags' = " + std::to_string(shrinkFlags) +
                                      " has bits other than BRAID_SHRINK_ABORT (NCCL_SHRINK_ABORT)");
      }
      std::vector<int> excluded(excludeRanksList, excludeRanksList + excludeRanksCount);
      const bool abortFirst = (shrinkFlags & BRAID_SHRINK_ABORT) != 0;
      return api::makeChild(
          parent, config, newcomm,
          [parent, excluded, abortFirst](const core::CommConfig& c, std::shared_ptr<core::Comm>* child) {
            return parent->shrink(excluded, c, abortFirst, child).withContext("braidCommShrink");
          });
    }());
  });
}

braidResult_t braidCommFinalize(braidComm_t comm) {
  return api::guard("braidCommFinalize", [&]() -> Status {
    std::shared_ptr<core::Comm> c;
    BRAID_RETURN_IF_ERROR(api::lookupComm(comm, "comm", &c));
    return c->finalize();
  });
}

braidResult_t braidCommDestroy(braidComm_t comm) {
  return api::guard("braidCommDestroy", [&]() -> Status {
    std::shared_ptr<core::Comm> c;
    BRAID_RETURN_IF_ERROR(api::lookupComm(comm, "comm", &c));
    api::unregisterComm(comm);
    return Status::ok();  // freed when the last call holding it returns
  });
}

braidResult_t braidCommAbort(braidComm_t comm) {
  return api::guard("braidCommAbort", [&]() -> Status {
    std::shared_ptr<core::Comm> c;
    BRAID_RETURN_IF_ERROR(api::lookupComm(comm, "comm", &c));
    c->abort();
    api::unregisterComm(comm);
    return Status::ok();
  });
}

braidResult_t braidRedOpCreatePreMulSum(braidRedOp_t* op, void* scalar, braidDataType_t datatype,
                                        braidScalarResidence_t residence, braidComm_t comm) {
  return api::guard("braidRedOpCreatePreMulSum", [&]() -> Status {
    std::shared_ptr<core::Comm> c;
    BRAID_RETURN_IF_ERROR(api::lookupComm(comm, "comm", &c));
    BRAID_RETURN_IF_ERROR(api::checkNotNull(op, "op"));
    BRAID_RETURN_IF_ERROR(api::checkNotNull(scalar, "scalar"));
    BRAID_RETURN_IF_ERROR(api::checkType(datatype));
    if (residence != braidScalarDevice && residence != braidScalarHostImmediate) {
      return braid::invalidArgument("'residence' = " + std::to_string(static_cast<int>(residence)) +
                                    " is neither braidScalarDevice nor braidScalarHostImmediate");
    }
    return c->createPreMulSum(scalar, datatype, residence == braidScalarHostImmediate, op);
  });
}

braidResult_t braidRedOpDestroy(braidRedOp_t op, braidComm_t comm) {
  return api::guard("braidRedOpDestroy", [&]() -> Status {
    std::shared_ptr<core::Comm> c;
    BRAID_RETURN_IF_ERROR(api::lookupComm(comm, "comm", &c));
    return c->destroyRedOp(op);
  });
}

// Registration (core/registrations.h): checked here, kept by the communicator.
braidResult_t braidCommRegister(const braidComm_t comm, void* buff, size_t size, void** handle) {
  return api::guard("braidCommRegister", [&]() -> Status {
    std::shared_ptr<core::Comm> c;
    BRAID_RETURN_IF_ERROR(api::lookupComm(comm, "comm", &c));
    BRAID_RETURN_IF_ERROR(api::checkNotNull(buff, "buff"));
    BRAID_RETURN_IF_ERROR(api::checkNotNull(handle, "handle"));
    if (size == 0) return braid::invalidArgument("'size' is 0: there is nothing to register");
    return c->registerBuffer(buff, size, handle);
  });
}

braidResult_t braidCommDeregister(const braidComm_t comm, void* handle) {
  return api::guard("braidCommDeregister", [&]() -> Status {
    std::shared_ptr<core::Comm> c;
    BRAID_RETURN_IF_ERROR(api::lookupComm(comm, "comm", &c));
    BRAID_RETURN_IF_ERROR(api::checkNotNull(handle, "handle"));
    return c->deregisterBuffer(handle);
  });
}

braidResult_t braidCommWindowRegister(braidComm_t comm, void* buff, size_t size, braidWindow_t* win, int winFlags) {
  return api::guard("braidCommWindowRegister", [&]() -> Status {
    std::shared_ptr<core::Comm> c;
    BRAID_RETURN_IF_ERROR(api::lookupComm(comm, "comm", &c));
    // Registering is a collective: bad arguments on this rank are its error, after it has taken part.
    const Status refused = api::checkWindowArgs(buff, size, win, winFlags);
    if (win != nullptr) *win = nullptr;  // (what a refused registration leaves)
    void* handle = nullptr;
    BRAID_RETURN_IF_ERROR(
        c->registerWindow(buff, size, refused, &handle).withContext("rank " + std::to_string(c->rank())));
    *win = static_cast<braidWindow_t>(handle);
    return Status::ok();
  });
}

braidResult_t braidCommWindowDeregister(braidComm_t comm, braidWindow_t win) {
  return api::guard("braidCommWindowDeregister", [&]() -> Status {
    std::shared_ptr<core::Comm> c;
    BRAID_RETURN_IF_ERROR(api::lookupComm(comm, "comm", &c));
    BRAID_RETURN_IF_ERROR(api::checkNotNull(win, "win"));
    return c->deregisterWindow(win).withContext("rank " + std::to_string(c->rank()));
  });
}

braidResult_t braidCommGetAsyncError(braidComm_t comm, braidResult_t* asyncError) {
  return api::guard("braidCommGetAsyncError", [&]() -> Status {
    std::shared_ptr<core::Comm> c;
    BRAID_RETURN_IF_ERROR(api::lookupComm(comm, "comm", &c));
    BRAID_RETURN_IF_ERROR(api::checkNotNull(asyncError, "asyncError"));
    *asyncError = static_cast<braidResult_t>(c->asyncError().code());
    return Status::ok();
  });
}

braidResult_t braidCommCount(const braidComm_t comm, int* count) {
  return api::query("braidCommCount", comm, count, "count", [](core::Comm& c) { return c.nranks(); });
}

braidResult_t braidCommUserRank(const braidComm_t comm, int* rank) {
  return api::query("braidCommUserRank", comm, rank, "rank", [](core::Comm& c) { return c.rank(); });
}

braidResult_t braidCommCuDevice(const braidComm_t comm, int* device) {
  return api::query("braidCommCuDevice", comm, device, "device", [](core::Comm& c) { return c.cudaDevice(); });
}

}  // extern "C"
