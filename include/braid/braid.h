/*
 * braid: collective communication for GPUs and host memory.
 *
 * The public C API. Every function returns a braidResult_t; on failure braidGetLastError() gives
 * the calling thread's last detailed message (what was wrong, and with which argument, rank or
 * peer). docs/api.md lists what each function does today.
 */
#ifndef BRAID_BRAID_H_
#define BRAID_BRAID_H_

#include <limits.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define BRAID_API __attribute__((visibility("default")))
#else
#define BRAID_API
#endif

/** Library version: major, minor and patch, and their combined code. */
#define BRAID_MAJOR 0
#define BRAID_MINOR 1
#define BRAID_PATCH 0
#define BRAID_VERSION(major, minor, patch) ((major)*10000 + (minor)*100 + (patch))
#define BRAID_VERSION_CODE BRAID_VERSION(BRAID_MAJOR, BRAID_MINOR, BRAID_PATCH)

/** Result of every call. The values of the first eight equal NCCL's ncclResult_t. */
typedef enum {
  braidSuccess = 0,            /**< The call did what it was asked. */
  braidUnhandledCudaError = 1, /**< A CUDA call failed. */
  braidSystemError = 2,        /**< A system call (socket, memory, file) failed. */
  braidInternalError = 3,      /**< A bug in braid; please report it with the log. */
  braidInvalidArgument = 4,    /**< An argument is wrong (null pointer, unknown type, out of range). */
  braidInvalidUsage = 5,       /**< The call is not allowed now (destroyed comm, unbalanced group, ...). */
  braidRemoteError = 6,        /**< Another rank failed or went away. */
  braidInProgress = 7,         /**< A non-blocking operation has not finished yet. */
  braidTimeout = 8,            /**< A wait passed its deadline; the message names who did not answer. */
  braidNumResults = 9,
  braidResultAnyInt = -2147483647 - 1 /**< Not a result (see braidDataTypeAnyInt). */
} braidResult_t;

/** Element types. The values equal NCCL's ncclDataType_t. */
typedef enum {
  braidInt8 = 0,
  braidUint8 = 1,
  braidInt32 = 2,
  braidUint32 = 3,
  braidInt64 = 4,
  braidUint64 = 5,
  braidFloat16 = 6, /**< IEEE half precision. */
  braidFloat32 = 7,
  braidFloat64 = 8,
  braidBfloat16 = 9,    /**< bfloat16: 8 exponent bits, 7 mantissa bits. */
  braidFloat8e4m3 = 10, /**< fp8 E4M3 (finite, no infinities). */
  braidFloat8e5m2 = 11, /**< fp8 E5M2. */
  braidNumTypes = 12,
  /** Not a type. Makes every int a value of this enum in C++ too, so that braid can check (and
      refuse) any int a caller passes; the enum stays the size of an int. */
  braidDataTypeAnyInt = -2147483647 - 1
} braidDataType_t;

/** Reduction operations. The values equal NCCL's ncclRedOp_t. */
typedef enum {
  braidSum = 0,
  braidProd = 1,
  braidMax = 2,
  braidMin = 3,
  braidAvg = 4, /**< Sum divided by the number of ranks. */
  braidNumOps = 5,
  braidRedOpAnyInt = -2147483647 - 1 /**< Not an op (see braidDataTypeAnyInt). */
} braidRedOp_t;

/** Which memory a communicator works on. */
typedef enum {
  braidDeviceAuto = 0,                    /**< CUDA when a GPU is present (and BRAID_DEVICE is not "cpu"), else host. */
  braidDeviceHost = 1,                    /**< Host memory; calls complete before they return. */
  braidDeviceCuda = 2,                    /**< The current CUDA device; calls are asynchronous on the given stream. */
  braidDeviceKindAnyInt = -2147483647 - 1 /**< Not a kind (see braidDataTypeAnyInt). */
} braidDeviceKind_t;

/** A communicator: one rank's handle on a group of ranks. */
typedef struct braidComm* braidComm_t;

/** A CUDA stream; the same type as cudaStream_t, so no CUDA header is needed here. */
typedef struct CUstream_st* braidStream_t;

/** Names a communicator to be created: made by braidGetUniqueId on one rank, sent to the others
 *  by any means (MPI, a file, a socket), passed unchanged to every rank's init call. */
#define BRAID_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[BRAID_UNIQUE_ID_BYTES];
} braidUniqueId;

