#include "core/watchdog.h"

#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "core/log.h"
#include "core/param.h"
#include "net/one_request_server.h"
#include "net/socket.h"

namespace braid::core {

using Clock = std::chrono::steady_clock;

struct CallWatch::Core {
  uint64_t commKey = 0;
  int rank = 0, nranks = 1;
  WatchSettings settings;
  std::string (*describeTag)(const transport::CallTag&) = nullptr;

  net::Socket listener;
  std::vector<net::SocketAddress> peers;  // written once, before `watching`
  std::atomic<bool> watching{false};

  exec::CallProgress progress;
  std::atomic<uint64_t> seq{0};
  std::atomic<int> inCall{0};
  mutable std::mutex tagMu;
  transport::CallTag tag;
  uint32_t collectives = 0;  // collectives begun (under tagMu)
  int algorithm = -1;        // the current call's (under tagMu)

  // The checker thread's own, but lastChange, which a calling thread's late report reads.
  uint64_t lastSeq = 0, lastSteps = 0, firedSeq = 0;
  std::atomic<Clock::rep> lastChange{Clock::now().time_since_epoch().count()};
  double sinceLastChange() const {
    const Clock::time_point at{Clock::duration(lastChange.load(std::memory_order_relaxed))};
    return std::chrono::duration<double>(Clock::now() - at).count();
  }
  // The call (this rank's number) that a stalled peer's query found this rank in.
  std::atomic<uint64_t> peerStalledSeq{0};

  mutable std::mutex stallMu;
  std::condition_variable stallCv;
  uint64_t reportingSeq = 0;  // the call whose report is being gathered (abort action)
  uint64_t stallSeq = 0;      // the call the watchdog ended
  Status stall;
  // A report the checker gathered for a call that ended, without a step, while the peers were asked
  // (a peer's report closed its connections): the calling thread's late report uses it instead of
  // asking every peer again, which costs up to kQueryMs more when a peer is stopped.
  uint64_t gatheredSeq = 0;
  std::string gathered;

  std::mutex callbackMu;  // held while onStall runs; the destructor clears it under the lock
  std::function<void(const Status&)> onStall;
  mutable std::mutex samplerMu;                // held while the sampler runs; the destructor clears it under the lock
  std::function<void(WatchSample*)> sampler;   // a GPU communicator's (set before watching)
  std::function<std::string(int)> hostDetail;  // a host communicator's (set before watching)

  // This rank now: from the sampler, or the host call's fields (begin() writes the tag and the
  // number together under tagMu).
  WatchSample sample() const {
    WatchSample out;
    std::unique_lock<std::mutex> lock(samplerMu);
    if (sampler) {
      sampler(&out);
    } else {
      lock.unlock();
      out.state = hostState();
      out.progress = out.state.steps;
      if (hostDetail && out.state.inCall != 0 && out.state.waitingOn >= 0) out.detail = hostDetail(out.state.waitingOn);
    }
    out.state.magic = kWatchStateMagic;
    out.state.rank = rank;
    out.state.commKey = commKey;
    return out;
  }
  WatchState snapshot() const { return sample().state; }
  WatchState hostState() const {
    WatchState s;
    std::lock_guard<std::mutex> lock(tagMu);
    s.seq = seq.load(std::memory_order_acquire);
    s.collectives = collectives;
    s.steps = progress.steps.load(std::memory_order_relaxed);
    s.inCall = inCall.load(std::memory_order_acquire);
    s.waitingOn = progress.waitingOn.load(std::memory_order_relaxed);
    s.channel = static_cast<int16_t>(progress.channel.load(std::memory_order_relaxed));
    s.sending = progress.sending.load(std::memory_order_relaxed);
    s.algorithm = static_cast<int16_t>(algorithm);
    s.tag = tag;
    return s;
  }
};

namespace {

using Core = CallWatch::Core;

// How long a query may take before its rank counts as not responding; how long a connection to
// a listener may sit without a whole query before the server drops it.
constexpr int kQueryMs = 1000;
constexpr int kIdleConnectionMs = 2000;
constexpr int kCheckEveryMs = 100;
constexpr size_t kMaxPending = 64;

// SIGUSR1 while the watchdog runs (where the program left SIGUSR1 at its default, which would
// kill it): every watched communicator's report on request, logged, nothing failed.
std::atomic<bool> dumpRequested{false};
void onDumpSignal(int) { dumpRequested.store(true, std::memory_order_relaxed); }

// The process's two threads and the watches they serve; they run while any watch exists.
class Watchdog {
 public:
  static Watchdog& get() {
    static Watchdog* w = new Watchdog;  // never destroyed: the last watch stops the threads
    return *w;
  }

