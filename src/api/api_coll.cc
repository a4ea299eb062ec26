// C entry points of the collectives and point-to-point calls. Every argument is checked here, then
// the call goes to the communicator (inside a group: held until the group ends).
#include <memory>
#include <vector>

#include "api/guard.h"
#include "api/handles.h"
#include "api/validate.h"
#include "core/datatype.h"
#include "core/group.h"

namespace braid::api {
namespace {

// A collective: its record is checked, then goes to the communicator as it is (the tuner plans it
// there, in place).
braidResult_t collective(const char* function, const CollShape& shape, core::CollRequest r, braidComm_t handle) {
  return guard(function, [&]() -> Status {
    return core::failGroup([&]() -> Status {
      std::shared_ptr<core::Comm> comm;
      BRAID_RETURN_IF_ERROR(usableComm(handle, &comm));
      if (shape.hasOp) BRAID_RETURN_IF_ERROR(comm->resolvePreMul(&r));  // the communicator's own ops
      BRAID_RETURN_IF_ERROR(checkCollective(shape, r, comm->rank(), comm->nranks()));
      if (core::groupDepth() == 0) return comm->collective(r);  // the common case: nothing to hold
      // A call held by a group reports through braidGroupEnd, which names it.
      return core::runOrDeferCollective(std::move(comm), r, function);
    }());
  });
}

// Send, receive and all-to-all: checked like collectives, then run as point-to-point messages.
braidResult_t pointToPoint(const char* function, const CollShape& shape, const core::CollRequest& args,
                           braidComm_t handle, bool isAllToAll, bool isSend) {
  return guard(function, [&]() -> Status {
    return core::failGroup([&]() -> Status {
      std::shared_ptr<core::Comm> comm;
      BRAID_RETURN_IF_ERROR(usableComm(handle, &comm));
      BRAID_RETURN_IF_ERROR(checkCollective(shape, args, comm->rank(), comm->nranks()));
      if (!isAllToAll) {
        core::P2pRequest r;
        r.isSend = isSend;
        r.buffer = isSend ? args.sendbuff : args.recvbuff;
        r.count = args.count;
        r.type = args.type;
        r.peer = args.root;
        r.stream = args.stream;
        return core::runOrDeferP2p(comm, r);
      }
      // All-to-all: one send and one receive per peer. In place, a block is received over a block
      // that may still have to be sent: the input is staged first (Comm::stageInput: one copy, on a
      // GPU on the stream), and this rank's own block, which stays where it is, is neither sent nor
      // received.
      const size_t block = args.count * core::typeSize(args.type);
      const bool inPlace = args.sendbuff == args.recvbuff;
      if (inPlace && (comm->nranks() == 1 || block == 0)) return Status::ok();  // nothing moves
      const char* send = static_cast<const char*>(args.sendbuff);
      std::shared_ptr<void> staging;
      if (inPlace) {
        BRAID_RETURN_IF_ERROR(comm->stageInput(send, block * comm->nranks(), args.stream, &staging));
        send = static_cast<const char*>(staging.get());
      }
      // One group around all messages, so they run together (inside a user's group: with it).
      BRAID_RETURN_IF_ERROR(core::groupStart());
      Status st;
      for (int q = 0; q < comm->nranks() && st.isOk(); ++q) {
        if (inPlace && q == comm->rank()) continue;
        core::P2pRequest s, r;
        s.isSend = true;
        s.buffer = send + q * block;
        r.isSend = false;
        r.buffer = static_cast<const char*>(args.recvbuff) + q * block;
        s.count = r.count = args.count;
        s.type = r.type = args.type;
        s.peer = r.peer = q;
        s.stream = r.stream = args.stream;
        s.keepAlive = staging;
        st = core::runOrDeferP2p(comm, s);
        if (st.isOk()) st = core::runOrDeferP2p(comm, r);
      }
      Status end = core::groupEnd();
      BRAID_RETURN_IF_ERROR(st);
      return end;
    }());
  });
}

// The record of a call as its entry point received it (`rootOrPeer`: the root, or send's and
// receive's peer).
core::CollRequest makeCall(algo::Coll coll, const void* send, const void* recv, size_t count, braidDataType_t type,
                           braidRedOp_t op, int rootOrPeer, braidStream_t stream) {
  core::CollRequest r;
  r.coll = coll;
  r.sendbuff = send;
  r.recvbuff = const_cast<void*>(recv);
  r.count = count;
  r.type = type;
  r.op = op;
  r.root = rootOrPeer;
  r.stream = stream;
  return r;
}

}  // namespace
}  // namespace braid::api

