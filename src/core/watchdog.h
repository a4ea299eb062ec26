// The progress watchdog (BRAID_TIMEOUT, issue 17): a call that makes no progress for the timeout
// becomes a report instead of a silent hang.
//
//   rank's call ──begin(tag)──► CallWatch ◄── steps, waitingOn (HostPrims, every FIFO step)
//                                   │
//   checker thread (one per process, every 100 ms): no step for the timeout?
//        └─► asks every rank's watch listener for its state (a side channel of its own: TCP, not the
//            stuck FIFOs, not the bootstrap) ──► report: this rank's call and the peer it waits for,
//            each peer's call or "not responding" / "exited", and the diagnosis
//        └─► BRAID_TIMEOUT_ACTION=abort (default): the call ends, returning braidTimeout with the report
//            (the communicator is failed; braidCommGetAsyncError says the same) and its connections
//            stay open, so that each stuck peer reports from its own watchdog; =report: logged only
//   server thread (one per process): answers the state queries on every watch's listener
//   SIGUSR1 (while any watch exists, where the program left SIGUSR1 at its default): every watched
//        communicator's report on request, logged at WARN, nothing failed
//
// With BRAID_TIMEOUT unset or 0 none of this exists: no listener, no thread, no exchange.
//
// A GPU communicator's calls return before their kernels run, so its watch has no begin/end: a
// sampler reads the engine instead (exec/cuda_watch.cc): whether its latest launch has completed,
// the kernels' record in mapped host memory (each kernel's start and end, each lane's long wait)
// and the call each launch runs. The report then names the kernel, each waiting lane and the step
// it awaits, or says that the kernel has not begun; the abort action releases the kernels through
// the communicator's abort flag, and the communicator fails with the report.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "exec/host_prims.h"
#include "net/socket_address.h"
#include "transport/host_fifo.h"

namespace braid::core {

/// One rank's state as its watch listener answers it (raw bytes on the wire).
struct WatchState {
  uint32_t magic = 0;
  int32_t rank = -1;
  uint64_t commKey = 0;
  uint64_t seq = 0;          // calls begun on the communicator (collectives and send/recv groups), from 1
  uint64_t steps = 0;        // FIFO steps taken in the current call
  int32_t inCall = 0;        // 1 while a call runs
  int32_t waitingOn = -1;    // the peer whose FIFO its last wait was on (-1: none yet)
  transport::CallTag tag;    // the current (or last) call
  uint32_t collectives = 0;  // collectives begun (send/recv groups are not counted: ranks differ)
  int32_t gpu = 0;           // 0: a host call; 1: a GPU kernel runs the call; 2: its kernel has not begun
  int16_t algorithm = -1;    // a host collective's algo::Algo (-1: not known, as for send/recv)
  int16_t channel = -1;      // the channel of the FIFO its last wait was on
  int32_t sending = 0;       // that wait: 1 for a send slot to free up, 0 for a slot to arrive
};
static_assert(sizeof(WatchState) == 80, "WatchState crosses sockets byte for byte");

/// A query: magic, the communicator's key and the rank asked for.
struct WatchQuery {
  uint32_t magic = 0;
  int32_t rank = -1;
  uint64_t commKey = 0;
};
static_assert(sizeof(WatchQuery) == 16, "WatchQuery crosses sockets byte for byte");

constexpr uint32_t kWatchQueryMagic = 0x44575242;  // "BRWD"
/// The same query from a rank whose watchdog found it stalled: the rank asked then reports too
/// (at once, if its own call has not moved either), so that every stuck rank says what it sees
/// even when the asker's abort ends the others' calls before their own timeouts.
constexpr uint32_t kWatchStalledQueryMagic = 0x58575242;  // "BRWX"
constexpr uint32_t kWatchStateMagic = 0x53575242;         // "BRWS"

/// What another rank was found doing when this one stalled.
struct PeerState {
  enum class Kind { kAnswered, kNotResponding, kExited, kNoWatchdog } kind = Kind::kAnswered;
  WatchState state;
};

/// Reads the report and its diagnosis from every rank's state (index = rank; `self` is this rank).
/// Pure, for the unit tests: e.g. "diagnosis: rank 2 has not reached allreduce #5 (64 x float32, sum)".
/// With `onRequest` (SIGUSR1) the first line says so, and a rank between calls is described as such.
/// `selfDetail`, if any, is a line more on this rank (a GPU rank's kernel and waiting lanes).
std::string stallReport(int self, double stalledSeconds, const std::vector<PeerState>& ranks,
                        std::string (*describeTag)(const transport::CallTag&), bool onRequest = false,
                        const std::string& selfDetail = "");

/// What a sampler (a GPU communicator's) says of its rank: the state's seq, collectives, tag,
/// inCall, steps, waitingOn and gpu; a word that changes whenever the rank makes progress; a line
/// for the report.
struct WatchSample {
  WatchState state;
  uint64_t progress = 0;
  std::string detail;
};

/// BRAID_TIMEOUT / BRAID_TIMEOUT_ACTION, read at init.
struct WatchSettings {
  int timeoutMs = 0;  // 0: off
  bool abortOnStall = true;
};
Status watchSettings(WatchSettings* out);
/// A BRAID_TIMEOUT_ACTION value: "report" or "abort" (exactly; anything else is refused).
Status parseTimeoutAction(const std::string& text, bool* abortOnStall);

class CallWatch {
 public:
  /// `onStall` runs on the checker thread with the report (never after the destructor returns).
  CallWatch(uint64_t commKey, int rank, int nranks, const WatchSettings& settings,
            std::string (*describeTag)(const transport::CallTag&), std::function<void(const Status&)> onStall);
  ~CallWatch();
  CallWatch(const CallWatch&) = delete;
  CallWatch& operator=(const CallWatch&) = delete;

  /// Opens this rank's listener on `interfaceAddress` (any port); `*port` gets the port.
  Status listen(const net::SocketAddress& interfaceAddress, uint16_t* port);
  /// This rank's listener's port (0 before listen).
  uint16_t port() const;
  /// Every rank's listener (port 0: that rank runs without a watchdog); starts watching.
  void setPeers(std::vector<net::SocketAddress> listeners);
  /// A GPU communicator's state comes from `sample` (any thread; it must not block) instead of
  /// begin/end and the FIFO steps. Set before setPeers.
  void setSampler(std::function<void(WatchSample*)> sample);
  /// A host communicator's line more on the peer its call waits for (`describe(peer)`, any
  /// thread: where its connections stand, "" for none). Set before setPeers.
  void setHostDetail(std::function<std::string(int peer)> describe);

  /// Around each call: the call's tag, and what its FIFO steps update.
  /// `algorithm`: a host collective's algo::Algo, for the report (-1: none).
  void begin(const transport::CallTag& tag, int algorithm = -1);
  void end();
  exec::CallProgress* progress();

  /// The report of the stall that ended the current call, if the watchdog ended it. While this
  /// rank's report is being gathered (a peer's report may have ended the call first) it waits for
  /// it, at most a query's time per rank.
  bool stalled(Status* report) const;

  struct Core;  // shared with the watchdog's threads

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace braid::core
