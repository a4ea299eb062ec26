// The CUDA engine's network half: GPU connections to peers on other hosts, staged through host
// memory (device_work.h draws the two FIFOs).
//
//   sender's GPU --PCIe stores--> outbox (pinned, mapped)       inbox (pinned, mapped) --PCIe loads--> receiver's GPU
//                                    |  proxy: isend of each       ^  proxy: irecv into each free
//                                    +--  published slot ----------+  slot, then publish
//
// Both are transport::HostFifo blocks (HostFifo::forDevice), so the network transport's lanes move
// them exactly as they move host-memory FIFOs: lane 0 sends a slot's size word with its data, the
// receiver checks it. The kernel cannot wake a proxy: a host function in stream order before each
// kernel makes the proxy poll without sleeping, one after it lets it sleep again (both are captured
// into CUDA graphs with the kernel). A connection that fails sets the abort flag, so no kernel
// waits for data that will never come, and the communicator reports the network's words.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>

#include "core/log.h"
#include "exec/cuda_engine_state.h"

namespace braid::exec {
namespace {

// The largest slot any protocol fills: every protocol's slot k shares one place of the FIFO.
size_t netSlotBytes(const CudaEngineOptions& o) {
  return std::max({o.simpleSlotBytes, o.llSlotBytes / device::kLlDataPerLine * device::kLlLineBytes,
                   o.ll128SlotBytes / device::kLl128DataPerLine * device::kLl128LineBytes});
}

void CUDART_CB netBegin(void* transport) { static_cast<transport::NetTransport*>(transport)->beginWork(); }
void CUDART_CB netEnd(void* transport) { static_cast<transport::NetTransport*>(transport)->endWork(); }

}  // namespace

Status CudaEngine::State::listenNet() {
  transport::NetOptions no = transport::NetOptions::fromParams(device::kSteps, netSlotBytes(o), o.timeoutMs);
  no.attachedOnly = true;
  auto onFailure = o.onNetworkFailure;
  int* abortFlag = abortHost;
  auto told = std::make_shared<std::atomic<bool>>(false);
  no.onFailure = [onFailure, abortFlag, told](int peer, const std::string& why) {
    *reinterpret_cast<volatile int*>(abortFlag) = 1;  // kernels waiting on the peer give up
    if (told->exchange(true)) return;                 // the first failure is the news
    std::string what = "the network connection with rank " + std::to_string(peer) + " failed: " + why;
    BRAID_WARN(log::Subsys::kNet, what, " (this rank's kernels are aborted)");
    if (onFailure) onFailure(what);
  };
  net = std::make_unique<transport::NetTransport>(o.commKey, o.rank, o.nranks, no, nullptr);
  return net->listen(o.netAddress, &netHandle);
}

Status CudaEngine::State::startNet(const std::vector<CudaExport>& all) {
  std::vector<transport::NetHandle> handles(all.size());
  for (size_t r = 0; r < all.size(); ++r) std::memcpy(handles[r].data(), all[r].net, handles[r].size());
  return net->start(std::move(handles));
}

std::string CudaEngine::State::netPath() const {
  std::string d = net->describe();
  return "NET/" + d.substr(0, d.find(' '));
}

Status CudaEngine::State::connectNet(int c, int k, int peer, device::PeerConn* pc) {
  if (net == nullptr) return internalError("rank " + std::to_string(peer) + " is on another host, no network open");
  const size_t slotBytes = netSlotBytes(o);
  const size_t bytes = transport::HostFifo::deviceBlockBytes(device::kSteps, slotBytes);
  const transport::HostFifo::DeviceLayout l = transport::HostFifo::deviceLayout(slotBytes);
  char* dev[2] = {nullptr, nullptr};  // outbox, inbox as the kernel sees them
  std::unique_ptr<transport::HostFifo> fifo[2];
  for (int i = 0; i < 2; ++i) {
    void* host = nullptr;
    BRAID_RETURN_IF_ERROR(cudaCheck("cudaHostAlloc (network FIFOs)",
                                    cudaHostAlloc(&host, bytes, cudaHostAllocMapped | cudaHostAllocPortable)));
    netBlocks.push_back(host);
    std::memset(host, 0, bytes);
    BRAID_RETURN_IF_ERROR(
        cudaCheck("cudaHostGetDevicePointer", cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev[i]), host, 0)));
    fifo[i] = transport::HostFifo::forDevice(host, device::kSteps, slotBytes);
  }
  device::SendEnd& s = pc->send;
  s.simple = s.ll = s.ll128 = dev[0] + l.firstData;
  s.tail = reinterpret_cast<uint64_t*>(dev[0] + l.tail);
  s.head = reinterpret_cast<uint64_t*>(dev[0] + l.head);
  s.netStride = l.stride;
  device::RecvEnd& r = pc->recv;
  r.simple = r.ll = r.ll128 = dev[1] + l.firstData;
  r.tail = reinterpret_cast<uint64_t*>(dev[1] + l.tail);
  r.head = reinterpret_cast<uint64_t*>(dev[1] + l.head);
  r.netStride = l.stride;
  r.wanted = reinterpret_cast<uint64_t*>(dev[1] + l.wanted);
  static_assert(device::kNetSizeBefore == sizeof(uint64_t) + sizeof(transport::CallTag), "the slot header's size word");
  if (l.sizeBefore != device::kNetSizeBefore)
    return internalError("network FIFO: size word not where kernels write it");
  BRAID_RETURN_IF_ERROR(net->attach(c, k, peer, o.rank, std::move(fifo[1])));
  return net->attach(c, k, o.rank, peer, std::move(fifo[0]))
      .withContext("connecting to rank " + std::to_string(peer) + " on another host");
}

Status CudaEngine::State::netAround(cudaStream_t stream, bool begin) {
  if (net == nullptr) return Status::ok();
  return cudaCheck("cudaLaunchHostFunc (network proxy)",
                   cudaLaunchHostFunc(stream, begin ? netBegin : netEnd, net.get()));
}

void CudaEngine::State::closeNet() {
  net.reset();  // sends what is queued, stops the proxy, closes the connections
  for (void* p : netBlocks) cudaFreeHost(p);
  netBlocks.clear();
}

}  // namespace braid::exec
