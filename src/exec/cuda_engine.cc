// The CUDA engine's set-up half: the arena of FIFOs and counters, the transport that reaches each
// peer (transport/device_links.h), and the device table of connections. The launch half is
// cuda_launch.cc.
#include "exec/cuda_engine.h"

#include <cuda_runtime.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "algo/connections.h"
#include "algo/p2p.h"
#include "core/log.h"
#include "exec/cuda_device.h"
#include "exec/cuda_engine_state.h"
#include "transport/net/net_device.h"
#include "transport/p2p/p2p_device.h"

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

// Where a block's parts lie (every protocol's slots, after the control lines).
transport::BlockLayout blockLayout(size_t llOff, size_t ll128Off) {
  transport::BlockLayout l;
  l.tail = kTailOff;
  l.head = kHeadOff;
  l.recvStep = kRecvStepOff;
  l.sendStep = kSendStepOff;
  l.simple = kSimpleOff;
  l.ll = llOff;
  l.ll128 = ll128Off;
  return l;
}

// The largest slot any protocol fills: every protocol's slot k shares one place of a network FIFO.
size_t netSlotBytes(const CudaEngineOptions& o) {
  return std::max({o.simpleSlotBytes, o.llSlotBytes / device::kLlDataPerLine * device::kLlLineBytes,
                   o.ll128SlotBytes / device::kLl128DataPerLine * device::kLl128LineBytes});
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
  l.ce = (l.bytes + 255) / 256 * 256;
  if (o.ceSlotBytes > 0) l.bytes = l.ce + device::ceRegionBytes(o.nranks, o.ceSlotBytes);
  return l;
}

char* CudaEngine::State::block(int owner, int c, int k, int peer) const {
  return peerBases[owner] + layouts[owner].blocks.at({c, k, peer});
}

void CudaEngine::connected() {
  if (s_) s_->ledger.unlinkName();
  if (s_ && !s_->shmName.empty()) {
    shm_unlink(s_->shmName.c_str());
    s_->shmName.clear();
  }
}

CudaEngine::CudaEngine(std::unique_ptr<State> state) : s_(std::move(state)) {}

CudaEngine::~CudaEngine() = default;

