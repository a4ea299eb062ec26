#include "transport/net/net_transport.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <utility>

#include "core/log.h"
#include "core/param.h"
#include "transport/net/socket_net.h"

namespace braid::transport {
namespace {

constexpr int kIdleSpins = 64;   // step passes before a proxy sleeps in poll()
constexpr int kPluginNapMs = 1;  // a proxy's nap when a lane has no descriptor
// While a CUDA graph of the rank's kernels is alive (NetTransport::graphCaptured): a proxy polls on
// this long after anything last moved (a replay's next call finds it awake), then naps this long.
constexpr auto kGraphHot = std::chrono::milliseconds(2);
constexpr auto kGraphNap = std::chrono::microseconds(50);
constexpr int64_t kMaxFlushMs = 10000;
// A peer seen gone this long ago has had its lanes (connected before it closed anything) arrive.
constexpr int64_t kGoneDrainMs = 300;

using Clock = std::chrono::steady_clock;

}  // namespace

NetOptions NetOptions::fromParams(int slots, size_t slotBytes, int64_t timeoutMs) {
  NetOptions o;
  o.nThreads = static_cast<int>(std::clamp<int64_t>(param::getInt(param::Id::kSocketNThreads), 1, 16));
  o.nSocksPerThread = static_cast<int>(std::clamp<int64_t>(param::getInt(param::Id::kNSocksPerThread), 1, 64));
  o.slots = slots;
  o.slotBytes = slotBytes;
  o.timeoutMs = timeoutMs;
  return o;
}

// True on a thread that is stepping lanes (a proxy, or a caller stepping them inline): a wake-up it
// causes itself (a slot released or published by a lane) must not step them again.
thread_local bool tStepping = false;
// True on a thread inside NetTransport::checkEnded (a connection it fails wakes the observer again).
thread_local bool tCheckingEnded = false;

// One proxy thread and the lanes it drives. `stepMu` is held by whoever steps the lanes: the proxy
// (not while it sleeps), or a thread that changed a FIFO and steps them inline (NetTransport::wake).
struct NetTransport::Proxy {
  Waker waker;
  std::mutex mu;
  std::vector<std::unique_ptr<NetLane>> added;  // handed over by other threads
  std::mutex stepMu;
  std::vector<std::unique_ptr<NetLane>> lanes;  // stepped under stepMu; changed by the proxy only
  std::thread thread;

