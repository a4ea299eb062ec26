// HostEngine: what a host-memory communicator needs to run collectives: its connections to the
// peers (transport/host_links.h: loopback, shared memory or the network per peer, made on first
// use), the geometry and tuner, and the worker threads. One per Comm, made at init.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "algo/call.h"
#include "algo/geometry.h"
#include "braid/braid.h"
#include "core/config.h"
#include "core/status.h"
#include "exec/host_executor.h"
#include "net/socket_address.h"
#include "transport/host_links.h"
#include "tune/tuner.h"

namespace braid::core {

class CallWatch;

/// One collective call as the API received it, and then as the tuner planned it (algo/call.h).
using CollRequest = algo::Call;

/// Elements a collective reads from its send buffer: count, or count x ranks for reduce-scatter.
size_t sendElems(const CollRequest& request, int nranks);

/// The tag of collective number `seq`: the fields every rank of it must agree on (root and op only
/// where the collective has them). It travels in each FIFO slot's header and the watchdog's reports.
transport::CallTag collectiveTag(const CollRequest& r, uint32_t seq);

/// One send or receive as the API received it (all-to-all becomes one of each per peer).
struct P2pRequest {
  bool isSend = true;
  const void* buffer = nullptr;  // a receive writes through it
  size_t count = 0;
  braidDataType_t type = braidFloat32;
  int peer = 0;
  void* stream = nullptr;           // cudaStream_t of a GPU communicator's call
  std::shared_ptr<void> keepAlive;  // a staging copy that must live until the call ran
};

/// A group's sends and receives as byte ranges: offsets from the lowest send and the lowest receive
/// address (the bases), what both engines' point-to-point programs take.
struct P2pMessages {
  std::vector<algo::P2pOp> sends, recvs;
  const char* sendBase = nullptr;
  char* recvBase = nullptr;
};
P2pMessages p2pMessages(const std::vector<P2pRequest>& requests);

class HostEngine {
 public:
  /// Registers this rank's endpoint; called before the bootstrap so peers find it once it completes.
  HostEngine(uint64_t commKey, int rank, int nranks, const CommConfig& config, const std::atomic<bool>* abort);
  ~HostEngine();

  /// Where the peers connect to this rank's socket transport: a listener on `interfaceAddress`
  /// (the bootstrap's), any port. Called before setPeers.
  Status listen(const net::SocketAddress& interfaceAddress, transport::NetHandle* handle);
  /// After listen: the network device's speed and latency, for this rank's identity (setPeers gives
  /// every rank's to the cost model).
  void networkSpeedAndLatency(int* mbps, float* latencyUs) const { links_.speedAndLatency(mbps, latencyUs); }

  /// Every rank's identity and network handle, from init's one exchange: picks the transport to
  /// each peer (transport/transport.h: loopback within the process, shared memory within the host
  /// unless BRAID_SHM_DISABLE=1, the network otherwise), starts the network proxies if needed, and
  /// makes the tuner for this machine (bad BRAID_ALGO / BRAID_PROTO / BRAID_*_CTAS are errors
  /// here). `shmKey` names the shared-memory segments (Comm::instanceKey: the same on every rank).
  Status setPeers(const std::vector<transport::PeerIdentity>& peers, std::vector<transport::NetHandle> handles,
                  uint64_t shmKey);

  /// Closes every connection this rank has made: peers waiting on them stop with an error naming
  /// this rank (after a failed call, and on abort).
  void closeConnections();

  /// BRAID_TIMEOUT: every call from now on tells `watch` when it begins and ends and what its FIFO
  /// steps do (core/watchdog.h). Set once at init, before the first call.
  void setWatch(CallWatch* watch);

  /// "broadcast #12 (1000 x float32, root 3)", "allreduce #3 (7 x int8, max)", "send/recv".
  static std::string describeTag(const transport::CallTag& tag);

  /// Runs a collective on host buffers; returns when this rank's part is complete.
  Status run(const CollRequest& request);

  /// Runs a group's sends and receives of this rank together.
  Status runP2p(const std::vector<P2pRequest>& requests);

  /// `request` as the tuner plans it on this engine: its algorithm, channels and chunk (logged at
  /// TRACE by run).
  CollRequest planned(const CollRequest& request) const;
  const tune::Tuner& tuner() const { return tuner_; }

  /// CPUs this process may run on (its affinity mask), at least 1.
  static int availableCpus();

 private:
  Status finish(Status s);

  const int rank_;
  const int nranks_;
  const CommConfig config_;
  const std::atomic<bool>* abort_;
  const int steps_;
  size_t chunkBytes_;  // the FIFO slot size, set at setPeers (chunkFor)
  tune::Tuner tuner_;
  algo::Geometry geometry_;
  transport::HostLinks links_;
  exec::WorkerPool pool_;
  Status watched(exec::HostCall* host, int algorithm, const std::function<Status()>& run);

  CallWatch* watch_ = nullptr;
  bool openAfterStall_ = false;  // the watchdog ended a call; its connections close on destroy
  std::mutex callMu_;            // one call at a time on a communicator
  uint32_t collectives_ = 0;     // collective calls so far (under callMu_): the number in each slot's call tag
};

}  // namespace braid::core
