/*
 * nccl.h — braid's NCCL-compatible interface.
 *
 * Programs written for NCCL 2.28 compile against this header and run on braid's libnccl.so.2: the
 * types, enum values, struct layouts and function signatures are those of NCCL 2.28 (the ABI),
 * written for braid (see docs/nccl-compat.md for what each function does here). Every function
 * has a profiling twin named with a leading 'p', as in NCCL.
 *
 * No CUDA header is needed: cudaStream_t is declared here as the CUDA runtime declares it.
 */
#ifndef BRAID_NCCL_H_
#define BRAID_NCCL_H_

#include <limits.h>
#include <stddef.h>

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_SUFFIX ""
#define NCCL_VERSION_CODE 22809
/* Versions up to 2.8 used X*1000 + Y*100 + Z; later ones X*10000 + Y*100 + Z. */
#define NCCL_VERSION(X, Y, Z) (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))

/* Set by braid's header so that a program can tell which library it was built against. */
#define NCCL_IS_BRAID 1

#ifdef __cplusplus
extern "C" {
#endif

#if !defined(__CUDA_RUNTIME_API_H__) && !defined(BRAID_CUDA_STREAM_DECLARED)
#define BRAID_CUDA_STREAM_DECLARED
typedef struct CUstream_st* cudaStream_t;
#endif

typedef struct ncclComm* ncclComm_t;
typedef struct ncclWindow_vidmem* ncclWindow_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f

#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01

#define NCCL_REVOKE_DEFAULT 0x00

/* Communicator configuration (the 2.28 layout). Start from NCCL_CONFIG_INITIALIZER. braid honours
 * blocking, minCTAs and maxCTAs; the other fields are accepted and ignored. */
typedef struct ncclConfig_v22800 {
  size_t size; /* set by the initializer */
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                                                \
  {                                                                                                            \
    sizeof(ncclConfig_t), 0xcafebeef, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_CONFIG_UNDEF_INT, \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR,            \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,            \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,            \
        NCCL_CONFIG_UNDEF_INT                                                                                  \
  }

/* What ncclGroupSimulateEnd reports: braid's cost-model estimate of the group, in microseconds. */
typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
} ncclSimInfo_t;

#define NCCL_SIM_INFO_INITIALIZER \
  { sizeof(ncclSimInfo_t), 0x74685283, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_UNDEF_FLOAT }

/* Reductions. Values from ncclNumOps up are reserved for operators made at run time. */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/* Declares NAME and its profiling twin pNAME with the same signature. */
#define BRAID_NCCL_API(ret, name, args) \
  ret name args;                        \
  ret p##name args

/* Memory and version. */
BRAID_NCCL_API(ncclResult_t, ncclMemAlloc, (void** ptr, size_t size));
BRAID_NCCL_API(ncclResult_t, ncclMemFree, (void* ptr));
BRAID_NCCL_API(ncclResult_t, ncclGetVersion, (int* version));

/* Communicators. */
BRAID_NCCL_API(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * uniqueId));
BRAID_NCCL_API(ncclResult_t, ncclCommInitRankConfig,
               (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config));
BRAID_NCCL_API(ncclResult_t, ncclCommInitRank, (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank));
BRAID_NCCL_API(ncclResult_t, ncclCommInitAll, (ncclComm_t * comm, int ndev, const int* devlist));
BRAID_NCCL_API(ncclResult_t, ncclCommInitRankScalable,
               (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config));
BRAID_NCCL_API(ncclResult_t, ncclCommFinalize, (ncclComm_t comm));
BRAID_NCCL_API(ncclResult_t, ncclCommDestroy, (ncclComm_t comm));
BRAID_NCCL_API(ncclResult_t, ncclCommAbort, (ncclComm_t comm));
BRAID_NCCL_API(ncclResult_t, ncclCommRevoke, (ncclComm_t comm, int revokeFlags));
BRAID_NCCL_API(ncclResult_t, ncclCommSplit,
               (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config));
BRAID_NCCL_API(ncclResult_t, ncclCommShrink,
               (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                ncclConfig_t* config, int shrinkFlags));

/* Errors and queries. */
BRAID_NCCL_API(const char*, ncclGetErrorString, (ncclResult_t result));
BRAID_NCCL_API(const char*, ncclGetLastError, (ncclComm_t comm));
BRAID_NCCL_API(void, ncclResetDebugInit, (void));
BRAID_NCCL_API(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError));
BRAID_NCCL_API(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int* count));
BRAID_NCCL_API(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int* device));
BRAID_NCCL_API(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int* rank));

/* Buffer registration and windows. */
BRAID_NCCL_API(ncclResult_t, ncclCommRegister, (const ncclComm_t comm, void* buff, size_t size, void** handle));
BRAID_NCCL_API(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void* handle));
BRAID_NCCL_API(ncclResult_t, ncclCommWindowRegister,
               (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags));
BRAID_NCCL_API(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win));

/* Reduction operators made at run time. */
BRAID_NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum,
               (ncclRedOp_t * op, void* scalar, ncclDataType_t datatype, ncclScalarResidence_t residence,
                ncclComm_t comm));
BRAID_NCCL_API(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm));

/* Collectives. */
BRAID_NCCL_API(ncclResult_t, ncclReduce,
               (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root,
                ncclComm_t comm, cudaStream_t stream));
BRAID_NCCL_API(ncclResult_t, ncclBcast,
               (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream));
BRAID_NCCL_API(ncclResult_t, ncclBroadcast,
               (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                cudaStream_t stream));
BRAID_NCCL_API(ncclResult_t, ncclAllReduce,
               (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                ncclComm_t comm, cudaStream_t stream));
BRAID_NCCL_API(ncclResult_t, ncclReduceScatter,
               (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,
                ncclComm_t comm, cudaStream_t stream));
BRAID_NCCL_API(ncclResult_t, ncclAllGather,
               (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,
                cudaStream_t stream));
BRAID_NCCL_API(ncclResult_t, ncclAlltoAll,
               (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                cudaStream_t stream));
BRAID_NCCL_API(ncclResult_t, ncclGather,
               (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                cudaStream_t stream));
BRAID_NCCL_API(ncclResult_t, ncclScatter,
               (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                cudaStream_t stream));

/* Point to point. */
BRAID_NCCL_API(ncclResult_t, ncclSend,
               (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                cudaStream_t stream));
BRAID_NCCL_API(ncclResult_t, ncclRecv,
               (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream));

/* Groups. */
BRAID_NCCL_API(ncclResult_t, ncclGroupStart, (void));
BRAID_NCCL_API(ncclResult_t, ncclGroupEnd, (void));
BRAID_NCCL_API(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t * simInfo));

#undef BRAID_NCCL_API

#ifdef __cplusplus
}
#endif

#endif /* BRAID_NCCL_H_ */
