#include "transport/socket_transport.h"

#include <algorithm>
#include <chrono>

#include "core/log.h"

namespace braid::transport {
namespace {

constexpr uint64_t kHelloMagic = 0x6272616964534f43ull;  // "braidSOC"
constexpr int kIdleSpins = 64;                           // step passes before a proxy sleeps in poll()
constexpr int kPollMs = 100;                             // longest sleep: how late a stop is seen
constexpr int64_t kHelloWaitMs = 10000;                  // an accepted socket must introduce itself by then
constexpr int64_t kMaxFlushMs = 10000;
constexpr int kMaxChannelsOrConns = 1024;

using Clock = std::chrono::steady_clock;

std::string describe(const SocketHello& h) {
  return "rank " + std::to_string(h.src) + " -> " + std::to_string(h.dst) + ", channel " + std::to_string(h.channel) +
         ", connection " + std::to_string(h.connId) + ", socket " + std::to_string(h.index) + " of " +
         std::to_string(h.lanes);
}

}  // namespace

std::string checkSocketHello(const SocketHello& h, uint64_t commKey, int rank, int nranks) {
  if (h.magic != kHelloMagic) return "not a braid socket-transport hello";
  if (h.commKey != commKey) return "for another communicator";
  if (h.dst != rank || h.src < 0 || h.src >= nranks || h.src == rank) return "ranks out of range (" + describe(h) + ")";
  if (h.channel < 0 || h.channel >= kMaxChannelsOrConns || h.connId < 0 || h.connId >= kMaxChannelsOrConns ||
      h.lanes < 1 || h.lanes > kMaxSocketsPerConnection || h.index < 0 || h.index >= h.lanes) {
    return "fields out of range (" + describe(h) + ")";
  }
  return "";
}

// One proxy thread and the lanes it drives.
struct SocketTransport::Proxy {
  Waker waker;
  std::mutex mu;
  std::vector<std::unique_ptr<SocketLane>> added;  // handed over by other threads
  std::vector<std::unique_ptr<SocketLane>> lanes;  // this thread's own
  std::thread thread;

  void run(const std::atomic<bool>& stop);
  bool adopt() {
    std::lock_guard<std::mutex> lock(mu);
    if (added.empty()) return false;
    for (auto& lane : added) lanes.push_back(std::move(lane));
    added.clear();
    return true;
  }
  bool stepAll() {
    bool moved = false;
    for (auto& lane : lanes) moved |= lane->step();
    return moved;
  }
};

// Step every lane until nothing moves for a few passes, then sleep in poll() on the lanes' sockets
// and the waker (FIFO changes, new lanes, stop).
void SocketTransport::Proxy::run(const std::atomic<bool>& stop) {
  std::vector<pollfd> fds;
  int idle = 0;
  while (!stop.load(std::memory_order_acquire)) {
    bool moved = adopt();
    moved |= stepAll();
    lanes.erase(std::remove_if(lanes.begin(), lanes.end(), [](const auto& l) { return l->finished(); }), lanes.end());
    if (moved) {
      idle = 0;
      continue;
    }
    if (++idle < kIdleSpins) {
      std::this_thread::yield();
      continue;
    }
    waker.prepareSleep();
    if (!stop.load(std::memory_order_acquire) && !adopt() && !stepAll()) {
      fds.clear();
      fds.push_back({waker.fd(), POLLIN, 0});
      for (const auto& lane : lanes) fds.push_back(lane->pollEntry());
      if (poll(fds.data(), fds.size(), kPollMs) > 0) {
        for (size_t i = 1; i < fds.size(); ++i) lanes[i - 1]->checkIdle(fds[i].revents);
      }
    }
    waker.endSleep();
    idle = 0;
  }
}

struct SocketTransport::Pending {
  net::Socket socket;
  SocketHello hello{};
  size_t got = 0;
  Clock::time_point since = Clock::now();
};

SocketTransport::SocketTransport(uint64_t commKey, int rank, int nranks, SocketOptions options,
                                 const std::atomic<bool>* abort)
    : commKey_(commKey), rank_(rank), nranks_(nranks), options_(options), abort_(abort) {}

SocketTransport::~SocketTransport() {
  if (acceptor_.joinable()) flush();
  stop_.store(true, std::memory_order_release);
  acceptWaker_.wake();
  wake();
  if (acceptor_.joinable()) acceptor_.join();
  for (auto& proxy : proxies_) {
    if (proxy->thread.joinable()) proxy->thread.join();
  }
}

Status SocketTransport::listen(const net::SocketAddress& interfaceAddress, net::SocketAddress* address) {
  net::SocketAddress at = interfaceAddress;
  at.setPort(0);
  BRAID_RETURN_IF_ERROR(net::Socket::listen(at, &listener_).withContext("opening the socket transport's listener"));
  BRAID_RETURN_IF_ERROR(listener_.localAddress(&address_));
  *address = address_;
  return Status::ok();
}

Status SocketTransport::start(std::vector<net::SocketAddress> peers) {
  BRAID_RETURN_IF_ERROR(acceptWaker_.status());
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
      p->run(stop_);
    });
  }
  acceptor_ = std::thread([this] {
    log::ScopedRank scoped(rank_);
    acceptLoop();
  });
  BRAID_INFO(log::Subsys::kNet, "socket transport: listening at ", address_.toString(), ", ", threads,
             " proxy thread(s), ", threads * std::max(1, options_.nSocksPerThread), " socket(s) per connection");
  return Status::ok();
}

void SocketTransport::wake() {
  for (auto& proxy : proxies_) proxy->waker.wake();
}