  void run(const std::atomic<bool>& stop, const std::function<bool()>& kernelsMayRun,
           const std::function<void()>& watch, const std::atomic<int>& liveGraphs);
  bool adopt() {
    std::lock_guard<std::mutex> lock(mu);
    if (added.empty()) return false;
    for (auto& lane : added) lanes.push_back(std::move(lane));
    added.clear();
    return true;
  }
  // Sending lanes first: a slot just published leaves before this thread reads what arrived (the
  // peer may be waiting for the slot; what arrived waits for this rank alone).
  bool stepAll() {
    bool moved = false;
    for (auto& lane : lanes) moved |= lane->sends() && lane->step();
    for (auto& lane : lanes) moved |= !lane->sends() && lane->step();
    return moved;
  }
  // On a caller's thread: steps the lanes if no one is stepping them. True when it did and none
  // has a request in flight after (else the proxy has work to finish).
  bool stepHere() {
    if (tStepping) return false;
    std::unique_lock<std::mutex> step(stepMu, std::try_to_lock);
    if (!step.owns_lock()) return false;
    tStepping = true;
    stepAll();
    tStepping = false;
    return std::none_of(lanes.begin(), lanes.end(), [](const auto& l) { return l->busy(); });
  }
};

// Step every lane until nothing moves for a few passes, then sleep in poll() on the lanes' sockets
// and the waker (FIFO changes, new lanes, stop). Not while a GPU kernel may work (asked every
// kIdleSpins passes): what it writes wakes nobody. While a graph of the rank's kernels is alive,
// whose replays tell no one, it polls on for kGraphHot after the last move and then sleeps at most
// kGraphNap at a time.
void NetTransport::Proxy::run(const std::atomic<bool>& stop, const std::function<bool()>& kernelsMayRun,
                              const std::function<void()>& watch, const std::atomic<int>& liveGraphs) {
  tStepping = true;
  std::vector<pollfd> fds;
  int idle = 0;
  bool kernels = false;
  Clock::time_point lastMoved = Clock::now();
  std::unique_lock<std::mutex> step(stepMu);
  while (!stop.load(std::memory_order_acquire)) {
    bool moved = adopt();
    moved |= stepAll();
    lanes.erase(std::remove_if(lanes.begin(), lanes.end(), [](const auto& l) { return l->finished(); }), lanes.end());
    const bool graphs = liveGraphs.load(std::memory_order_acquire) > 0;
    if (moved) {
      idle = 0;
      if (graphs) lastMoved = Clock::now();  // (the clock only where a graph may replay)
      continue;
    }
    if (++idle % kIdleSpins == 0) kernels = kernelsMayRun() || (graphs && Clock::now() - lastMoved < kGraphHot);
    if (idle < kIdleSpins || kernels) {
      if (idle % kIdleSpins == 0) {
        // Polling for a kernel, which wakes nobody: look at the sockets now and then too, for
        // peers that left (checkIdle), and at the connections a kernel may wait on (watch).
        fds.clear();
        for (const auto& lane : lanes) fds.push_back(lane->pollEntry());
        if (!fds.empty() && poll(fds.data(), fds.size(), 0) > 0) {
          for (size_t i = 0; i < fds.size(); ++i) lanes[i]->checkIdle(fds[i].revents);
        }
        if (watch) watch();
      }
      step.unlock();  // a caller may step inline meanwhile
      std::this_thread::yield();
      step.lock();
      continue;
    }
    // A kernel launched between the last look and prepareSleep wakes nobody (the waker saw no
    // sleeper): look again once sleeping is announced.
    waker.prepareSleep();
    if (!stop.load(std::memory_order_acquire) && !adopt() && !stepAll() && !kernelsMayRun()) {
      fds.clear();
      fds.push_back({waker.fd(), POLLIN, 0});
      for (const auto& lane : lanes) fds.push_back(lane->pollEntry());
      // A network without descriptors (a plugin) is polled again after a short nap instead.
      bool external = std::any_of(lanes.begin(), lanes.end(), [](const auto& l) { return !l->pollable(); });
      const std::chrono::nanoseconds nap = graphs     ? std::chrono::nanoseconds(kGraphNap)
                                           : external ? std::chrono::milliseconds(kPluginNapMs)
                                                      : std::chrono::milliseconds(kNetPollMs);
      const timespec timeout{static_cast<time_t>(nap.count() / 1000000000),
                             static_cast<long>(nap.count() % 1000000000)};
      step.unlock();
      int ready = ppoll(fds.data(), fds.size(), &timeout, nullptr);
      step.lock();
      if (ready > 0) {
        for (size_t i = 1; i < fds.size(); ++i) lanes[i - 1]->checkIdle(fds[i].revents);
      }
    }
    waker.endSleep();
    idle = 0;
  }
}

NetTransport::NetTransport(uint64_t commKey, int rank, int nranks, NetOptions options, const std::atomic<bool>* abort)
    : commKey_(commKey), rank_(rank), nranks_(nranks), options_(options), abort_(abort) {}

NetTransport::~NetTransport() {
  if (acceptor_.joinable()) flush();
  stop_.store(true, std::memory_order_release);
  acceptWaker_.wake();
  wake();
  if (acceptor_.joinable()) acceptor_.join();
  for (auto& proxy : proxies_) {
    if (proxy->thread.joinable()) proxy->thread.join();
  }
  proxies_.clear();  // the lanes close their network connections
  connections_.clear();
  for (auto& kv : parked_) network_->api().closeRecv(kv.second.second);
  parked_.clear();
  if (listenComm_ != nullptr) network_->api().closeListen(listenComm_);
}

Status NetTransport::listen(const braid::net::SocketAddress& interfaceAddress, NetHandle* handle) {
  BRAID_RETURN_IF_ERROR(options_.network != nullptr
                            ? network::Network::fromTable(*options_.network, "a test's", commKey_, &network_)
                            : network::Network::open(commKey_, &network_));
  device_ = 0;
  if (network_->builtIn()) {
    // The built-in network's device with the bootstrap's address: the interface the job already uses.
    for (int d = 0; d < network_->deviceCount(); ++d) {
      if (network::socketNetDeviceAddress(d) == interfaceAddress.hostString()) device_ = d;
    }
  }
  std::memset(handle->data(), 0, handle->size());
  BRAID_RETURN_IF_ERROR(
      network_->check(network_->api().listen(network_->context(), device_, handle->data(), &listenComm_),
                      "listen on " + network_->describeDevice(device_)));
  return Status::ok();
}

std::string NetTransport::describe() const {
  return network_ == nullptr ? std::string("(no network)") : network_->describeDevice(device_);
}

std::string NetTransport::describePeer(int peer) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& kv : connections_) {
    const auto& [channel, connId, src, dst] = kv.first;
    if (src != peer && dst != peer) continue;
    HostFifo& f = kv.second->fifo();
    out += std::string(out.empty() ? "" : "; ") + "channel " + std::to_string(channel) + " connection " +
           std::to_string(connId) + (kv.second->outgoing() ? " to" : " from") + " rank " + std::to_string(peer) + ": ";
    if (kv.second->outgoing()) {
      out += std::to_string(f.tailCount()) + " slot(s) filled here, " + std::to_string(f.headCount()) +
             " sent over the network";
    } else {
      out += std::to_string(f.tailCount()) + " slot(s) received, " + std::to_string(f.headCount()) + " consumed here";
      if (f.sharedWithDevice()) out += " (the kernel waits for " + std::to_string(f.wantedCount()) + ")";
    }
    if (f.closedBy() >= 0) out += ", closed by rank " + std::to_string(f.closedBy());
  }
  return out;
}

