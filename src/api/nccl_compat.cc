// The NCCL 2.28 API (include/nccl.h) over braid's, for libnccl.so.2. Handles, ids, types, ops and
// result codes have the same values on both sides, so most functions translate and forward; what
// braid cannot do returns an error whose message ncclGetLastError gives (docs/nccl-compat.md).
// Each function's profiling twin (pncclX) is an alias of it.
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "api/guard.h"
#include "braid/braid.h"
#include "core/group.h"
#include "exec/cuda_device.h"

namespace {

static_assert(sizeof(ncclUniqueId) == sizeof(braidUniqueId), "unique ids are 128 bytes on both sides");
static_assert(static_cast<int>(ncclFloat8e5m2) == static_cast<int>(braidFloat8e5m2), "types share values");
static_assert(static_cast<int>(ncclAvg) == static_cast<int>(braidAvg), "ops share values");
static_assert(static_cast<int>(ncclInProgress) == static_cast<int>(braidInProgress), "results share values");

braidComm_t toBraid(ncclComm_t c) { return reinterpret_cast<braidComm_t>(c); }
braidDataType_t type(ncclDataType_t t) { return static_cast<braidDataType_t>(t); }
braidRedOp_t op(ncclRedOp_t o) { return static_cast<braidRedOp_t>(o); }
braidStream_t stream(cudaStream_t s) { return reinterpret_cast<braidStream_t>(s); }

// braid's results are NCCL's, plus braidTimeout (the watchdog's report, or a peer that did not
// answer in time): ncclSystemError, which PyTorch's watchdog treats as a failed communicator.
ncclResult_t result(braidResult_t r) { return r == braidTimeout ? ncclSystemError : static_cast<ncclResult_t>(r); }

braidUniqueId id(const ncclUniqueId& u) {
  braidUniqueId b;
  std::memcpy(&b, &u, sizeof(b));
  return b;
}

// braid's config from NCCL's: blocking, minCTAs and maxCTAs carry over; the rest is ignored.
braid::Status translate(const ncclConfig_t* in, braidConfig_t* out) {
  *out = BRAID_CONFIG_INITIALIZER;
  if (in == nullptr) return braid::Status::ok();
  if (in->size < offsetof(ncclConfig_t, maxCTAs) + sizeof(int) || in->magic != 0xcafebeef) {
    return braid::invalidArgument("'config' was not made from NCCL_CONFIG_INITIALIZER (size or magic is wrong)");
  }
  if (in->blocking != NCCL_CONFIG_UNDEF_INT) out->blocking = in->blocking;
  if (in->minCTAs != NCCL_CONFIG_UNDEF_INT) out->minCTAs = in->minCTAs;
  if (in->maxCTAs != NCCL_CONFIG_UNDEF_INT) out->maxCTAs = in->maxCTAs;
  return braid::Status::ok();
}

// An NCCL function braid does not provide: a clear error, never a silent success.
ncclResult_t unsupported(const char* function, const char* why) {
  return result(
      braid::api::finish(function, braid::invalidUsage(std::string(function) + " is not supported by braid: " + why)));
}

ncclResult_t fail(const char* function, const braid::Status& s) { return result(braid::api::finish(function, s)); }

size_t elementBytes(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 1;
  }
}

braidResult_t sizeAndRank(ncclComm_t comm, int* n, int* me) {
  braidResult_t r = braidCommCount(toBraid(comm), n);
  return r == braidSuccess ? braidCommUserRank(toBraid(comm), me) : r;
}