/** Marks a config field as "not set: use the default". */
#define BRAID_CONFIG_UNDEF_INT INT_MIN
#define BRAID_CONFIG_UNDEF_PTR NULL
/** Every braidConfig_t carries this magic; a struct without it was not initialized. */
#define BRAID_CONFIG_MAGIC 0xb7a1dc0fu
/** Version of braidConfig_t this header describes. */
#define BRAID_CONFIG_VERSION 1
/** Color that takes a rank out of braidCommSplit (its new communicator is NULL). */
#define BRAID_SPLIT_NOCOLOR -1

/** Options for a communicator. Always start from BRAID_CONFIG_INITIALIZER, then set fields. A
 *  library of a later version accepts a struct from an earlier header (it reads only the first
 *  `size` bytes); a struct whose version is newer than the library is refused. */
typedef struct braidConfig_v1 {
  size_t size;           /**< sizeof(braidConfig_t) of the caller's header. Do not change. */
  unsigned int magic;    /**< BRAID_CONFIG_MAGIC. Do not change. */
  unsigned int version;  /**< BRAID_CONFIG_VERSION of the caller's header. Do not change. */
  int blocking;          /**< 1 (default): init returns when the comm is ready. 0: init returns
                              braidInProgress at once; poll braidCommGetAsyncError. */
  int minCTAs;           /**< Fewest CTAs (channels) a GPU collective may use, 1..64. */
  int maxCTAs;           /**< Most CTAs (channels) a GPU collective may use, 1..64, >= minCTAs. */
  int deviceKind;        /**< A braidDeviceKind_t; default braidDeviceAuto. */
  const char* algorithm; /**< Allowed algorithms, e.g. "ring", "tree,ring", "^tree"; NULL: all. */
  const char* protocol;  /**< Allowed protocols, e.g. "simple", "ll,ll128", "^ll"; NULL: all. */
  int timeoutMs;         /**< Deadline of bootstrap waits in ms; default BRAID_BOOTSTRAP_TIMEOUT (120 s). */
} braidConfig_t;

#define BRAID_CONFIG_INITIALIZER                                                                                     \
  {                                                                                                                  \
    sizeof(braidConfig_t), BRAID_CONFIG_MAGIC, BRAID_CONFIG_VERSION, BRAID_CONFIG_UNDEF_INT, BRAID_CONFIG_UNDEF_INT, \
        BRAID_CONFIG_UNDEF_INT, BRAID_CONFIG_UNDEF_INT, BRAID_CONFIG_UNDEF_PTR, BRAID_CONFIG_UNDEF_PTR,              \
        BRAID_CONFIG_UNDEF_INT                                                                                       \
  }

/* ---- Library ---------------------------------------------------------------------------------- */

/** Stores BRAID_VERSION_CODE of the library (which may differ from the header's). */
BRAID_API braidResult_t braidGetVersion(int* version);

/** A short, static description of a result code. */
BRAID_API const char* braidGetErrorString(braidResult_t result);

/** The calling thread's last detailed error message ("" when none). Valid until the thread's next
 *  braid call. */
BRAID_API const char* braidGetLastError(void);

/* ---- Communicators ---------------------------------------------------------------------------- */

/** Makes a new unique id and starts serving its rendezvous (a background thread of this process),
 *  or, with BRAID_COMM_ID=host:port set, names that address, where rank 0 will serve it. */
BRAID_API braidResult_t braidGetUniqueId(braidUniqueId* uniqueId);

/** Creates rank `rank` of a communicator of `nranks` ranks; every rank calls it with the same id.
 *  Blocks until all ranks have arrived or BRAID_BOOTSTRAP_TIMEOUT passes (the error names the
 *  ranks that did not arrive). */
BRAID_API braidResult_t braidCommInitRank(braidComm_t* comm, int nranks, braidUniqueId uniqueId, int rank);

/** As braidCommInitRank, with options (NULL: defaults). */
BRAID_API braidResult_t braidCommInitRankConfig(braidComm_t* comm, int nranks, braidUniqueId uniqueId, int rank,
                                                braidConfig_t* config);

/** One process, several GPUs: creates `ndev` CUDA communicators, rank i on device devlist[i]
 *  (devices 0..ndev-1 when devlist is NULL). */
BRAID_API braidResult_t braidCommInitAll(braidComm_t* comms, int ndev, const int* devlist);