// Also what a create that failed midway leaves: every member starts null, and a null is skipped.
CudaEngine::State::~State() {
  DeviceScope scope(o.device);
  // This communicator's kernels may still use the buffers: wait for its last one (calls run in call
  // order, so the others are done too; after an abort they exit). Not the whole device: other ranks
  // sharing the GPU may have kernels that wait for their own abort, which comes after this one.
  if (lastDone != nullptr && lastStream != nullptr) cudaEventSynchronize(lastDone);
  closeTransports();
  releaseCopyEngines();
  if (lastDone != nullptr) cudaEventDestroy(lastDone);
  if (joined != nullptr) cudaEventDestroy(joined);
  cudaFree(table);
  cudaFree(ringOrder);
  cudaFree(hostRanks);
  cudaFree(hostStart);
  if (o.hostMemory) {
    if (!shmName.empty()) shm_unlink(shmName.c_str());  // (the mapping goes with ownArena)
  } else {
    cudaFree(arena);
  }
  if (ledgerRegistered) cudaHostUnregister(ledger.block());  // (unmapped with the ledger)
  closeWatch();
  if (setup != nullptr) cudaStreamDestroy(setup);
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
    BRAID_RETURN_IF_ERROR(s->ownArena.map(name, bytes, true, &s->arena));  // zeroed by ftruncate
  } else {
    BRAID_RETURN_IF_ERROR(cudaCheck("cudaMalloc (connection buffers)", cudaMalloc(&s->arena, bytes)));
    // Zeroed before any peer can learn the address, so that no late memset erases a peer's first
    // lines or flags.
    char* arena = s->arena;
    BRAID_RETURN_IF_ERROR(onSetupStream(s->setup, "cudaMemsetAsync (connection buffers)",
                                        [&](cudaStream_t z) { return cudaMemsetAsync(arena, 0, bytes, z); }));
  }
  BRAID_RETURN_IF_ERROR(s->ledger.create(options.commKey, options.rank, options.describeTag));
  BRAID_RETURN_IF_ERROR(
      cudaCheck("cudaHostRegister (call ledger)", cudaHostRegister(s->ledger.block(), CallLedger::blockBytes(),
                                                                   cudaHostRegisterMapped | cudaHostRegisterPortable)));
  s->ledgerRegistered = true;
  s->abortHost = const_cast<int*>(s->ledger.abortWord());  // zeroed with the block
  BRAID_RETURN_IF_ERROR(
      cudaCheck("cudaHostGetDevicePointer",
                cudaHostGetDevicePointer(reinterpret_cast<void**>(&s->abortDevice), s->abortHost, 0)));
  BRAID_RETURN_IF_ERROR(s->openWatch());
  if (options.spansHosts) {
    transport::NetDeviceOptions no;
    no.commKey = options.commKey;
    no.rank = options.rank;
    no.nranks = options.nranks;
    no.slots = device::kSteps;
    no.slotBytes = netSlotBytes(options);
    no.timeoutMs = options.timeoutMs;
    no.abortFlag = s->abortHost;
    no.onFailure = options.onNetworkFailure;
    no.setupStream = s->setup;
    auto net = std::make_unique<transport::NetDeviceTransport>(no);
    BRAID_RETURN_IF_ERROR(net->listen(options.netAddress, s->netHandle));
    s->transports[static_cast<int>(transport::Kind::kNet)] = std::move(net);
  }
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaEventCreate", cudaEventCreateWithFlags(&s->lastDone, cudaEventDisableTiming)));
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaEventCreate", cudaEventCreateWithFlags(&s->joined, cudaEventDisableTiming)));
  // The transports' probe for eager launches (DeviceTransport::eagerLaunch): has every kernel
  // queued so far ended? lastDone is recorded after each; an error (a fault) ends them too.
  State* st = s.get();
  for (auto& t : s->transports) {
    if (t == nullptr) continue;
    t->setDoneProbe([st] {
      thread_local int current = -1;  // (a proxy thread serves one communicator's device)
      if (current != st->o.device) {
        // Relaxed: this thread's query must neither fail nor invalidate a capture that another
        // thread runs in the global mode (PyTorch's default).
        cudaStreamCaptureMode relaxed = cudaStreamCaptureModeRelaxed;
        cudaThreadExchangeStreamCaptureMode(&relaxed);
        if (cudaSetDevice(st->o.device) == cudaSuccess) current = st->o.device;
      }
      return cudaEventQuery(st->lastDone) != cudaErrorNotReady;
    });
  }
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

transport::DeviceOffer CudaEngine::exported() const {
  transport::DeviceOffer e;
  e.base = reinterpret_cast<uint64_t>(s_->arena);
  e.bytes = std::max<size_t>(s_->layouts[s_->o.rank].bytes, 256);
  std::snprintf(e.shm, sizeof(e.shm), "%s", s_->shmName.c_str());
  std::memcpy(e.net, s_->netHandle, sizeof(e.net));
  if (auto* net =
          static_cast<transport::NetDeviceTransport*>(s_->transports[static_cast<int>(transport::Kind::kNet)].get()))
    e.netGdr = net->gpuDirectCapable() ? 1 : 0;
  if (s_->o.hostMemory) return e;
  cudaIpcMemHandle_t h;
  if (cudaIpcGetMemHandle(&h, s_->arena) == cudaSuccess) {
    std::memcpy(e.ipc, &h, sizeof(e.ipc));
  } else {
    (void)cudaGetLastError();
  }
  return e;
}

void CudaEngine::State::eagerLaunch(bool begin) {
  for (auto& t : transports) {
    if (t != nullptr) t->eagerLaunch(begin);
  }
}

Status CudaEngine::State::captured(cudaStream_t stream) {
  for (auto& t : transports) {
    if (t != nullptr) BRAID_RETURN_IF_ERROR(t->captured(stream));
  }
  return Status::ok();
}

void CudaEngine::State::closeTransports() {
  ledgerStop.store(true);  // (their waits are at most 50 ms)
  for (std::thread& t : ledgerThreads) t.join();
  ledgerThreads.clear();
  for (auto& t : transports) t.reset();  // the network's proxy stops; IPC and shared mappings close
}