// The NCCL_* variables users set, as braid's (a BRAID_* variable already set wins). Runs when
// libnccl.so.2 is loaded, before any call reads its parameters.
struct EnvName {
  const char* nccl;
  const char* braid;
};
const EnvName kEnvironment[] = {
    {"NCCL_DEBUG", "BRAID_DEBUG"},
    {"NCCL_DEBUG_SUBSYS", "BRAID_DEBUG_SUBSYS"},
    {"NCCL_DEBUG_FILE", "BRAID_DEBUG_FILE"},
    {"NCCL_ALGO", "BRAID_ALGO"},
    {"NCCL_PROTO", "BRAID_PROTO"},
    {"NCCL_MIN_CTAS", "BRAID_MIN_CTAS"},
    {"NCCL_MAX_CTAS", "BRAID_MAX_CTAS"},
    {"NCCL_MIN_NCHANNELS", "BRAID_MIN_CTAS"},
    {"NCCL_MAX_NCHANNELS", "BRAID_MAX_CTAS"},
    {"NCCL_NTHREADS", "BRAID_NTHREADS"},
    {"NCCL_P2P_DISABLE", "BRAID_P2P_DISABLE"},
    {"NCCL_SOCKET_IFNAME", "BRAID_SOCKET_IFNAME"},
    {"NCCL_SOCKET_FAMILY", "BRAID_SOCKET_FAMILY"},
    {"NCCL_SHM_DISABLE", "BRAID_SHM_DISABLE"},
    {"NCCL_TOPO_FILE", "BRAID_TOPO_FILE"},
    {"NCCL_TOPO_DUMP_FILE", "BRAID_TOPO_DUMP_FILE"},
    {"NCCL_COMM_ID", "BRAID_COMM_ID"},
    {"NCCL_SOCKET_NTHREADS", "BRAID_SOCKET_NTHREADS"},
    {"NCCL_NSOCKS_PERTHREAD", "BRAID_NSOCKS_PERTHREAD"},
};

__attribute__((constructor)) void adoptNcclEnvironment() {
  for (const EnvName& e : kEnvironment) {
    const char* v = std::getenv(e.nccl);
    if (v != nullptr && std::getenv(e.braid) == nullptr) setenv(e.braid, v, 0);
  }
  // NCCL_BUFFSIZE is a connection's whole buffer; braid's is BRAID_STEPS slots of BRAID_CHUNK_BYTES.
  const char* buff = std::getenv("NCCL_BUFFSIZE");
  if (buff != nullptr && std::getenv("BRAID_CHUNK_BYTES") == nullptr) {
    const char* stepsText = std::getenv("BRAID_STEPS");
    long steps = stepsText != nullptr ? std::atol(stepsText) : 8;
    long bytes = std::atol(buff);
    if (bytes > 0 && steps > 0) setenv("BRAID_CHUNK_BYTES", std::to_string(bytes / steps).c_str(), 0);
  }
  // On GPUs a connection holds 8 Simple slots: the slot is an eighth, rounded to the 4 KiB the
  // parameter requires and kept in its range (4 KiB .. 4 MiB).
  if (buff != nullptr && std::getenv("BRAID_GPU_SIMPLE_BYTES") == nullptr) {
    long slot = std::atol(buff) / 8 / 4096 * 4096;
    if (slot > 0) setenv("BRAID_GPU_SIMPLE_BYTES", std::to_string(std::min(slot, 4L << 20)).c_str(), 0);
  }
}

}  // namespace

#define BRAID_ALIAS(name) __attribute__((alias(#name), visibility("default")))
#define BRAID_EXPORT __attribute__((visibility("default")))

extern "C" {

BRAID_EXPORT ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return fail("ncclGetVersion", braid::invalidArgument("'version' is NULL"));
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

BRAID_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  return result(braidGetUniqueId(reinterpret_cast<braidUniqueId*>(uniqueId)));
}

BRAID_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                                 ncclConfig_t* config) {
  braidConfig_t c;
  braid::Status st = translate(config, &c);
  if (!st.isOk()) return fail("ncclCommInitRankConfig", st);
  return result(braidCommInitRankConfig(reinterpret_cast<braidComm_t*>(comm), nranks, id(commId), rank, &c));
}

BRAID_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return result(braidCommInitRank(reinterpret_cast<braidComm_t*>(comm), nranks, id(commId), rank));
}

BRAID_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  return result(braidCommInitAll(reinterpret_cast<braidComm_t*>(comm), ndev, devlist));
}

// Several ids spread NCCL's rendezvous over several roots; braid's root serves every rank, so the
// first id (the same on every rank) is enough.
BRAID_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                                   ncclUniqueId* commIds, ncclConfig_t* config) {
  if (nId < 1 || commIds == nullptr) {
    return fail("ncclCommInitRankScalable", braid::invalidArgument("needs at least one unique id (nId >= 1)"));
  }
  return ncclCommInitRankConfig(newcomm, nranks, commIds[0], myrank, config);
}

BRAID_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) { return result(braidCommFinalize(toBraid(comm))); }
BRAID_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) { return result(braidCommDestroy(toBraid(comm))); }
BRAID_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) { return result(braidCommAbort(toBraid(comm))); }

BRAID_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t, int) { return unsupported("ncclCommRevoke", "use ncclCommAbort"); }