int NetTransport::ptrSupport() const {
  return network_ == nullptr || listenComm_ == nullptr ? 0 : network_->properties(device_).ptrSupport;
}

void NetTransport::speedAndLatency(int* mbps, float* latencyUs) const {
  *mbps = 0;
  *latencyUs = 0;
  if (network_ == nullptr || listenComm_ == nullptr) return;
  *mbps = std::max(0, network_->properties(device_).speed);
  *latencyUs = std::max(0.0f, network_->properties(device_).latency);
}

Status NetTransport::start(std::vector<NetHandle> peers) {
  BRAID_RETURN_IF_ERROR(acceptWaker_.status());
  if (network_ == nullptr || listenComm_ == nullptr) return internalError("network transport started before listen");
  peers_ = std::move(peers);
  int threads = std::max(1, options_.nThreads);
  for (int i = 0; i < threads; ++i) {
    proxies_.push_back(std::make_unique<Proxy>());
    BRAID_RETURN_IF_ERROR(proxies_.back()->waker.status());
  }
  for (auto& proxy : proxies_) {
    Proxy* p = proxy.get();
    p->thread = std::thread([this, p] {
      log::ScopedRank scoped(rank_);
      std::function<void()> watch;
      if (p == proxies_.front().get() && options_.attachedOnly) watch = [this] { checkEnded(); };
      auto kernelsMayRun = [this] { return this->kernelsMayRun(); };
      p->run(stop_, kernelsMayRun, watch, *liveGraphs_);
    });
  }
  acceptor_ = std::thread([this] {
    log::ScopedRank scoped(rank_);
    acceptLoop();
  });
  BRAID_INFO(log::Subsys::kNet, "network transport: ", describe(), " from ", network_->origin(), ", ", threads,
             " proxy thread(s), ", threads * std::max(1, options_.nSocksPerThread), " lane(s) per connection");
  return Status::ok();
}

// A FIFO changed (a slot published to send, or freed to receive into). The changing thread steps
// the lanes itself when their proxy is not stepping them: a small slot then leaves in this call,
// without waking the proxy. The proxy is woken when requests stay in flight (it must watch them)
// or when another thread holds the lanes.
void NetTransport::wake() {
  if (goneCount_.load(std::memory_order_acquire) > 0 && !tCheckingEnded) {
    // A slot published to a peer that left fails its connection here (NetConnection::checkEnded).
    tCheckingEnded = true;
    checkEnded();
    tCheckingEnded = false;
  }
  for (auto& proxy : proxies_) {
    if (!proxy->stepHere()) proxy->waker.wake();
  }
}

void NetTransport::freed() {
  for (auto& proxy : proxies_) proxy->waker.wake();
}

void NetTransport::stepInline() {
  for (auto& proxy : proxies_) proxy->stepHere();
}

