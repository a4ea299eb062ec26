#include "exec/cuda_engine.h"

#include <cuda_runtime.h>
#include <fcntl.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "algo/doubling.h"
#include "algo/p2p.h"
#include "core/log.h"
#include "exec/launch_plan.h"
#include "exec/p2p_self.h"

namespace braid::exec {
namespace {

using device::PeerConn;

Status cudaCheck(const char* what, cudaError_t err) {
  if (err == cudaSuccess) return Status::ok();
  (void)cudaGetLastError();
  return Status(Code::kCudaError, std::string(what) + ": " + cudaGetErrorString(err));
}

// Makes `device` current for the scope and restores the caller's device after.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) cudaSetDevice(device);
  }
  ~DeviceScope() {
    int now = -1;
    if (previous_ >= 0 && cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
  }

 private:
  int previous_ = -1;
};

// Block layout: control lines, then the Simple slots, the LL slots and the LL128 slots.
constexpr size_t kTailOff = 0;
constexpr size_t kHeadOff = 128;
constexpr size_t kRecvStepOff = 256;
constexpr size_t kSendStepOff = 264;
constexpr size_t kSimpleOff = 384;

constexpr int kConnIds[] = {algo::kConnRing, algo::kConnTree0, algo::kConnTree1, algo::kConnDoubling};

// Channels that carry send/recv: a message of a few MB fills them, and each holds a FIFO to every rank.
constexpr int kMaxP2pChannels = 16;

// Send/recv messages up to this many bytes run LL on one channel; larger ones Simple on all.
constexpr size_t kP2pLlBytes = 64 * 1024;

// The peers `rank` exchanges data with on connection id `k` (both directions). Send/recv reaches
// every rank, itself included (a message to itself goes through its own FIFO).
std::vector<int> neighbours(const algo::Geometry& g, int rank, int k) {
  const int n = static_cast<int>(g.ringOrder.size());
  if (k == algo::kConnP2p) {
    std::vector<int> all(n);
    for (int q = 0; q < n; ++q) all[q] = q;
    return all;
  }
  std::set<int> peers;
  if (n > 1 && k == algo::kConnRing) {
    int pos = g.posOf[rank];
    peers.insert(g.ringOrder[(pos + 1) % n]);
    peers.insert(g.ringOrder[(pos + n - 1) % n]);
  } else if (n > 1 && (k == algo::kConnTree0 || k == algo::kConnTree1)) {
    algo::TreeView t = algo::workFor(g, rank, 0, algo::CallShape{}).trees[k == algo::kConnTree0 ? 0 : 1];
    if (t.parent >= 0) peers.insert(t.parent);
    for (int i = 0; i < t.nChildren; ++i) peers.insert(t.children[i]);
  } else if (n > 1 && k == algo::kConnDoubling) {
    int p = algo::powerOfTwoBelow(n);
    if (rank >= p) {
      peers.insert(rank - p);
    } else {
      for (int bit = 1; bit < p; bit *= 2) peers.insert(rank ^ bit);
      if (rank + p < n) peers.insert(rank + p);
    }
  }
  peers.erase(rank);
  return std::vector<int>(peers.begin(), peers.end());
}

// Where each (channel, connId, peer) block of one rank's arena starts, and its one-shot region.
struct ArenaLayout {
  std::map<std::tuple<int, int, int>, size_t> blocks;
  size_t oneShot = 0;
  size_t bytes = 0;
};

// The one-shot region (device/oneshot.cuh): a header, then 2 x nranks blocks of 16-byte lines.
size_t oneShotRegionBytes(const CudaEngineOptions& o) {
  if (o.oneShotBytes == 0) return 0;
  return device::kOneShotHeaderBytes +
         device::kOneShotParities * o.nranks * (o.oneShotBytes / device::kLlDataPerLine) * device::kLlLineBytes;
}

// Maps the shared-memory segment `name` (creating it with `bytes` when `create`), registers it with
// CUDA as mapped memory, and returns its device address.
Status mapHostArena(const std::string& name, size_t bytes, bool create, std::vector<std::pair<void*, size_t>>* maps,
                    char** device) {
  int fd = shm_open(name.c_str(), create ? (O_CREAT | O_EXCL | O_RDWR) : O_RDWR, 0600);
  if (fd < 0) return Status(Code::kSystemError, "shm_open " + name + ": " + std::strerror(errno));
  if (create && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    shm_unlink(name.c_str());
    return Status(Code::kSystemError, "ftruncate " + name + ": " + std::strerror(errno));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return Status(Code::kSystemError, "mmap " + name + ": " + std::strerror(errno));
  maps->push_back({p, bytes});
  BRAID_RETURN_IF_ERROR(
      cudaCheck("cudaHostRegister", cudaHostRegister(p, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable)));
  void* d = nullptr;
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaHostGetDevicePointer", cudaHostGetDevicePointer(&d, p, 0)));
  *device = static_cast<char*>(d);
  return Status::ok();
}

}  // namespace

bool CudaEngine::peerAccess(int a, int b) {
  if (a == b) return true;
  int can = 0;
  return cudaDeviceCanAccessPeer(&can, a, b) == cudaSuccess && can != 0;
}

struct CudaEngine::State {
  CudaEngineOptions o;
  size_t blockBytes = 0;
  size_t llOff = 0;
  size_t ll128Off = 0;
  std::vector<ArenaLayout> layouts;                // per rank
  char* arena = nullptr;                           // device address (of host memory, with hostMemory)
  std::string shmName;                             // hostMemory: this rank's segment, until connected() unlinks it
  std::vector<std::pair<void*, size_t>> hostMaps;  // hostMemory: every mapping (own and peers'), registered
  std::vector<char*> peerBases;                    // per rank: its arena mapped here (null if not a neighbour)
  std::vector<bool> ipcOpened;
  PeerConn* table = nullptr;  // device
  int* ringOrder = nullptr;   // device
  device::OneShotArgs oneShot;
  int* abortHost = nullptr;  // mapped host memory
  int* abortDevice = nullptr;
  cudaEvent_t lastDone = nullptr;  // the previous call's kernel, for ordering calls on other streams
  void* lastStream = nullptr;
  std::mutex mu;  // one launch at a time

