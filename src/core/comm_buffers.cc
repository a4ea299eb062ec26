// Buffer registrations exported across the processes of one host (Comm::registerBuffer). Unlike a
// window's, a buffer's registration is not a collective (ncclCommRegister is local), so this rank
// cannot wait for its peers to take part: it asks every other process's export service
// (core/export_service.h) to map the buffer's allocation for the peer rank there and to say where it
// sees it. Then this rank knows, for every peer, where that peer sees its buffer, which a direct
// call writes into the peer's slot (device/direct.cuh), exactly as for a window. Every rank of a
// call must pass registered buffers or none (the call ledger names a mismatch), so a buffer that
// cannot be exported (memory without a CUDA IPC handle, a peer that cannot map it) keeps its calls
// to the FIFOs and says why at INFO; a peer whose buffer was exported then disagrees, and the call
// fails naming both ranks rather than running wrong.
#include <cstring>
#include <string>
#include <vector>

#include "core/comm.h"
#include "core/log.h"

namespace braid::core {

namespace {
constexpr int64_t kExportTimeoutMs = 30000;  // to ask one peer process to map or unmap a buffer
static_assert(kIpcHandleBytes == static_cast<int>(transport::kIpcHandleBytes), "one IPC handle size");
}  // namespace

// A GPU communicator listens for its peers' exports from init (its port goes out with the peer
// info); it serves them once its engine exists (connectGpu).
Status Comm::startExportService() {
  if (cudaDevice_ < 0) return Status::ok();
  Status st = ExportListener::listen(bootstrap_->peerAddresses()[rank_], rank_, &exports_);
  if (!st.isOk()) {  // not fatal: the peers' buffers registered here keep their calls to the FIFOs
    BRAID_WARN(log::Subsys::kInit, "rank ", rank_, ": no export service (", st.message(),
               "): buffers registered by other processes run their calls through the FIFOs");
    exports_.reset();
  }
  return Status::ok();
}

// This rank's mappings of its peers' buffers go once its queued calls are over (a direct call still
// queued reads them), before the engine goes.
void Comm::stopExportService() {
  if (exports_ == nullptr) return;
  if (gpu_ != nullptr) (void)gpu_->waitQueued();
  exports_.reset();
}

std::string Comm::exportBuffer(const void* buff, BufferExport* out) {
  exec::WindowOffer offer;
  if (!gpu_->offerWindow(buff, &offer).isOk() || offer.ok == 0) {
    return "its memory has no CUDA IPC handle (not from cudaMalloc)";
  }
  std::memcpy(out->ipc, offer.ipc, sizeof(out->ipc));
  out->shift.assign(nranks_, 0);
  std::string why;
  for (int q = 0; q < nranks_ && why.empty(); ++q) {
    if (identities_[q].pid == identities_[rank_].pid) continue;  // the same address space
    if (exportServices_[q].port() == 0) {
      why = "rank " + std::to_string(q) + " has no export service";
      break;
    }
    uint64_t at = 0;
    Status st = askExportService(exportServices_[q], instanceKey_, q, rank_, true, out->ipc, kExportTimeoutMs, &at);
    // A failed q is asked to unmap too: it may have mapped the buffer and lost only its answer (if
    // it holds no mapping, it says so, harmlessly).
    out->asked.push_back(q);
    if (!st.isOk()) {
      why = st.message();
      break;
    }
    out->shift[q] = static_cast<int64_t>(at - offer.allocation);  // where q sees the allocation, less here
  }
  if (!why.empty()) (void)unexport(*out);
  return why;
}

// Asks every rank `e` asked to map the buffer to drop its mapping; the first failure, each said.
Status Comm::unexport(const BufferExport& e) {
  Status first;
  for (int q : e.asked) {
    uint64_t unused = 0;
    Status st = askExportService(exportServices_[q], instanceKey_, q, rank_, false, e.ipc, kExportTimeoutMs, &unused);
    if (!st.isOk()) {
      BRAID_WARN(log::Subsys::kInit, "rank ", rank_, ": rank ", q,
                 " may still map a buffer this rank no longer exports (until its communicator goes): ", st.message());
      if (first.isOk()) first = st;
    }
  }
  return first;
}

Status Comm::registerBuffer(void* buff, size_t size, void** handle) {
  BRAID_RETURN_IF_ERROR(registrations_.add(Registrations::Kind::kBuffer, buff, size, handle));
  if (gpu_ == nullptr || !gpu_->windowsAcrossProcesses()) return Status::ok();
  BufferExport e;
  const std::string why = exportBuffer(buff, &e);
  if (!why.empty()) {
    BRAID_INFO(log::Subsys::kInit,
               "rank " + std::to_string(rank_) + ": a registered buffer runs its calls through the FIFOs: " + why);
    return Status::ok();
  }
  std::lock_guard<std::mutex> lock(windowsMu_);
  buffers_[*handle].push_back(std::move(e));
  return Status::ok();
}

Status Comm::deregisterBuffer(void* handle) {
  BRAID_RETURN_IF_ERROR(
      registrations_.remove(Registrations::Kind::kBuffer, handle).withContext("rank " + std::to_string(rank_)));
  BufferExport e;
  const bool exported = takeExport(&buffers_, handle, &e);
  if (!exported) return Status::ok();
  // A peer's kernel touches this buffer only within a call of this rank's (the direct kernels'
  // closing handshake), so once this rank's queued calls are over no peer does any more.
  Status st = gpu_->waitQueued();
  const Status unexported = unexport(e);
  if (st.isOk()) st = unexported;
  return st.withContext("rank " + std::to_string(rank_) + " unexporting a registered buffer");
}

// `shifts` (in the one-shot regions' order, from this rank) gets what each rank adds to `p` to
// reach it, when [p, p + bytes) lies in an exported window or buffer.
bool Comm::exportedShifts(const void* p, size_t bytes, int64_t* shifts) {
  if (nranks_ > device::kMaxOneShotRanks) return false;
  void* handle = nullptr;
  const std::vector<int64_t>* shift = nullptr;
  std::lock_guard<std::mutex> lock(windowsMu_);
  if (registrations_.within(Registrations::Kind::kWindow, p, bytes, &handle)) {
    auto it = windows_.find(handle);
    if (it != windows_.end()) shift = &it->second.back().shift;
  }
  if (shift == nullptr && registrations_.within(Registrations::Kind::kBuffer, p, bytes, &handle)) {
    auto it = buffers_.find(handle);  // a window kept to the FIFOs may still lie in an exported buffer
    if (it != buffers_.end()) shift = &it->second.back().shift;
  }
  if (shift == nullptr) return false;
  for (int k = 0; k < nranks_; ++k) shifts[k] = (*shift)[(rank_ + k) % nranks_];
  return true;
}

}  // namespace braid::core
