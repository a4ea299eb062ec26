#include "transport/net/adapters.h"

#include <climits>
#include <cstring>
#include <string>

namespace braid::network {
namespace {

constexpr size_t kOldMaxMessageBytes = size_t{1} << 30;  // what NCCL assumes for plugins before v9
constexpr int kMaxAdaptedRecvs = 64;                     // buffers of one irecv through an adapter

// Copies the fields every version has; the rest get the values NCCL assumes for older plugins.
template <class Old>
void commonProperties(const Old& o, int dev, NetPropertiesV11* p) {
  std::memset(p, 0, sizeof(*p));
  p->name = o.name;
  p->pciPath = o.pciPath;
  p->guid = o.guid;
  p->ptrSupport = o.ptrSupport;
  p->regIsGlobal = o.regIsGlobal;
  p->speed = o.speed;
  p->port = o.port;
  p->latency = o.latency;
  p->maxComms = o.maxComms;
  p->maxRecvs = o.maxRecvs;
  p->netDeviceType = o.netDeviceType;
  p->netDeviceVersion = o.netDeviceVersion;
  p->vProps.ndevs = 1;
  p->vProps.devs[0] = dev;
  p->maxP2pBytes = kOldMaxMessageBytes;
  p->maxCollBytes = kOldMaxMessageBytes;
  p->maxMultiRequestSize = 1;
}

void v9Properties(const NetPropertiesV9& o, int dev, NetPropertiesV11* p) {
  commonProperties(o, dev, p);
  p->forceFlush = o.forceFlush;
  p->vProps = o.vProps;
  p->maxP2pBytes = o.maxP2pBytes;
  p->maxCollBytes = o.maxCollBytes;
}

template <class Old>
void oldProperties(const NetPropertiesV11& p, Old* o) {
  std::memset(o, 0, sizeof(*o));
  o->name = p.name;
  o->pciPath = p.pciPath;
  o->guid = p.guid;
  o->ptrSupport = p.ptrSupport;
  o->regIsGlobal = p.regIsGlobal;
  o->speed = p.speed;
  o->port = p.port;
  o->latency = p.latency;
  o->maxComms = p.maxComms;
  o->maxRecvs = p.maxRecvs;
  o->netDeviceType = p.netDeviceType;
  o->netDeviceVersion = p.netDeviceVersion;
}

void toV9Properties(const NetPropertiesV11& p, NetPropertiesV9* o) {
  oldProperties(p, o);
  o->forceFlush = p.forceFlush;
  o->vProps = p.vProps;
  o->maxP2pBytes = p.maxP2pBytes;
  o->maxCollBytes = p.maxCollBytes;
}

// sizes[] of an irecv, between int (v8) and size_t.
ncclResult_t narrowSizes(int n, const size_t* in, int* out) {
  if (n < 0 || n > kMaxAdaptedRecvs) return ncclInternalError;
  for (int i = 0; i < n; ++i) {
    if (in[i] > static_cast<size_t>(INT_MAX)) return ncclInternalError;
    out[i] = static_cast<int>(in[i]);
  }
  return ncclSuccess;
}

ncclResult_t widenSizes(int n, const int* in, size_t* out) {
  if (n < 0 || n > kMaxAdaptedRecvs) return ncclInternalError;
  for (int i = 0; i < n; ++i) {
    if (in[i] < 0) return ncclInternalError;
    out[i] = static_cast<size_t>(in[i]);
  }
  return ncclSuccess;
}

ncclResult_t noOpFinalize(void*) { return ncclSuccess; }
ncclResult_t noOpSetNetAttr(void*, NetAttr*) { return ncclSuccess; }

// The fields whose signatures did not change between v8 and v11 are copied as they are.
template <class Old>
void copySameSignatures(const Old& o, NetV11* out) {
  out->name = o.name;
  out->devices = o.devices;
  out->accept = o.accept;
  out->regMr = o.regMr;
  out->regMrDmaBuf = o.regMrDmaBuf;
  out->deregMr = o.deregMr;
  out->iflush = o.iflush;
  out->test = o.test;
  out->closeSend = o.closeSend;
  out->closeRecv = o.closeRecv;
  out->closeListen = o.closeListen;
  out->getDeviceMr = o.getDeviceMr;
  out->irecvConsumed = o.irecvConsumed;
  out->finalize = noOpFinalize;
  out->setNetAttr = noOpSetNetAttr;
}

template <class T>
Status claim(const T*& slot, const T* table, const char* version) {
  if (table == nullptr) return invalidArgument(std::string("no ") + version + " table to adapt");
  if (slot != nullptr && slot != table) {
    return invalidUsage(std::string("a second ") + version + " network plugin in one process (one is adapted already)");
  }
  slot = table;
  return Status::ok();
}

// ---- up: v8 ----

const NetV8* gV8 = nullptr;

ncclResult_t v8Init(void** ctx, uint64_t, NetCommConfig*, NetLogger log, NetProfilerCallback) {
  if (ctx != nullptr) *ctx = nullptr;
  return gV8->init(log);
}
ncclResult_t v8GetProperties(int dev, NetPropertiesV11* p) {
  NetPropertiesV8 o;
  ncclResult_t r = gV8->getProperties(dev, &o);
  if (r == ncclSuccess) commonProperties(o, dev, p);
  return r;
}
ncclResult_t v8Listen(void*, int dev, void* handle, void** listenComm) { return gV8->listen(dev, handle, listenComm); }
ncclResult_t v8Connect(void*, int dev, void* handle, void** sendComm, NetDeviceHandle** devComm) {
  return gV8->connect(dev, handle, sendComm, devComm);
}
ncclResult_t v8Isend(void* comm, void* data, size_t size, int tag, void* mhandle, void*, void** request) {
  if (size > static_cast<size_t>(INT_MAX)) return ncclInternalError;
  return gV8->isend(comm, data, static_cast<int>(size), tag, mhandle, request);
}
ncclResult_t v8Irecv(void* comm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void**,
                     void** request) {
  int narrow[kMaxAdaptedRecvs];
  ncclResult_t r = narrowSizes(n, sizes, narrow);
  if (r != ncclSuccess) return r;
  return gV8->irecv(comm, n, data, narrow, tags, mhandles, request);
}

// ---- up: v9 ----

const NetV9* gV9 = nullptr;

ncclResult_t v9Init(void** ctx, uint64_t, NetCommConfig*, NetLogger log, NetProfilerCallback) {
  if (ctx != nullptr) *ctx = nullptr;
  return gV9->init(log);
}
ncclResult_t v9GetProperties(int dev, NetPropertiesV11* p) {
  NetPropertiesV9 o;
  ncclResult_t r = gV9->getProperties(dev, &o);
  if (r == ncclSuccess) v9Properties(o, dev, p);
  return r;
}
ncclResult_t v9Listen(void*, int dev, void* handle, void** listenComm) { return gV9->listen(dev, handle, listenComm); }
ncclResult_t v9Connect(void*, int dev, void* handle, void** sendComm, NetDeviceHandle** devComm) {
  return gV9->connect(dev, handle, sendComm, devComm);
}
ncclResult_t v9Isend(void* comm, void* data, size_t size, int tag, void* mhandle, void*, void** request) {
  return gV9->isend(comm, data, size, tag, mhandle, request);
}
ncclResult_t v9Irecv(void* comm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void**,
                     void** request) {
  return gV9->irecv(comm, n, data, sizes, tags, mhandles, request);
}

// ---- up: v10 ----

const NetV10* gV10 = nullptr;
NetCommConfig gV10Config{kNetTrafficClassUndef};

ncclResult_t v10Init(void** ctx, uint64_t, NetCommConfig* config, NetLogger log, NetProfilerCallback prof) {
  if (ctx != nullptr) *ctx = nullptr;
  if (config != nullptr) gV10Config = *config;
  return gV10->init(log, prof);
}
ncclResult_t v10GetProperties(int dev, NetPropertiesV11* p) {
  NetPropertiesV9 o;
  ncclResult_t r = gV10->getProperties(dev, &o);
  if (r == ncclSuccess) v9Properties(o, dev, p);
  return r;
}
ncclResult_t v10Listen(void*, int dev, void* handle, void** listenComm) {
  return gV10->listen(dev, handle, listenComm);
}
ncclResult_t v10Connect(void*, int dev, void* handle, void** sendComm, NetDeviceHandle** devComm) {
  NetCommConfig config = gV10Config;
  return gV10->connect(dev, &config, handle, sendComm, devComm);
}

// ---- down: braid's v11 network as v8, v9, v10 ----

const NetV11* gBase = nullptr;
void* gBaseCtx = nullptr;

ncclResult_t baseInit(NetLogger log, NetProfilerCallback prof) {
  if (gBaseCtx != nullptr) return ncclSuccess;  // older versions initialise once per process
  return gBase->init(&gBaseCtx, 0, nullptr, log, prof);
}
ncclResult_t downInitV8(NetLogger log) { return baseInit(log, nullptr); }
ncclResult_t downInitV10(NetLogger log, NetProfilerCallback prof) { return baseInit(log, prof); }
ncclResult_t downPropertiesV8(int dev, NetPropertiesV8* o) {
  NetPropertiesV11 p;
  ncclResult_t r = gBase->getProperties(dev, &p);
  if (r == ncclSuccess) oldProperties(p, o);
  return r;
}
ncclResult_t downPropertiesV9(int dev, NetPropertiesV9* o) {
  NetPropertiesV11 p;
  ncclResult_t r = gBase->getProperties(dev, &p);
  if (r == ncclSuccess) toV9Properties(p, o);
  return r;
}
ncclResult_t downListen(int dev, void* handle, void** listenComm) {
  return gBase->listen(gBaseCtx, dev, handle, listenComm);
}
ncclResult_t downConnect(int dev, void* handle, void** sendComm, NetDeviceHandle** devComm) {
  return gBase->connect(gBaseCtx, dev, handle, sendComm, devComm);
}
ncclResult_t downConnectV10(int dev, NetCommConfig*, void* handle, void** sendComm, NetDeviceHandle** devComm) {
  return gBase->connect(gBaseCtx, dev, handle, sendComm, devComm);
}
ncclResult_t downIsendV8(void* comm, void* data, int size, int tag, void* mhandle, void** request) {
  if (size < 0) return ncclInternalError;
  return gBase->isend(comm, data, static_cast<size_t>(size), tag, mhandle, nullptr, request);
}
ncclResult_t downIsendV9(void* comm, void* data, size_t size, int tag, void* mhandle, void** request) {
  return gBase->isend(comm, data, size, tag, mhandle, nullptr, request);
}
ncclResult_t downIrecvV8(void* comm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request) {
  size_t wide[kMaxAdaptedRecvs];
  ncclResult_t r = widenSizes(n, sizes, wide);
  if (r != ncclSuccess) return r;
  return gBase->irecv(comm, n, data, wide, tags, mhandles, nullptr, request);
}
ncclResult_t downIrecvV9(void* comm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** request) {
  return gBase->irecv(comm, n, data, sizes, tags, mhandles, nullptr, request);
}

// The down tables' fields whose signatures did not change.
template <class Old>
void copyDown(const NetV11& base, Old* o) {
  o->name = base.name;
  o->devices = base.devices;
  o->accept = base.accept;
  o->regMr = base.regMr;
  o->regMrDmaBuf = base.regMrDmaBuf;
  o->deregMr = base.deregMr;
  o->iflush = base.iflush;
  o->test = base.test;
  o->closeSend = base.closeSend;
  o->closeRecv = base.closeRecv;
  o->closeListen = base.closeListen;
  o->getDeviceMr = base.getDeviceMr;
  o->irecvConsumed = base.irecvConsumed;
}

}  // namespace

Status adaptV8(const NetV8* old, NetV11* out) {
  BRAID_RETURN_IF_ERROR(claim(gV8, old, "v8"));
  std::memset(out, 0, sizeof(*out));
  copySameSignatures(*old, out);
  out->init = v8Init;
  out->getProperties = v8GetProperties;
  out->listen = v8Listen;
  out->connect = v8Connect;
  out->isend = v8Isend;
  out->irecv = v8Irecv;
  return Status::ok();
}

Status adaptV9(const NetV9* old, NetV11* out) {
  BRAID_RETURN_IF_ERROR(claim(gV9, old, "v9"));
  std::memset(out, 0, sizeof(*out));
  copySameSignatures(*old, out);
  out->init = v9Init;
  out->getProperties = v9GetProperties;
  out->listen = v9Listen;
  out->connect = v9Connect;
  out->isend = v9Isend;
  out->irecv = v9Irecv;
  out->makeVDevice = old->makeVDevice;
  return Status::ok();
}

Status adaptV10(const NetV10* old, NetV11* out) {
  BRAID_RETURN_IF_ERROR(claim(gV10, old, "v10"));
  std::memset(out, 0, sizeof(*out));
  copySameSignatures(*old, out);
  out->init = v10Init;
  out->getProperties = v10GetProperties;
  out->listen = v10Listen;
  out->connect = v10Connect;
  out->isend = old->isend;  // v10 already has size_t sizes and profiler handles
  out->irecv = old->irecv;
  out->makeVDevice = old->makeVDevice;
  return Status::ok();
}

NetV8 exportAsV8(const NetV11& base) {
  gBase = &base;
  NetV8 o{};
  copyDown(base, &o);
  o.init = downInitV8;
  o.getProperties = downPropertiesV8;
  o.listen = downListen;
  o.connect = downConnect;
  o.isend = downIsendV8;
  o.irecv = downIrecvV8;
  return o;
}

NetV9 exportAsV9(const NetV11& base) {
  gBase = &base;
  NetV9 o{};
  copyDown(base, &o);
  o.init = downInitV8;
  o.getProperties = downPropertiesV9;
  o.listen = downListen;
  o.connect = downConnect;
  o.isend = downIsendV9;
  o.irecv = downIrecvV9;
  o.makeVDevice = base.makeVDevice;
  return o;
}

NetV10 exportAsV10(const NetV11& base) {
  gBase = &base;
  NetV10 o{};
  copyDown(base, &o);
  o.init = downInitV10;
  o.getProperties = downPropertiesV9;
  o.listen = downListen;
  o.connect = downConnectV10;
  o.isend = base.isend;
  o.irecv = base.irecv;
  o.makeVDevice = base.makeVDevice;
  return o;
}

}  // namespace braid::network