  // life_ orders a start after the stop before it has joined its threads: a watch made while the
  // last one is going away starts a fresh pair instead of reviving the old (which its join waits for).
  void add(const std::shared_ptr<Core>& c) {
    std::lock_guard<std::mutex> life(life_);
    std::lock_guard<std::mutex> lock(mu_);
    cores_.push_back(c);
    if (cores_.size() == 1) {
      running_ = true;
      struct sigaction now {};
      if (sigaction(SIGUSR1, nullptr, &now) == 0 && now.sa_handler == SIG_DFL) {
        struct sigaction dump {};
        dump.sa_handler = onDumpSignal;
        sigemptyset(&dump.sa_mask);
        dump.sa_flags = SA_RESTART;
        dumpSignal_ = sigaction(SIGUSR1, &dump, nullptr) == 0;
      }
      server_ = std::thread([this] { serve(); });
      checker_ = std::thread([this] { check(); });
    }
  }

  void remove(const std::shared_ptr<Core>& c) {
    std::lock_guard<std::mutex> life(life_);
    std::thread server, checker;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cores_.erase(std::remove(cores_.begin(), cores_.end(), c), cores_.end());
      if (!cores_.empty()) return;
      running_ = false;
      if (dumpSignal_) {
        struct sigaction restore {};
        restore.sa_handler = SIG_DFL;
        sigemptyset(&restore.sa_mask);
        sigaction(SIGUSR1, &restore, nullptr);
        dumpSignal_ = false;
      }
      server = std::move(server_);
      checker = std::move(checker_);
    }
    wake_.notify_all();
    if (server.joinable()) server.join();
    if (checker.joinable()) checker.join();
  }

 private:
  std::vector<std::shared_ptr<Core>> cores() {
    std::lock_guard<std::mutex> lock(mu_);
    return cores_;
  }
  bool running() {
    std::lock_guard<std::mutex> lock(mu_);
    return running_;
  }

  // Answers queries on every watch's listener. Junk (a wrong magic, a partial query that stalls)
  // closes the connection; nothing a connection sends can stop the others being served.
  void serve() {
    net::OneRequestServer<WatchQuery, int> server(kMaxPending, kIdleConnectionMs);
    while (running()) {
      std::vector<std::shared_ptr<Core>> all = cores();
      std::vector<std::pair<net::Socket*, int>> listeners;
      for (const auto& c : all) listeners.emplace_back(&c->listener, 0);
      server.serveOnce(listeners, kCheckEveryMs, "watchdog listeners", [&](int, net::Socket& s, const WatchQuery& q) {
        if (q.magic == kWatchQueryMagic || q.magic == kWatchStalledQueryMagic) answer(all, s, q);
      });
    }
  }

  static void answer(const std::vector<std::shared_ptr<Core>>& all, net::Socket& socket, const WatchQuery& query) {
    WatchState s;  // magic 0: no such communicator here
    for (const auto& c : all) {
      if (c->commKey != query.commKey || c->rank != query.rank) continue;
      s = c->snapshot();
      if (query.magic == kWatchStalledQueryMagic && s.inCall != 0) {
        c->peerStalledSeq.store(s.seq, std::memory_order_release);
      }
    }
    socket.sendAll(&s, sizeof(s), net::Deadline::in(kQueryMs, nullptr)).ignore();
  }

