// Windows exported across the processes of one host (Comm::registerWindow): registering one is a
// collective, as NCCL's ncclCommWindowRegister is. Each rank offers the CUDA IPC handle of its
// window's allocation (bootstrap all-gather), maps every other process's, and tells the others
// where it mapped theirs (a second all-gather): then each rank knows, for every peer, where that
// peer sees this rank's window, which a direct call writes into the peer's slot (device/direct.cuh).
// If any rank's memory has no IPC handle or a mapping fails, every rank keeps the window to the
// FIFOs (all decide from the same exchanged bytes), and says why at INFO.
#include <string>
#include <vector>

#include "core/comm.h"
#include "core/log.h"

namespace braid::core {

Status Comm::registerWindow(void* buff, size_t size, const Status& refused, void** handle) {
  const Status added = refused.isOk() ? registrations_.add(Registrations::Kind::kWindow, buff, size, handle) : refused;
  if (gpu_ == nullptr || !gpu_->windowsAcrossProcesses()) return added;
  // Collective from here: a rank whose window is refused still takes part, offering nothing, so
  // that its peers keep the window to the FIFOs instead of waiting for it; then it returns why.
  const auto n = static_cast<size_t>(nranks_);
  std::vector<exec::WindowOffer> offers(n);
  if (added.isOk()) (void)gpu_->offerWindow(buff, &offers[rank_]);  // ok stays 0 without an IPC handle
  Status st = bootstrap_->allGather(offers.data(), sizeof(exec::WindowOffer)).withContext("exporting a window");
  if (!st.isOk()) {
    if (added.isOk()) (void)registrations_.remove(Registrations::Kind::kWindow, *handle);
    return st;
  }
  std::string why;
  for (size_t q = 0; q < n && why.empty(); ++q) {
    if (offers[q].ok == 0) {
      why = "rank " + std::to_string(q) +
            " offers no window (its memory has no CUDA IPC handle, or it refused the registration)";
    }
  }
  // Row q: whether rank q mapped every window, then where it sees each rank's.
  std::vector<uint64_t> rows(n * (n + 1), 0);
  std::vector<uint64_t> seenAt;
  const Status opened = why.empty() ? gpu_->openWindow(offers, &seenAt) : Status::ok();
  const bool mapped = why.empty() && opened.isOk();  // this rank holds mappings to close on failure
  if (mapped) {
    rows[rank_ * (n + 1)] = 1;
    for (size_t q = 0; q < n; ++q) rows[rank_ * (n + 1) + 1 + q] = seenAt[q];
  }
  st = bootstrap_->allGather(rows.data(), (n + 1) * sizeof(uint64_t)).withContext("exporting a window");
  if (!opened.isOk()) why = "rank " + std::to_string(rank_) + " could not map every window: " + opened.message();
  for (size_t q = 0; q < n && why.empty(); ++q) {
    if (rows[q * (n + 1)] == 0) why = "rank " + std::to_string(q) + " could not map every window";
  }
  if (!st.isOk() || !why.empty()) {
    if (mapped) (void)gpu_->closeWindow(offers);
    if (!st.isOk()) {
      if (added.isOk()) (void)registrations_.remove(Registrations::Kind::kWindow, *handle);
      return st;
    }
    BRAID_INFO(log::Subsys::kInit,
               "rank " + std::to_string(rank_) + ": a window runs its calls through the FIFOs: " + why);
    return added;
  }
  WindowExport e;
  e.offers = std::move(offers);
  e.shift.resize(n);
  for (size_t q = 0; q < n; ++q) {
    e.shift[q] = static_cast<int64_t>(rows[q * (n + 1) + 1 + rank_] - e.offers[rank_].base);
  }
  std::lock_guard<std::mutex> lock(windowsMu_);
  windows_[*handle].push_back(std::move(e));
  return Status::ok();
}

Status Comm::deregisterWindow(void* handle) {
  WindowExport e;
  const bool exported = takeExport(&windows_, handle, &e);
  BRAID_RETURN_IF_ERROR(registrations_.remove(Registrations::Kind::kWindow, handle));
  if (!exported) return Status::ok();
  // Collective, as MPI_Win_free: once it returns on any rank, no process maps that rank's window
  // any more, so its memory may be freed (and its addresses given to a new allocation, whose IPC
  // handle a stale mapping elsewhere would make "already mapped").
  const Status closed = gpu_->closeWindow(e.offers);
  const Status all = bootstrap_->barrier().withContext("unexporting a window");
  return closed.isOk() ? all : closed;
}

}  // namespace braid::core
