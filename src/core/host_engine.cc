#include "core/host_engine.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "core/datatype.h"
#include "core/log.h"
#include "core/param.h"

namespace braid::core {

// Resolves (channel, conn, src, dst) to the receiver's FIFO: the peer's loopback endpoint when it
// is a thread of this process, a shared-memory segment when it is another process of this host.
// Lookups are cached; a segment that cannot be made is remembered as the error of the call.
class HostEngine::Fifos : public exec::FifoResolver {
 public:
  Fifos(const HostEngine& engine) : engine_(engine) {}

  transport::HostFifo* fifo(int channel, int connId, int src, int dst) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto key = std::make_tuple(channel, connId, src, dst);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    int peer = src == engine_.rank_ ? dst : src;
    transport::HostFifo* f = nullptr;
    if (engine_.sameProcess_[peer]) {
      auto endpoint = transport::findLoopbackEndpoint(engine_.commKey_, dst);
      if (endpoint) f = endpoint->incoming(channel, connId, src);
      endpoints_.push_back(endpoint);  // keep it alive while cached
    } else {
      std::unique_ptr<transport::ShmFifoSegment> seg;
      std::string name = transport::ShmFifoSegment::nameFor(engine_.commKey_, src, dst, channel, connId);
      Status st = transport::ShmFifoSegment::attach(
          name, engine_.steps_, engine_.chunkBytes_, engine_.config_.timeoutMs,
          transport::StopFlags{engine_.abort_, nullptr}, peer, engine_.pids_[peer], &seg);
      if (!st.isOk()) {
        error_ = st.withContext("connection " + std::to_string(src) + "->" + std::to_string(dst));
        return nullptr;  // not cached: a later call tries again
      }
      f = &seg->fifo();
      segments_.push_back(std::move(seg));
    }
    cache_.emplace(key, f);
    return f;
  }

  void closeAll(int rank) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& kv : cache_) {
      if (kv.second != nullptr) kv.second->close(rank);
    }
  }

  /// The error of the last connection that could not be made (cleared by the call).
  Status takeError() {
    std::lock_guard<std::mutex> lock(mu_);
    Status s = error_;
    error_ = Status::ok();
    return s;
  }

 private:
  const HostEngine& engine_;
  std::mutex mu_;
  std::map<std::tuple<int, int, int, int>, transport::HostFifo*> cache_;
  std::vector<std::shared_ptr<transport::LoopbackEndpoint>> endpoints_;
  std::vector<std::unique_ptr<transport::ShmFifoSegment>> segments_;
  Status error_;
};

namespace {

int stepsParam() { return static_cast<int>(std::max<int64_t>(2, param::getInt(param::Id::kSteps))); }
size_t chunkParam() { return static_cast<size_t>(std::max<int64_t>(64, param::getInt(param::Id::kChunkBytes))); }

// The first algorithm of `preference` that the config allows and that implements `coll`.
algo::Algo pickAlgorithm(algo::Coll coll, const std::string& allowed) {
  std::string list = allowed;
  bool exclude = !list.empty() && list[0] == '^';
  if (exclude) list = list.substr(1);
  std::transform(list.begin(), list.end(), list.begin(), [](unsigned char c) { return std::tolower(c); });
  auto listed = [&](algo::Algo a) {
    std::stringstream ss(list);
    std::string item;
    while (std::getline(ss, item, ',')) {
      if (item == algo::algoName(a)) return true;
    }
    return false;
  };
  for (algo::Algo a : {algo::Algo::kRing, algo::Algo::kDoubleTree, algo::Algo::kTree}) {
    if (!algo::supports(coll, a)) continue;
    if (allowed.empty() || listed(a) != exclude) return a;
  }
  return algo::Algo::kRing;  // every collective has a ring form
}

}  // namespace

HostEngine::HostEngine(uint64_t commKey, int rank, int nranks, const CommConfig& config, const std::atomic<bool>* abort)
    : commKey_(commKey),
      rank_(rank),
      nranks_(nranks),
      config_(config),
      abort_(abort),
      steps_(stepsParam()),
      chunkBytes_(chunkParam()),
      endpoint_(std::make_shared<transport::LoopbackEndpoint>(steps_, chunkBytes_)),
      registration_(commKey, rank, endpoint_),
      geometry_(algo::defaultGeometry(nranks)),
      fifos_(std::make_unique<Fifos>(*this)) {}