std::shared_ptr<SocketConnection> SocketTransport::findOrMake(const Key& key, bool outgoing, int lanes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = connections_[key];
  if (slot == nullptr) {
    int peer = outgoing ? std::get<3>(key) : std::get<2>(key);
    slot = std::make_shared<SocketConnection>(outgoing, peer, options_.slots, options_.slotBytes, lanes, this);
  }
  return slot;
}

void SocketTransport::addLane(std::shared_ptr<SocketConnection> connection, int index, net::Socket socket) {
  size_t which = static_cast<size_t>(index / std::max(1, options_.nSocksPerThread)) % proxies_.size();
  Proxy& proxy = *proxies_[which];
  {
    std::lock_guard<std::mutex> lock(proxy.mu);
    proxy.added.push_back(std::make_unique<SocketLane>(std::move(connection), index, std::move(socket)));
  }
  proxy.waker.wake();
}

Status SocketTransport::connection(int channel, int connId, int src, int dst, HostFifo** out) {
  Key key{channel, connId, src, dst};
  bool outgoing = src == rank_;
  if (!outgoing) {
    *out = &findOrMake(key, false, 0)->fifo();
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
  int lanes =
      std::min(kMaxSocketsPerConnection, static_cast<int>(proxies_.size()) * std::max(1, options_.nSocksPerThread));
  std::string who = "rank " + std::to_string(dst) + " at " + peers_[dst].toString() + " (socket transport)";
  net::Deadline deadline = net::Deadline::in(options_.timeoutMs, abort_);
  std::vector<net::Socket> sockets(lanes);
  for (int i = 0; i < lanes; ++i) {
    SocketHello hello{kHelloMagic, commKey_, src, dst, channel, connId, i, lanes};
    // The peer's listener opened before its address was exchanged: a refusal means it is gone.
    BRAID_RETURN_IF_ERROR(net::Socket::connect(peers_[dst], who, deadline, &sockets[i], false));
    BRAID_RETURN_IF_ERROR(sockets[i].sendAll(&hello, sizeof(hello), deadline));
  }
  auto connection = findOrMake(key, true, lanes);
  for (int i = 0; i < lanes; ++i) addLane(connection, i, std::move(sockets[i]));
  BRAID_INFO(log::Subsys::kNet, "channel ", channel, " connection ", connId, ": ", src, " -> ", dst, " via socket (",
             lanes, " socket(s))");
  *out = &connection->fifo();
  return Status::ok();
}

// Accepts sockets and reads their hellos without ever blocking on one: a client that connects and
// says nothing, or says something else, is dropped without delaying real peers.
void SocketTransport::acceptLoop() {
  std::vector<std::unique_ptr<Pending>> pending;
  std::vector<pollfd> fds;
  while (!stop_.load(std::memory_order_acquire)) {
    fds.clear();
    fds.push_back({listener_.fd(), POLLIN, 0});
    fds.push_back({acceptWaker_.fd(), POLLIN, 0});
    for (const auto& p : pending) fds.push_back({p->socket.fd(), POLLIN, 0});
    acceptWaker_.prepareSleep();
    if (!stop_.load(std::memory_order_acquire)) poll(fds.data(), fds.size(), kPollMs);
    acceptWaker_.endSleep();
    for (size_t i = 0; i < pending.size(); ++i) {
      if (fds[i + 2].revents != 0 && readHello(*pending[i])) pending[i].reset();
    }
    auto now = Clock::now();
    for (auto& p : pending) {
      if (p != nullptr && now - p->since > std::chrono::milliseconds(kHelloWaitMs)) {
        BRAID_WARN(log::Subsys::kNet, "socket transport: dropped a connection from ", p->socket.peer(),
                   " that did not introduce itself within ", kHelloWaitMs, " ms");
        p.reset();
      }
    }
    pending.erase(std::remove(pending.begin(), pending.end(), nullptr), pending.end());
    if (fds[0].revents != 0) {
      for (;;) {
        auto p = std::make_unique<Pending>();
        net::SocketAddress from;
        if (!listener_.tryAccept(&p->socket, &from).isOk() || !p->socket.valid()) break;
        p->socket.setPeer(from.toString());
        pending.push_back(std::move(p));
      }
    }
  }
}

// True when the pending socket is done with: adopted, or dropped.
bool SocketTransport::readHello(Pending& p) {
  size_t n = 0;
  Status st = p.socket.recvSome(reinterpret_cast<char*>(&p.hello) + p.got, sizeof(p.hello) - p.got, &n);
  if (!st.isOk()) {
    BRAID_WARN(log::Subsys::kNet, "socket transport: dropped a connection from ", p.socket.peer(), ": ", st.message());
    return true;
  }
  p.got += n;
  if (p.got < sizeof(p.hello)) return false;
  const SocketHello& h = p.hello;
  const std::string wrong = checkSocketHello(h, commKey_, rank_, nranks_);
  if (!wrong.empty()) {
    BRAID_WARN(log::Subsys::kNet, "socket transport: dropped a connection from ", p.socket.peer(), ": ", wrong);
    return true;
  }
  adopt(h, std::move(p.socket));
  return true;
}

void SocketTransport::adopt(const SocketHello& h, net::Socket socket) {
  auto connection = findOrMake(Key{h.channel, h.connId, h.src, h.dst}, false, 0);
  if (!connection->agreeLanes(h.lanes)) {
    BRAID_WARN(log::Subsys::kNet, "socket transport: dropped a socket of ", describe(h), ": the connection uses ",
               connection->lanes(), " sockets");
    return;
  }
  socket.setPeer("rank " + std::to_string(h.src) + " at " + socket.peer() + " (socket transport)");
  addLane(std::move(connection), h.index, std::move(socket));
}

// Gives the proxies time to send what this rank's last calls queued: a call returns once its data
// is in the FIFOs, and the peer still needs it.
void SocketTransport::flush() {
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
