#include "transport/host_links.h"

#include <string>

#include "transport/loopback/loopback.h"
#include "transport/shm/shm_segment.h"

namespace braid::transport {

HostLinks::HostLinks(const HostLinkOptions& options)
    : o_(options), fast_(new std::atomic<HostFifo*>[size_t{kFastChannels} * kMaxConnIds * options.nranks * 2]()) {
  auto loopback = std::make_unique<LoopbackLinks>(o_.commKey, o_.rank, o_.slots, o_.slotBytes);
  loopback_ = loopback.get();
  transports_[static_cast<int>(Kind::kLoopback)] = std::move(loopback);
  auto network = std::make_unique<NetTransport>(o_.commKey, o_.rank, o_.nranks,
                                                NetOptions::fromParams(o_.slots, o_.slotBytes, o_.timeoutMs), o_.abort);
  network_ = network.get();
  transports_[static_cast<int>(Kind::kNet)] = std::move(network);
}

HostLinks::~HostLinks() {
  // The shared-memory segments first (a sender's unread slots keep their names), the network's
  // connections (it sends what is queued), the loopback endpoint last.
  for (Kind k : {Kind::kShm, Kind::kNet, Kind::kP2p, Kind::kLoopback}) transports_[static_cast<int>(k)].reset();
}

void HostLinks::setSlotBytes(size_t slotBytes) {
  o_.slotBytes = slotBytes;
  loopback_->setSlotBytes(slotBytes);
  network_->setSlotBytes(slotBytes);
}

Status HostLinks::listen(const net::SocketAddress& interfaceAddress, NetHandle* handle) {
  return network_->listen(interfaceAddress, handle);
}

Status HostLinks::start(const std::vector<PeerIdentity>& peers, std::vector<NetHandle> handles, uint64_t shmKey,
                        bool shmDisabled) {
  SelectFacts facts;
  facts.shmDisabled = shmDisabled;
  kinds_.clear();
  bool anyShm = false, anyNet = false;
  for (const PeerIdentity& p : peers) {
    kinds_.push_back(selectTransport(peers[o_.rank], p, facts));
    anyShm |= kinds_.back() == Kind::kShm;
    anyNet |= kinds_.back() == Kind::kNet;
  }
  if (anyShm) {
    ShmFifoOptions so;
    so.slots = o_.slots;
    so.slotBytes = o_.slotBytes;
    so.timeoutMs = o_.timeoutMs;
    so.stop = StopFlags{o_.abort, nullptr};
    std::vector<long> pids;
    for (const PeerIdentity& p : peers) pids.push_back(static_cast<long>(p.pid));
    transports_[static_cast<int>(Kind::kShm)] = std::make_unique<ShmLinks>(shmKey, o_.rank, so, std::move(pids));
  }
  return anyNet ? network_->start(std::move(handles)) : Status::ok();
}

std::atomic<HostFifo*>* HostLinks::fastEntry(int channel, int connId, int src, int dst) {
  if (channel < 0 || channel >= kFastChannels || connId < 0 || connId >= kMaxConnIds) return nullptr;
  const bool sending = src == o_.rank;
  const size_t peer = static_cast<size_t>(sending ? dst : src);
  return &fast_[((static_cast<size_t>(channel) * kMaxConnIds + connId) * o_.nranks + peer) * 2 + sending];
}

HostFifo* HostLinks::fifo(int channel, int connId, int src, int dst) {
  std::atomic<HostFifo*>* fast = fastEntry(channel, connId, src, dst);
  if (fast != nullptr) {
    if (HostFifo* f = fast->load(std::memory_order_acquire)) return f;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto key = std::make_tuple(channel, connId, src, dst);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  const int peer = src == o_.rank ? dst : src;
  HostTransport* transport = transports_[static_cast<int>(kinds_[peer])].get();
  HostFifo* f = nullptr;
  Status st = transport != nullptr ? transport->fifo(channel, connId, src, dst, &f)
                                   : internalError(std::string("no ") + kindName(kinds_[peer]) + " transport");
  if (!st.isOk()) {
    error_ = st.withContext("connection " + std::to_string(src) + "->" + std::to_string(dst) + " (" +
                            kindName(kinds_[peer]) + ")");
    hasError_.store(true, std::memory_order_release);
    return nullptr;  // not cached: a later call tries again
  }
  if (busyPoll_) f->setPauseSpins(HostFifo::kBusyPauseSpins);
  cache_.emplace(key, f);
  if (fast != nullptr) fast->store(f, std::memory_order_release);
  return f;
}

void HostLinks::closeAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& kv : cache_) {
    if (kv.second != nullptr) kv.second->close(o_.rank);
  }
}

Status HostLinks::takeError() {
  if (!hasError_.load(std::memory_order_acquire)) return Status::ok();
  std::lock_guard<std::mutex> lock(mu_);
  Status s = error_;
  error_ = Status::ok();
  hasError_.store(false, std::memory_order_relaxed);
  return s;
}

}  // namespace braid::transport