BRAID_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                        ncclConfig_t* config) {
  braidConfig_t c;
  braid::Status st = translate(config, &c);
  if (!st.isOk()) return fail("ncclCommSplit", st);
  return result(braidCommSplit(toBraid(comm), color, key, reinterpret_cast<braidComm_t*>(newcomm),
                               config != nullptr ? &c : nullptr));
}

BRAID_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                         ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  static_assert(NCCL_SHRINK_DEFAULT == BRAID_SHRINK_DEFAULT && NCCL_SHRINK_ABORT == BRAID_SHRINK_ABORT,
                "the shrink flags agree");
  braidConfig_t c;
  braid::Status st = translate(config, &c);
  if (!st.isOk()) return fail("ncclCommShrink", st);
  return result(braidCommShrink(toBraid(comm), excludeRanksList, excludeRanksCount,
                                reinterpret_cast<braidComm_t*>(newcomm), config != nullptr ? &c : nullptr,
                                shrinkFlags));
}

BRAID_EXPORT const char* ncclGetErrorString(ncclResult_t r) {
  return braidGetErrorString(static_cast<braidResult_t>(r));
}
BRAID_EXPORT const char* ncclGetLastError(ncclComm_t) { return braidGetLastError(); }
BRAID_EXPORT void ncclResetDebugInit(void) {}

BRAID_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  braidResult_t e = braidSuccess;
  braidResult_t r = braidCommGetAsyncError(toBraid(comm), asyncError != nullptr ? &e : nullptr);
  if (r == braidSuccess) *asyncError = result(e);
  return result(r);
}
BRAID_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return result(braidCommCount(toBraid(comm), count));
}
BRAID_EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return result(braidCommCuDevice(toBraid(comm), device));
}
BRAID_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return result(braidCommUserRank(toBraid(comm), rank));
}

// braid needs no special memory: ncclMemAlloc is cudaMalloc on the current device.
BRAID_EXPORT ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return fail("ncclMemAlloc", braid::invalidArgument("'ptr' is NULL"));
  *ptr = nullptr;
  if (size == 0) return ncclSuccess;
  braid::Status s = braid::exec::cudaAllocate(size, ptr);
  return s.isOk() ? ncclSuccess : fail("ncclMemAlloc", s);
}
BRAID_EXPORT ncclResult_t ncclMemFree(void* ptr) {
  if (ptr == nullptr) return ncclSuccess;
  braid::Status s = braid::exec::cudaRelease(ptr);
  return s.isOk() ? ncclSuccess : fail("ncclMemFree", s);
}
BRAID_EXPORT ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return result(braidCommRegister(toBraid(comm), buff, size, handle));
}
BRAID_EXPORT ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  return result(braidCommDeregister(toBraid(comm), handle));
}
BRAID_EXPORT ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                                 int winFlags) {
  static_assert(NCCL_WIN_DEFAULT == BRAID_WIN_DEFAULT && NCCL_WIN_COLL_SYMMETRIC == BRAID_WIN_COLL_SYMMETRIC,
                "the window flags agree");
  return result(braidCommWindowRegister(toBraid(comm), buff, size, reinterpret_cast<braidWindow_t*>(win), winFlags));
}
BRAID_EXPORT ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return result(braidCommWindowDeregister(toBraid(comm), reinterpret_cast<braidWindow_t>(win)));
}
BRAID_EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                                   ncclScalarResidence_t residence, ncclComm_t comm) {
  static_assert(static_cast<int>(ncclScalarDevice) == braidScalarDevice &&
                    static_cast<int>(ncclScalarHostImmediate) == braidScalarHostImmediate,
                "the residences agree");
  braidRedOp_t made = braidSum;
  int where = 0;  // through int: a caller's junk value is not a valid ncclScalarResidence_t in C++
  std::memcpy(&where, &residence, sizeof(where));
  braidResult_t r = braidRedOpCreatePreMulSum(op != nullptr ? &made : nullptr, scalar, type(datatype),
                                              static_cast<braidScalarResidence_t>(where), toBraid(comm));
  if (r == braidSuccess) *op = static_cast<ncclRedOp_t>(made);
  return result(r);
}
BRAID_EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return result(braidRedOpDestroy(static_cast<braidRedOp_t>(op), toBraid(comm)));
}

