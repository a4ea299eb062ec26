// Small ncclNet plugins that misbehave in one way each, for the loader's tests (network_test.cc).
// Built three times with one of these defined:
//   FAKE_INIT_FAILS     v11; init logs a warning and fails
//   FAKE_NO_DEVICES     v11; init succeeds, devices() reports 0
//   FAKE_V9_ONLY        v9 only, named "FakeNine", one device; connections are not offered
#include <cstring>

#include "transport/net/net_abi.h"

using namespace braid::network;

namespace {

NetLogger gLog = nullptr;

ncclResult_t devices(int* n) {
#ifdef FAKE_NO_DEVICES
  *n = 0;
#else
  *n = 1;
#endif
  return ncclSuccess;
}

char gName[] = "fake0";

template <class Props>
ncclResult_t properties(int dev, Props* p) {
  std::memset(p, 0, sizeof(*p));
  p->name = gName;
  p->ptrSupport = kPtrHost;
  p->speed = 1234;
  p->maxComms = 1;
  p->maxRecvs = 1;
  return dev == 0 ? ncclSuccess : ncclInternalError;
}

ncclResult_t refuse() {
  if (gLog != nullptr) gLog(kNetLogWarn, kNetLogSubsys, __FILE__, __LINE__, "fake plugin: %s", "no connections here");
  return ncclInternalError;
}

ncclResult_t listen11(void*, int, void*, void**) { return refuse(); }
ncclResult_t listen9(int, void*, void**) { return refuse(); }
ncclResult_t connect11(void*, int, void*, void**, NetDeviceHandle**) { return refuse(); }
ncclResult_t connect9(int, void*, void**, NetDeviceHandle**) { return refuse(); }
ncclResult_t accept(void*, void**, NetDeviceHandle**) { return refuse(); }
ncclResult_t regMr(void*, void*, size_t, int, void**) { return refuse(); }
ncclResult_t deregMr(void*, void*) { return ncclSuccess; }
ncclResult_t isend11(void*, void*, size_t, int, void*, void*, void**) { return refuse(); }
ncclResult_t isend9(void*, void*, size_t, int, void*, void**) { return refuse(); }
ncclResult_t irecv11(void*, int, void**, size_t*, int*, void**, void**, void**) { return refuse(); }
ncclResult_t irecv9(void*, int, void**, size_t*, int*, void**, void**) { return refuse(); }
ncclResult_t test(void*, int*, int*) { return refuse(); }
ncclResult_t close(void*) { return ncclSuccess; }

}  // namespace

#ifdef FAKE_V9_ONLY
ncclResult_t init9(NetLogger log) {
  gLog = log;
  return ncclSuccess;
}
// Declared with C linkage in net_abi.h.
NetV9 braid::network::ncclNetPlugin_v9 = {"FakeNine", init9,    devices, properties<NetPropertiesV9>,
                                          listen9,    connect9, accept,  regMr,
                                          nullptr,    deregMr,  isend9,  irecv9,
                                          nullptr,    test,     close,   close,
                                          close,      nullptr,  nullptr, nullptr};
#else
ncclResult_t init11(void** ctx, uint64_t, NetCommConfig*, NetLogger log, NetProfilerCallback) {
  gLog = log;
  *ctx = nullptr;
#ifdef FAKE_INIT_FAILS
  log(kNetLogWarn, kNetLogSubsys, __FILE__, __LINE__, "fake plugin: %s", "no fabric found");
  return ncclSystemError;
#else
  return ncclSuccess;
#endif
}
NetV11 braid::network::ncclNetPlugin_v11 = {"FakeEleven", init11,    devices, properties<NetPropertiesV11>,
                                            listen11,     connect11, accept,  regMr,
                                            nullptr,      deregMr,   isend11, irecv11,
                                            nullptr,      test,      close,   close,
                                            close,        nullptr,   nullptr, nullptr,
                                            nullptr,      nullptr};
#endif