Status CudaEngine::connect(const std::vector<transport::PeerIdentity>& ids,
                           const std::vector<transport::DeviceOffer>& offers) {
  State& s = *s_;
  DeviceScope scope(s.o.device);
  const int n = s.o.nranks, me = s.o.rank;
  s.peerBases.assign(n, nullptr);
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
    if (ids[q].pid != ids[me].pid || ids[q].host != ids[me].host || ids[q].device != ids[me].device) continue;
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
  BRAID_RETURN_IF_ERROR(openLedgers(ids));
  for (auto& t : s.transports) {
    if (t != nullptr) t->agree(offers);  // made at init (the network): what every rank chooses alike
  }
  // The selection table's transport for each peer, made when a peer first needs it.
  transport::SelectFacts facts;
  facts.gpu = true;
  facts.hostMemory = s.o.hostMemory;
  const transport::BlockLayout layout = blockLayout(s.llOff, s.ll128Off);
  std::vector<transport::DeviceTransport*> via(n, nullptr);
  std::map<int, std::string> path;
  for (int q : peers) {
    const transport::Kind kind = transport::selectTransport(ids[me], ids[q], facts);
    std::unique_ptr<transport::DeviceTransport>& t = s.transports[static_cast<int>(kind)];
    if (t == nullptr && kind == transport::Kind::kP2p) {
      t = std::make_unique<transport::P2pDeviceTransport>(s.o.device, ids[me].pid, n, layout);
    } else if (t == nullptr && kind == transport::Kind::kShm) {
      t = std::make_unique<transport::ShmDeviceTransport>(ids[me].pid, n, layout);
    } else if (t == nullptr) {
      return internalError(transport::describePeer(q, ids[q]) + " needs the " + transport::kindName(kind) +
                           " transport, which this rank did not open (its communicator did not know)");
    }
    BRAID_RETURN_IF_ERROR(t->reach(q, ids[q], offers[q], &path[q]));
    s.peerBases[q] = t->arena(q);
    via[q] = t.get();
  }
  for (auto& t : s.transports) {
    if (t != nullptr) BRAID_RETURN_IF_ERROR(t->start(offers));
  }
  BRAID_RETURN_IF_ERROR(linkLedgers(ids));
  // The table: for each (channel, connId, peer), both ends as this rank sees them.
  std::vector<PeerConn> table(static_cast<size_t>(s.o.channels) * algo::kNumConnIds * n);
  for (int c = 0; c < s.o.channels; ++c) {
    for (int k : s.connIdsOf(c)) {
      for (int q : s.peers[me][k]) {
        char* mine = s.block(me, c, k, q);
        char* theirs = s.peerBases[q] != nullptr ? s.block(q, c, k, me) : nullptr;
        PeerConn& pc = table[device::connIndex(c, k, q, n)];
        pc.send.step = reinterpret_cast<uint64_t*>(mine + kSendStepOff);
        pc.recv.step = reinterpret_cast<uint64_t*>(mine + kRecvStepOff);
        if (q == me) {
          transport::mappedEnds(layout, mine, mine, &pc);
          continue;
        }
        if (via[q] == nullptr) return internalError("rank " + std::to_string(q) + ": no transport reached it");
        BRAID_RETURN_IF_ERROR(via[q]->ends(c, k, q, mine, theirs, &pc));
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
    // Direct calls exchange buffer addresses, which mean the same only within one process; across
    // the processes of this host, a window's address where each process maps it (cuda_windows.cc).
    const bool oneProcess = std::all_of(ids.begin(), ids.end(), [&](const transport::PeerIdentity& id) {
      return id.pid == ids[me].pid && id.host == ids[me].host;
    });
    const bool oneHostByIpc = !s.o.hostMemory && std::all_of(ids.begin(), ids.end(), [&](const auto& id) {
      return id.host == ids[me].host && id.noP2p == 0;
    });
    s.direct = oneProcess || oneHostByIpc;
    s.windowsAcrossProcesses = !oneProcess && oneHostByIpc;
  }
  s.identities = ids;
  BRAID_RETURN_IF_ERROR(openCopyEngines());
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaMalloc", cudaMalloc(&s.table, table.size() * sizeof(PeerConn))));
  BRAID_RETURN_IF_ERROR(copyToDevice(s.setup, s.table, table.data(), table.size() * sizeof(PeerConn),
                                     "cudaMemcpyAsync (connection table)"));
  if (n > 1) {
    int next = s.o.geometry.ringOrder[(s.o.geometry.posOf[me] + 1) % n];
    for (int c = 0; c < s.o.channels; ++c) {
      char line[160];
      std::snprintf(line, sizeof(line), "Channel %02d : %d[%d] -> %d[%d] via %s", c, me, s.o.device, next,
                    ids[next].device, path[next].c_str());
      BRAID_INFO(log::Subsys::kInit, line);
    }
  }
  return Status::ok();
}

// Maps the call ledgers of this host's other ranks (every process's), and compares this rank's
// collectives with those of the ranks before and after it among them. A rank whose block is not
// shared compares with none of them (its findings could not reach them: their kernels would stop
// with no verdict to say why), nor they with it (they cannot attach it).
Status CudaEngine::openLedgers(const std::vector<transport::PeerIdentity>& ids) {
  State& s = *s_;
  const int me = s.o.rank;
  if (!s.ledger.shared()) return Status::ok();
  std::vector<int> host;
  for (int q = 0; q < s.o.nranks; ++q) {
    if (ids[q].host != ids[me].host) continue;
    if (q != me) {
      Status st = s.ledger.attach(q, ids[q].pid);
      if (!st.isOk()) {  // (its create warned: no shared memory there) not compared with it
        BRAID_WARN(log::Subsys::kInit, "rank ", me, ": ", st.message());
        continue;
      }
    }
    host.push_back(q);
  }
  const size_t at = static_cast<size_t>(std::find(host.begin(), host.end(), me) - host.begin());
  std::set<int> neighbours = {host[(at + 1) % host.size()], host[(at + host.size() - 1) % host.size()]};
  neighbours.erase(me);
  s.ledger.compareWith(std::vector<int>(neighbours.begin(), neighbours.end()));
  return Status::ok();
}

// Across hosts: the lowest rank of each host links its ledger with those of the hosts before and
// after it (hosts in the order of their lowest ranks, a cycle) over the network; a thread per link
// hands the entries that arrive to the ledger.
Status CudaEngine::linkLedgers(const std::vector<transport::PeerIdentity>& ids) {
  State& s = *s_;
  auto* net = static_cast<transport::NetDeviceTransport*>(s.transports[static_cast<int>(transport::Kind::kNet)].get());
  if (net == nullptr) return Status::ok();
  const int me = s.o.rank;
  std::vector<int> leaders;  // each host's lowest rank, ascending
  for (int q = 0; q < s.o.nranks; ++q) {
    bool first = true;
    for (int p = 0; p < q && first; ++p) first = ids[p].host != ids[q].host;
    if (first) leaders.push_back(q);
  }
  const auto at = std::find(leaders.begin(), leaders.end(), me);
  if (at == leaders.end() || leaders.size() < 2) return Status::ok();
  const size_t i = static_cast<size_t>(at - leaders.begin()), n = leaders.size();
  std::set<int> linked = {leaders[(i + 1) % n], leaders[(i + n - 1) % n]};
  for (int peer : linked) {
    State::Link link;
    link.peer = peer;
    BRAID_RETURN_IF_ERROR(net->link(peer, &link.out, &link.in));
    s.ledger.addRemote(peer);
    s.ledgerLinks.push_back(link);
  }
  State* state = s_.get();
  for (const State::Link& link : s.ledgerLinks) {  // once every remote is added: the threads read them
    s.ledgerThreads.emplace_back(
        [state, link] { state->ledger.serveLink(link.peer, *link.out, *link.in, state->ledgerStop); });
  }
  BRAID_INFO(log::Subsys::kInit, "call ledger linked with rank(s) ", *linked.begin(),
             linked.size() > 1 ? " and " + std::to_string(*linked.rbegin()) : std::string(), " on other hosts");
  return Status::ok();
}

bool CudaEngine::stopped(Status* why) const { return s_ && s_->ledger.stopped(why); }

void CudaEngine::abort() {
  if (s_ && s_->abortHost != nullptr) *reinterpret_cast<volatile int*>(s_->abortHost) = 1;
  if (s_) s_->unblockCopyEngines();
}

}  // namespace braid::exec