/** Creates this process's communicator from launcher variables: torchrun (RANK, WORLD_SIZE,
 *  LOCAL_RANK, MASTER_ADDR, MASTER_PORT), Open MPI (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK) or Slurm
 *  (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID). Rank 0 serves the rendezvous at BRAID_COMM_ID if
 *  set, else at MASTER_ADDR port MASTER_PORT+1 (MASTER_PORT itself is PyTorch's TCPStore). A CUDA
 *  communicator uses device LOCAL_RANK modulo the device count. `config` may be NULL. */
BRAID_API braidResult_t braidCommInitFromEnv(braidComm_t* comm, braidConfig_t* config);

/** Splits `comm` (called by all its ranks): ranks with the same `color` form a new communicator,
 *  ordered by `key` then by their rank in `comm`. Color BRAID_SPLIT_NOCOLOR yields NULL. `config`
 *  may be NULL (the new communicator inherits the parent's options). */
BRAID_API braidResult_t braidCommSplit(braidComm_t comm, int color, int key, braidComm_t* newcomm,
                                       braidConfig_t* config);

/** Shrink flags (NCCL's NCCL_SHRINK_DEFAULT, NCCL_SHRINK_ABORT). */
#define BRAID_SHRINK_DEFAULT 0x00
#define BRAID_SHRINK_ABORT 0x01

/** A new communicator of every rank of `comm` but the `excludeRanksCount` ranks listed, in `comm`'s
 *  order (NCCL 2.27's ncclCommShrink). Called by every rank not excluded, with the same list; the
 *  excluded ranks do not call it and may be dead or hung: nothing is exchanged with them. `comm` may
 *  have failed (a dead peer, the watchdog). BRAID_SHRINK_ABORT first ends `comm`'s calls in flight
 *  (as braidCommAbort, but `comm` stays to be destroyed). `config` may be NULL (inherited). */
BRAID_API braidResult_t braidCommShrink(braidComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                        braidComm_t* newcomm, braidConfig_t* config, int shrinkFlags);

/** Finishes the communicator's outstanding work; afterwards only destroy (or abort) is allowed. */
BRAID_API braidResult_t braidCommFinalize(braidComm_t comm);

/** Frees the communicator and everything it owns. The handle is invalid afterwards; passing it to
 *  any call is detected and refused. */
BRAID_API braidResult_t braidCommDestroy(braidComm_t comm);

/** Stops everything in flight on the communicator (callable from any thread; waits inside other
 *  calls return an error promptly) and frees it. */
BRAID_API braidResult_t braidCommAbort(braidComm_t comm);

/** The communicator's asynchronous state: braidSuccess, braidInProgress (a non-blocking init
 *  that has not finished) or the error a background operation or peer ran into. */
BRAID_API braidResult_t braidCommGetAsyncError(braidComm_t comm, braidResult_t* asyncError);

/** Number of ranks. */
BRAID_API braidResult_t braidCommCount(const braidComm_t comm, int* count);

/** This rank's index, 0..count-1. */
BRAID_API braidResult_t braidCommUserRank(const braidComm_t comm, int* rank);

/** The CUDA device of the communicator; -1 for a host-memory communicator. */
BRAID_API braidResult_t braidCommCuDevice(const braidComm_t comm, int* device);

/* ---- Collectives -------------------------------------------------------------------------------
 * Buffers are device memory for CUDA communicators (work is queued on `stream`) and host memory
 * for host communicators (`stream` is ignored; the call returns when the result is ready). In-place
 * operation is allowed where noted. */

/** recvbuff[i] = op over ranks of sendbuff[i], for i < count, on every rank. In place: send == recv. */
BRAID_API braidResult_t braidAllReduce(const void* sendbuff, void* recvbuff, size_t count, braidDataType_t datatype,
                                       braidRedOp_t op, braidComm_t comm, braidStream_t stream);

/** recvbuff = root's sendbuff on every rank (sendbuff is read on the root only). */
BRAID_API braidResult_t braidBroadcast(const void* sendbuff, void* recvbuff, size_t count, braidDataType_t datatype,
                                       int root, braidComm_t comm, braidStream_t stream);

/** On the root, recvbuff[i] = op over ranks of sendbuff[i] (recvbuff is written on the root only). */
BRAID_API braidResult_t braidReduce(const void* sendbuff, void* recvbuff, size_t count, braidDataType_t datatype,
                                    braidRedOp_t op, int root, braidComm_t comm, braidStream_t stream);

/** recvbuff[r * sendcount + i] = rank r's sendbuff[i] on every rank. */
BRAID_API braidResult_t braidAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, braidDataType_t datatype,
                                       braidComm_t comm, braidStream_t stream);