  void check() {
    std::unique_lock<std::mutex> lock(mu_);
    while (running_) {
      wake_.wait_for(lock, std::chrono::milliseconds(kCheckEveryMs));
      if (!running_) break;
      std::vector<std::shared_ptr<Core>> all = cores_;
      lock.unlock();
      const bool dump = dumpRequested.exchange(false, std::memory_order_relaxed);
      for (const auto& c : all) dump ? dumpOne(*c) : checkOne(*c);
      lock.lock();
    }
  }

  static PeerState ask(const Core& c, int r, bool stalled) {
    PeerState p;
    const net::SocketAddress& to = c.peers[r];
    if (to.port() == 0) {
      p.kind = PeerState::Kind::kNoWatchdog;
      return p;
    }
    net::Socket s;
    const net::Deadline deadline = net::Deadline::in(kQueryMs, nullptr);
    Status st = net::Socket::connect(to, "the watch listener of rank " + std::to_string(r), deadline, &s, false);
    if (!st.isOk()) {
      p.kind = st.code() == Code::kRemoteError ? PeerState::Kind::kExited : PeerState::Kind::kNotResponding;
      return p;
    }
    WatchQuery q;
    q.magic = stalled ? kWatchStalledQueryMagic : kWatchQueryMagic;
    q.rank = r;
    q.commKey = c.commKey;
    if (!s.sendAll(&q, sizeof(q), deadline).isOk()) {
      p.kind = PeerState::Kind::kNotResponding;
      return p;
    }
    st = s.recvAll(&p.state, sizeof(p.state), deadline);
    if (!st.isOk()) {
      // No answer (in time, or a connection closed first): an exited rank's port refuses instead.
      p.kind = PeerState::Kind::kNotResponding;
    } else if (p.state.magic != kWatchStateMagic || p.state.rank != r || p.state.commKey != c.commKey) {
      p.kind = PeerState::Kind::kExited;  // the communicator is gone from its process
    }
    return p;
  }

  static void dumpOne(const Core& c) {
    if (!c.watching.load(std::memory_order_acquire)) return;
    BRAID_WARN(log::Subsys::kColl,
               stallReport(c.rank, c.sinceLastChange(), gather(c, false), c.describeTag, true, c.sample().detail));
  }

  static void checkOne(Core& c) {
    if (!c.watching.load(std::memory_order_acquire)) return;
    const auto now = Clock::now();
    const WatchSample first = c.sample();
    const uint64_t seq = first.state.seq;
    const uint64_t steps = first.progress;
    if (first.state.inCall == 0 || seq != c.lastSeq || steps != c.lastSteps) {
      c.lastSeq = seq;
      c.lastSteps = steps;
      c.lastChange.store(now.time_since_epoch().count(), std::memory_order_relaxed);
      return;
    }
    // A stalled peer asked about this call: two checks without a step are enough to report too.
    const bool peerStalled = c.peerStalledSeq.load(std::memory_order_acquire) == seq;
    const auto quiet = now - Clock::time_point(Clock::duration(c.lastChange.load(std::memory_order_relaxed)));
    const auto enough = std::chrono::milliseconds(peerStalled ? 2 * kCheckEveryMs : c.settings.timeoutMs);
    if (c.firedSeq == seq || quiet < enough) return;
    c.firedSeq = seq;
    fire(c, seq, steps, false);
  }

