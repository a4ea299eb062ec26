#include "core/comm.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
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
