#include "staging_network.h"

#include <fcntl.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "transport/net/socket_net.h"

namespace braid::testnet {
namespace {

using namespace braid::network;

const NetV11& inner() { return socketNetwork(); }
StagingSpec gSpec{};
NetLogger gLog = nullptr;
std::atomic<long> gFlushes{0};
std::atomic<long> gDmaBufs{0};
char gFlushDone;  // the request of every flush: done at once

struct Region {
  void* innerMh = nullptr;
  char* user = nullptr;     // what the caller registered
  char* staging = nullptr;  // its copy (NCCL_PTR_CUDA memory), or nullptr (host memory)
};

// Plain host memory for the copies: a CUDA allocation here could wait for kernels that wait for
// this lane (page-locked allocations synchronise; a real NIC's registration makes no CUDA call).
char* stagingOf(const Region* r, const void* data) {
  return r->staging == nullptr ? static_cast<char*>(const_cast<void*>(data))
                               : r->staging + (static_cast<const char*>(data) - r->user);
}

ncclResult_t init(void** ctx, uint64_t commId, NetCommConfig* config, NetLogger log, NetProfilerCallback prof) {
  gLog = log;
  if (gSpec.onInit != nullptr) gSpec.onInit();
  return inner().init(ctx, commId, config, log, prof);
}

ncclResult_t getProperties(int dev, NetPropertiesV11* props) {
  ncclResult_t r = inner().getProperties(dev, props);
  if (r == ncclSuccess) props->ptrSupport = kPtrHost | kPtrCuda | (gSpec.dmaBuf ? kPtrDmaBuf : 0);
  return r;
}

ncclResult_t regMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  auto* r = new Region;
  r->user = static_cast<char*>(data);
  if (type == kPtrCuda) r->staging = static_cast<char*>(std::calloc(size == 0 ? 1 : size, 1));
  ncclResult_t res = type == kPtrCuda && r->staging == nullptr
                         ? ncclSystemError
                         : inner().regMr(comm, stagingOf(r, data), size, kPtrHost, &r->innerMh);
  if (res != ncclSuccess) {
    std::free(r->staging);
    delete r;
    return res;
  }
  *mhandle = r;
  return ncclSuccess;
}

// A NIC maps the DMA-BUF; this network checks that the descriptor is open and stages as for CUDA
// memory (the type is the memory's, NCCL_PTR_CUDA, as NCCL passes it).
ncclResult_t regMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle) {
  if (!gSpec.dmaBuf || type != kPtrCuda || fcntl(fd, F_GETFD) == -1) return ncclInvalidArgument;
  if (gDmaBufs.fetch_add(1) == 0 && gLog != nullptr) {
    gLog(kNetLogInfo, kNetLogSubsys, __FILE__, __LINE__, "%s: registered GPU memory by DMA-BUF (fd %d, offset %llu)",
         gSpec.name, fd, static_cast<unsigned long long>(offset));
  }
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
    ncclResult_t res = gSpec.copy(from, data, size);
    if (res != ncclSuccess) return res;
  }
  return inner().isend(comm, from, size, tag, r->innerMh, phandle, request);
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
  return inner().irecv(comm, n, into, sizes, tags, mh, phandles, request);
}

// Where the received bytes reach the registered memory.
ncclResult_t iflush(void*, int n, void** data, int* sizes, void** mhandles, void** request) {
  for (int i = 0; i < n; ++i) {
    auto* r = static_cast<Region*>(mhandles[i]);
    if (r->staging == nullptr || sizes[i] <= 0) continue;
    ncclResult_t res = gSpec.copy(data[i], stagingOf(r, data[i]), static_cast<size_t>(sizes[i]));
    if (res != ncclSuccess) return res;
    if (gFlushes.fetch_add(1) == 0 && gLog != nullptr)
      gLog(kNetLogInfo, kNetLogSubsys, __FILE__, __LINE__, "%s: first iflush of a receive into GPU memory", gSpec.name);
  }
  *request = &gFlushDone;
  return ncclSuccess;
}

ncclResult_t test(void* request, int* done, int* sizes) {
  if (request != &gFlushDone) return inner().test(request, done, sizes);
  *done = 1;
  if (sizes != nullptr) *sizes = 0;
  return ncclSuccess;
}

}  // namespace

NetV11 stagingNetwork(const StagingSpec& spec) {
  if (gSpec.name == nullptr) gSpec = spec;
  NetV11 t = inner();
  t.name = gSpec.name;
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

long stagingFlushes() { return gFlushes.load(); }
long stagingDmaBufs() { return gDmaBufs.load(); }

}  // namespace braid::testnet
