// A GPU communicator's side of Comm: its plan and tuner, its engine's connections (FIFOs, the
// one-shot's and the copy-engine path's buffers, agreed by every rank), the call a request becomes,
// and the engine's watch, notes and verdicts.
#include <algorithm>
#include <string>
#include <vector>

#include "core/comm.h"
#include "core/datatype.h"
#include "core/host_engine.h"
#include "core/log.h"
#include "core/param.h"
#include "core/plan.h"
#include "exec/cuda_device.h"

namespace braid::core {

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
  std::string noCe;
  BRAID_RETURN_IF_ERROR(copyEngineSlots(param::getString(param::Id::kCe), param::getInt(param::Id::kCeSlotBytes), ids,
                                        o.oneShotBytes > 0, &o.ceSlotBytes, &noCe));
  if (rank_ == 0 && !noCe.empty()) BRAID_INFO(log::Subsys::kInit, "no copy-engine path: ", noCe);
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

}  // namespace braid::core