  int p2pChannels() const { return std::min(o.channels, kMaxP2pChannels); }
  // The connection ids channel c holds.
  std::vector<int> connIdsOf(int c) const {
    std::vector<int> ids(std::begin(kConnIds), std::end(kConnIds));
    if (c >= o.fullChannels) ids = {algo::kConnRing};
    if (c < p2pChannels()) ids.push_back(algo::kConnP2p);
    return ids;
  }
  ArenaLayout layoutOf(int rank) const {
    ArenaLayout l;
    for (int c = 0; c < o.channels; ++c) {
      for (int k : connIdsOf(c)) {
        for (int q : neighbours(o.geometry, rank, k)) {
          l.blocks[{c, k, q}] = l.bytes;
          l.bytes += blockBytes;
        }
      }
    }
    l.oneShot = l.bytes;
    l.bytes += oneShotRegionBytes(o);
    return l;
  }
  char* block(int owner, int c, int k, int peer) const {
    return peerBases[owner] + layouts[owner].blocks.at({c, k, peer});
  }
};

void CudaEngine::connected() {
  if (s_ && !s_->shmName.empty()) {
    shm_unlink(s_->shmName.c_str());
    s_->shmName.clear();
  }
}

CudaEngine::CudaEngine(std::unique_ptr<State> state) : s_(std::move(state)) {}

CudaEngine::~CudaEngine() {
  if (!s_) return;
  DeviceScope scope(s_->o.device);
  // This communicator's kernels may still use the buffers: wait for its last one (calls run in call
  // order, so the others are done too; after an abort they exit). Not the whole device: other ranks
  // sharing the GPU may have kernels that wait for their own abort, which comes after this one.
  if (s_->lastDone != nullptr && s_->lastStream != nullptr) cudaEventSynchronize(s_->lastDone);
  for (size_t r = 0; r < s_->peerBases.size(); ++r) {
    if (s_->ipcOpened[r]) cudaIpcCloseMemHandle(s_->peerBases[r]);
  }
  if (s_->lastDone != nullptr) cudaEventDestroy(s_->lastDone);
  cudaFree(s_->table);
  cudaFree(s_->ringOrder);
  if (s_->o.hostMemory) {
    for (auto& m : s_->hostMaps) {
      cudaHostUnregister(m.first);
      munmap(m.first, m.second);
    }
    if (!s_->shmName.empty()) shm_unlink(s_->shmName.c_str());
  } else {
    cudaFree(s_->arena);
  }
  if (s_->abortHost != nullptr) cudaFreeHost(s_->abortHost);
}

int CudaEngine::channels() const { return s_->o.channels; }

Status CudaEngine::create(const CudaEngineOptions& options, std::unique_ptr<CudaEngine>* out) {
  if (options.oneShotBytes > 0 &&
      (options.nranks > device::kMaxOneShotRanks || options.hostMemory || options.oneShotChannels < 1 ||
       options.oneShotChannels > device::kMaxOneShotChannels || options.oneShotBytes % device::kLlDataPerLine != 0)) {
    return internalError("one-shot buffers asked for " + std::to_string(options.nranks) +
                         " ranks, host memory or more channels than it supports");
  }
  if (options.ll128SlotBytes == 0 || options.ll128SlotBytes % device::kLl128DataPerLine != 0)
    return internalError("LL128 slots of " + std::to_string(options.ll128SlotBytes) + " bytes: not whole lines");
  auto s = std::make_unique<State>();
  s->o = options;
  DeviceScope scope(options.device);
  size_t localBytes = 0;
  BRAID_RETURN_IF_ERROR(
      cudaCheck("loading braid's kernels", static_cast<cudaError_t>(device::loadKernels(&localBytes))));
  BRAID_INFO(log::Subsys::kInit, "kernels loaded; the most local memory one uses: ", localBytes,
             " bytes per thread (the device's stack limit is at least that)");
  const size_t llBytes = device::kSteps * options.llSlotBytes / device::kLlDataPerLine * device::kLlLineBytes;
  const size_t ll128Bytes =
      device::kSteps * options.ll128SlotBytes / device::kLl128DataPerLine * device::kLl128LineBytes;
  s->llOff = kSimpleOff + device::kSteps * options.simpleSlotBytes;
  s->ll128Off = (s->llOff + llBytes + 127) / 128 * 128;  // lines must not straddle 128 bytes
  s->blockBytes = (s->ll128Off + ll128Bytes + 255) / 256 * 256;
  for (int r = 0; r < options.nranks; ++r) s->layouts.push_back(s->layoutOf(r));
  const size_t bytes = std::max<size_t>(s->layouts[options.rank].bytes, 256);
  if (options.hostMemory) {
    char name[64];
    std::snprintf(name, sizeof(name), "/braid-gpu-%016llx-%d", static_cast<unsigned long long>(options.commKey),
                  options.rank);
    s->shmName = name;
    BRAID_RETURN_IF_ERROR(mapHostArena(name, bytes, true, &s->hostMaps, &s->arena));  // zeroed by ftruncate
  } else {
    BRAID_RETURN_IF_ERROR(cudaCheck("cudaMalloc (connection buffers)", cudaMalloc(&s->arena, bytes)));
    // Zeroed before any peer can learn the address: on a stream of its own, waited for here, so that
    // neither other streams' kernels (another communicator's, perhaps waiting for this init) are
    // waited for nor a late memset erases a peer's first lines or flags.
    cudaStream_t zero = nullptr;
    BRAID_RETURN_IF_ERROR(
        cudaCheck("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&zero, cudaStreamNonBlocking)));
    cudaError_t err = cudaMemsetAsync(s->arena, 0, bytes, zero);
    if (err == cudaSuccess) err = cudaStreamSynchronize(zero);
    cudaStreamDestroy(zero);
    BRAID_RETURN_IF_ERROR(cudaCheck("cudaMemsetAsync (connection buffers)", err));
  }
  BRAID_RETURN_IF_ERROR(
      cudaCheck("cudaHostAlloc (abort flag)", cudaHostAlloc(&s->abortHost, sizeof(int), cudaHostAllocMapped)));
  *s->abortHost = 0;
  BRAID_RETURN_IF_ERROR(
      cudaCheck("cudaHostGetDevicePointer",
                cudaHostGetDevicePointer(reinterpret_cast<void**>(&s->abortDevice), s->abortHost, 0)));
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaEventCreate", cudaEventCreateWithFlags(&s->lastDone, cudaEventDisableTiming)));
  const int n = options.nranks;
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaMalloc", cudaMalloc(&s->ringOrder, sizeof(int) * n)));
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaMemcpy", cudaMemcpy(s->ringOrder, options.geometry.ringOrder.data(),
                                                           sizeof(int) * n, cudaMemcpyHostToDevice)));
  BRAID_INFO(log::Subsys::kInit, "GPU connection buffers: ", bytes >> 20, " MiB for ", options.channels,
             " channel(s), every algorithm on the first ", options.fullChannels);
  out->reset(new CudaEngine(std::move(s)));
  return Status::ok();
}