BRAID_EXPORT ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                     ncclRedOp_t o, int root, ncclComm_t comm, cudaStream_t s) {
  return result(braidReduce(sendbuff, recvbuff, count, type(datatype), op(o), root, toBraid(comm), stream(s)));
}
BRAID_EXPORT ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                    cudaStream_t s) {
  return result(braidBroadcast(buff, buff, count, type(datatype), root, toBraid(comm), stream(s)));
}
BRAID_EXPORT ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                        int root, ncclComm_t comm, cudaStream_t s) {
  return result(braidBroadcast(sendbuff, recvbuff, count, type(datatype), root, toBraid(comm), stream(s)));
}
BRAID_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                        ncclRedOp_t o, ncclComm_t comm, cudaStream_t s) {
  return result(braidAllReduce(sendbuff, recvbuff, count, type(datatype), op(o), toBraid(comm), stream(s)));
}
BRAID_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                            ncclDataType_t datatype, ncclRedOp_t o, ncclComm_t comm, cudaStream_t s) {
  return result(braidReduceScatter(sendbuff, recvbuff, recvcount, type(datatype), op(o), toBraid(comm), stream(s)));
}
BRAID_EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                        ncclComm_t comm, cudaStream_t s) {
  return result(braidAllGather(sendbuff, recvbuff, sendcount, type(datatype), toBraid(comm), stream(s)));
}
BRAID_EXPORT ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       ncclComm_t comm, cudaStream_t s) {
  return result(braidAllToAll(sendbuff, recvbuff, count, type(datatype), toBraid(comm), stream(s)));
}

BRAID_EXPORT ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                   ncclComm_t comm, cudaStream_t s) {
  return result(braidSend(sendbuff, count, type(datatype), peer, toBraid(comm), stream(s)));
}
BRAID_EXPORT ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                   cudaStream_t s) {
  return result(braidRecv(recvbuff, count, type(datatype), peer, toBraid(comm), stream(s)));
}

BRAID_EXPORT ncclResult_t ncclGroupStart(void) { return result(braidGroupStart()); }
BRAID_EXPORT ncclResult_t ncclGroupEnd(void) { return result(braidGroupEnd()); }

// Ends the group without running it; the estimate is the tuner's predicted time of every held
// call, in microseconds (summed: calls of one thread's group are assumed not to overlap).
BRAID_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  return result(braid::api::guard("ncclGroupSimulateEnd", [&]() -> braid::Status {
    if (simInfo == nullptr) return braid::invalidArgument("'simInfo' is NULL");
    if (simInfo->size < sizeof(ncclSimInfo_t) || simInfo->magic != 0x74685283) {
      return braid::invalidArgument("'simInfo' was not made from NCCL_SIM_INFO_INITIALIZER");
    }
    double us = 0;
    BRAID_RETURN_IF_ERROR(braid::core::groupSimulateEnd(&us));
    simInfo->estimatedTime = static_cast<float>(us);
    return braid::Status::ok();
  }));
}

// The device API of nccl_device.h (PyTorch imports these two): its structures stay opaque here.
BRAID_EXPORT ncclResult_t ncclDevCommCreate(ncclComm_t, const void*, void*) {
  return unsupported("ncclDevCommCreate", "the device-side API (nccl_device.h) is not available");
}
BRAID_EXPORT ncclResult_t ncclDevCommDestroy(ncclComm_t, const void*) {
  return unsupported("ncclDevCommDestroy", "the device-side API (nccl_device.h) is not available");
}

// Gather and scatter: one group of sends and receives between the root and every rank (the root's
// own block is a self-send).
static ncclResult_t rooted(bool gather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           int root, ncclComm_t comm, cudaStream_t s) {
  int n = 0, me = 0;
  if (braidResult_t r = sizeAndRank(comm, &n, &me); r != braidSuccess) return result(r);
  const size_t block = count * elementBytes(datatype);
  braidComm_t c = toBraid(comm);
  braidGroupStart();
  if (gather)
    braidSend(sendbuff, count, type(datatype), root, c, stream(s));
  else
    braidRecv(recvbuff, count, type(datatype), root, c, stream(s));
  for (int q = 0; me == root && q < n; ++q) {
    if (gather)
      braidRecv(static_cast<char*>(recvbuff) + q * block, count, type(datatype), q, c, stream(s));
    else
      braidSend(static_cast<const char*>(sendbuff) + q * block, count, type(datatype), q, c, stream(s));
  }
  return result(braidGroupEnd());
}

