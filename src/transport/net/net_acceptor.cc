// The network transport's acceptor: lanes that peers connect, the hello each must send first
// (checked, and dropped with a warning if it is anything else), and their adoption by the
// connection they belong to (net_transport.h).
#include <algorithm>
#include <chrono>

#include "core/log.h"
#include "transport/net/net_transport.h"
#include "transport/net/socket_net.h"

namespace braid::transport {
namespace {

constexpr int64_t kHelloWaitMs = 10000;  // an accepted lane must introduce itself by then
constexpr int kMaxChannelsOrConns = 1024;

using Clock = std::chrono::steady_clock;

std::string describeHello(const NetHello& h) {
  return "rank " + std::to_string(h.src) + " -> " + std::to_string(h.dst) + ", channel " + std::to_string(h.channel) +
         ", connection " + std::to_string(h.connId) + ", lane " + std::to_string(h.index) + " of " +
         std::to_string(h.lanes);
}

}  // namespace

std::string checkNetHello(const NetHello& h, uint64_t commKey, int rank, int nranks) {
  if (h.magic != kNetHelloMagic) return "not a braid network-transport hello";
  if (h.commKey != commKey) return "for another communicator";
  if (h.dst != rank || h.src < 0 || h.src >= nranks || h.src == rank)
    return "ranks out of range (" + describeHello(h) + ")";
  if (h.channel < 0 || h.channel >= kMaxChannelsOrConns || h.connId < 0 || h.connId >= kMaxChannelsOrConns ||
      h.lanes < 1 || h.lanes > kMaxLanesPerConnection || h.index < 0 || h.index >= h.lanes ||
      (h.flags & ~kHelloDataAlone) != 0 || ((h.flags & kHelloDataAlone) != 0 && h.lanes != 1)) {
    return "fields out of range (" + describeHello(h) + ")";
  }
  return "";
}

struct NetTransport::Pending {
  void* comm = nullptr;  // accepted, not yet introduced
  void* mhandle = nullptr;
  void* request = nullptr;
  NetHello hello{};
  Clock::time_point since = Clock::now();
};

// Accepts lanes and waits for their hellos without ever blocking on one: a lane that says nothing,
// or something else, is dropped without delaying real peers.
void NetTransport::acceptLoop() {
  const network::NetV11& api = network_->api();
  std::vector<std::unique_ptr<Pending>> pending;
  int napUs = 50;
  while (!stop_.load(std::memory_order_acquire)) {
    bool moved = false;
    const Clock::time_point passBegan = Clock::now();
    for (;;) {
      void* comm = nullptr;
      Status st = network_->check(api.accept(listenComm_, &comm, nullptr), "accept");
      if (!st.isOk()) BRAID_WARN(log::Subsys::kNet, "network transport: ", st.message());
      if (comm == nullptr) break;
      auto p = std::make_unique<Pending>();
      p->comm = comm;
      pending.push_back(std::move(p));
      moved = true;
    }
    auto now = Clock::now();
    for (auto& p : pending) {
      if (stepPending(*p)) {
        p.reset();
        moved = true;
      } else if (now - p->since > std::chrono::milliseconds(kHelloWaitMs)) {
        BRAID_WARN(log::Subsys::kNet, "network transport: dropped a connection that did not introduce itself within ",
                   kHelloWaitMs, " ms");
        if (p->mhandle != nullptr) api.deregMr(p->comm, p->mhandle);
        api.closeRecv(p->comm);
        p.reset();
      }
    }
    pending.erase(std::remove(pending.begin(), pending.end(), nullptr), pending.end());
    if (moved) {
      napUs = 50;
      continue;
    }
    if (pending.empty()) drainGone(passBegan);
    // Nothing new: sleep on the listener (the built-in network) or nap, longer while idle.
    std::vector<pollfd> fds{{acceptWaker_.fd(), POLLIN, 0}};
    int fd = network_->builtIn() ? network::socketNetFd(listenComm_) : -1;
    if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    for (const auto& p : pending) {
      int pfd = network_->builtIn() ? network::socketNetFd(p->comm) : -1;
      if (pfd >= 0) fds.push_back({pfd, POLLIN, 0});
    }
    bool nap = fd < 0 || !pending.empty();
    acceptWaker_.prepareSleep();
    if (!stop_.load(std::memory_order_acquire))
      poll(fds.data(), fds.size(), nap ? std::max(1, napUs / 1000) : kNetPollMs);
    acceptWaker_.endSleep();
    napUs = std::min(napUs * 2, 10000);
  }
  for (auto& p : pending) {
    if (p->mhandle != nullptr) api.deregMr(p->comm, p->mhandle);
    api.closeRecv(p->comm);
  }
}

// True when the pending lane is done with: adopted, or dropped.
bool NetTransport::stepPending(Pending& p) {
  const network::NetV11& api = network_->api();
  Status st = Status::ok();
  if (p.request == nullptr) {
    if (p.mhandle == nullptr) {
      st = network_->check(api.regMr(p.comm, &p.hello, sizeof(p.hello), network::kPtrHost, &p.mhandle), "regMr");
    }
    void* data = &p.hello;
    size_t size = sizeof(p.hello);
    int tag = -1;
    if (st.isOk()) {
      st = network_->check(api.irecv(p.comm, 1, &data, &size, &tag, &p.mhandle, nullptr, &p.request),
                           "irecv of a hello");
    }
    if (st.isOk() && p.request == nullptr) return false;
  }
  int done = 0, bytes = 0;
  if (st.isOk()) st = network_->check(api.test(p.request, &done, &bytes), "receiving a hello");
  if (st.isOk() && !done) return false;
  if (st.isOk() && bytes != static_cast<int>(sizeof(p.hello))) {
    st = remoteError("a hello of " + std::to_string(bytes) + " bytes");
  }
  std::string wrong = st.isOk() ? checkNetHello(p.hello, commKey_, rank_, nranks_) : st.message();
  if (p.mhandle != nullptr) api.deregMr(p.comm, p.mhandle);
  p.mhandle = nullptr;
  if (!wrong.empty()) {
    BRAID_WARN(log::Subsys::kNet, "network transport: dropped a connection: ", wrong);
    api.closeRecv(p.comm);
    return true;
  }
  adopt(p.hello, p.comm);
  return true;
}

void NetTransport::adopt(const NetHello& h, void* recvComm) {
  Key key{h.channel, h.connId, h.src, h.dst};
  if (!options_.attachedOnly) {
    adoptInto(findOrMake(key, false, 0), h, recvComm);
    return;
  }
  std::shared_ptr<NetConnection> connection;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = connections_.find(key);
    if (it == connections_.end()) {
      parked_.emplace(key, std::make_pair(h, recvComm));  // before its attach(): it waits
      return;
    }
    connection = it->second;
  }
  adoptInto(connection, h, recvComm);
}