CudaExport CudaEngine::exported() const {
  CudaExport e;
  e.pid = getpid();
  e.device = s_->o.device;
  e.base = reinterpret_cast<uint64_t>(s_->arena);
  std::snprintf(e.shm, sizeof(e.shm), "%s", s_->shmName.c_str());
  if (s_->o.hostMemory) return e;
  cudaIpcMemHandle_t h;
  if (cudaIpcGetMemHandle(&h, s_->arena) == cudaSuccess) {
    std::memcpy(e.ipc, &h, sizeof(e.ipc));
  } else {
    (void)cudaGetLastError();
  }
  return e;
}

Status CudaEngine::connect(const std::vector<CudaExport>& all) {
  State& s = *s_;
  DeviceScope scope(s.o.device);
  const int n = s.o.nranks, me = s.o.rank;
  s.peerBases.assign(n, nullptr);
  s.ipcOpened.assign(n, false);
  s.peerBases[me] = s.arena;
  std::set<int> peers;
  for (int k : s.connIdsOf(0)) {
    for (int q : neighbours(s.o.geometry, me, k)) peers.insert(q);
  }
  peers.erase(me);
  std::map<int, std::string> path;
  for (int q : peers) {
    const CudaExport& e = all[q];
    if (e.host != all[me].host) {
      return invalidUsage("rank " + std::to_string(q) +
                          " is on another host: GPU communicators across hosts need the socket transport for GPU "
                          "buffers, which braid does not have yet");
    }
    if (s.o.hostMemory) {
      // Host memory: the same process sees a peer's registered arena at its address; another
      // process maps the peer's segment and registers it too.
      if (e.pid == all[me].pid) {
        s.peerBases[q] = reinterpret_cast<char*>(e.base);
      } else {
        BRAID_RETURN_IF_ERROR(mapHostArena(e.shm, s.layouts[q].bytes < 256 ? 256 : s.layouts[q].bytes, false,
                                           &s.hostMaps, &s.peerBases[q])
                                  .withContext("mapping rank " + std::to_string(q) + "'s host-memory FIFOs"));
      }
      path[q] = "SHM/mapped host memory";
      continue;
    }
    if (e.pid == all[me].pid) {
      s.peerBases[q] = reinterpret_cast<char*>(e.base);
      if (e.device != s.o.device) {
        int can = 0;
        cudaDeviceCanAccessPeer(&can, s.o.device, e.device);
        if (!can) {
          return internalError("CUDA device " + std::to_string(s.o.device) + " cannot access device " +
                               std::to_string(e.device) + " (rank " + std::to_string(q) +
                               ") but the communicator did not choose host memory");
        }
        cudaError_t err = cudaDeviceEnablePeerAccess(e.device, 0);
        if (err != cudaErrorPeerAccessAlreadyEnabled)
          BRAID_RETURN_IF_ERROR(cudaCheck("cudaDeviceEnablePeerAccess", err));
        (void)cudaGetLastError();
        path[q] = "P2P/direct pointer";
      } else {
        path[q] = "same device";
      }
    } else {
      cudaIpcMemHandle_t h;
      std::memcpy(&h, e.ipc, sizeof(h));
      void* p = nullptr;
      BRAID_RETURN_IF_ERROR(cudaCheck(("cudaIpcOpenMemHandle of rank " + std::to_string(q) + "'s buffers").c_str(),
                                      cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess)));
      s.peerBases[q] = static_cast<char*>(p);
      s.ipcOpened[q] = true;
      path[q] = e.device == s.o.device ? "P2P/IPC (same device)" : "P2P/IPC";
    }
  }
  // The table: for each (channel, connId, peer), both ends as this rank sees them.
  std::vector<PeerConn> table(static_cast<size_t>(s.o.channels) * algo::kNumConnIds * n);
  for (int c = 0; c < s.o.channels; ++c) {
    for (int k : s.connIdsOf(c)) {
      for (int q : neighbours(s.o.geometry, me, k)) {
        char* mine = s.block(me, c, k, q);
        char* theirs = s.block(q, c, k, me);
        PeerConn& pc = table[device::connIndex(c, k, q, n)];
        pc.send.simple = theirs + kSimpleOff;
        pc.send.ll = theirs + s.llOff;
        pc.send.ll128 = theirs + s.ll128Off;
        pc.send.tail = reinterpret_cast<uint64_t*>(theirs + kTailOff);
        pc.send.head = reinterpret_cast<uint64_t*>(mine + kHeadOff);
        pc.send.step = reinterpret_cast<uint64_t*>(mine + kSendStepOff);
        pc.recv.simple = mine + kSimpleOff;
        pc.recv.ll = mine + s.llOff;
        pc.recv.ll128 = mine + s.ll128Off;
        pc.recv.tail = reinterpret_cast<uint64_t*>(mine + kTailOff);
        pc.recv.head = reinterpret_cast<uint64_t*>(theirs + kHeadOff);
        pc.recv.step = reinterpret_cast<uint64_t*>(mine + kRecvStepOff);
      }
    }
  }
  if (s.o.oneShotBytes > 0) {
    for (int q = 0; q < n; ++q) {
      if (s.peerBases[q] == nullptr)
        return internalError("one-shot buffers: rank " + std::to_string(q) + " not mapped");
      s.oneShot.regions[q] = s.peerBases[q] + s.layouts[q].oneShot;
    }
    s.oneShot.lines = s.o.oneShotBytes / device::kLlDataPerLine;
    s.oneShot.channels = s.o.oneShotChannels;
  }
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaMalloc", cudaMalloc(&s.table, table.size() * sizeof(PeerConn))));
  BRAID_RETURN_IF_ERROR(cudaCheck(
      "cudaMemcpy", cudaMemcpy(s.table, table.data(), table.size() * sizeof(PeerConn), cudaMemcpyHostToDevice)));
  if (n > 1) {
    int next = s.o.geometry.ringOrder[(s.o.geometry.posOf[me] + 1) % n];
    for (int c = 0; c < s.o.channels; ++c) {
      char line[160];
      std::snprintf(line, sizeof(line), "Channel %02d : %d[%d] -> %d[%d] via %s", c, me, s.o.device, next,
                    all[next].device, path[next].c_str());
      BRAID_INFO(log::Subsys::kInit, line);
    }
  }
  return Status::ok();
}