void HostEngine::setPeers(std::vector<bool> sameProcess, std::vector<bool> sameHost, std::vector<long> pids) {
  sameProcess_ = std::move(sameProcess);
  sameHost_ = std::move(sameHost);
  pids_ = std::move(pids);
}

void HostEngine::closeConnections() { fifos_->closeAll(rank_); }

HostEngine::~HostEngine() = default;

algo::CallShape HostEngine::decide(const CollRequest& r) const {
  algo::CallShape call;
  call.coll = r.coll;
  call.algo = pickAlgorithm(r.coll, config_.algorithm);
  call.count = r.count;
  call.root = r.root;
  call.postOp = r.op == braidAvg;
  size_t elem = typeSize(r.type);
  size_t bytes = r.count * elem;
  // Until the tuner (src/tune) exists: one channel, a second one for large messages.
  int channels = bytes >= (size_t{4} << 20) ? 2 : 1;
  call.nChannels = std::min(config_.maxCTAs, std::max(config_.minCTAs, channels));
  call.chunkElems = std::max<size_t>(1, chunkBytes_ / elem);
  return call;
}

Status HostEngine::checkPeersReachable() const {
  for (int peer = 0; peer < nranks_; ++peer) {
    if (!sameHost_[peer]) {
      return invalidUsage("rank " + std::to_string(peer) +
                          " is on another host: host collectives between hosts need the socket transport, which is "
                          "not available yet");
    }
  }
  return Status::ok();
}

// A call that failed leaves its connections out of step: close them, so that every peer still
// waiting on this rank stops too, and report why (a connection that could not be made first).
Status HostEngine::finish(Status s) {
  Status connect = fifos_->takeError();
  if (!connect.isOk()) s = connect;
  if (!s.isOk()) closeConnections();
  return s;
}

Status HostEngine::runP2p(const std::vector<P2pRequest>& requests) {
  BRAID_RETURN_IF_ERROR(checkPeersReachable());
  // Messages are moved as bytes, at offsets from the lowest send and the lowest receive address.
  uintptr_t sendBase = UINTPTR_MAX, recvBase = UINTPTR_MAX;
  for (const P2pRequest& r : requests) {
    uintptr_t a = reinterpret_cast<uintptr_t>(r.buffer);
    if (r.count == 0) continue;
    if (r.isSend)
      sendBase = std::min(sendBase, a);
    else
      recvBase = std::min(recvBase, a);
  }
  std::vector<algo::P2pOp> sends, recvs;
  for (const P2pRequest& r : requests) {
    uintptr_t a = reinterpret_cast<uintptr_t>(r.buffer);
    size_t bytes = r.count * typeSize(r.type);
    if (r.isSend)
      sends.push_back(algo::P2pOp{r.peer, bytes ? a - sendBase : 0, bytes});
    else
      recvs.push_back(algo::P2pOp{r.peer, bytes ? a - recvBase : 0, bytes});
  }
  std::lock_guard<std::mutex> lock(callMu_);
  exec::HostCall host;
  host.input = reinterpret_cast<const char*>(sendBase);
  host.output = reinterpret_cast<char*>(recvBase);
  host.elemSize = 1;
  host.type = braidUint8;
  host.nranks = nranks_;
  host.rank = rank_;
  host.abort = abort_;
  return finish(exec::runHostP2p(std::move(sends), std::move(recvs), 1, chunkBytes_, host, *fifos_, pool_));
}

Status HostEngine::run(const CollRequest& r) {
  BRAID_RETURN_IF_ERROR(checkPeersReachable());
  std::lock_guard<std::mutex> lock(callMu_);
  algo::CallShape call = decide(r);
  BRAID_TRACE(log::Subsys::kColl, algo::collName(call.coll), " count ", call.count, " ", typeName(r.type), " ",
              opName(r.op), ": ", algo::algoName(call.algo), ", ", call.nChannels, " channel(s), chunk ",
              call.chunkElems, " elements");
  exec::HostCall host;
  host.input = static_cast<const char*>(r.sendbuff);
  host.output = static_cast<char*>(r.recvbuff);
  host.elemSize = typeSize(r.type);
  host.type = r.type;
  host.op = r.op;
  host.nranks = nranks_;
  host.rank = rank_;
  host.abort = abort_;
  return finish(exec::runHostCall(geometry_, call, host, *fifos_, pool_));
}

}  // namespace braid::core