 public:
  // Reports call `seq` of `c` stalled: gathers every rank's state and, with the abort action, ends
  // the call with the report. One report per call: the checker and a calling thread whose call a
  // peer's report ended (`late`: the call is over, no progress to recheck) claim it under stallMu.
  static void fire(Core& c, uint64_t seq, uint64_t steps, bool late) {
    std::string report;  // a late report's, when the checker gathered it already
    {
      std::lock_guard<std::mutex> lock(c.stallMu);
      if (c.reportingSeq == seq || c.stallSeq == seq) return;
      c.reportingSeq = seq;
      if (late && c.gatheredSeq == seq) report = c.gathered;
    }
    double stalled = 0;
    std::vector<PeerState> ranks;
    if (report.empty()) {
      stalled = c.sinceLastChange();
      ranks = gather(c, true);
      if (late) ranks[c.rank].state.inCall = 1;  // its report describes the call it was in
    }
    std::unique_lock<std::mutex> lock(c.stallMu);
    c.reportingSeq = 0;
    WatchSample now = c.sample();
    // A late report describes the call just ended (a peer's report or exit ended it first), which
    // sample() no longer sees as a call: where this rank's connections with the peer it waited
    // for stood then (waitingOn stays until the next call begins).
    if (late && now.detail.empty() && c.hostDetail && now.state.waitingOn >= 0) {
      now.detail = c.hostDetail(now.state.waitingOn);
    }
    if (report.empty()) report = stallReport(c.rank, stalled, ranks, c.describeTag, false, now.detail);
    // The call may have moved on while the peers were asked: then there is nothing to report. One
    // that ended without a step failed (a successful call steps), and its thread reports late.
    if (!late && (now.state.seq != seq || now.state.inCall == 0 || now.progress != steps)) {
      if (now.state.seq == seq && now.progress == steps) {
        c.gatheredSeq = seq;
        c.gathered = report;
      }
      lock.unlock();
      c.stallCv.notify_all();
      return;
    }
    BRAID_WARN(log::Subsys::kColl, report);
    if (c.settings.abortOnStall) {
      // Under stallMu: end() takes it too, so the call cannot finish between this check and the abort.
      c.stallSeq = seq;
      c.stall = timeoutError(report);
      std::lock_guard<std::mutex> callback(c.callbackMu);
      if (c.onStall) c.onStall(c.stall);
    }
    lock.unlock();
    c.stallCv.notify_all();
  }

 private:
  // Every rank's state, the peers asked at once (each query bounded by kQueryMs); `stalled`: for a
  // stall report (the peers then report too).
  static std::vector<PeerState> gather(const Core& c, bool stalled) {
    std::vector<PeerState> ranks(c.nranks);
    constexpr int kAtOnce = 32;
    for (int first = 0; first < c.nranks; first += kAtOnce) {
      std::vector<std::thread> asking;
      for (int r = first; r < std::min(c.nranks, first + kAtOnce); ++r) {
        if (r == c.rank) {
          ranks[r].state = c.snapshot();
        } else {
          asking.emplace_back([&c, &ranks, r, stalled] { ranks[r] = ask(c, r, stalled); });
        }
      }
      for (std::thread& t : asking) t.join();
    }
    return ranks;
  }

  std::mutex life_;  // held by add and remove, never by the threads
  std::mutex mu_;
  std::condition_variable wake_;
  bool running_ = false;
  bool dumpSignal_ = false;  // this watchdog installed the SIGUSR1 handler
  std::vector<std::shared_ptr<Core>> cores_;
  std::thread server_, checker_;
};

}  // namespace

Status watchSettings(WatchSettings* out) {
  WatchSettings w;
  int64_t seconds = param::getInt(param::Id::kTimeout);
  if (seconds < 0 || seconds > 86400 * 7) {
    return invalidArgument("BRAID_TIMEOUT=" + std::to_string(seconds) + " must be from 0 (off) to 604800 seconds");
  }
  w.timeoutMs = static_cast<int>(seconds * 1000);
  BRAID_RETURN_IF_ERROR(parseTimeoutAction(param::getString(param::Id::kTimeoutAction), &w.abortOnStall));
  *out = w;
  return Status::ok();
}

Status parseTimeoutAction(const std::string& text, bool* abortOnStall) {
  if (text != "report" && text != "abort") {
    return invalidArgument("BRAID_TIMEOUT_ACTION='" + text + "' must be report or abort");
  }
  *abortOnStall = text == "abort";
  return Status::ok();
}