namespace {

device::KernelKind kernelKind(algo::Coll coll, algo::Algo a) {
  using device::KernelKind;
  if (a == algo::Algo::kOneShot) {
    switch (coll) {
      case algo::Coll::kAllGather: return KernelKind::kAllGatherOneShot;
      case algo::Coll::kReduceScatter: return KernelKind::kReduceScatterOneShot;
      case algo::Coll::kBroadcast: return KernelKind::kBroadcastOneShot;
      case algo::Coll::kReduce: return KernelKind::kReduceOneShot;
      default: return KernelKind::kAllReduceOneShot;
    }
  }
  switch (coll) {
    case algo::Coll::kAllReduce:
      return a == algo::Algo::kTree         ? KernelKind::kAllReduceTree
             : a == algo::Algo::kDoubleTree ? KernelKind::kAllReduceDoubleTree
             : a == algo::Algo::kDoubling   ? KernelKind::kAllReduceDoubling
                                            : KernelKind::kAllReduceRing;
    case algo::Coll::kBroadcast: return KernelKind::kBroadcastRing;
    case algo::Coll::kReduce: return KernelKind::kReduceRing;
    case algo::Coll::kAllGather: return KernelKind::kAllGatherRing;
    default: return KernelKind::kReduceScatterRing;
  }
}

const char* shortType(braidDataType_t t) {
  static const char* names[] = {"i8", "u8", "i32", "u32", "i64", "u64", "f16", "f32", "f64", "bf16", "e4m3", "e5m2"};
  return t >= 0 && t < braidNumTypes ? names[t] : "?";
}

const char* shortOp(braidRedOp_t op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op < braidNumOps ? names[op] : "?";
}

}  // namespace

