#include "transport/net/net_device.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "core/log.h"
#include "core/param.h"
#include "transport/cuda_check.h"

namespace braid::transport {
namespace {

// A graph holding this rank's kernels is gone (a user object's destructor, on a driver thread).
void CUDART_CB graphGone(void* live) {
  auto* count = static_cast<std::shared_ptr<std::atomic<int>>*>(live);
  (*count)->fetch_sub(1, std::memory_order_acq_rel);
  delete count;
}

// A DMA-BUF file descriptor of the GPU range [data, data + bytes) (page-aligned), from the driver's
// cuMemGetHandleForAddressRange; -1 where the driver or the kernel cannot export one.
int dmabufOf(void* data, size_t bytes) {
  using GetHandle = CUresult (*)(void*, CUdeviceptr, size_t, CUmemRangeHandleType, unsigned long long);
  static GetHandle get = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetHandleForAddressRange", &fn, 12000, cudaEnableDefault, &q) !=
            cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      return GetHandle{nullptr};
    }
    return reinterpret_cast<GetHandle>(fn);
  }();
  int fd = -1;
  if (get == nullptr ||
      get(&fd, reinterpret_cast<CUdeviceptr>(data), bytes, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0) != CUDA_SUCCESS) {
    return -1;
  }
  return fd;
}

constexpr size_t kGpuDataAlign = size_t{2} << 20;  // whole pages for a DMA-BUF (cudaMalloc aligns these)

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

// Probed once, before the offer is made: GPU memory registered by DMA-BUF where the network takes
// it and the driver exports one (a probe), else registered as CUDA memory where the network takes
// that, else staged through host memory.
NetDeviceTransport::Gdr NetDeviceTransport::localGdr() {
  if (localKnown_) return local_;
  localKnown_ = true;
  const int bits = net_->ptrSupport();
  local_ = Gdr::kNone;
  // Without iflush a kernel could read received bytes the GPU cannot see yet.
  if (param::getInt(param::Id::kNetGdr) == 0 || !net_->flushes()) return local_;
  if ((bits & network::kPtrDmaBuf) != 0 && net_->registersDmaBuf()) {
    // Kept until the end: a cudaFree now would wait for every kernel on the GPU, other ranks' too,
    // which may be waiting for this rank.
    void* probe = nullptr;
    if (cudaMalloc(&probe, kGpuDataAlign) != cudaSuccess) {
      (void)cudaGetLastError();  // not left for a later check to find
    } else {
      gpuBlocks_.push_back(probe);
      int fd = dmabufOf(probe, kGpuDataAlign);
      if (fd >= 0) {
        close(fd);
        local_ = Gdr::kDmaBuf;
      }
    }
    if (local_ == Gdr::kNone)
      BRAID_INFO(log::Subsys::kNet, "network transport: the driver exports no DMA-BUF of GPU memory here");
  }
  if (local_ == Gdr::kNone && (bits & network::kPtrCuda) != 0) local_ = Gdr::kCuda;
  return local_;
}

void NetDeviceTransport::agree(const std::vector<DeviceOffer>& offers) {
  const int without = firstRankWithoutGpuDirect(offers);
  gdr_ = without < 0 ? localGdr() : Gdr::kNone;
  if (without >= 0 && localGdr() != Gdr::kNone) {
    BRAID_INFO(log::Subsys::kNet, "network transport: rank ", without,
               "'s network keeps no GPU memory (or BRAID_NET_GDR=0 there): every rank stages its FIFOs");
  }
  BRAID_INFO(log::Subsys::kNet, "network transport: GPU FIFOs ",
             gdr_ == Gdr::kDmaBuf ? "in GPU memory, registered by DMA-BUF"
             : gdr_ == Gdr::kCuda ? "in GPU memory, registered as CUDA memory"
                                  : "staged in pinned host memory");
}