std::shared_ptr<NetConnection> NetTransport::findOrMake(const Key& key, bool outgoing, int lanes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = connections_[key];
  if (slot == nullptr) {
    int peer = outgoing ? std::get<3>(key) : std::get<2>(key);
    slot = std::make_shared<NetConnection>(outgoing, peer, options_.slots, options_.slotBytes, lanes, this);
    if (outgoing && sendsByReference()) slot->fifo().allowByReference();
    if (gone_.count(peer) != 0) slot->notePeerGone();  // made after the peer went
  }
  return slot;
}

void NetTransport::addLane(std::shared_ptr<NetConnection> connection, int index, void* comm) {
  size_t which = static_cast<size_t>(index / std::max(1, options_.nSocksPerThread)) % proxies_.size();
  Proxy& proxy = *proxies_[which];
  {
    std::lock_guard<std::mutex> lock(proxy.mu);
    proxy.added.push_back(std::make_unique<NetLane>(std::move(connection), index, network_.get(), comm));
  }
  proxy.waker.wake();
}

// Connects one lane to `dst` and sends its hello, within `deadline`.
Status NetTransport::connectLane(int dst, const NetHello& hello, const braid::net::Deadline& deadline,
                                 void** sendComm) {
  const network::NetV11& api = network_->api();
  std::string who = "rank " + std::to_string(dst) + " (network transport, " + network_->name() + ")";
  NetHandle handle = peers_[dst];  // this copy carries the connect in progress
  *sendComm = nullptr;
  while (*sendComm == nullptr) {
    BRAID_RETURN_IF_ERROR(network_->check(api.connect(network_->context(), device_, handle.data(), sendComm, nullptr),
                                          "connect to " + who));
    if (*sendComm != nullptr) break;
    BRAID_RETURN_IF_ERROR(deadline.check("connecting to " + who));
    std::this_thread::yield();
  }
  NetHello copy = hello;
  void* mh = nullptr;
  void* request = nullptr;
  Status st = network_->check(api.regMr(*sendComm, &copy, sizeof(copy), network::kPtrHost, &mh), "regMr");
  while (st.isOk() && request == nullptr) {
    st = network_->check(api.isend(*sendComm, &copy, sizeof(copy), -1, mh, nullptr, &request), "isend of the hello");
    if (st.isOk() && request == nullptr) st = deadline.check("sending the hello to " + who);
  }
  for (int done = 0; st.isOk() && !done;) {
    st = network_->check(api.test(request, &done, nullptr), "sending the hello to " + who);
    if (st.isOk() && !done) {
      st = deadline.check("sending the hello to " + who);
      std::this_thread::yield();
    }
  }
  if (mh != nullptr) api.deregMr(*sendComm, mh);
  if (!st.isOk()) {
    api.closeSend(*sendComm);
    *sendComm = nullptr;
  }
  return st;
}

Status NetTransport::fifo(int channel, int connId, int src, int dst, HostFifo** out) {
  Key key{channel, connId, src, dst};
  if (src != rank_) {
    std::shared_ptr<NetConnection> c = findOrMake(key, false, 0);
    std::string why;
    if (c->lanes() == 0 && drainedGone(src, &why)) c->endBefore(0, neverSent(key, why));
    *out = &c->fifo();
    return Status::ok();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = connections_.find(key);
    if (it != connections_.end()) {
      *out = &it->second->fifo();
      return Status::ok();
    }
  }
  std::shared_ptr<NetConnection> connection;
  BRAID_RETURN_IF_ERROR(connectOutgoing(key, nullptr, &connection));
  *out = &connection->fifo();
  return Status::ok();
}

Status NetTransport::attach(int channel, int connId, int src, int dst, std::unique_ptr<HostFifo> fifo, bool quiet) {
  Key key{channel, connId, src, dst};
  if (src == rank_) {
    std::shared_ptr<NetConnection> connection;
    return connectOutgoing(key, std::move(fifo), &connection, quiet);
  }
  std::shared_ptr<NetConnection> connection;
  std::vector<std::pair<NetHello, void*>> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = connections_[key];
    if (slot != nullptr) return internalError("network connection attached twice");
    slot = connection = std::make_shared<NetConnection>(false, src, std::move(fifo), 0, this);
    if (quiet) connection->setQuiet();
    auto range = parked_.equal_range(key);
    for (auto it = range.first; it != range.second; ++it) waiting.push_back(it->second);
    parked_.erase(range.first, range.second);
  }
  for (auto& [hello, comm] : waiting) adoptInto(connection, hello, comm);
  std::string why;
  if (waiting.empty() && drainedGone(src, &why)) connection->endBefore(0, neverSent(key, why));
  return Status::ok();
}

