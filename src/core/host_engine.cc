#include "core/host_engine.h"

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>
#include <thread>

#include "core/datatype.h"
#include "core/log.h"
#include "core/param.h"
#include "core/watchdog.h"
#include "tune/constants.h"

static_assert(braid::algo::kNumConnIds <= braid::transport::kMaxConnIds,
              "the links' lock-free cache holds every connection id");

namespace braid::core {

transport::CallTag collectiveTag(const CollRequest& r, uint32_t seq) {
  const bool rooted = r.coll == algo::Coll::kBroadcast || r.coll == algo::Coll::kReduce;
  const bool reduces =
      r.coll == algo::Coll::kAllReduce || r.coll == algo::Coll::kReduce || r.coll == algo::Coll::kReduceScatter;
  transport::CallTag t;
  t.count = r.count;
  t.seq = seq;
  t.root = rooted ? r.root : -1;
  t.kind = static_cast<uint8_t>(1 + static_cast<int>(r.coll));
  t.type = static_cast<uint8_t>(r.type);
  t.op = reduces ? static_cast<uint8_t>(r.op) : 0;
  return t;
}

namespace {

transport::HostLinkOptions linkOptions(uint64_t commKey, int rank, int nranks, int slots, size_t slotBytes,
                                       int64_t timeoutMs, const std::atomic<bool>* abort) {
  transport::HostLinkOptions o;
  o.commKey = commKey;
  o.rank = rank;
  o.nranks = nranks;
  o.slots = slots;
  o.slotBytes = slotBytes;
  o.timeoutMs = timeoutMs;
  o.abort = abort;
  return o;
}

// BRAID_STEPS, 2 to transport::kMaxSteps (per-slot state of the FIFOs and network connections);
// a value outside is brought in, with a warning.
int stepsParam() {
  const int64_t asked = param::getInt(param::Id::kSteps);
  const int64_t steps = std::clamp<int64_t>(asked, 2, transport::kMaxSteps);
  if (steps != asked) {
    BRAID_WARN(log::Subsys::kInit, "BRAID_STEPS=", asked, " is outside 2 to ", transport::kMaxSteps, ": using ", steps);
  }
  return static_cast<int>(steps);
}
// BRAID_CHUNK_BYTES, or 0 (its default): chosen once the hosts are known (chunkFor).
size_t chunkParam() { return static_cast<size_t>(std::max<int64_t>(0, param::getInt(param::Id::kChunkBytes))); }
constexpr size_t kHostChunkBytes = 128 * 1024;  // every rank on one host
// A communicator that spans hosts: over braid's socket network its sends leave the data in the
// caller's buffer, and 256 KiB slots keep what arrives in cache; through a plugin every slot is
// copied, and 1 MiB slots take fewer hand-offs (bench/NOTES.md, twenty-eighth and thirtieth
// sessions).
constexpr size_t kNetworkChunkBytes = 256 * 1024;
constexpr size_t kCopiedNetworkChunkBytes = 1024 * 1024;

// The slot size of a communicator over `hosts` hosts: BRAID_CHUNK_BYTES (at least 64) if set.
size_t chunkFor(size_t param, size_t hosts, bool byReference) {
  if (param != 0) return std::max<size_t>(64, param);
  if (hosts <= 1) return kHostChunkBytes;
  return byReference ? kNetworkChunkBytes : kCopiedNetworkChunkBytes;
}

}  // namespace

int HostEngine::availableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

HostEngine::HostEngine(uint64_t commKey, int rank, int nranks, const CommConfig& config, const std::atomic<bool>* abort)
    : rank_(rank),
      nranks_(nranks),
      config_(config),
      abort_(abort),
      steps_(stepsParam()),
      chunkBytes_(chunkFor(chunkParam(), 1, false)),
      geometry_(algo::defaultGeometry(nranks)),
      links_(linkOptions(commKey, rank, nranks, steps_, chunkBytes_, config.timeoutMs, abort)) {}

Status HostEngine::listen(const net::SocketAddress& interfaceAddress, transport::NetHandle* handle) {
  return links_.listen(interfaceAddress, handle);
}

Status HostEngine::setPeers(const std::vector<transport::PeerIdentity>& peers,
                            std::vector<transport::NetHandle> handles, uint64_t shmKey) {
  const transport::PeerIdentity& me = peers[rank_];
  bool shmDisabled = param::getInt(param::Id::kShmDisable) != 0;
  int local = static_cast<int>(
      std::count_if(peers.begin(), peers.end(), [&](const transport::PeerIdentity& p) { return p.host == me.host; }));
  const bool busyPoll = local <= availableCpus();  // every rank of this host has a CPU
  links_.setBusyPoll(busyPoll);
  std::vector<uint64_t> hosts;
  for (const transport::PeerIdentity& p : peers) {
    if (std::find(hosts.begin(), hosts.end(), p.host) == hosts.end()) hosts.push_back(p.host);
  }
  // The ring visits each host's ranks together (in rank order), so that it crosses between hosts
  // once per host; the hierarchical algorithms see the hosts (algo/hier.h).
  std::vector<int> hostOf(nranks_), order;
  for (int r = 0; r < nranks_; ++r)
    hostOf[r] = static_cast<int>(std::find(hosts.begin(), hosts.end(), peers[r].host) - hosts.begin());
  for (int hi = 0; hi < static_cast<int>(hosts.size()); ++hi) {
    for (int r = 0; r < nranks_; ++r) {
      if (hostOf[r] == hi) order.push_back(r);
    }
  }
  geometry_ = algo::makeGeometry(order, hostOf);
  chunkBytes_ = chunkFor(chunkParam(), hosts.size(), links_.sendsByReference());
  links_.setSlotBytes(chunkBytes_);
  // The link between hosts: the slowest network device's speed and the longest latency of any rank
  // (a rank whose network says nothing leaves the model's constants), the same on every rank.
  int netMbps = INT32_MAX;
  float netLatencyUs = 0;
  for (const transport::PeerIdentity& p : peers) {
    netMbps = std::min(netMbps, std::max(0, p.netMbps));
    netLatencyUs = std::max(netLatencyUs, p.netLatencyUs);
  }
  const double netGBs = netMbps / 8000.0;  // 0: some rank's network gives no speed
  tune::Machine machine =
      tune::hostMachine(nranks_, static_cast<int>(hosts.size()), shmDisabled && local > 1, netGBs, netLatencyUs);
  // A channel is a thread per rank: no more than the CPUs of a host give each of its ranks, on the
  // tightest host (from every rank's counts, so that all ranks decide alike).
  int cpusPerRank = 2;
  for (const transport::PeerIdentity& p : peers) {
    int ranksThere = static_cast<int>(
        std::count_if(peers.begin(), peers.end(), [&](const transport::PeerIdentity& q) { return q.host == p.host; }));
    cpusPerRank = std::min(cpusPerRank, p.cpus / std::max(1, ranksThere));
  }
  machine.channels = std::max(1, cpusPerRank);
  tune::TunerConfig tc = tunerConfig(config_);
  tc.hostChunkBytes = chunkBytes_;
  BRAID_RETURN_IF_ERROR(tune::Tuner::create(machine, tc, &tuner_));
  if (rank_ == 0) {
    std::string between;
    if (hosts.size() > 1) {
      const tune::Machine& m = tuner_.machine();  // (a tune file may have replaced them)
      const char* source = m.netGBs == (netGBs > 0 ? netGBs : tune::kHostNetGBs.value)
                               ? (netGBs > 0 ? "the network's speed" : "no speed given: the model's own")
                               : "BRAID_TUNE_FILE's";
      char text[160];
      std::snprintf(text, sizeof(text), "; between hosts a hop of %.1f us and a host's network of %.2f GB/s (%s)",
                    m.interHopUs, m.netGBs, source);
      between = text;
    }
    BRAID_INFO(log::Subsys::kTune, "host memory, ", nranks_, " ranks on ", hosts.size(), " host(s), ", machine.channels,
               " channel(s)", between, "; decisions (algorithm/protocol channels predicted time):\n",
               tuner_.table(size_t{1} << 30));
  }
  BRAID_INFO(log::Subsys::kInit, local, " rank(s) on this host, ", availableCpus(), " CPU(s) available: waits ",
             busyPoll ? "poll before yielding" : "yield the CPU at once", "; FIFO slots of ", chunkBytes_, " bytes");
  return links_.start(peers, std::move(handles), shmKey, shmDisabled);
}

void HostEngine::closeConnections() { links_.closeAll(); }

HostEngine::~HostEngine() {
  // A call the watchdog ended left its connections open for the peers' own reports; the peers
  // still waiting on them (one without the watchdog, say) stop now, naming this rank.
  if (openAfterStall_) closeConnections();
}

size_t sendElems(const CollRequest& r, int nranks) { return algo::inputElems(r.coll, r.count, nranks); }

CollRequest HostEngine::planned(const CollRequest& r) const {
  CollRequest call = r;
  tuner_.plan(&call, typeSize(r.type));
  return call;
}

// A call that failed leaves its connections out of step: close them, so that every peer still
// waiting on this rank stops too, and report why (a connection that could not be made first).
std::string HostEngine::describeTag(const transport::CallTag& t) {
  if (t.kind == exec::kP2pTagKind) return "send/recv";
  const int kind = t.kind & ~exec::kDirectTagBit;
  if (kind == 0 || kind > static_cast<int>(algo::Coll::kNumColls)) return "an untagged call";
  const auto coll = static_cast<algo::Coll>(kind - 1);
  std::string s = std::string(algo::collName(coll)) + " #" + std::to_string(t.seq) + " (" + std::to_string(t.count) +
                  " x " + typeName(static_cast<braidDataType_t>(t.type));
  if (coll == algo::Coll::kAllReduce || coll == algo::Coll::kReduce || coll == algo::Coll::kReduceScatter) {
    s += std::string(", ") + opName(static_cast<braidRedOp_t>(t.op));
  }
  if (t.root >= 0) s += ", root " + std::to_string(t.root);
  return s + ((t.kind & exec::kDirectTagBit) != 0 ? ", registered buffers)" : ")");
}

void HostEngine::setWatch(CallWatch* watch) {
  watch_ = watch;
  // A stalled call's report says where its network connections with the awaited peer stand.
  watch->setHostDetail([this](int peer) { return links_.describePeer(peer); });
}

// The call between the watchdog's begin and end, its FIFO steps counted.
Status HostEngine::watched(exec::HostCall* host, int algorithm, const std::function<Status()>& run) {
  if (watch_ == nullptr) return run();
  watch_->begin(host->tag, algorithm);
  host->progress = watch_->progress();
  Status s = run();
  watch_->end();
  return s;
}

Status HostEngine::finish(Status s) {
  Status connect = links_.takeError();
  if (!connect.isOk()) s = connect;
  // A call the watchdog ended keeps its connections: the peers stuck with it then report from
  // their own watchdogs instead of ending at once on "rank N gave up" (closed on destroy).
  Status report;
  if (!s.isOk() && watch_ != nullptr && watch_->stalled(&report)) {
    openAfterStall_ = true;
  } else if (!s.isOk()) {
    closeConnections();
  }
  return s;
}

P2pMessages p2pMessages(const std::vector<P2pRequest>& requests) {
  uintptr_t sendBase = UINTPTR_MAX, recvBase = UINTPTR_MAX;
  for (const P2pRequest& r : requests) {
    uintptr_t a = reinterpret_cast<uintptr_t>(r.buffer);
    if (r.count == 0) continue;
    uintptr_t& base = r.isSend ? sendBase : recvBase;
    base = std::min(base, a);
  }
  P2pMessages m;
  for (const P2pRequest& r : requests) {
    uintptr_t a = reinterpret_cast<uintptr_t>(r.buffer);
    size_t bytes = r.count * typeSize(r.type);
    algo::P2pOp op{r.peer, bytes ? a - (r.isSend ? sendBase : recvBase) : 0, bytes};
    (r.isSend ? m.sends : m.recvs).push_back(op);
  }
  m.sendBase = reinterpret_cast<const char*>(sendBase);
  m.recvBase = reinterpret_cast<char*>(recvBase);
  return m;
}

Status HostEngine::runP2p(const std::vector<P2pRequest>& requests) {
  P2pMessages m = p2pMessages(requests);
  std::vector<algo::P2pOp>& sends = m.sends;
  std::vector<algo::P2pOp>& recvs = m.recvs;
  std::lock_guard<std::mutex> lock(callMu_);
  exec::HostCall host;
  host.input = m.sendBase;
  host.output = m.recvBase;
  host.elemSize = 1;
  host.type = braidUint8;
  host.nranks = nranks_;
  host.rank = rank_;
  host.abort = abort_;
  host.tag.kind = exec::kP2pTagKind;
  host.describeTag = describeTag;
  return finish(watched(&host, -1, [&] {
    return exec::runHostP2p(std::move(sends), std::move(recvs), 1, chunkBytes_, host, links_, pool_);
  }));
}

Status HostEngine::run(const CollRequest& request) {
  std::lock_guard<std::mutex> lock(callMu_);
  const CollRequest call = planned(request);
  BRAID_TRACE(log::Subsys::kColl, algo::collName(call.coll), " count ", call.count, " ", typeName(call.type), " ",
              opName(call.op), ": ", algo::algoName(call.algo), ", ", call.nChannels, " channel(s), chunk ",
              call.chunkElems, " elements");
  exec::HostCall host;
  host.input = static_cast<const char*>(call.sendbuff);
  host.output = static_cast<char*>(call.recvbuff);
  host.elemSize = typeSize(call.type);
  host.type = call.type;
  host.op = call.op;
  host.nranks = nranks_;
  host.rank = rank_;
  host.abort = abort_;
  host.tag = collectiveTag(call, ++collectives_);
  host.describeTag = describeTag;
  return finish(watched(&host, static_cast<int>(call.algo),
                        [&] { return exec::runHostCall(geometry_, call, host, links_, pool_); }));
}

}  // namespace braid::core
