#include "transport/net/net_device.h"

#include <cuda_runtime.h>

#include <atomic>
#include <cstring>

#include "core/log.h"
#include "core/param.h"
#include "transport/cuda_check.h"

namespace braid::transport {
namespace {

void CUDART_CB netBegin(void* transport) { static_cast<NetTransport*>(transport)->beginWork(); }
void CUDART_CB netEnd(void* transport) { static_cast<NetTransport*>(transport)->endWork(); }

}  // namespace

NetDeviceTransport::NetDeviceTransport(const NetDeviceOptions& options) : o_(options) {
  NetOptions no = NetOptions::fromParams(o_.slots, o_.slotBytes, o_.timeoutMs);
  no.attachedOnly = true;
  auto onFailure = o_.onFailure;
  int* abortFlag = o_.abortFlag;
  auto told = std::make_shared<std::atomic<bool>>(false);
  no.onFailure = [onFailure, abortFlag, told](int peer, const std::string& why) {
    if (abortFlag != nullptr) *reinterpret_cast<volatile int*>(abortFlag) = 1;  // kernels waiting on the peer give up
    if (told->exchange(true)) return;                                           // the first failure is the news
    std::string what = "the network connection with rank " + std::to_string(peer) + " failed: " + why;
    BRAID_WARN(log::Subsys::kNet, what, " (this rank's kernels are aborted)");
    if (onFailure) onFailure(what);
  };
  net_ = std::make_unique<NetTransport>(o_.commKey, o_.rank, o_.nranks, no, nullptr);
}

NetDeviceTransport::~NetDeviceTransport() {
  net_.reset();  // sends what is queued, stops the proxy, closes the connections
  for (void* p : blocks_) cudaFreeHost(p);
  for (void* p : gpuBlocks_) cudaFree(p);
}

Status NetDeviceTransport::listen(const net::SocketAddress& interfaceAddress, unsigned char handle[128]) {
  NetHandle h{};
  BRAID_RETURN_IF_ERROR(net_->listen(interfaceAddress, &h));
  static_assert(sizeof(h) == sizeof(DeviceOffer::net), "the offer holds a network handle");
  std::memcpy(handle, h.data(), h.size());
  return Status::ok();
}

bool NetDeviceTransport::gpuDirect() const {
  return (net_->ptrSupport() & network::kPtrCuda) != 0 && param::getInt(param::Id::kNetGdr) != 0;
}

Status NetDeviceTransport::reach(int, const PeerIdentity&, const DeviceOffer&, std::string* path) {
  std::string d = net_->describe();
  *path = "NET/" + d.substr(0, d.find(' ')) + (gpuDirect() ? "/GDRDMA" : "");
  return Status::ok();
}

Status NetDeviceTransport::start(const std::vector<DeviceOffer>& offers) {
  std::vector<NetHandle> handles(offers.size());
  for (size_t r = 0; r < offers.size(); ++r) std::memcpy(handles[r].data(), offers[r].net, handles[r].size());
  return net_->start(std::move(handles));
}

// Each direction: the counters and slot headers in pinned, mapped host memory (both the kernel and
// the proxy poll them there); the slots' data beside them, or in GPU memory where the network reads
// and writes it itself (GPUDirect RDMA: the kernel's loads and stores stay in HBM).
Status NetDeviceTransport::ends(int channel, int connId, int peer, char*, char*, device::PeerConn* pc) {
  if (o_.slots != device::kSteps) return internalError("network FIFO: slots differ from the kernels' steps");
  const bool gdr = gpuDirect();
  const HostFifo::DeviceLayout l = HostFifo::deviceLayout(o_.slotBytes);
  const size_t bytes =
      gdr ? HostFifo::deviceControlBytes(o_.slots) : HostFifo::deviceBlockBytes(o_.slots, o_.slotBytes);
  const size_t stride = gdr ? HostFifo::deviceDataStride(o_.slotBytes) : l.stride;
  char* control[2] = {nullptr, nullptr};  // outbox, inbox: their counters as the kernel sees them
  char* data[2] = {nullptr, nullptr};     // their slot 0's data as the kernel sees it
  std::unique_ptr<HostFifo> fifo[2];
  for (int i = 0; i < 2; ++i) {
    void* host = nullptr;
    BRAID_RETURN_IF_ERROR(cudaCheck("cudaHostAlloc (network FIFOs)",
                                    cudaHostAlloc(&host, bytes, cudaHostAllocMapped | cudaHostAllocPortable)));
    blocks_.push_back(host);
    std::memset(host, 0, bytes);
    BRAID_RETURN_IF_ERROR(cudaCheck("cudaHostGetDevicePointer",
                                    cudaHostGetDevicePointer(reinterpret_cast<void**>(&control[i]), host, 0)));
    if (gdr) {
      void* gpu = nullptr;
      BRAID_RETURN_IF_ERROR(
          cudaCheck("cudaMalloc (network FIFOs, GPUDirect RDMA)", cudaMalloc(&gpu, stride * o_.slots)));
      gpuBlocks_.push_back(gpu);
      // On the set-up stream: other ranks' kernels on this GPU may be running (and waiting for this).
      auto setup = static_cast<cudaStream_t>(o_.setupStream);
      cudaError_t err = cudaMemsetAsync(gpu, 0, stride * o_.slots, setup);
      if (err == cudaSuccess) err = cudaStreamSynchronize(setup);
      BRAID_RETURN_IF_ERROR(cudaCheck("cudaMemsetAsync (network FIFOs)", err));
      data[i] = static_cast<char*>(gpu);
      fifo[i] = HostFifo::forDeviceData(host, data[i], o_.slots, o_.slotBytes, network::kPtrCuda);
    } else {
      data[i] = control[i] + l.firstData;
      fifo[i] = HostFifo::forDevice(host, o_.slots, o_.slotBytes);
    }
  }
  device::SendEnd& s = pc->send;
  s.simple = s.ll = s.ll128 = data[0];
  s.tail = reinterpret_cast<uint64_t*>(control[0] + l.tail);
  s.head = reinterpret_cast<uint64_t*>(control[0] + l.head);
  s.netStride = stride;
  device::RecvEnd& r = pc->recv;
  r.simple = r.ll = r.ll128 = data[1];
  r.tail = reinterpret_cast<uint64_t*>(control[1] + l.tail);
  r.head = reinterpret_cast<uint64_t*>(control[1] + l.head);
  r.netStride = stride;
  r.wanted = reinterpret_cast<uint64_t*>(control[1] + l.wanted);
  if (l.kernelSizes - l.tail != device::kNetSizesAfterTail * sizeof(uint64_t))
    return internalError("network FIFO: the size words are not where kernels write them");
  BRAID_RETURN_IF_ERROR(net_->attach(channel, connId, peer, o_.rank, std::move(fifo[1])));
  return net_->attach(channel, connId, o_.rank, peer, std::move(fifo[0]))
      .withContext("connecting to rank " + std::to_string(peer) + " on another host");
}

Status NetDeviceTransport::around(void* stream, bool begin) {
  return cudaCheck("cudaLaunchHostFunc (network proxy)",
                   cudaLaunchHostFunc(static_cast<cudaStream_t>(stream), begin ? netBegin : netEnd, net_.get()));
}

}  // namespace braid::transport