// Connects the lanes of outgoing connection `key` (over `fifo`, or a FIFO of its own when null).
Status NetTransport::connectOutgoing(const Key& key, std::unique_ptr<HostFifo> fifo,
                                     std::shared_ptr<NetConnection>* out, bool quiet) {
  const auto [channel, connId, src, dst] = key;
  const bool dataAlone = fifo != nullptr && !fifo->wireContiguous();
  int lanes = dataAlone ? 1
                        : std::min(kMaxLanesPerConnection,
                                   static_cast<int>(proxies_.size()) * std::max(1, options_.nSocksPerThread));
  braid::net::Deadline deadline = braid::net::Deadline::in(options_.timeoutMs, abort_);
  std::vector<void*> comms(lanes, nullptr);
  Status st = Status::ok();
  for (int i = 0; i < lanes && st.isOk(); ++i) {
    NetHello hello{kNetHelloMagic, commKey_, src, dst, channel, connId, i, lanes, dataAlone ? kHelloDataAlone : 0, 0};
    st = connectLane(dst, hello, deadline, &comms[i]);
  }
  if (!st.isOk()) {
    for (void* c : comms) {
      if (c != nullptr) network_->api().closeSend(c);
    }
    return st;
  }
  if (fifo != nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = connections_[key];
    if (slot != nullptr) return internalError("network connection attached twice");
    slot = std::make_shared<NetConnection>(true, dst, std::move(fifo), lanes, this);
    if (quiet) slot->setQuiet();
    if (gone_.count(dst) != 0) slot->notePeerGone();  // made after the peer went
    *out = slot;
  } else {
    *out = findOrMake(key, true, lanes);
  }
  for (int i = 0; i < lanes; ++i) addLane(*out, i, comms[i]);
  BRAID_INFO(log::Subsys::kNet, "channel ", channel, " connection ", connId, ": ", src, " -> ", dst, " via NET/",
             network_->name(), "/", device_, dataAlone ? "/GDRDMA" : "", " (", lanes, " lane(s))");
  return Status::ok();
}

void NetTransport::beginWork() {
  working_.fetch_add(1, std::memory_order_acq_rel);
  for (auto& proxy : proxies_) proxy->waker.wake();
}

// Connections whose peer left fail once a kernel needs them (NetConnection::checkEnded).
void NetTransport::checkEnded() {
  std::vector<std::shared_ptr<NetConnection>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& kv : connections_) all.push_back(kv.second);
  }
  for (auto& c : all) c->checkEnded();
  for (auto& [c, why] : goneOutgoing()) c->checkGone(why);
}

// This rank's connections to peers that went away, and why each went.
std::vector<std::pair<std::shared_ptr<NetConnection>, std::string>> NetTransport::goneOutgoing() {
  std::vector<std::pair<std::shared_ptr<NetConnection>, std::string>> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, c] : connections_) {
    auto it = gone_.find(std::get<3>(key));
    if (c->outgoing() && it != gone_.end()) {
      out.emplace_back(c, "rank " + std::to_string(std::get<3>(key)) +
                              " left or failed (as another connection with it found: " + it->second.why + ")");
    }
  }
  return out;
}

void NetTransport::endWork() { working_.fetch_sub(1, std::memory_order_acq_rel); }

std::shared_ptr<std::atomic<int>> NetTransport::graphCaptured() {
  liveGraphs_->fetch_add(1, std::memory_order_acq_rel);
  for (auto& proxy : proxies_) proxy->waker.wake();  // (a sleeping proxy takes the short naps from now on)
  return liveGraphs_;
}

void NetTransport::eagerLaunch(bool begin) {
  if (!begin) {
    eagerQueued_.fetch_add(1, std::memory_order_acq_rel);
    return;
  }
  eagerBegun_.fetch_add(1, std::memory_order_acq_rel);
  for (auto& proxy : proxies_) proxy->waker.wake();
}