using braid::algo::Coll;
using braid::api::collective;
using braid::api::CollShape;
using braid::api::makeCall;
using braid::api::pointToPoint;

extern "C" {

braidResult_t braidAllReduce(const void* sendbuff, void* recvbuff, size_t count, braidDataType_t datatype,
                             braidRedOp_t op, braidComm_t comm, braidStream_t stream) {
  CollShape s;
  s.hasOp = true;
  return collective("braidAllReduce", s, makeCall(Coll::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0, stream),
                    comm);
}

braidResult_t braidBroadcast(const void* sendbuff, void* recvbuff, size_t count, braidDataType_t datatype, int root,
                             braidComm_t comm, braidStream_t stream) {
  CollShape s;
  s.hasRoot = true;
  s.sendOnRootOnly = true;
  return collective("braidBroadcast", s,
                    makeCall(Coll::kBroadcast, sendbuff, recvbuff, count, datatype, braidSum, root, stream), comm);
}

braidResult_t braidReduce(const void* sendbuff, void* recvbuff, size_t count, braidDataType_t datatype, braidRedOp_t op,
                          int root, braidComm_t comm, braidStream_t stream) {
  CollShape s;
  s.hasOp = true;
  s.hasRoot = true;
  s.recvOnRootOnly = true;
  return collective("braidReduce", s, makeCall(Coll::kReduce, sendbuff, recvbuff, count, datatype, op, root, stream),
                    comm);
}

braidResult_t braidAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, braidDataType_t datatype,
                             braidComm_t comm, braidStream_t stream) {
  CollShape s;
  s.countName = "sendcount";
  s.perRankRecv = true;
  return collective("braidAllGather", s,
                    makeCall(Coll::kAllGather, sendbuff, recvbuff, sendcount, datatype, braidSum, 0, stream), comm);
}

braidResult_t braidReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, braidDataType_t datatype,
                                 braidRedOp_t op, braidComm_t comm, braidStream_t stream) {
  CollShape s;
  s.countName = "recvcount";
  s.perRankSend = true;
  s.hasOp = true;
  return collective("braidReduceScatter", s,
                    makeCall(Coll::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0, stream), comm);
}

braidResult_t braidAllToAll(const void* sendbuff, void* recvbuff, size_t count, braidDataType_t datatype,
                            braidComm_t comm, braidStream_t stream) {
  CollShape s;
  s.perRankSend = true;
  s.perRankRecv = true;
  return pointToPoint("braidAllToAll", s,
                      makeCall(Coll::kNumColls, sendbuff, recvbuff, count, datatype, braidSum, 0, stream), comm, true,
                      false);
}

braidResult_t braidSend(const void* sendbuff, size_t count, braidDataType_t datatype, int peer, braidComm_t comm,
                        braidStream_t stream) {
  CollShape s;
  s.hasRecv = false;
  s.hasPeer = true;
  return pointToPoint("braidSend", s,
                      makeCall(Coll::kNumColls, sendbuff, nullptr, count, datatype, braidSum, peer, stream), comm,
                      false, true);
}

braidResult_t braidRecv(void* recvbuff, size_t count, braidDataType_t datatype, int peer, braidComm_t comm,
                        braidStream_t stream) {
  CollShape s;
  s.hasSend = false;
  s.hasPeer = true;
  return pointToPoint("braidRecv", s,
                      makeCall(Coll::kNumColls, nullptr, recvbuff, count, datatype, braidSum, peer, stream), comm,
                      false, false);
}

braidResult_t braidGroupStart(void) {
  return braid::api::guard("braidGroupStart", [] { return braid::core::groupStart(); });
}

braidResult_t braidGroupEnd(void) {
  return braid::api::guard("braidGroupEnd", [] { return braid::core::groupEnd(); });
}

}  // extern "C"
