#include "api/validate.h"

#include <string>

#include "core/datatype.h"

namespace braid::api {

Status checkNotNull(const void* p, const char* name) {
  if (p == nullptr) return invalidArgument(std::string("'") + name + "' is NULL");
  return Status::ok();
}

Status checkType(braidDataType_t type) {
  if (!core::isValidType(type)) {
    return invalidArgument("'datatype' = " + std::to_string(static_cast<int>(type)) + " is not a braidDataType_t");
  }
  return Status::ok();
}

Status checkOp(braidRedOp_t op) {
  if (!core::isValidOp(op)) {
    return invalidArgument("'op' = " + std::to_string(static_cast<int>(op)) + " is not a braidRedOp_t");
  }
  return Status::ok();
}

Status checkRank(int value, int nranks, const char* name) {
  if (value < 0 || value >= nranks) {
    return invalidArgument(std::string("'") + name + "' = " + std::to_string(value) + " is out of range for " +
                           std::to_string(nranks) + " rank(s)");
  }
  return Status::ok();
}

namespace {

// count x elemSize x factor must fit in size_t.
Status checkBytes(size_t count, size_t elemSize, size_t factor, const char* countName) {
  size_t bytes = 0;
  if (__builtin_mul_overflow(count, elemSize, &bytes) || __builtin_mul_overflow(bytes, factor, &bytes)) {
    return invalidArgument(
        std::string("'") + countName + "' = " + std::to_string(count) + " elements of " + std::to_string(elemSize) +
        " bytes" + (factor > 1 ? " times " + std::to_string(factor) + " ranks" : std::string()) + " overflows size_t");
  }
  return Status::ok();
}

}  // namespace

Status checkCollective(const CollShape& shape, const algo::Call& args, int rank, int nranks) {
  BRAID_RETURN_IF_ERROR(checkType(args.type));
  if (shape.hasOp) BRAID_RETURN_IF_ERROR(checkOp(args.op));
  if (shape.hasRoot) BRAID_RETURN_IF_ERROR(checkRank(args.root, nranks, "root"));
  if (shape.hasPeer) BRAID_RETURN_IF_ERROR(checkRank(args.root, nranks, "peer"));
  size_t elem = core::typeSize(args.type);
  size_t ranks = static_cast<size_t>(nranks);
  BRAID_RETURN_IF_ERROR(checkBytes(args.count, elem, shape.perRankSend ? ranks : 1, shape.countName));
  BRAID_RETURN_IF_ERROR(checkBytes(args.count, elem, shape.perRankRecv ? ranks : 1, shape.countName));
  if (args.count == 0) return Status::ok();  // nothing is read or written
  bool isRoot = shape.hasRoot && rank == args.root;
  if (shape.hasSend && (!shape.sendOnRootOnly || isRoot))
    BRAID_RETURN_IF_ERROR(checkNotNull(args.sendbuff, "sendbuff"));
  if (shape.hasRecv && (!shape.recvOnRootOnly || isRoot))
    BRAID_RETURN_IF_ERROR(checkNotNull(args.recvbuff, "recvbuff"));
  return Status::ok();
}

}  // namespace braid::api
