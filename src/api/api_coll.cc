// C entry points of the collectives and point-to-point calls. Every argument is checked here;
// the data movement itself arrives with the host and GPU engines (docs/api.md: "not available yet").
#include "api/guard.h"
#include "api/handles.h"
#include "api/validate.h"
#include "core/group.h"

namespace braid::api {
namespace {

Status notAvailableYet(const char* function) {
  return invalidUsage(std::string(function) +
                      " is not available yet in this version of braid: the collective engines are still being "
                      "built (docs/api.md lists what works)");
}

braidResult_t collective(const char* function, const CollShape& shape, const CollArgs& args, braidComm_t handle) {
  return guard(function, [&]() -> Status {
    std::shared_ptr<core::Comm> comm;
    BRAID_RETURN_IF_ERROR(usableComm(handle, &comm));
    BRAID_RETURN_IF_ERROR(checkCollective(shape, args, comm->rank(), comm->nranks()));
    return notAvailableYet(function);
  });
}

CollArgs makeArgs(const void* send, const void* recv, size_t count, braidDataType_t type, braidRedOp_t op,
                  int rootOrPeer) {
  CollArgs a;
  a.sendbuff = send;
  a.recvbuff = recv;
  a.count = count;
  a.type = type;
  a.op = op;
  a.rootOrPeer = rootOrPeer;
  return a;
}

}  // namespace
}  // namespace braid::api

using braid::api::collective;
using braid::api::CollShape;
using braid::api::makeArgs;

extern "C" {

braidResult_t braidAllReduce(const void* sendbuff, void* recvbuff, size_t count, braidDataType_t datatype,
                             braidRedOp_t op, braidComm_t comm, braidStream_t) {
  CollShape s;
  s.hasOp = true;
  return collective("braidAllReduce", s, makeArgs(sendbuff, recvbuff, count, datatype, op, 0), comm);
}

braidResult_t braidBroadcast(const void* sendbuff, void* recvbuff, size_t count, braidDataType_t datatype, int root,
                             braidComm_t comm, braidStream_t) {
  CollShape s;
  s.hasRoot = true;
  s.sendOnRootOnly = true;
  return collective("braidBroadcast", s, makeArgs(sendbuff, recvbuff, count, datatype, braidSum, root), comm);
}

braidResult_t braidReduce(const void* sendbuff, void* recvbuff, size_t count, braidDataType_t datatype, braidRedOp_t op,
                          int root, braidComm_t comm, braidStream_t) {
  CollShape s;
  s.hasOp = true;
  s.hasRoot = true;
  s.recvOnRootOnly = true;
  return collective("braidReduce", s, makeArgs(sendbuff, recvbuff, count, datatype, op, root), comm);
}

braidResult_t braidAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, braidDataType_t datatype,
                             braidComm_t comm, braidStream_t) {
  CollShape s;
  s.countName = "sendcount";
  s.perRankRecv = true;
  return collective("braidAllGather", s, makeArgs(sendbuff, recvbuff, sendcount, datatype, braidSum, 0), comm);
}

braidResult_t braidReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, braidDataType_t datatype,
                                 braidRedOp_t op, braidComm_t comm, braidStream_t) {
  CollShape s;
  s.countName = "recvcount";
  s.perRankSend = true;
  s.hasOp = true;
  return collective("braidReduceScatter", s, makeArgs(sendbuff, recvbuff, recvcount, datatype, op, 0), comm);
}

braidResult_t braidAllToAll(const void* sendbuff, void* recvbuff, size_t count, braidDataType_t datatype,
                            braidComm_t comm, braidStream_t) {
  CollShape s;
  s.perRankSend = true;
  s.perRankRecv = true;
  return collective("braidAllToAll", s, makeArgs(sendbuff, recvbuff, count, datatype, braidSum, 0), comm);
}

braidResult_t braidSend(const void* sendbuff, size_t count, braidDataType_t datatype, int peer, braidComm_t comm,
                        braidStream_t) {
  CollShape s;
  s.hasRecv = false;
  s.hasPeer = true;
  return collective("braidSend", s, makeArgs(sendbuff, nullptr, count, datatype, braidSum, peer), comm);
}

braidResult_t braidRecv(void* recvbuff, size_t count, braidDataType_t datatype, int peer, braidComm_t comm,
                        braidStream_t) {
  CollShape s;
  s.hasSend = false;
  s.hasPeer = true;
  return collective("braidRecv", s, makeArgs(nullptr, recvbuff, count, datatype, braidSum, peer), comm);
}

braidResult_t braidGroupStart(void) {
  return braid::api::guard("braidGroupStart", [] { return braid::core::groupStart(); });
}

braidResult_t braidGroupEnd(void) {
  return braid::api::guard("braidGroupEnd", [] { return braid::core::groupEnd(); });
}

}  // extern "C"