/** recvbuff[i] = op over ranks of sendbuff[rank * recvcount + i]. */
BRAID_API braidResult_t braidReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                           braidDataType_t datatype, braidRedOp_t op, braidComm_t comm,
                                           braidStream_t stream);

/** Where a pre-multiplied sum's scalar lives. The values equal NCCL's ncclScalarResidence_t. */
typedef enum {
  braidScalarDevice = 0,                       /**< `scalar` points to memory each call reads when it runs (a GPU
                                                    communicator's: device memory, so a CUDA graph replays the
                                                    current value; a host communicator's: host memory). */
  braidScalarHostImmediate = 1,                /**< `*scalar` (host memory) is read once, at creation. */
  braidScalarResidenceAnyInt = -2147483647 - 1 /**< Not a residence (see braidDataTypeAnyInt). */
} braidScalarResidence_t;

/** Creates a reduction op of `comm` for `datatype`: every rank's input is multiplied by its own
    scalar (one element of `datatype`), then summed, in the type's arithmetic (float16, bfloat16
    and fp8 multiply in float and round). It may be used in all-reduce, reduce and reduce-scatter
    calls of `comm` on `datatype` until braidRedOpDestroy; `*op` is a value from braidNumOps up. */
BRAID_API braidResult_t braidRedOpCreatePreMulSum(braidRedOp_t* op, void* scalar, braidDataType_t datatype,
                                                  braidScalarResidence_t residence, braidComm_t comm);

/** Destroys an op made by braidRedOpCreatePreMulSum on `comm` (calls already enqueued keep it). */
BRAID_API braidResult_t braidRedOpDestroy(braidRedOp_t op, braidComm_t comm);

/** Registers `size` bytes at `buff` with `comm` (NCCL's ncclCommRegister); `*handle` names the
    registration for braidCommDeregister. The same range registered again gets the same handle and
    needs one more deregistration. braid keeps the record only: calls on registered buffers run as
    on any other buffer. */
BRAID_API braidResult_t braidCommRegister(const braidComm_t comm, void* buff, size_t size, void** handle);

/** Ends one registration of `handle`; a handle that is not a live registration of `comm` is an
    error. */
BRAID_API braidResult_t braidCommDeregister(const braidComm_t comm, void* handle);

/** A registered window (NCCL's ncclWindow_t). */
typedef struct braidWindow* braidWindow_t;

/** Window flags (NCCL's NCCL_WIN_DEFAULT, NCCL_WIN_COLL_SYMMETRIC). */
#define BRAID_WIN_DEFAULT 0x00
#define BRAID_WIN_COLL_SYMMETRIC 0x01

/** Registers `size` bytes at `buff` as a window of `comm` (NCCL's ncclCommWindowRegister, which
    every rank calls). In braid a window is a registration of this rank's only: no rank waits for
    another, and calls on it run as on any other buffer. */
BRAID_API braidResult_t braidCommWindowRegister(braidComm_t comm, void* buff, size_t size, braidWindow_t* win,
                                                int winFlags);

/** Ends one registration of window `win`. */
BRAID_API braidResult_t braidCommWindowDeregister(braidComm_t comm, braidWindow_t win);

/** recvbuff[r * count + i] = rank r's sendbuff[rank * count + i]. */
BRAID_API braidResult_t braidAllToAll(const void* sendbuff, void* recvbuff, size_t count, braidDataType_t datatype,
                                      braidComm_t comm, braidStream_t stream);

/** Sends count elements to `peer`, which posts a matching braidRecv. */
BRAID_API braidResult_t braidSend(const void* sendbuff, size_t count, braidDataType_t datatype, int peer,
                                  braidComm_t comm, braidStream_t stream);

/** Receives count elements from `peer`, which posts a matching braidSend. */
BRAID_API braidResult_t braidRecv(void* recvbuff, size_t count, braidDataType_t datatype, int peer, braidComm_t comm,
                                  braidStream_t stream);

/** Starts a group: calls up to the matching braidGroupEnd are issued together (needed for
 *  send/recv pairs that would otherwise wait on each other). Groups nest. */
BRAID_API braidResult_t braidGroupStart(void);

/** Ends a group; the outermost end issues the grouped calls. */
BRAID_API braidResult_t braidGroupEnd(void);

#ifdef __cplusplus
}
#endif

#endif /* BRAID_BRAID_H_ */
