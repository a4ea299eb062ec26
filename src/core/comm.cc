#include "core/comm.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/call_check.h"
#include "core/datatype.h"
#include "core/log.h"
#include "core/machine.h"
#include "core/param.h"
#include "core/plan.h"
#include "exec/cuda_device.h"
#include "topology/topo_xml.h"

namespace braid::core {
namespace {

uint64_t hashBytes(const void* data, size_t n) {
  // FNV-1a: a short, stable tag for log lines (not security).
  uint64_t h = 1469598103934665603ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

uint64_t hostHash() {
  std::string id = hostIdentity();
  return hashBytes(id.data(), id.size());
}

}  // namespace

Status resolveDevice(DeviceKind kind, int requested, int* device) {
  *device = -1;
  if (kind == DeviceKind::kHost) return Status::ok();  // no CUDA call: its first one costs ~0.5 s
  std::string why;
  int count = exec::cudaDeviceCount(&why);
  if (kind == DeviceKind::kAuto && count == 0) return Status::ok();
  if (count == 0) {
    return invalidUsage("a CUDA communicator was asked for (config deviceKind or BRAID_DEVICE=cuda) but " + why);
  }
  if (requested == kCurrentDevice) return exec::cudaCurrentDevice(device);
  if (requested < 0 || requested >= count) {
    return invalidArgument("CUDA device " + std::to_string(requested) + " does not exist (this machine has " +
                           std::to_string(count) + ")");
  }
  *device = requested;
  return exec::cudaSelectDevice(requested);
}

Comm::Comm(const InitArgs& args)
    : rank_(args.rank), nranks_(args.nranks), config_(args.config), checkCalls_(param::getInt(param::Id::kCheck) != 0) {
  idHash_ = hashBytes(args.id.bytes, sizeof(args.id.bytes));
}

Comm::~Comm() {
  if (initThread_.joinable()) {
    // A non-blocking init still under way is stopped; one that has finished leaves a communicator
    // like any other, whose destroy waits for its work (aborting it would cut its kernels short).
    if (state_.load(std::memory_order_acquire) == State::kInitializing) abort();
    initThread_.join();
  }
  stopExportService();
}

Status Comm::start(const InitArgs& args, std::shared_ptr<Comm>* out) {
  param::warnUnknownOnce();
  log::logVersionOnce(log::concat("braid version ", BRAID_MAJOR, ".", BRAID_MINOR, ".", BRAID_PATCH));
  std::shared_ptr<Comm> comm(new Comm(args));
  BRAID_RETURN_IF_ERROR(resolveDevice(args.config.deviceKind, args.cudaDevice, &comm->cudaDevice_));
  if (args.config.blocking) {
    comm->runInit(args.id);
    BRAID_RETURN_IF_ERROR(comm->asyncError());
  } else {
    Comm* raw = comm.get();
    bootstrap::UniqueIdBytes id = args.id;
    comm->initThread_ = std::thread([raw, id] {
      if (raw->cudaDevice_ >= 0) exec::cudaSelectDevice(raw->cudaDevice_).ignore();  // the device is per thread
      raw->runInit(id);
    });
  }
  *out = std::move(comm);
  return Status::ok();
}

void Comm::runInit(const bootstrap::UniqueIdBytes& id) {
  log::ScopedRank scoped(rank_);
  Status s = init(id);
  if (s.isOk()) {
    state_.store(State::kReady, std::memory_order_release);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(errorMu_);
    error_ = s;
  }
  state_.store(State::kFailed, std::memory_order_release);
}

Status Comm::init(const bootstrap::UniqueIdBytes& id) {
  // Registered before the bootstrap: a peer thread whose init completes finds this rank's FIFOs.
  if (cudaDevice_ < 0) host_ = std::make_unique<HostEngine>(idHash_, rank_, nranks_, config_, &abortFlag_);
  bootstrap::Options options;
  options.timeoutMs = config_.timeoutMs;
  options.abort = &bootstrapAbort_;
  BRAID_RETURN_IF_ERROR(bootstrap::Bootstrap::create(id, rank_, nranks_, options, &bootstrap_));
  BRAID_RETURN_IF_ERROR(exchangePeerInfo());
  BRAID_RETURN_IF_ERROR(dumpTopology());
  if (cudaDevice_ >= 0) BRAID_RETURN_IF_ERROR(planGpu());
  if (cudaDevice_ >= 0) BRAID_RETURN_IF_ERROR(connectGpu());
  BRAID_INFO(log::Subsys::kInit, "comm ", std::hex, idHash_, std::dec, " rank ", rank_, " of ", nranks_, " ready on ",
             cudaDevice_ >= 0 ? "CUDA device " + std::to_string(cudaDevice_) : std::string("host memory"));
  return Status::ok();
}

// A GPU communicator gathers its machine, searches its rings and makes its tuner (logged by rank 0).
// Bad BRAID_ALGO / BRAID_PROTO / channel bounds fail the init; a topology that cannot be made sense
// of is a warning (the default ring is used).
Status Comm::planGpu() {
  tune::Tuner check;
  BRAID_RETURN_IF_ERROR(tune::Tuner::create(tune::Machine{}, tunerConfig(config_), &check));
  Status s = makeGpuPlan(*bootstrap_, cudaDevice_, config_, &plan_);
  if (!s.isOk()) {
    BRAID_WARN(log::Subsys::kGraph, "no topology plan, the ring follows rank order: ", s.message());
    plan_ = CommPlan{};
    topology::RingChannel ring;
    for (int r = 0; r < nranks_; ++r) ring.ranks.push_back(r);
    plan_.search.rings.push_back(ring);
    return tune::Tuner::create(tune::gpuMachine(plan_.search, nranks_), tunerConfig(config_), &plan_.tuner);
  }
  return Status::ok();
}

// The GPU engine: this rank's FIFOs for the plan's ring and trees on as many channels as the tuner
// may ever ask for, exchanged through the bootstrap and mapped.
Status Comm::connectGpu() {
  exec::CudaEngineOptions o;
  o.rank = rank_;
  o.nranks = nranks_;
  o.device = cudaDevice_;
  const tune::Tuner& t = plan_.tuner;
  auto bounded = [&](int found) { return std::max(t.minChannels(), std::min(std::max(1, found), t.maxChannels())); };
  o.fullChannels = bounded(t.machine().channels);
  o.channels = std::max(o.fullChannels, bounded(t.machine().ringChannels));
  // Threads per CTA and bytes per pipeline step, each checked against its documented range.
  struct Range {
    param::Id id;
    int64_t lo, hi, multiple;
  };
  for (const Range& r :
       {Range{param::Id::kNThreads, 64, 1024, 32}, Range{param::Id::kGpuSimpleBytes, 4096, 4 << 20, 4096},
        Range{param::Id::kGpuLlBytes, 1024, 256 << 10, 1024}, Range{param::Id::kGpuLl128Bytes, 3840, 256 * 3840, 3840},
        Range{param::Id::kGpuOneShotBytes, 0, 16 << 20, 1024}}) {
    int64_t v = param::getInt(r.id);
    if (v < r.lo || v > r.hi || v % r.multiple != 0) {
      return invalidArgument(std::string(param::spec(r.id).name) + "=" + std::to_string(v) + " is not a multiple of " +
                             std::to_string(r.multiple) + " from " + std::to_string(r.lo) + " to " +
                             std::to_string(r.hi));
    }
  }
  o.threads = static_cast<int>(param::getInt(param::Id::kNThreads));
  o.simpleSlotBytes = static_cast<size_t>(param::getInt(param::Id::kGpuSimpleBytes));
  o.llSlotBytes = static_cast<size_t>(param::getInt(param::Id::kGpuLlBytes));
  o.ll128SlotBytes = static_cast<size_t>(param::getInt(param::Id::kGpuLl128Bytes));
  // Host memory for everyone when any rank asks (BRAID_P2P_DISABLE) or any rank cannot reach a GPU of
  // its host directly: one exchange of the verdicts (the identities are known since init).
  const std::vector<transport::PeerIdentity>& ids = identities_;
  std::vector<int32_t> noPeerAccess(nranks_, 0);
  noPeerAccess[rank_] = ids[rank_].noP2p;
  for (int r = 0; r < nranks_; ++r) {
    if (ids[r].host == ids[rank_].host && !exec::CudaEngine::peerAccess(cudaDevice_, ids[r].device)) {
      noPeerAccess[rank_] = 1;
    }
  }
  BRAID_RETURN_IF_ERROR(
      bootstrap_->allGather(noPeerAccess.data(), sizeof(int32_t)).withContext("exchanging GPU peer access"));
  for (int32_t no : noPeerAccess) o.hostMemory = o.hostMemory || no != 0;
  // Ranks sharing a GPU (tests on one GPU) only progress if all their CTAs are resident at once:
  // keep ranks x channels within half the SMs (a 1024-thread CTA may take a whole SM). Every rank
  // computes the same cap from the same identities, as the arena layout requires.
  int sharing = 1, sms = 0;
  for (const transport::PeerIdentity& p : ids) {
    int same = 0;
    for (const transport::PeerIdentity& q : ids) same += q.host == p.host && q.device == p.device;
    sharing = std::max(sharing, same);
    sms = sms == 0 ? p.sms : std::min(sms, p.sms);
  }
  if (sharing > 1 && sms > 0) o.channels = std::max(1, std::min(o.channels, sms / 2 / sharing));
  o.fullChannels = std::min(o.fullChannels, o.channels);
  // The search's ring, with each rank's host for the hierarchical algorithms (algo/hier.h).
  std::vector<uint64_t> hostIds;
  std::vector<int> hostOf(nranks_);
  for (int r = 0; r < nranks_; ++r) {
    auto it = std::find(hostIds.begin(), hostIds.end(), ids[r].host);
    hostOf[r] = static_cast<int>(it - hostIds.begin());
    if (it == hostIds.end()) hostIds.push_back(ids[r].host);
  }
  o.geometry = algo::makeGeometry(plan_.search.rings.front().ranks, hostOf);
  o.spansHosts = hostIds.size() > 1;
  if (o.spansHosts) {
    // Peers on other hosts are reached through FIFOs in pinned host memory and a network proxy
    // (transport/net/net_device.cc): 2 x 4 MiB of it per connection and channel, and a network slower than any
    // GPU link. Two channels, as NCCL uses per NIC.
    o.channels = std::min(o.channels, 2);
    o.fullChannels = std::min(o.fullChannels, 2);
    o.netAddress = bootstrap_->peerAddresses()[rank_];
    o.timeoutMs = config_.timeoutMs;
    o.onNetworkFailure = [this](const std::string& why) { failOnRemoteError(remoteError(why)).ignore(); };
  }
  if (o.hostMemory) {
    // Pinned shared memory is scarce (/dev/shm) and slower than NVLink: fewer, smaller FIFOs.
    o.channels = std::min(o.channels, 2);
    o.fullChannels = std::min(o.fullChannels, 2);
    o.simpleSlotBytes = std::min<size_t>(o.simpleSlotBytes, 128 * 1024);
    o.llSlotBytes = std::min<size_t>(o.llSlotBytes, 8 * 1024);
    o.ll128SlotBytes = 3840;  // never used: host memory does not deliver 128-byte stores whole
  }
  // The one-shot algorithm, for ranks that reach each other's GPU memory (oneShotBlockLimit says how
  // many ranks and how much). Its CTAs need no FIFOs, so it may use more of them than the rings
  // found, except where ranks share a GPU (all CTAs must be resident at once).
  if (!o.hostMemory && !o.spansHosts) {
    o.oneShotBytes = exec::oneShotBlockLimit(nranks_, static_cast<size_t>(param::getInt(param::Id::kGpuOneShotBytes)));
    o.oneShotChannels = o.oneShotBytes == 0 ? 0 : sharing > 1 ? o.channels : device::kMaxOneShotChannels;
  }
  plan_.tuner.setOneShot(o.oneShotBytes, o.oneShotChannels);
  // The copy-engine path (BRAID_CE): slots for ranks of one host that reach each other's GPU memory;
  // whether they all do is known once connected (CudaEngine::copyEngineCtas).
  const std::string ce = param::getString(param::Id::kCe);
  if (ce != "0" && ce != "1" && ce != "auto") return invalidArgument("BRAID_CE='" + ce + "': must be 0, 1 or auto");
  // None where two ranks of one process share a GPU: a side stream waiting for a word holds its
  // hardware queue, and the driver deals a context's queues to its streams in turn, so the other
  // rank's kernel may queue behind a wait for that very kernel, a hang (docs/gpu.md). Every rank
  // sees the same identities and decides alike, as the arena layout requires.
  int sharedA = -1, sharedB = -1;
  for (int a = 0; a < nranks_ && sharedA < 0; ++a) {
    for (int b = a + 1; b < nranks_ && sharedA < 0; ++b) {
      if (ids[a].pid == ids[b].pid && ids[a].host == ids[b].host && ids[a].device == ids[b].device) {
        sharedA = a;
        sharedB = b;
      }
    }
  }
  if (ce != "0" && o.oneShotBytes > 0 && sharedA >= 0) {
    if (rank_ == 0)
      BRAID_INFO(log::Subsys::kInit, "no copy-engine path: ranks ", sharedA, " and ", sharedB,
                 " share a process and CUDA device ", ids[sharedA].device,
                 " (their streams' waits could block each other's hardware queues); run them as processes");
  } else if (ce != "0" && o.oneShotBytes > 0) {
    o.ceSlotBytes =
        exec::ceSlotLimit(nranks_, static_cast<size_t>(std::max<int64_t>(0, param::getInt(param::Id::kCeSlotBytes))));
  }
  plan_.tuner.setLl128Capable(!o.hostMemory);
  tune::Tuner::EngineLimits limits;
  limits.ringChannels = o.channels;
  limits.channels = o.fullChannels;
  limits.slotBytes[static_cast<int>(tune::Proto::kSimple)] = o.simpleSlotBytes;
  limits.slotBytes[static_cast<int>(tune::Proto::kLL)] = o.llSlotBytes;
  limits.slotBytes[static_cast<int>(tune::Proto::kLL128)] = o.ll128SlotBytes;
  limits.directChannels = std::min(o.channels, device::kMaxDirectCtas);
  plan_.tuner.setEngineLimits(limits);
  std::vector<GpuLayoutSettings> layouts(nranks_);
  layouts[rank_] = {static_cast<int64_t>(o.simpleSlotBytes),
                    static_cast<int64_t>(o.llSlotBytes),
                    static_cast<int64_t>(o.ll128SlotBytes),
                    static_cast<int64_t>(o.oneShotBytes),
                    o.channels,
                    o.fullChannels,
                    static_cast<int64_t>(o.ceSlotBytes)};
  BRAID_RETURN_IF_ERROR(
      bootstrap_->allGather(layouts.data(), sizeof(GpuLayoutSettings)).withContext("exchanging GPU buffer layouts"));
  BRAID_RETURN_IF_ERROR(checkLayoutAgreement(layouts));
  o.commKey = instanceKey_;
  o.watch = watch_ != nullptr;
  o.describeTag = HostEngine::describeTag;
  BRAID_RETURN_IF_ERROR(exec::CudaEngine::create(o, &gpu_));
  std::vector<transport::DeviceOffer> all(nranks_);
  all[rank_] = gpu_->exported();
  BRAID_RETURN_IF_ERROR(
      bootstrap_->allGather(all.data(), sizeof(transport::DeviceOffer)).withContext("exchanging GPU buffer handles"));
  BRAID_RETURN_IF_ERROR(gpu_->connect(identities_, all));
  // Serving peers' exports before the last exchange: a peer done with init may register at once.
  if (exports_ != nullptr) {
    exec::CudaEngine* engine = gpu_.get();
    exports_->serve(instanceKey_, ExportTarget{[engine](const uint8_t* ipc, uint64_t* at) {
                                                 return engine->importAllocation(ipc, at);
                                               },
                                               [engine](const uint8_t* ipc) { engine->releaseAllocation(ipc); }});
  }
  // Every rank has mapped its peers' arenas: the shared-memory names can go. The same exchange
  // agrees on the copy-engine reducer's CTAs (the fewest any rank offers; 0 where one has no path),
  // which the tuner's decisions, the same on every rank, depend on.
  // BRAID_CE=1 holds where every rank set it (the lowest bit).
  std::vector<int> mapped(nranks_, 0);
  mapped[rank_] = 2 * gpu_->copyEngineCtas() + (param::getString(param::Id::kCe) == "1" ? 1 : 0);
  BRAID_RETURN_IF_ERROR(bootstrap_->allGather(mapped.data(), sizeof(int)).withContext("GPU connections"));
  gpu_->connected();
  const int agreed = *std::min_element(mapped.begin(), mapped.end());
  bool forced = true;
  for (int m : mapped) forced = forced && (m & 1) != 0;
  gpu_->limitCopyEngines(agreed / 2);
  plan_.tuner.setCopyEngine(agreed / 2, forced);
  if (rank_ == 0 && agreed / 2 == 0 && param::getString(param::Id::kCe) == "1")
    BRAID_WARN(log::Subsys::kInit,
               "BRAID_CE=1 but this communicator has no copy-engine path (each rank's log "
               "says why where it had none)");
  if (watch_ != nullptr) startGpuWatch();
  // Rank 0 logs the plan now that the tuner knows the one-shot's limits (not when the topology could
  // not be planned: the default ring was warned about).
  if (rank_ == 0 && !plan_.system.hosts.empty()) logPlan(plan_);
  return Status::ok();
}

exec::CudaCall Comm::gpuCall(const CollRequest& r) {
  exec::CudaCall call;
  static_cast<algo::Call&>(call) = r;
  call.direct = gpu_->directCalls() && directBuffers(r, &call);
  plan_.tuner.plan(&call, typeSize(r.type));
  return call;
}

// Whether the buffers `r` uses on this rank let the call run direct: the input every rank reads
// (the root's alone in a broadcast) and the output every rank writes (the root's alone in a reduce)
// lie in its registrations; across processes, in exported windows or buffers (comm_windows.cc,
// comm_buffers.cc), and `call` gets where each peer sees them.
bool Comm::directBuffers(const CollRequest& r, exec::CudaCall* call) {
  const size_t es = typeSize(r.type);
  const size_t in = algo::inputElems(r.coll, r.count, nranks_) * es,
               out = algo::outputElems(r.coll, r.count, nranks_) * es;
  const bool reads = r.coll != algo::Coll::kBroadcast || r.root == rank_;
  const bool writes = r.coll != algo::Coll::kReduce || r.root == rank_;
  const bool across = gpu_->windowsAcrossProcesses();
  auto lies = [&](const void* p, size_t bytes, int64_t* shifts) {
    return across ? exportedShifts(p, bytes, shifts) : registrations_.covers(p, bytes);
  };
  return (!reads || lies(r.sendbuff, in, call->inputShift)) && (!writes || lies(r.recvbuff, out, call->outputShift));
}

// With BRAID_TOPO_DUMP_FILE, the ranks gather their hosts' topologies and rank 0 writes them.
Status Comm::dumpTopology() {
  std::string path = param::getString(param::Id::kTopoDumpFile);
  if (path.empty()) return Status::ok();
  topology::System system;
  BRAID_RETURN_IF_ERROR(communicatorTopology(*bootstrap_, &system));
  if (rank_ != 0) return Status::ok();
  BRAID_RETURN_IF_ERROR(topology::writeTopologyFile(path, system).withContext("BRAID_TOPO_DUMP_FILE"));
  BRAID_INFO(log::Subsys::kGraph, "topology of ", system.hosts.size(), " host(s) written to ", path);
  return Status::ok();
}

// Every rank's identity (transport/transport.h), its network transport's handle, its watchdog's
// port and a nonce, in one exchange: what decides the transport to each peer, here and in the
// GPU engine.
Status Comm::exchangePeerInfo() {
  struct PeerInfo {
    transport::PeerIdentity identity;
    transport::NetHandle netHandle;
    uint64_t watchPort;   // this rank's watchdog listener; 0: BRAID_TIMEOUT off there
    uint64_t exportPort;  // this rank's export service (comm_buffers.cc); 0: a host-memory rank
    uint64_t nonce;       // random: rank 0's names this instance of the communicator (instanceKey)
  };
  std::vector<PeerInfo> peers(nranks_);
  PeerInfo& mine = peers[rank_];
  mine.identity.pid = static_cast<int64_t>(getpid());
  mine.identity.host = hostHash();
  mine.identity.cpus = HostEngine::availableCpus();
  mine.identity.device = cudaDevice_;
  mine.identity.noP2p = param::getInt(param::Id::kP2pDisable) != 0 ? 1 : 0;
  if (cudaDevice_ >= 0) {  // (a host-memory communicator does not start the CUDA runtime)
    for (const exec::CudaDeviceInfo& d : exec::cudaDevices()) {
      if (d.ordinal != cudaDevice_) continue;
      mine.identity.sms = d.multiprocessors;
      std::snprintf(mine.identity.busId, sizeof(mine.identity.busId), "%s", d.busId.c_str());
    }
  }
  mine.nonce = bootstrap::randomBits();
  if (host_ != nullptr) {
    BRAID_RETURN_IF_ERROR(host_->listen(bootstrap_->peerAddresses()[rank_], &mine.netHandle));
    host_->networkSpeedAndLatency(&mine.identity.netMbps, &mine.identity.netLatencyUs);
  }
  uint16_t port = 0;
  BRAID_RETURN_IF_ERROR(startWatch(&port));
  mine.watchPort = port;
  BRAID_RETURN_IF_ERROR(startExportService());
  mine.exportPort = exports_ != nullptr ? exports_->port() : 0;
  BRAID_RETURN_IF_ERROR(bootstrap_->allGather(peers.data(), sizeof(PeerInfo)).withContext("exchanging peer info"));
  const uint64_t key[2] = {idHash_, peers[0].nonce};
  instanceKey_ = hashBytes(key, sizeof(key));
  identities_.clear();
  for (const PeerInfo& p : peers) identities_.push_back(p.identity);
  exportServices_ = bootstrap_->peerAddresses();
  for (int r = 0; r < nranks_; ++r) exportServices_[r].setPort(static_cast<uint16_t>(peers[r].exportPort));
  if (watch_ != nullptr) {
    watchListeners_ = bootstrap_->peerAddresses();
    for (int r = 0; r < nranks_; ++r) watchListeners_[r].setPort(static_cast<uint16_t>(peers[r].watchPort));
    // A GPU communicator's watch starts once its engine exists (connectGpu).
    if (host_ != nullptr) watch_->setPeers(std::move(watchListeners_));
  }
  if (host_ == nullptr) return Status::ok();
  std::vector<transport::NetHandle> handles;
  for (const PeerInfo& p : peers) handles.push_back(p.netHandle);
  return host_->setPeers(identities_, std::move(handles), instanceKey_);
}

Status Comm::collective(const CollRequest& request) { return collectives({request}); }

// Checks every call (with BRAID_CHECK_CALLS) in order, then runs them: on host memory one after
// another, on a GPU as CudaEngine::runBatch cuts them into launches.
Status Comm::collectives(const std::vector<CollRequest>& requests) {
  BRAID_RETURN_IF_ERROR(checkUsable());
  std::unique_lock<std::mutex> checked(checkMu_, std::defer_lock);
  if (checkCalls_) checked.lock();
  std::vector<exec::CudaCall> calls;
  std::vector<std::vector<char>> hostCopies;          // pre-multiplied inputs, host memory
  std::vector<std::pair<void*, void*>> deviceCopies;  // and on a GPU: (scratch, stream)
  for (CollRequest r : requests) {
    if (checkCalls_) BRAID_RETURN_IF_ERROR(checkCollective(*bootstrap_, r, ++callSeq_));
    if (r.count == 0) continue;
    if (r.preMul) BRAID_RETURN_IF_ERROR(preMultiply(&r, &hostCopies, &deviceCopies));
    if (nranks_ == 1) {
      BRAID_RETURN_IF_ERROR(oneRankCall(r));
      continue;
    }
    if (gpu_ != nullptr) {
      calls.push_back(gpuCall(r));
      calls.back().note = gpuNote(&r);
      if (calls.back().direct) calls.back().note.tag.kind |= exec::kDirectTagBit;
    } else {
      BRAID_RETURN_IF_ERROR(hostResult(host_->run(r)));
    }
  }
  Status st = calls.empty() ? Status::ok() : gpuResult(gpu_->runBatch(calls.data(), calls.size()));
  for (const auto& [scratch, stream] : deviceCopies) {
    Status freed = gpu_->releaseScratch(scratch, stream);  // after the launches, in stream order
    if (st.isOk()) st = freed;
  }
  return st;
}

// BRAID_TIMEOUT (core/watchdog.h): a listener for the peers' state queries, and the action on a
// stall: abort ends the call (its waits see the abort flag) and fails the communicator with the
// report, which the call returns.
Status Comm::startWatch(uint16_t* port) {
  WatchSettings settings;
  BRAID_RETURN_IF_ERROR(watchSettings(&settings));
  if (settings.timeoutMs == 0) return Status::ok();
  watch_ = std::make_unique<CallWatch>(idHash_, rank_, nranks_, settings, HostEngine::describeTag,
                                       [this](const Status& report) {
                                         {
                                           std::lock_guard<std::mutex> lock(errorMu_);
                                           error_ = report;
                                           state_.store(State::kFailed, std::memory_order_release);
                                         }
                                         abortFlag_.store(true, std::memory_order_release);
                                         if (gpu_ != nullptr) gpu_->abort();  // its kernels give up
                                       });
  BRAID_RETURN_IF_ERROR(watch_->listen(bootstrap_->peerAddresses()[rank_], port));
  if (host_ != nullptr) host_->setWatch(watch_.get());
  return Status::ok();
}

// BRAID_TIMEOUT on a GPU: the watch reads the engine (which launch runs, where its lanes wait).
void Comm::startGpuWatch() {
  exec::CudaEngine* engine = gpu_.get();
  watch_->setSampler([engine](WatchSample* out) {
    exec::GpuWatchSample g;
    engine->watchSample(&g);
    WatchState& s = out->state;
    s.seq = g.note.seq;
    s.collectives = g.note.collectives;
    s.tag = g.note.tag;
    s.inCall = g.busy ? 1 : 0;
    s.steps = g.step;
    s.waitingOn = g.waitingOn;
    s.gpu = !g.busy ? 0 : g.notStarted ? 2 : 1;
    out->progress = g.progress;
    out->detail = g.detail;
  });
  watch_->setPeers(std::move(watchListeners_));
}

// The call note of a GPU collective or send/recv group: its tag for the call ledger (always), and
// for the watchdog's report.
exec::CallNote Comm::gpuNote(const CollRequest* collective) {
  exec::CallNote n;
  n.seq = ++gpuCalls_;
  if (collective != nullptr) {
    n.tag = collectiveTag(*collective, ++gpuCollectives_);
  } else {
    n.tag.kind = exec::kP2pTagKind;
  }
  n.collectives = gpuCollectives_;
  return n;
}

// A GPU launch's result: once the call ledger found mismatched calls (this one, or a neighbour's),
// the communicator has failed with the ledger's verdict, which the call returns.
Status Comm::gpuResult(Status s) {
  Status why;
  return gpuStopped(&why) ? why : s;
}

// Whether a rank stopped the kernels on mismatched calls (exec/call_ledger.h): the communicator
// fails with the verdict, which `*why` gets. The verdict replaces an earlier failure: that was its
// consequence (a peer's network connection closed as the peer stopped on it).
bool Comm::gpuStopped(Status* why) const {
  State now = state();
  if ((now != State::kReady && now != State::kFailed) || gpu_ == nullptr || !gpu_->stopped(why)) return false;
  std::lock_guard<std::mutex> lock(errorMu_);
  // Only a ready or failed communicator takes the verdict: a finalize meanwhile stays.
  while (now == State::kReady || now == State::kFailed) {
    if (state_.compare_exchange_weak(now, State::kFailed, std::memory_order_acq_rel)) {
      error_ = *why;
      return true;
    }
  }
  return false;
}

// A host call's result: the watchdog's report when it ended the call, else as failOnRemoteError.
Status Comm::hostResult(Status s) {
  Status report;
  if (!s.isOk() && watch_ != nullptr && watch_->stalled(&report)) return report;
  return failOnRemoteError(std::move(s));
}

// A call that failed midway leaves FIFOs out of step with the peers: the communicator is unusable
// from then on, and says why.
Status Comm::failOnRemoteError(Status s) {
  if (s.code() == Code::kRemoteError) {
    std::lock_guard<std::mutex> lock(errorMu_);
    error_ = s;
    state_.store(State::kFailed, std::memory_order_release);
  }
  return s;
}

const tune::Tuner* Comm::tuner() const {
  return host_ != nullptr ? &host_->tuner() : plan_.search.rings.empty() ? nullptr : &plan_.tuner;
}

double Comm::estimateUs(const CollRequest& request) const {
  const tune::Tuner* t = tuner();
  CollRequest call = request;
  return t == nullptr ? 0 : t->plan(&call, typeSize(request.type));
}

double Comm::estimateUs(const P2pRequest& request) const {
  const tune::Tuner* t = tuner();
  if (t == nullptr) return 0;
  const tune::Machine& m = t->machine();
  return m.baseUs + m.intraHopUs + static_cast<double>(request.count * typeSize(request.type)) / (m.channelGBs * 1e3);
}

Status Comm::p2p(const std::vector<P2pRequest>& requests) {
  BRAID_RETURN_IF_ERROR(checkUsable());
  std::unique_lock<std::mutex> checked(checkMu_, std::defer_lock);
  if (checkCalls_) {
    checked.lock();
    BRAID_RETURN_IF_ERROR(checkSendRecv(*bootstrap_, requests, ++callSeq_));
  }
  if (gpu_ != nullptr) return runGpuP2p(requests);
  return hostResult(host_->runP2p(requests));
}

// A group's sends and receives on a GPU: one kernel on the group's stream, messages as byte ranges
// from the lowest send and the lowest receive address.
Status Comm::runGpuP2p(const std::vector<P2pRequest>& requests) {
  if (requests.empty()) return Status::ok();
  void* stream = requests.front().stream;
  for (const P2pRequest& r : requests) {
    if (r.stream != stream) {
      return invalidUsage("the sends and receives of one group on a GPU communicator must use one stream");
    }
  }
  P2pMessages m = p2pMessages(requests);
  return gpu_->runP2p(std::move(m.sends), std::move(m.recvs), m.sendBase, m.recvBase, stream, gpuNote(nullptr));
}

Status Comm::checkUsable() const {
  // A communicator the watchdog failed is also aborted: its report says more than "aborted".
  Status why;
  if (gpuStopped(&why)) return why.withContext("the communicator failed earlier");
  if (aborted() && state() != State::kFailed) return invalidUsage("the communicator was aborted");
  switch (state()) {
    case State::kReady: return Status::ok();
    case State::kInitializing:
      return invalidUsage(
          "the communicator is still initializing (non-blocking init); wait until "
          "braidCommGetAsyncError reports braidSuccess");
    case State::kFailed: return asyncError().withContext("the communicator failed earlier");
    case State::kFinalized: return invalidUsage("the communicator was finalized; only destroy is allowed");
  }
  return internalError("unknown communicator state");
}

Status Comm::asyncError() const {
  Status why;
  if (gpuStopped(&why)) return why;
  switch (state()) {
    case State::kInitializing: return Status(Code::kInProgress, "the communicator is still initializing");
    case State::kFailed: {
      std::lock_guard<std::mutex> lock(errorMu_);
      return error_;
    }
    default: return aborted() ? Status(Code::kRemoteError, "the communicator was aborted") : Status::ok();
  }
}

Status Comm::finalize() {
  BRAID_RETURN_IF_ERROR(checkUsable());
  state_.store(State::kFinalized, std::memory_order_release);
  return Status::ok();
}

void Comm::abort() {
  bootstrapAbort_.store(true, std::memory_order_release);
  abortCalls();
}

void Comm::abortCalls() {
  abortFlag_.store(true, std::memory_order_release);
  // While a non-blocking init runs, its thread is still making host_ and gpu_: the flag alone stops
  // this rank's waits then. Once init has ended, its state store (release) has published them.
  // (Reading host_ first raced with init's assignment: ThreadSanitizer, Comm.AbortStopsAnInit...)
  if (state() == State::kInitializing) return;
  // Peers waiting on this rank stop too.
  if (host_ != nullptr) host_->closeConnections();
  if (gpu_ != nullptr) gpu_->abort();
}

}  // namespace braid::core
