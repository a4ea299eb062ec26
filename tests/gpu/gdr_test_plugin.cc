// libnccl-net-gdrtest.so: a network that takes GPU memory (ptrSupport HOST | CUDA), for testing
// braid's GPUDirect RDMA path (transport/net/net_device.h) where no RDMA NIC exists. It is braid's
// socket network under the name "BraidGdrTest"; memory registered as CUDA is staged through host
// memory of the plugin's own:
//   isend  copies the GPU bytes out, then sends the copy;
//   irecv  receives into the copy, and test() reports it done with the bytes still there;
//   iflush copies them into GPU memory.
// So, as with a real NIC whose writes a GPU may not see before a flush, a receiver that publishes a
// slot without its iflush hands its kernel stale bytes, and the gpu test that uses this plugin
// fails. Copies run on one non-blocking stream (see copy()), and no CUDA call allocates (see regMr).
#include <cuda_runtime.h>
#include <fcntl.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "transport/net/net_abi.h"
#include "transport/net/socket_net.h"

using namespace braid::network;

namespace {

const NetV11& inner() { return socketNetwork(); }
NetLogger gLog = nullptr;
std::atomic<long> gFlushes{0};
std::atomic<long> gDmaBufs{0};
char gName[] = "BraidGdrTest";

struct Region {
  void* innerMh = nullptr;
  char* user = nullptr;     // what the caller registered
  char* staging = nullptr;  // its pinned host copy (CUDA memory), or nullptr (host memory)
};

struct Request {
  void* inner = nullptr;  // the socket network's request; nullptr for a flush (done at once)
};

// Copies on the plugin's one stream (made at init) and waits for the copy alone. A stream shares
// one of the GPU's few work queues (CUDA_DEVICE_MAX_CONNECTIONS) with the streams made before and
// after it; a copy queued behind a kernel that waits for this very copy would never run. The gpu
// test raises the queues to 32 and this plugin makes one stream, early, so that no kernel's stream
// lands on its queue (a real NIC's DMA queues behind no kernel).
std::mutex gCopyMu;
cudaStream_t gStream = nullptr;

ncclResult_t copy(void* dst, const void* src, size_t bytes, const char* what) {
  std::lock_guard<std::mutex> lock(gCopyMu);
  cudaError_t err = cudaSuccess;
  if (gStream == nullptr) err = cudaStreamCreateWithFlags(&gStream, cudaStreamNonBlocking);
  if (err == cudaSuccess && bytes > 0) err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, gStream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(gStream);
  if (err == cudaSuccess) return ncclSuccess;
  if (gLog != nullptr)
    gLog(kNetLogWarn, kNetLogSubsys, __FILE__, __LINE__, "BraidGdrTest: %s: %s", what, cudaGetErrorString(err));
  return ncclUnhandledCudaError;
}

char* stagingOf(const Region* r, const void* data) {
  return r->staging == nullptr ? static_cast<char*>(const_cast<void*>(data))
                               : r->staging + (static_cast<const char*>(data) - r->user);
}

ncclResult_t init(void** ctx, uint64_t commId, NetCommConfig* config, NetLogger log, NetProfilerCallback prof) {
  gLog = log;
  if (copy(nullptr, nullptr, 0, "making the copy stream") != ncclSuccess) return ncclUnhandledCudaError;
  return inner().init(ctx, commId, config, log, prof);
}

// BRAID_GDRTEST_DMABUF=1: DMABUF too (registrations by DMA-BUF file descriptor, regMrDmaBuf).
bool offersDmaBuf() {
  const char* v = std::getenv("BRAID_GDRTEST_DMABUF");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

ncclResult_t getProperties(int dev, NetPropertiesV11* props) {
  ncclResult_t r = inner().getProperties(dev, props);
  if (r == ncclSuccess) props->ptrSupport = kPtrHost | kPtrCuda | (offersDmaBuf() ? kPtrDmaBuf : 0);
  return r;
}

ncclResult_t regMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  auto* r = new Region;
  r->user = static_cast<char*>(data);
  ncclResult_t res = ncclSuccess;
  if (type == kPtrCuda) {
    // Plain host memory: a CUDA allocation here could wait for kernels that wait for this lane
    // (page-locked allocations synchronise; a real NIC's registration makes no CUDA call).
    r->staging = static_cast<char*>(std::malloc(size == 0 ? 1 : size));
    if (r->staging == nullptr) {
      delete r;
      return ncclSystemError;
    }
    res = inner().regMr(comm, r->staging, size, kPtrHost, &r->innerMh);
  } else {
    res = inner().regMr(comm, data, size, type, &r->innerMh);
  }
  if (res != ncclSuccess) {
    std::free(r->staging);
    delete r;
    return res;
  }
  *mhandle = r;
  return ncclSuccess;
}

// A real NIC maps the DMA-BUF; this one checks that the descriptor is open and stages as for CUDA.
ncclResult_t regMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle) {
  if (!offersDmaBuf() || type != kPtrCuda || fcntl(fd, F_GETFD) == -1) return ncclInvalidArgument;
  if (gDmaBufs.fetch_add(1) == 0 && gLog != nullptr)
    gLog(kNetLogInfo, kNetLogSubsys, __FILE__, __LINE__,
         "BraidGdrTest: registered GPU memory by DMA-BUF (fd %d, offset %llu)", fd,
         static_cast<unsigned long long>(offset));
  return regMr(comm, data, size, kPtrCuda, mhandle);
}

