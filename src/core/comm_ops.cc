// The calls of a communicator that need no algorithm of their own: its pre-multiplied sums
// (braidRedOpCreatePreMulSum: the op table, and the scaling of a call's input before the sum), the
// staged input of an in-place all-to-all, and the collectives of a one-rank communicator (a copy,
// or nothing).
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/comm.h"
#include "core/datatype.h"
#include "exec/host_reduce.h"

namespace braid::core {

// A pre-multiplied sum runs as the sum of the scaled input: on host memory a scaled copy made here
// (the call completes before it returns), on a GPU one made on the call's stream by a kernel that
// reads a device scalar when it runs, freed in stream order after the call.
Status Comm::preMultiply(CollRequest* r, std::vector<std::vector<char>>* hostCopies,
                         std::vector<std::pair<void*, void*>>* deviceCopies) {
  const size_t n = sendElems(*r, nranks_);
  const void* scalar = r->preMulPointer != nullptr ? r->preMulPointer : &r->preMulValue;
  if (gpu_ != nullptr) {
    void* scratch = nullptr;
    BRAID_RETURN_IF_ERROR(gpu_->premultiply(r->sendbuff, n, r->type, r->preMulPointer == nullptr ? scalar : nullptr,
                                            r->preMulPointer, r->stream, &scratch));
    deviceCopies->push_back({scratch, r->stream});
    r->sendbuff = scratch;
  } else {
    hostCopies->emplace_back(n * typeSize(r->type));
    exec::premultiplyElems(hostCopies->back().data(), r->sendbuff, n, r->type, scalar);
    r->sendbuff = hostCopies->back().data();
  }
  r->preMul = false;
  return Status::ok();
}

Status Comm::stageInput(const void* src, size_t bytes, void* stream, std::shared_ptr<void>* out) {
  if (gpu_ == nullptr) {
    const char* from = static_cast<const char*>(src);
    auto copy = std::make_shared<std::vector<char>>(from, from + bytes);
    *out = std::shared_ptr<void>(copy, copy->data());
    return Status::ok();
  }
  void* scratch = nullptr;
  BRAID_RETURN_IF_ERROR(gpu_->stage(src, bytes, stream, &scratch));
  // The holder keeps this communicator (and so its engine) alive until the scratch is freed.
  std::shared_ptr<Comm> self = shared_from_this();
  *out = std::shared_ptr<void>(scratch, [self, stream](void* p) { (void)self->gpu_->releaseScratch(p, stream); });
  return Status::ok();
}

Status Comm::createPreMulSum(const void* scalar, braidDataType_t type, bool immediate, braidRedOp_t* out) {
  PreMulOp op;
  op.type = type;
  if (immediate) {
    std::memcpy(&op.value, scalar, typeSize(type));
  } else {
    op.pointer = scalar;
  }
  std::lock_guard<std::mutex> lock(opsMu_);
  if (nextOp_ == INT32_MAX) return invalidUsage("this communicator has made too many reduction ops");
  const int id = nextOp_++;
  ops_[id] = op;
  *out = static_cast<braidRedOp_t>(id);
  return Status::ok();
}

Status Comm::destroyRedOp(braidRedOp_t op) {
  std::lock_guard<std::mutex> lock(opsMu_);
  if (ops_.erase(static_cast<int>(op)) == 0) {
    return invalidArgument("op " + std::to_string(static_cast<int>(op)) +
                           " is not a pre-multiplied sum of this communicator (destroyed already, made by another "
                           "communicator, or one of the built-in ops, which cannot be destroyed)");
  }
  return Status::ok();
}

Status Comm::resolvePreMul(CollRequest* r) const {
  if (static_cast<int>(r->op) < braidNumOps) return Status::ok();
  std::lock_guard<std::mutex> lock(opsMu_);
  auto it = ops_.find(static_cast<int>(r->op));
  if (it == ops_.end()) {
    return invalidArgument("'op' = " + std::to_string(static_cast<int>(r->op)) +
                           " is neither a braidRedOp_t nor a pre-multiplied sum of this communicator (rank " +
                           std::to_string(rank_) + "): destroyed, or made by another communicator");
  }
  if (it->second.type != r->type) {
    return invalidArgument("'op' = " + std::to_string(static_cast<int>(r->op)) + " was made for " +
                           typeName(it->second.type) + ", not " + typeName(r->type));
  }
  r->op = braidSum;
  r->preMul = true;
  r->preMulValue = it->second.value;
  r->preMulPointer = it->second.pointer;
  return Status::ok();
}

// One rank: nothing moves between ranks, and every collective's output is its input (a sum, max or
// average of one value is that value; one block gathered, scattered or exchanged). In place there
// is nothing to do, so nothing is enqueued; out of place one copy: on a GPU a cudaMemcpyAsync on the
// call's stream (the copy engine; one node when captured), on host memory a memmove.
Status Comm::oneRankCall(const CollRequest& r) {
  const size_t bytes = r.count * typeSize(r.type);
  if (r.sendbuff == r.recvbuff) return Status::ok();
  if (gpu_ != nullptr) return gpu_->copy(r.recvbuff, r.sendbuff, bytes, r.stream);
  std::memmove(r.recvbuff, r.sendbuff, bytes);
  return Status::ok();
}

}  // namespace braid::core
