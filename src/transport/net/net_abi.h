// The ncclNet plugin ABI, versions 8 to 11, as braid declares it.
//
// A network plugin is a shared library that exports one struct of function pointers per version it
// speaks, under the symbol `ncclNetPlugin_v<N>`. NCCL 2.28 (the ABI braid's nccl.h follows) speaks
// v11; v8 (NCCL 2.20-2.23), v9 (2.24-2.25) and v10 (2.26-2.27) plugins are still shipped by fabric
// vendors. The layouts below are fixed by that ABI (field order, types and sizes); the names of the
// C++ types are braid's. See ../shared/NETWORK.md and docs/nccl-compat.md for what each call means.
//
// braid's internal network interface IS NetV11 (net.h wraps it in a class that returns Status):
// braid's own socket network implements it, older plugins are adapted up to it (adapters.h), and
// libnccl-net-braid.so exports the socket network as every version (plugin_exports.cc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"  // ncclResult_t, ncclDataType_t, ncclRedOp_t: the same enums the ABI uses

namespace braid::network {

/// Bytes of the handle that listen() writes and the peer passes to connect(), carried by the
/// bootstrap.
constexpr int kNetHandleBytes = 128;
/// ptrSupport bits: the network reads and writes host memory, CUDA memory (GPUDirect RDMA), or
/// CUDA memory registered as a dma-buf.
constexpr int kPtrHost = 0x1;
constexpr int kPtrCuda = 0x2;
constexpr int kPtrDmaBuf = 0x4;
/// Requests in flight per connection that every plugin must accept (per irecv buffer).
constexpr int kNetMaxRequests = 32;
/// irecv flag: the caller does not need to test this receive's completion (LL/LL128 poll flags).
constexpr int kNetOptionalRecvCompletion = 0x1;
/// Largest maxP2pBytes / maxCollBytes a plugin may report.
constexpr size_t kNetMaxSizeBytes = size_t{1} << 40;
/// Members of a virtual NIC (v9-v11).
constexpr int kNetMaxDevsPerNic = 4;
/// Subsystem flag of network log lines (NCCL's NCCL_NET) and the levels the logger takes.
constexpr unsigned long kNetLogSubsys = 0x10;
enum NetLogLevel : int {
  kNetLogNone = 0,
  kNetLogVersion = 1,
  kNetLogWarn = 2,
  kNetLogInfo = 3,
  kNetLogAbort = 4,
  kNetLogTrace = 5
};

/// The logger a plugin is given at init (printf-style).
using NetLogger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);
/// The profiler callback of v10/v11 (braid passes none).
using NetProfilerCallback = ncclResult_t (*)(void** eHandle, int type, void* pHandle, int64_t pluginId, void* extData);

/// A device-offload handle (braid requests none and passes null).
struct NetDeviceHandle {
  int netDeviceType;  // 0: host (no offload)
  int netDeviceVersion;
  void* handle;
  size_t size;
  int needsProxyProgress;
};

struct NetVDeviceProps {
  int ndevs;
  int devs[kNetMaxDevsPerNic];
};

/// Per-connection configuration of v10 (connect) and per-communicator of v11 (init).
struct NetCommConfig {
  int trafficClass;  // -1: undefined
};
constexpr int kNetTrafficClassUndef = -1;

struct NetPropertiesV8 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int speed;  // Mb/s
  int port;
  float latency;  // µs, 0: default
  int maxComms;
  int maxRecvs;
  int netDeviceType;
  int netDeviceVersion;
};

/// v9 and v10 share this layout.
struct NetPropertiesV9 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  int netDeviceType;
  int netDeviceVersion;
  NetVDeviceProps vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
};

struct NetPropertiesV11 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  int netDeviceType;
  int netDeviceVersion;
  NetVDeviceProps vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize;
};

struct NetCommAttr {
  int32_t maxConcurrentPeers;
  int32_t minConcurrentPeers;
  int32_t maxFlowsPerPeer;
  int32_t minFlowsPerPeer;
};

struct NetAttr {
  NetCommAttr sendCommAttr;
  NetCommAttr recvCommAttr;
  uint32_t op;
  uint32_t algo;
  uint32_t proto;
};

struct NetV8 {
  const char* name;
  ncclResult_t (*init)(NetLogger logFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, NetPropertiesV8* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(int dev, void* handle, void** sendComm, NetDeviceHandle** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm, NetDeviceHandle** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle, void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptrMhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
};

struct NetV9 {
  const char* name;
  ncclResult_t (*init)(NetLogger logFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, NetPropertiesV9* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(int dev, void* handle, void** sendComm, NetDeviceHandle** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm, NetDeviceHandle** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptrMhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
  ncclResult_t (*makeVDevice)(int* d, NetVDeviceProps* props);
};

struct NetV10 {
  const char* name;
  ncclResult_t (*init)(NetLogger logFunction, NetProfilerCallback profFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, NetPropertiesV9* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(int dev, NetCommConfig* config, void* handle, void** sendComm, NetDeviceHandle** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm, NetDeviceHandle** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
                        void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptrMhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
  ncclResult_t (*makeVDevice)(int* d, NetVDeviceProps* props);
};

struct NetV11 {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, NetCommConfig* config, NetLogger logFunction,
                       NetProfilerCallback profFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, NetPropertiesV11* props);
  ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(void* ctx, int dev, void* handle, void** sendComm, NetDeviceHandle** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm, NetDeviceHandle** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
                        void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptrMhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
  ncclResult_t (*makeVDevice)(int* d, NetVDeviceProps* props);
  ncclResult_t (*finalize)(void* ctx);
  ncclResult_t (*setNetAttr)(void* ctx, NetAttr* netAttr);
};

// The symbols a plugin exports, one per version it speaks (a plugin defines those it has: braid's
// in plugin_exports.cc). C linkage: the loader finds them by these names.
extern "C" {
__attribute__((visibility("default"))) extern NetV11 ncclNetPlugin_v11;
__attribute__((visibility("default"))) extern NetV10 ncclNetPlugin_v10;
__attribute__((visibility("default"))) extern NetV9 ncclNetPlugin_v9;
__attribute__((visibility("default"))) extern NetV8 ncclNetPlugin_v8;
}

// The layouts are the ABI: a changed size means a field was added, dropped or retyped.
static_assert(sizeof(NetPropertiesV8) == 64, "ncclNetProperties_v8_t layout");
static_assert(sizeof(NetPropertiesV9) == 104, "ncclNetProperties_v9_t layout");
static_assert(sizeof(NetPropertiesV11) == 112, "ncclNetProperties_v11_t layout");
static_assert(sizeof(NetV8) == 19 * sizeof(void*), "ncclNet_v8_t layout");
static_assert(sizeof(NetV9) == 20 * sizeof(void*), "ncclNet_v9_t layout");
static_assert(sizeof(NetV10) == 20 * sizeof(void*), "ncclNet_v10_t layout");
static_assert(sizeof(NetV11) == 22 * sizeof(void*), "ncclNet_v11_t layout");

}  // namespace braid::network