ncclResult_t deregMr(void* comm, void* mhandle) {
  auto* r = static_cast<Region*>(mhandle);
  ncclResult_t res = inner().deregMr(comm, r->innerMh);
  std::free(r->staging);
  delete r;
  return res;
}

ncclResult_t isend(void* comm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request) {
  auto* r = static_cast<Region*>(mhandle);
  char* from = stagingOf(r, data);
  if (r->staging != nullptr) {
    ncclResult_t res = copy(from, data, size, "copying a send out of GPU memory");
    if (res != ncclSuccess) return res;
  }
  void* req = nullptr;
  ncclResult_t res = inner().isend(comm, from, size, tag, r->innerMh, phandle, &req);
  *request = req == nullptr ? nullptr : new Request{req};
  return res;
}

ncclResult_t irecv(void* comm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
                   void** request) {
  constexpr int kMax = 8;
  if (n < 1 || n > kMax) return ncclInvalidArgument;
  void* into[kMax];
  void* mh[kMax];
  for (int i = 0; i < n; ++i) {
    auto* r = static_cast<Region*>(mhandles[i]);
    into[i] = stagingOf(r, data[i]);
    mh[i] = r->innerMh;
  }
  void* req = nullptr;
  ncclResult_t res = inner().irecv(comm, n, into, sizes, tags, mh, phandles, &req);
  *request = req == nullptr ? nullptr : new Request{req};
  return res;
}

// Where the received bytes reach GPU memory.
ncclResult_t iflush(void*, int n, void** data, int* sizes, void** mhandles, void** request) {
  for (int i = 0; i < n; ++i) {
    auto* r = static_cast<Region*>(mhandles[i]);
    if (r->staging == nullptr || sizes[i] <= 0) continue;
    ncclResult_t res = copy(data[i], stagingOf(r, data[i]), static_cast<size_t>(sizes[i]), "flushing a receive");
    if (res != ncclSuccess) return res;
  }
  if (gFlushes.fetch_add(1) == 0 && gLog != nullptr)
    gLog(kNetLogInfo, kNetLogSubsys, __FILE__, __LINE__, "BraidGdrTest: first iflush of a receive into GPU memory");
  *request = new Request{};
  return ncclSuccess;
}

ncclResult_t test(void* request, int* done, int* sizes) {
  auto* q = static_cast<Request*>(request);
  if (q->inner == nullptr) {
    *done = 1;
    if (sizes != nullptr) *sizes = 0;
    delete q;
    return ncclSuccess;
  }
  ncclResult_t res = inner().test(q->inner, done, sizes);
  if (res != ncclSuccess || *done) delete q;
  return res;
}

NetV11 makeTable() {
  NetV11 t = inner();
  t.name = gName;
  t.init = init;
  t.getProperties = getProperties;
  t.regMr = regMr;
  t.regMrDmaBuf = regMrDmaBuf;
  t.deregMr = deregMr;
  t.isend = isend;
  t.irecv = irecv;
  t.iflush = iflush;
  t.test = test;
  return t;
}

}  // namespace

namespace braid::network {
NetV11 ncclNetPlugin_v11 = makeTable();
}  // namespace braid::network