CallWatch::CallWatch(uint64_t commKey, int rank, int nranks, const WatchSettings& settings,
                     std::string (*describeTag)(const transport::CallTag&), std::function<void(const Status&)> onStall)
    : core_(std::make_shared<Core>()) {
  core_->commKey = commKey;
  core_->rank = rank;
  core_->nranks = nranks;
  core_->settings = settings;
  core_->describeTag = describeTag;
  core_->onStall = std::move(onStall);
}

CallWatch::~CallWatch() {
  {
    std::lock_guard<std::mutex> lock(core_->callbackMu);
    core_->onStall = nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(core_->samplerMu);
    core_->sampler = nullptr;
  }
  Watchdog::get().remove(core_);
}

Status CallWatch::listen(const net::SocketAddress& interfaceAddress, uint16_t* port) {
  net::SocketAddress any = interfaceAddress;
  any.setPort(0);
  BRAID_RETURN_IF_ERROR(net::Socket::listen(any, &core_->listener).withContext("the watchdog's listener"));
  net::SocketAddress bound;
  BRAID_RETURN_IF_ERROR(core_->listener.localAddress(&bound));
  *port = bound.port();
  return Status::ok();
}

uint16_t CallWatch::port() const {
  net::SocketAddress bound;
  return core_->listener.valid() && core_->listener.localAddress(&bound).isOk() ? bound.port() : 0;
}

void CallWatch::setPeers(std::vector<net::SocketAddress> listeners) {
  core_->peers = std::move(listeners);
  core_->watching.store(true, std::memory_order_release);
  Watchdog::get().add(core_);  // from now on its threads read the listener and the peers
}

void CallWatch::setHostDetail(std::function<std::string(int peer)> describe) {
  core_->hostDetail = std::move(describe);
}

void CallWatch::setSampler(std::function<void(WatchSample*)> sample) {
  std::lock_guard<std::mutex> lock(core_->samplerMu);
  core_->sampler = std::move(sample);
}

void CallWatch::begin(const transport::CallTag& tag, int algorithm) {
  Core& c = *core_;
  c.progress.steps.store(0, std::memory_order_relaxed);
  c.progress.waitingOn.store(-1, std::memory_order_relaxed);
  c.progress.channel.store(-1, std::memory_order_relaxed);
  c.progress.sending.store(0, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(c.tagMu);
  c.tag = tag;
  c.algorithm = algorithm;
  if (tag.kind != exec::kP2pTagKind) ++c.collectives;
  c.seq.fetch_add(1, std::memory_order_acq_rel);
  c.inCall.store(1, std::memory_order_release);
}

void CallWatch::end() {
  std::lock_guard<std::mutex> lock(core_->stallMu);
  core_->inCall.store(0, std::memory_order_release);
}

exec::CallProgress* CallWatch::progress() { return &core_->progress; }

bool CallWatch::stalled(Status* report) const {
  Core& c = *core_;
  const uint64_t seq = c.seq.load(std::memory_order_acquire);
  std::unique_lock<std::mutex> lock(c.stallMu);
  // A peer's watchdog may have ended its call first, and so this one's (its connections closed)
  // while this rank's report is still being gathered: wait for it (each query is bounded).
  const auto gathering = std::chrono::milliseconds(kQueryMs * (c.nranks / 32 + 2));
  c.stallCv.wait_for(lock, gathering, [&] { return c.reportingSeq != seq || c.stallSeq == seq; });
  if (c.stallSeq != seq && c.settings.abortOnStall && c.peerStalledSeq.load(std::memory_order_acquire) == seq &&
      c.reportingSeq != seq) {
    // A stalled peer asked about this call, and its abort ended the call before this rank's own
    // checker reported: report now, from here.
    lock.unlock();
    Watchdog::fire(c, seq, 0, true);
    lock.lock();
    c.stallCv.wait_for(lock, gathering, [&] { return c.reportingSeq != seq || c.stallSeq == seq; });
  }
  if (c.stallSeq == 0 || c.stallSeq != seq) return false;
  *report = c.stall;
  return true;
}

}  // namespace braid::core