// Fills what every kernel of this rank needs; `shape` gets its channel count bounded and its chunk set
// to the protocol's slot.
device::KernelArgs CudaEngine::kernelArgs(algo::CallShape* shape, device::Proto proto, braidDataType_t type) const {
  const State& s = *s_;
  shape->chunkElems = slotElems(s.o, proto, device::elemSizeOf(type));
  device::KernelArgs a;
  a.work = algo::workFor(s.o.geometry, s.o.rank, 0, *shape);
  a.work.ring.order = s.ringOrder;
  a.conns = s.table;
  a.simpleSlotBytes = s.o.simpleSlotBytes;
  a.llSlotLines = static_cast<int>(s.o.llSlotBytes / device::kLlDataPerLine);
  a.ll128SlotLines = static_cast<int>(s.o.ll128SlotBytes / device::kLl128DataPerLine);
  a.abortFlag = s.abortDevice;
  a.oneShot = s.oneShot;
  // LL runs half the threads: its steps synchronise more often than they move data (measured,
  // bench/NOTES.md). The one-shot has no steps: every thread streams its own lines.
  const bool halve = proto == device::Proto::kLL && shape->algo != algo::Algo::kOneShot;
  const int threads = halve ? std::max(64, s.o.threads / 2) : s.o.threads;
  const device::KernelKind kind =
      shape->coll == algo::Coll::kNumColls ? device::KernelKind::kSendRecv : kernelKind(shape->coll, shape->algo);
  a.nLanes = shape->coll == algo::Coll::kNumColls ? 2 : algo::numLanes(shape->algo);
  a.laneThreads = std::min(threads, device::maxBlockThreads(kind) / a.nLanes) / 32 * 32;
  return a;
}