Status NetDeviceTransport::reach(int, const PeerIdentity&, const DeviceOffer&, std::string* path) {
  std::string d = net_->describe();
  *path = "NET/" + d.substr(0, d.find(' ')) + (gpuDirect() != Gdr::kNone ? "/GDRDMA" : "");
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
  const Gdr mode = gpuDirect();
  const bool gdr = mode != Gdr::kNone;
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
      const size_t gpuBytes = (stride * o_.slots + kGpuDataAlign - 1) / kGpuDataAlign * kGpuDataAlign;
      BRAID_RETURN_IF_ERROR(cudaCheck("cudaMalloc (network FIFOs, GPUDirect RDMA)", cudaMalloc(&gpu, gpuBytes)));
      gpuBlocks_.push_back(gpu);
      int fd = -1;
      if (mode == Gdr::kDmaBuf) {
        fd = dmabufOf(gpu, gpuBytes);
        if (fd < 0) return internalError("network FIFOs: the driver exported no DMA-BUF of their GPU memory");
      }
      // On the set-up stream: other ranks' kernels on this GPU may be running (and waiting for this).
      auto setup = static_cast<cudaStream_t>(o_.setupStream);
      cudaError_t err = cudaMemsetAsync(gpu, 0, stride * o_.slots, setup);
      if (err == cudaSuccess) err = cudaStreamSynchronize(setup);
      if (err != cudaSuccess && fd >= 0) close(fd);  // else the FIFO owns it
      BRAID_RETURN_IF_ERROR(cudaCheck("cudaMemsetAsync (network FIFOs)", err));
      data[i] = static_cast<char*>(gpu);
      fifo[i] = HostFifo::forDeviceData(host, data[i], o_.slots, o_.slotBytes, network::kPtrCuda, fd);
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

Status NetDeviceTransport::link(int peer, HostFifo** outbox, HostFifo** inbox) {
  constexpr int kSlots = 16;
  auto out = std::make_unique<HostFifo>(kSlots, kHostLinkSlotBytes);
  auto in = std::make_unique<HostFifo>(kSlots, kHostLinkSlotBytes);
  *outbox = out.get();
  *inbox = in.get();
  BRAID_RETURN_IF_ERROR(net_->attach(kHostLinkId, kHostLinkId, peer, o_.rank, std::move(in), true));
  return net_->attach(kHostLinkId, kHostLinkId, o_.rank, peer, std::move(out), true)
      .withContext("linking the call ledger with rank " + std::to_string(peer) + " on another host");
}

void NetDeviceTransport::eagerLaunch(bool begin) { net_->eagerLaunch(begin); }

void NetDeviceTransport::setDoneProbe(std::function<bool()> done) { net_->setDoneProbe(std::move(done)); }

// A kernel about to be captured tells the proxies that a graph of this rank's kernels lives
// (NetTransport::graphCaptured, a count) and ties the count's decrement to the graph: a user
// object whose destructor the driver runs once the graph and every instance of it are gone (one per
// captured kernel: the count stays above zero while any lives). Nothing goes into the graph: a host function there,
// even one per graph, held cuGraphLaunch in the driver, and with ranks as threads of one process that held the other
// ranks' launches, whose kernels the first graph's waited for (bench/NOTES.md, twenty-second
// session).
Status NetDeviceTransport::captured(void* stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  BRAID_RETURN_IF_ERROR(
      cudaCheck("cudaStreamGetCaptureInfo (network proxy)",
                cudaStreamGetCaptureInfo(static_cast<cudaStream_t>(stream), &status, nullptr, &graph)));
  if (status != cudaStreamCaptureStatusActive || graph == nullptr) return Status::ok();  // (fails at its end)
  auto* live = new std::shared_ptr<std::atomic<int>>(net_->graphCaptured());
  cudaUserObject_t object = nullptr;
  cudaError_t err = cudaUserObjectCreate(&object, live, graphGone, 1, cudaUserObjectNoDestructorSync);
  if (err != cudaSuccess) {
    graphGone(live);
  } else {
    err = cudaGraphRetainUserObject(graph, object, 1, cudaGraphUserObjectMove);
    if (err != cudaSuccess) cudaUserObjectRelease(object, 1);  // (runs graphGone)
  }
  return cudaCheck("cudaUserObjectCreate/cudaGraphRetainUserObject (network proxy)", err);
}

}  // namespace braid::transport