// Quiet once no launch is half done and the probe, asked after every end it covers, finds every
// queued kernel ended: a begin after that read shows in eagerBegun_ and keeps the proxies polling.
bool NetTransport::kernelsMayRun() {
  if (working_.load(std::memory_order_acquire) > 0) return true;
  const uint64_t begun = eagerBegun_.load(std::memory_order_acquire);
  if (begun == eagerQuietAt_.load(std::memory_order_acquire)) return false;
  if (eagerQueued_.load(std::memory_order_acquire) != begun) return true;  // a launch under way
  if (!doneProbe_ || !doneProbe_()) return true;
  if (eagerBegun_.load(std::memory_order_acquire) != begun) return true;
  eagerQuietAt_.store(begun, std::memory_order_release);  // (every proxy that gets here stores the same)
  return false;
}

void NetTransport::failed(int peer, const std::string& why) {
  peerGone(peer, why);
  if (options_.onFailure) options_.onFailure(peer, why);
}

void NetTransport::peerGone(int peer, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (gone_.count(peer) != 0) return;
  gone_[peer] = Gone{why, Clock::now(), false};
  // (Counted first: a slot published from here on is checked, and one published before the loop
  // marks its connection counts as sent before the peer went.)
  goneCount_.store(gone_.size(), std::memory_order_release);
  // A peer leaves with all its connections at once: whichever connection sees it first says so for
  // the others. An idle send connection would otherwise learn it only from its own socket. (A
  // communicator whose call failed is unusable from then on, so a peer that failed counts as gone.)
  for (auto& [key, c] : connections_) {
    if (std::get<3>(key) == peer) c->notePeerGone();
  }
}

std::string NetTransport::neverSent(const Key& key, const std::string& why) {
  return "rank " + std::to_string(std::get<2>(key)) + " went away without ever sending on channel " +
         std::to_string(std::get<0>(key)) + " connection " + std::to_string(std::get<1>(key)) + " (" + why + ")";
}

// True (and why) when `peer` is gone and every lane it made has arrived.
bool NetTransport::drainedGone(int peer, std::string* why) {
  if (drainedCount_.load(std::memory_order_acquire) == 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = gone_.find(peer);
  if (it == gone_.end() || !it->second.drained) return false;
  *why = it->second.why;
  return true;
}

// Called by the acceptor after a pass that began at `passBegan` found no connection to accept and
// none waiting for its hello: every lane of a peer seen gone well before then has arrived (it
// connected them, and sent their hellos, before it closed anything). A connection from such a peer
// without a lane then never gets one: it fails (a GPU FIFO once its kernel waits on it).
void NetTransport::drainGone(Clock::time_point passBegan) {
  if (drainedCount_.load(std::memory_order_acquire) == goneCount_.load(std::memory_order_acquire)) return;
  std::vector<std::pair<std::shared_ptr<NetConnection>, std::string>> unsent;
  {
    std::lock_guard<std::mutex> lock(mu_);
    size_t drained = 0;
    for (auto& [peer, g] : gone_) {
      if (!g.drained && passBegan - g.at >= std::chrono::milliseconds(kGoneDrainMs)) {
        g.drained = true;
        for (auto& [key, c] : connections_) {
          if (std::get<2>(key) == peer && c->lanes() == 0) unsent.emplace_back(c, neverSent(key, g.why));
        }
      }
      drained += g.drained ? 1 : 0;
    }
    drainedCount_.store(drained, std::memory_order_release);
  }
  for (auto& [c, why] : unsent) {
    BRAID_INFO(log::Subsys::kNet, "network transport: ", why);
    c->endBefore(0, why);
  }
}

// Gives the proxies time to send what this rank's last calls queued: a call returns once its data
// is in the FIFOs, and the peer still needs it.
void NetTransport::flush() {
  auto until = Clock::now() + std::chrono::milliseconds(std::min(options_.timeoutMs, kMaxFlushMs));
  for (;;) {
    bool pending = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& kv : connections_) {
        HostFifo& f = kv.second->fifo();
        if (kv.second->outgoing() && f.closedBy() < 0 && f.headCount() < f.tailCount()) pending = true;
      }
    }
    if (!pending || Clock::now() > until || (abort_ != nullptr && abort_->load())) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace braid::transport