// Launches on `stream` after the previous call of this communicator (another stream waits for it
// through an event, except while capturing), inside an NVTX range named `range`.
Status CudaEngine::launch(void* stream, const char* range, const std::function<int()>& launchFn) {
  State& s = *s_;
  auto cs = static_cast<cudaStream_t>(stream);
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaStreamIsCapturing", cudaStreamIsCapturing(cs, &capture)));
  const bool capturing = capture != cudaStreamCaptureStatusNone;
  // Calls of one communicator run in call order even on different streams: their FIFO steps must.
  if (!capturing && s.lastStream != nullptr && s.lastStream != stream) {
    BRAID_RETURN_IF_ERROR(cudaCheck("cudaStreamWaitEvent", cudaStreamWaitEvent(cs, s.lastDone, 0)));
  }
  nvtxRangePushA(range);
  int err = launchFn();
  nvtxRangePop();
  BRAID_RETURN_IF_ERROR(cudaCheck(range, static_cast<cudaError_t>(err)));
  if (!capturing) {
    BRAID_RETURN_IF_ERROR(cudaCheck("cudaEventRecord", cudaEventRecord(s.lastDone, cs)));
    s.lastStream = stream == nullptr ? reinterpret_cast<void*>(1) : stream;
  }
  BRAID_TRACE(log::Subsys::kColl, range);
  return Status::ok();
}

