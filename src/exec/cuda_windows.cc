// Windows across the processes of one host (CudaEngine::windowsAcrossProcesses): each window's
// allocation is exported by CUDA IPC when it is registered, and every other process maps it, so a
// direct call (device/direct.cuh) reaches a rank of another process by the address where its
// window lies here. One process may map the same allocation for several of its ranks or windows:
// the mappings are counted per handle, process-wide (transport/p2p/cuda_ipc.h).
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstring>
#include <string>
#include <vector>

#include "exec/cuda_engine.h"
#include "exec/cuda_engine_state.h"
#include "transport/cuda_check.h"
#include "transport/p2p/cuda_ipc.h"

namespace braid::exec {
namespace {

// The first byte of the allocation holding `p`, from the driver's cuMemGetAddressRange; 0 where
// the driver has none to give.
uint64_t allocationOf(const void* p) {
  using GetRange = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
  static GetRange get = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      return GetRange{nullptr};
    }
    return reinterpret_cast<GetRange>(fn);
  }();
  CUdeviceptr base = 0;
  size_t bytes = 0;
  if (get == nullptr || get(&base, &bytes, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS) return 0;
  return static_cast<uint64_t>(base);
}

}  // namespace

bool CudaEngine::windowsAcrossProcesses() const { return s_->windowsAcrossProcesses; }

Status CudaEngine::offerWindow(const void* base, WindowOffer* out) const {
  DeviceScope scope(s_->o.device);
  *out = WindowOffer{};
  out->base = reinterpret_cast<uint64_t>(base);
  out->allocation = allocationOf(base);
  cudaIpcMemHandle_t h;
  if (out->allocation == 0 || cudaIpcGetMemHandle(&h, reinterpret_cast<void*>(out->allocation)) != cudaSuccess) {
    cudaGetLastError();  // not sticky: memory without a handle only keeps its window to this process
    return Status::ok();
  }
  std::memcpy(out->ipc, &h, sizeof(h));
  out->ok = 1;
  return Status::ok();
}

Status CudaEngine::openWindow(const std::vector<WindowOffer>& offers, std::vector<uint64_t>* seenAt) {
  State& s = *s_;
  DeviceScope scope(s.o.device);
  const int me = s.o.rank;
  seenAt->assign(offers.size(), 0);
  for (size_t q = 0; q < offers.size(); ++q) {
    const WindowOffer& o = offers[q];
    if (s.identities[q].pid == s.identities[me].pid) {
      (*seenAt)[q] = o.base;  // the same address space
      continue;
    }
    void* at = nullptr;
    Status st = transport::openIpcMapping(s.o.device, o.ipc, "rank " + std::to_string(q) + "'s window", &at);
    if (!st.isOk()) {
      for (size_t p = 0; p < q; ++p) {
        if (s.identities[p].pid != s.identities[me].pid) transport::closeIpcMapping(s.o.device, offers[p].ipc);
      }
      seenAt->assign(offers.size(), 0);
      return st;
    }
    (*seenAt)[q] = reinterpret_cast<uint64_t>(at) + (o.base - o.allocation);
  }
  return Status::ok();
}

Status CudaEngine::waitQueued() {
  State& s = *s_;
  std::lock_guard<std::mutex> lock(s.mu);
  DeviceScope scope(s.o.device);
  // Every eager kernel this rank queued ends before lastDone (cuda_launch.cc orders its streams);
  // a graph that still holds calls on the memory is the caller's to destroy first, as with NCCL.
  return s.lastStream != nullptr ? cudaCheck("cudaEventSynchronize", cudaEventSynchronize(s.lastDone)) : Status::ok();
}

Status CudaEngine::closeWindow(const std::vector<WindowOffer>& offers) {
  const Status st = waitQueued();
  State& s = *s_;
  std::lock_guard<std::mutex> lock(s.mu);
  DeviceScope scope(s.o.device);
  for (size_t q = 0; q < offers.size(); ++q) {
    if (s.identities[q].pid != s.identities[s.o.rank].pid) transport::closeIpcMapping(s.o.device, offers[q].ipc);
  }
  return st;
}

// Called on the export service's thread: relaxed about stream capture, so that a graph another thread
// of this process captures in the global mode (PyTorch's default) neither refuses these calls nor is
// invalidated by them.
namespace {
class RelaxedCapture {
 public:
  RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};
}  // namespace

Status CudaEngine::importAllocation(const unsigned char* ipc, uint64_t* at) {
  RelaxedCapture relaxed;
  DeviceScope scope(s_->o.device);
  void* p = nullptr;
  BRAID_RETURN_IF_ERROR(transport::openIpcMapping(s_->o.device, ipc, "another process's registered buffer", &p));
  *at = reinterpret_cast<uint64_t>(p);
  return Status::ok();
}

void CudaEngine::releaseAllocation(const unsigned char* ipc) {
  RelaxedCapture relaxed;
  DeviceScope scope(s_->o.device);
  transport::closeIpcMapping(s_->o.device, ipc);
}

}  // namespace braid::exec
