// NCCL for braid-perf's side-by-side comparison (--compare nccl), loaded at run time with dlopen:
// braid-perf never links NCCL, so it builds and runs where NCCL is absent. The few NCCL types it
// needs are declared here, with NCCL 2.28's values (its data types and ops are numbered as braid's),
// so that no NCCL header is needed either.
#pragma once

#include <braid/braid.h>

#include <string>

namespace braid::perf::nccl {

typedef struct ncclComm* ncclComm_t;  // opaque
struct ncclUniqueId {
  char internal[128];
};
typedef int ncclResult_t;
typedef int ncclDataType_t;
typedef int ncclRedOp_t;
constexpr ncclResult_t ncclSuccess = 0;
// NCCL 2.28's data types and reduction ops (nccl.h).
constexpr ncclDataType_t ncclInt8 = 0, ncclUint8 = 1, ncclInt32 = 2, ncclUint32 = 3, ncclInt64 = 4, ncclUint64 = 5,
                         ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9, ncclFloat8e4m3 = 10,
                         ncclFloat8e5m2 = 11;
constexpr ncclRedOp_t ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4;

/// The functions braid-perf calls; streams are cudaStream_t, the same type as braidStream_t.
struct Api {
  std::string path;  // the file the dynamic loader found
  int version = 0;   // ncclGetVersion: major * 10000 + minor * 100 + patch
  ncclResult_t (*getUniqueId)(ncclUniqueId*) = nullptr;
  ncclResult_t (*commInitRank)(ncclComm_t*, int nranks, ncclUniqueId, int rank) = nullptr;
  ncclResult_t (*commDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*allReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            braidStream_t) = nullptr;
  ncclResult_t (*broadcast)(const void*, void*, size_t, ncclDataType_t, int root, ncclComm_t, braidStream_t) = nullptr;
  ncclResult_t (*reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int root, ncclComm_t,
                         braidStream_t) = nullptr;
  ncclResult_t (*allGather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, braidStream_t) = nullptr;
  ncclResult_t (*reduceScatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                braidStream_t) = nullptr;
  ncclResult_t (*send)(const void*, size_t, ncclDataType_t, int peer, ncclComm_t, braidStream_t) = nullptr;
  ncclResult_t (*recv)(void*, size_t, ncclDataType_t, int peer, ncclComm_t, braidStream_t) = nullptr;
  ncclResult_t (*groupStart)() = nullptr;
  ncclResult_t (*groupEnd)() = nullptr;
  const char* (*getErrorString)(ncclResult_t) = nullptr;
  ncclResult_t (*getVersion)(int*) = nullptr;
};

/// Loads `path` (dlopen's search rules: a bare name goes through LD_LIBRARY_PATH and the cache) once
/// per process; later calls return the same table. Null, with *error saying why, when the library
/// cannot be loaded or lacks one of the functions.
const Api* load(const std::string& path, std::string* error);

/// NCCL's numbers for braid's types and ops: the same (static_asserts in nccl_loader.cc check them).
inline ncclDataType_t toNccl(braidDataType_t t) { return static_cast<ncclDataType_t>(t); }
inline ncclRedOp_t toNccl(braidRedOp_t op) { return static_cast<ncclRedOp_t>(op); }

}  // namespace braid::perf::nccl
