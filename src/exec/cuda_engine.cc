// The CUDA engine's set-up half: the arena of FIFOs and counters, the peers' arenas mapped over
// P2P, CUDA IPC or shared host memory, and the device table of connections. The launch half is
// cuda_launch.cc.
#include "exec/cuda_engine.h"

#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "algo/connections.h"
#include "algo/p2p.h"
#include "core/log.h"
#include "exec/cuda_device.h"
#include "exec/cuda_engine_state.h"

namespace braid::exec {
namespace {

using device::PeerConn;

// Block layout: control lines, then the Simple slots, the LL slots and the LL128 slots.
constexpr size_t kTailOff = 0;
constexpr size_t kHeadOff = 128;
constexpr size_t kRecvStepOff = 256;
constexpr size_t kSendStepOff = 264;
constexpr size_t kSimpleOff = 384;

// The connection ids of the FIFO algorithms' channels (send/recv's own on the first channels).
constexpr int kConnIds[] = {algo::kConnRing,     algo::kConnTree0, algo::kConnTree1,
                            algo::kConnDoubling, algo::kConnLocal, algo::kConnRail};

// The one-shot region (device/oneshot.cuh): a header, then 2 x nranks blocks of 16-byte lines.
size_t oneShotRegionBytes(const CudaEngineOptions& o) {
  if (o.oneShotBytes == 0) return 0;
  return device::kOneShotHeaderBytes +
         device::kOneShotParities * o.nranks * (o.oneShotBytes / device::kLlDataPerLine) * device::kLlLineBytes;
}

// Runs `issue(setup)` (a copy or fill of set-up data) on the engine's set-up stream and waits for it,
// so that its bytes are in place before any kernel that reads them, on whatever stream the user
// gives: a plain cudaMemcpy from pageable memory may return while its DMA goes on, cudaMemset returns
// before it is done, and the user's non-blocking streams wait for neither. Other streams are not
// waited for (another communicator's kernels, perhaps waiting for this init, keep running).
//
// One such stream per engine, made once: CUDA hands out its few hardware queues (8 by default,
// CUDA_DEVICE_MAX_CONNECTIONS) to streams in turn as they are made, so every stream made here moves
// which queue the user's next stream gets. Ranks sharing a GPU whose streams land on one queue
// serialise there, and a kernel waiting for its peer then waits forever for the kernel queued
// behind it (three ranks on one GPU hung once in eight gpu tiers while set-up made three streams
// per rank).
template <class Issue>
Status onSetupStream(cudaStream_t setup, const char* what, Issue issue) {
  cudaError_t err = issue(setup);
  if (err == cudaSuccess) err = cudaStreamSynchronize(setup);
  return cudaCheck(what, err);
}

// Copies `bytes` of host memory to the device, in place before any kernel (onSetupStream).
Status copyToDevice(cudaStream_t setup, void* dst, const void* src, size_t bytes, const char* what) {
  return onSetupStream(setup, what,
                       [&](cudaStream_t st) { return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, st); });
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

std::vector<int> CudaEngine::State::connIdsOf(int c) const {
  std::vector<int> ids(std::begin(kConnIds), std::end(kConnIds));
  if (c >= o.fullChannels) ids = {algo::kConnRing};
  if (c < p2pChannels()) ids.push_back(algo::kConnP2p);
  return ids;
}

ArenaLayout CudaEngine::State::layoutOf(int rank) const {
  ArenaLayout l;
  for (int c = 0; c < o.channels; ++c) {
    for (int k : connIdsOf(c)) {
      for (int q : peers[rank][k]) {
        l.blocks[{c, k, q}] = l.bytes;
        l.bytes += blockBytes;
      }
    }
  }
  l.oneShot = l.bytes;
  l.bytes += oneShotRegionBytes(o);
  return l;
}

char* CudaEngine::State::block(int owner, int c, int k, int peer) const {
  return peerBases[owner] + layouts[owner].blocks.at({c, k, peer});
}

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
  s_->closeNet();
  for (size_t r = 0; r < s_->peerBases.size(); ++r) {
    if (s_->ipcOpened[r]) cudaIpcCloseMemHandle(s_->peerBases[r]);
  }
  if (s_->lastDone != nullptr) cudaEventDestroy(s_->lastDone);
  if (s_->joined != nullptr) cudaEventDestroy(s_->joined);
  cudaFree(s_->table);
  cudaFree(s_->ringOrder);
  cudaFree(s_->hostRanks);
  cudaFree(s_->hostStart);
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
  s_->closeWatch();
  if (s_->setup != nullptr) cudaStreamDestroy(s_->setup);
}

int CudaEngine::channels() const { return s_->o.channels; }

Status CudaEngine::create(const CudaEngineOptions& options, std::unique_ptr<CudaEngine>* out) {
  if (options.oneShotBytes > 0 &&
      (options.nranks > device::kMaxOneShotRanks || options.hostMemory || options.oneShotChannels < 1 ||
       options.oneShotChannels > device::kMaxOneShotChannels || options.oneShotBytes % device::kLlDataPerLine != 0 ||
       options.oneShotBytes >= (size_t(1) << 32))) {
    // (The group kernel's call table counts a block's words and lines in 32 bits.)
    return internalError("one-shot buffers asked for " + std::to_string(options.nranks) +
                         " ranks, host memory, more channels than it supports or blocks of 4 GiB or more");
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
  // Every rank's peers, as the algorithms' own programs say (algo/connections.h), once: each
  // rank's layout follows from them.
  for (int r = 0; r < options.nranks; ++r)
    s->peers.push_back(algo::algorithmPeers(options.geometry, r, algo::fifoAlgorithms(options.geometry)));
  for (int r = 0; r < options.nranks; ++r) s->layouts.push_back(s->layoutOf(r));
  const size_t bytes = std::max<size_t>(s->layouts[options.rank].bytes, 256);
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaStreamCreateWithFlags (set-up copies)",
                                  cudaStreamCreateWithFlags(&s->setup, cudaStreamNonBlocking)));
  if (options.hostMemory) {
    char name[64];
    std::snprintf(name, sizeof(name), "/braid-gpu-%016llx-%d", static_cast<unsigned long long>(options.commKey),
                  options.rank);
    s->shmName = name;
    BRAID_RETURN_IF_ERROR(mapHostArena(name, bytes, true, &s->hostMaps, &s->arena));  // zeroed by ftruncate
  } else {
    BRAID_RETURN_IF_ERROR(cudaCheck("cudaMalloc (connection buffers)", cudaMalloc(&s->arena, bytes)));
    // Zeroed before any peer can learn the address, so that no late memset erases a peer's first
    // lines or flags.
    char* arena = s->arena;
    BRAID_RETURN_IF_ERROR(onSetupStream(s->setup, "cudaMemsetAsync (connection buffers)",
                                        [&](cudaStream_t z) { return cudaMemsetAsync(arena, 0, bytes, z); }));
  }
  BRAID_RETURN_IF_ERROR(
      cudaCheck("cudaHostAlloc (abort flag)", cudaHostAlloc(&s->abortHost, sizeof(int), cudaHostAllocMapped)));
  *s->abortHost = 0;
  BRAID_RETURN_IF_ERROR(
      cudaCheck("cudaHostGetDevicePointer",
                cudaHostGetDevicePointer(reinterpret_cast<void**>(&s->abortDevice), s->abortHost, 0)));
  BRAID_RETURN_IF_ERROR(s->openWatch());
  if (options.spansHosts) BRAID_RETURN_IF_ERROR(s->listenNet());
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaEventCreate", cudaEventCreateWithFlags(&s->lastDone, cudaEventDisableTiming)));
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaEventCreate", cudaEventCreateWithFlags(&s->joined, cudaEventDisableTiming)));
  const int n = options.nranks;
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaMalloc", cudaMalloc(&s->ringOrder, sizeof(int) * n)));
  BRAID_RETURN_IF_ERROR(copyToDevice(s->setup, s->ringOrder, options.geometry.ringOrder.data(), sizeof(int) * n,
                                     "cudaMemcpyAsync (ring order)"));
  const std::vector<int>& hostRanks = options.geometry.hostRanks;
  const std::vector<int>& hostStart = options.geometry.hostStart;
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaMalloc", cudaMalloc(&s->hostRanks, sizeof(int) * hostRanks.size())));
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaMalloc", cudaMalloc(&s->hostStart, sizeof(int) * hostStart.size())));
  BRAID_RETURN_IF_ERROR(copyToDevice(s->setup, s->hostRanks, hostRanks.data(), sizeof(int) * hostRanks.size(),
                                     "cudaMemcpyAsync (hosts' ranks)"));
  BRAID_RETURN_IF_ERROR(copyToDevice(s->setup, s->hostStart, hostStart.data(), sizeof(int) * hostStart.size(),
                                     "cudaMemcpyAsync (hosts' ranks)"));
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
  std::memcpy(e.net, s_->netHandle.data(), sizeof(e.net));
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
    for (int q : s.peers[me][k]) peers.insert(q);
  }
  peers.erase(me);
  // Ranks of this process on this device need their streams on separate hardware queues (a
  // user stream and a set-up stream each, and the legacy stream): fewer make false dependencies
  // between kernels that wait for each other, a hang.
  int sharing = 0, first = -1;
  for (int q = 0; q < n; ++q) {
    if (all[q].pid != all[me].pid || all[q].device != all[me].device) continue;
    ++sharing;
    if (first < 0) first = q;
  }
  if (sharing > 1 && me == first && cudaHardwareQueues() < 2 * sharing + 1) {
    BRAID_WARN(log::Subsys::kInit, sharing, " ranks of this process share CUDA device ", s.o.device,
               " but CUDA_DEVICE_MAX_CONNECTIONS=", cudaHardwareQueues(), " gives their streams fewer than ",
               2 * sharing + 1,
               " hardware queues: kernels that wait for each other may queue behind each other "
               "and hang (set CUDA_DEVICE_MAX_CONNECTIONS=32 before the process's first CUDA call)");
  }
  std::map<int, std::string> path;
  for (int q : peers) {
    const CudaExport& e = all[q];
    if (e.host != all[me].host) {
      if (s.net == nullptr) {
        return internalError("rank " + std::to_string(q) +
                             " is on another host but this rank opened no network (its communicator did not know)");
      }
      path[q] = s.netPath();  // its FIFOs are made below, in this host's memory
      continue;
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
  if (s.net != nullptr) BRAID_RETURN_IF_ERROR(s.startNet(all));
  // The table: for each (channel, connId, peer), both ends as this rank sees them.
  std::vector<PeerConn> table(static_cast<size_t>(s.o.channels) * algo::kNumConnIds * n);
  for (int c = 0; c < s.o.channels; ++c) {
    for (int k : s.connIdsOf(c)) {
      for (int q : s.peers[me][k]) {
        char* mine = s.block(me, c, k, q);
        PeerConn& pc = table[device::connIndex(c, k, q, n)];
        if (all[q].host != all[me].host) {
          pc.send.step = reinterpret_cast<uint64_t*>(mine + kSendStepOff);
          pc.recv.step = reinterpret_cast<uint64_t*>(mine + kRecvStepOff);
          BRAID_RETURN_IF_ERROR(s.connectNet(c, k, q, &pc));
          continue;
        }
        char* theirs = s.block(q, c, k, me);
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
    for (int k = 0; k < n; ++k) {
      const int q = (s.o.rank + k) % n;  // rotated: this rank's own region first
      if (s.peerBases[q] == nullptr)
        return internalError("one-shot buffers: rank " + std::to_string(q) + " not mapped");
      s.oneShot.regions[k] = s.peerBases[q] + s.layouts[q].oneShot;
    }
    s.oneShot.lines = s.o.oneShotBytes / device::kLlDataPerLine;
    s.oneShot.channels = s.o.oneShotChannels;
  }
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaMalloc", cudaMalloc(&s.table, table.size() * sizeof(PeerConn))));
  BRAID_RETURN_IF_ERROR(copyToDevice(s.setup, s.table, table.data(), table.size() * sizeof(PeerConn),
                                     "cudaMemcpyAsync (connection table)"));
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

void CudaEngine::abort() {
  if (s_ && s_->abortHost != nullptr) *reinterpret_cast<volatile int*>(s_->abortHost) = 1;
}

}  // namespace braid::exec