BRAID_EXPORT ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                     int root, ncclComm_t comm, cudaStream_t s) {
  return rooted(true, sendbuff, recvbuff, count, datatype, root, comm, s);
}

BRAID_EXPORT ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                      int root, ncclComm_t comm, cudaStream_t s) {
  return rooted(false, sendbuff, recvbuff, count, datatype, root, comm, s);
}

// The profiling twins.
#define BRAID_TWIN(ret, name, args) ret p##name args BRAID_ALIAS(name);
BRAID_TWIN(ncclResult_t, ncclGetVersion, (int*))
BRAID_TWIN(ncclResult_t, ncclGetUniqueId, (ncclUniqueId*))
BRAID_TWIN(ncclResult_t, ncclCommInitRankConfig, (ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*))
BRAID_TWIN(ncclResult_t, ncclCommInitRank, (ncclComm_t*, int, ncclUniqueId, int))
BRAID_TWIN(ncclResult_t, ncclCommInitAll, (ncclComm_t*, int, const int*))
BRAID_TWIN(ncclResult_t, ncclCommInitRankScalable, (ncclComm_t*, int, int, int, ncclUniqueId*, ncclConfig_t*))
BRAID_TWIN(ncclResult_t, ncclCommFinalize, (ncclComm_t))
BRAID_TWIN(ncclResult_t, ncclCommDestroy, (ncclComm_t))
BRAID_TWIN(ncclResult_t, ncclCommAbort, (ncclComm_t))
BRAID_TWIN(ncclResult_t, ncclCommRevoke, (ncclComm_t, int))
BRAID_TWIN(ncclResult_t, ncclCommSplit, (ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*))
BRAID_TWIN(ncclResult_t, ncclCommShrink, (ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int))
BRAID_TWIN(const char*, ncclGetErrorString, (ncclResult_t))
BRAID_TWIN(const char*, ncclGetLastError, (ncclComm_t))
BRAID_TWIN(void, ncclResetDebugInit, (void))
BRAID_TWIN(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t, ncclResult_t*))
BRAID_TWIN(ncclResult_t, ncclCommCount, (const ncclComm_t, int*))
BRAID_TWIN(ncclResult_t, ncclCommCuDevice, (const ncclComm_t, int*))
BRAID_TWIN(ncclResult_t, ncclCommUserRank, (const ncclComm_t, int*))
BRAID_TWIN(ncclResult_t, ncclMemAlloc, (void**, size_t))
BRAID_TWIN(ncclResult_t, ncclMemFree, (void*))
BRAID_TWIN(ncclResult_t, ncclCommRegister, (const ncclComm_t, void*, size_t, void**))
BRAID_TWIN(ncclResult_t, ncclCommDeregister, (const ncclComm_t, void*))
BRAID_TWIN(ncclResult_t, ncclCommWindowRegister, (ncclComm_t, void*, size_t, ncclWindow_t*, int))
BRAID_TWIN(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t, ncclWindow_t))
BRAID_TWIN(ncclResult_t, ncclRedOpCreatePreMulSum,
           (ncclRedOp_t*, void*, ncclDataType_t, ncclScalarResidence_t, ncclComm_t))
BRAID_TWIN(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t, ncclComm_t))
BRAID_TWIN(ncclResult_t, ncclReduce,
           (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t))
BRAID_TWIN(ncclResult_t, ncclBcast, (void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
BRAID_TWIN(ncclResult_t, ncclBroadcast, (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
BRAID_TWIN(ncclResult_t, ncclAllReduce,
           (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))
BRAID_TWIN(ncclResult_t, ncclReduceScatter,
           (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))
BRAID_TWIN(ncclResult_t, ncclAllGather, (const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t))
BRAID_TWIN(ncclResult_t, ncclAlltoAll, (const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t))
BRAID_TWIN(ncclResult_t, ncclGather, (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
BRAID_TWIN(ncclResult_t, ncclScatter, (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
BRAID_TWIN(ncclResult_t, ncclSend, (const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
BRAID_TWIN(ncclResult_t, ncclRecv, (void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
BRAID_TWIN(ncclResult_t, ncclGroupStart, (void))
BRAID_TWIN(ncclResult_t, ncclGroupEnd, (void))
BRAID_TWIN(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t*))
BRAID_TWIN(ncclResult_t, ncclDevCommCreate, (ncclComm_t, const void*, void*))
BRAID_TWIN(ncclResult_t, ncclDevCommDestroy, (ncclComm_t, const void*))

}  // extern "C"