void NetTransport::adoptInto(std::shared_ptr<NetConnection> connection, const NetHello& h, void* recvComm) {
  const bool dataAlone = (h.flags & kHelloDataAlone) != 0;
  if (dataAlone == connection->fifo().wireContiguous()) {
    // The ranks agree on GPUDirect RDMA at init (NetDeviceTransport::agree), so the two ends of a
    // connection choose alike; ends that still differ (braid builds that differ, say) would leave
    // the kernels waiting for data that cannot arrive: the connection fails instead.
    auto where = [](bool alone) { return alone ? "in GPU memory (GPUDirect RDMA)" : "in host memory"; };
    std::string why = "rank " + std::to_string(h.src) + " keeps its network slots " + where(dataAlone) + " and rank " +
                      std::to_string(h.dst) + " " + where(!dataAlone) + " (channel " + std::to_string(h.channel) +
                      " connection " + std::to_string(h.connId) +
                      "), though the ranks agree on GPUDirect RDMA at init (BRAID_NET_GDR and each network's "
                      "ptrSupport): do the ranks run different braid builds?";
    BRAID_WARN(log::Subsys::kNet, "network transport: ", why);
    network_->api().closeRecv(recvComm);
    connection->fail(why);
    return;
  }
  if (!connection->agreeLanes(h.lanes)) {
    BRAID_WARN(log::Subsys::kNet, "network transport: dropped a lane of ", describeHello(h), ": the connection uses ",
               connection->lanes(), " lanes");
    network_->api().closeRecv(recvComm);
    return;
  }
  addLane(std::move(connection), h.index, recvComm);
}

}  // namespace braid::transport