namespace {

device::CallArgs callArgs(const algo::CallShape& shape, const void* input, void* output, braidDataType_t type,
                          braidRedOp_t op) {
  device::CallArgs c;
  c.input = input;
  c.output = output;
  c.count = shape.count;
  c.chunkElems = shape.chunkElems;
  c.root = shape.root;
  c.nChannels = shape.nChannels;
  c.type = type;
  c.op = op;
  c.postOp = shape.postOp;
  return c;
}

}  // namespace

// The call's shape with its channel count bounded by what the engine has for its algorithm.
Status CudaEngine::boundedShape(const CudaCall& call, algo::CallShape* shape) const {
  const State& s = *s_;
  *shape = call.shape;
  const bool oneShot = shape->algo == algo::Algo::kOneShot;
  const int most = oneShot ? s.o.oneShotChannels : shape->algo == algo::Algo::kRing ? s.o.channels : s.o.fullChannels;
  shape->nChannels = std::clamp(shape->nChannels, 1, most);
  if (oneShot && shape->count * device::elemSizeOf(call.type) > s.o.oneShotBytes) {
    return internalError("one-shot " + std::string(algo::collName(shape->coll)) + " of " +
                         std::to_string(shape->count) + " elements per block exceeds its " +
                         std::to_string(s.o.oneShotBytes) + "-byte buffers");
  }
  return Status::ok();
}

Status CudaEngine::run(const CudaCall& call) { return runBatch(&call, 1); }

Status CudaEngine::runBatch(const CudaCall* calls, size_t n) {
  State& s = *s_;
  std::lock_guard<std::mutex> lock(s.mu);
  DeviceScope scope(s.o.device);
  std::vector<algo::CallShape> shapes(n);
  std::vector<LaunchKey> keys(n);
  for (size_t i = 0; i < n; ++i) {
    BRAID_RETURN_IF_ERROR(boundedShape(calls[i], &shapes[i]));
    keys[i].kernel = static_cast<int>(kernelKind(shapes[i].coll, shapes[i].algo));
    keys[i].proto = static_cast<int>(calls[i].proto);
    keys[i].stream = calls[i].stream;
    keys[i].oneShot = shapes[i].algo == algo::Algo::kOneShot;
    keys[i].oneShotWords = (shapes[i].count * device::elemSizeOf(calls[i].type) + 7) / 8;
  }
  for (const LaunchRange& r : planLaunches(keys, device::kMaxBatchCalls, s.o.oneShotBytes / device::kLlDataPerLine)) {
    const CudaCall& first = calls[r.begin];
    const auto kind = static_cast<device::KernelKind>(keys[r.begin].kernel);
    algo::CallShape shape = shapes[r.begin];
    device::BatchKernelArgs k;
    k.base = kernelArgs(&shape, first.proto, first.type);
    int channels = 0;
    size_t total = 0;
    for (size_t i = r.begin; i < r.end; ++i) {
      algo::CallShape cs = shapes[i];
      cs.chunkElems = slotElems(s.o, calls[i].proto, device::elemSizeOf(calls[i].type));
      k.calls[k.nCalls++] = callArgs(cs, calls[i].input, calls[i].output, calls[i].type, calls[i].op);
      channels = std::max(channels, cs.nChannels);
      total += cs.count;
    }
    char range[160];
    if (k.nCalls == 1) {
      std::snprintf(range, sizeof(range), "%s %s %s count %zu ch %d", device::kernelName(kind, first.proto),
                    shortType(first.type), shortOp(first.op), shape.count, channels);
    } else {
      std::snprintf(range, sizeof(range), "%s %d calls count %zu ch %d", device::kernelName(kind, first.proto),
                    k.nCalls, total, channels);
    }
    BRAID_RETURN_IF_ERROR(launch(
        first.stream, range, [&] { return device::launchCollKernel(kind, first.proto, channels, k, first.stream); }));
  }
  std::snprintf(range, sizeof(range), "%s %d calls count %zu ch %d", device::kernelName(kind, first.proto), k.nCalls,
                total, channels);
}
BRAID_RETURN_IF_ERROR(launch(first.stream, range,
                             [&] { return device::launchCollKernel(kind, first.proto, channels, k, first.stream); }));
}
return Status::ok();
}

Status CudaEngine::runP2p(std::vector<algo::P2pOp> sends, std::vector<algo::P2pOp> recvs, const void* sendBase,
                          void* recvBase, void* stream) {
  State& s = *s_;
  if (sends.size() > device::kMaxP2pOps || recvs.size() > device::kMaxP2pOps) {
    return invalidUsage("a group on a GPU communicator may hold at most " + std::to_string(device::kMaxP2pOps) +
                        " sends and " + std::to_string(device::kMaxP2pOps) + " receives (this one: " +
                        std::to_string(sends.size()) + " and " + std::to_string(recvs.size()) + ")");
  }
  std::vector<SelfCopy> copies;
  BRAID_RETURN_IF_ERROR(takeSelfCopies(s.o.rank, &sends, &recvs, &copies));
  std::lock_guard<std::mutex> lock(s.mu);
  DeviceScope scope(s.o.device);
  // Messages to itself: device-to-device copies on the stream, ahead of the kernel (they touch no
  // FIFO, so they need no ordering against the communicator's other streams).
  for (const SelfCopy& c : copies) {
    BRAID_RETURN_IF_ERROR(
        cudaCheck("cudaMemcpyAsync (a message to itself)",
                  cudaMemcpyAsync(static_cast<char*>(recvBase) + c.to, static_cast<const char*>(sendBase) + c.from,
                                  c.bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream))));
  }
  algo::orderP2p(s.o.rank, s.o.nranks, &sends, &recvs);
  // Both ends of a message must cut it into the same channels and steps, and a rank knows only its
  // own messages: the protocol and channels follow from each message's own size. Messages up to
  // kP2pLlBytes go in an LL kernel on one channel, the others after it in a Simple kernel on every
  // send/recv channel. Both ends put a message in the same kernel, and every rank launches its LL
  // kernel first, so neither kernel waits on the other. (Choosing by the rank's largest message let
  // the two ends of one message disagree: a hang.)
  const auto small = [](const algo::P2pOp& op) { return op.count <= kP2pLlBytes; };
  for (bool ll : {true, false}) {
    std::vector<algo::P2pOp> classSends, classRecvs;
    for (const algo::P2pOp& op : sends) {
      if (small(op) == ll) classSends.push_back(op);
    }
    for (const algo::P2pOp& op : recvs) {
      if (small(op) == ll) classRecvs.push_back(op);
    }
    if (classSends.empty() && classRecvs.empty()) continue;
    const device::Proto proto = ll ? device::Proto::kLL : device::Proto::kSimple;
    algo::CallShape shape;
    shape.coll = algo::Coll::kNumColls;  // marks send/recv: two lanes
    shape.nChannels = ll ? 1 : s.p2pChannels();
    device::P2pKernelArgs p;
    p.base = kernelArgs(&shape, proto, braidUint8);
    p.call = callArgs(shape, sendBase, recvBase, braidUint8, braidSum);
    p.nSends = static_cast<int>(classSends.size());
    p.nRecvs = static_cast<int>(classRecvs.size());
    std::copy(classSends.begin(), classSends.end(), p.sends);
    std::copy(classRecvs.begin(), classRecvs.end(), p.recvs);
    char range[160];
    std::snprintf(range, sizeof(range), "%s %d send(s) %d recv(s) ch %d",
                  device::kernelName(device::KernelKind::kSendRecv, proto), p.nSends, p.nRecvs, shape.nChannels);
    BRAID_RETURN_IF_ERROR(
        launch(stream, range, [&] { return device::launchP2pKernel(proto, shape.nChannels, p, stream); }));
  }
  return Status::ok();
}

void CudaEngine::abort() {
  if (s_ && s_->abortHost != nullptr) *reinterpret_cast<volatile int*>(s_->abortHost) = 1;
}

}  // namespace braid::exec
