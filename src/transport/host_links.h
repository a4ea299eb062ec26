// HostLinks: a host-memory rank's connections to its peers. The selection table (transport.h)
// gives each peer a transport; each transport hands back the FIFO of a connection when a call first
// opens it (loopback/: the peer thread's endpoint; shm/: a shared-memory segment; net/: a
// connection of the network transport). Lookups are cached, the first channels' without a lock
// (every call opens its connections); a connection that cannot be made is remembered as the error
// of the call.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/status.h"
#include "net/socket_address.h"
#include "transport/host_fifo.h"
#include "transport/host_transport.h"
#include "transport/loopback/loopback.h"
#include "transport/net/net_transport.h"
#include "transport/transport.h"

namespace braid::transport {

/// Connection ids the lock-free cache holds (algo's kNumConnIds must fit; larger ids take the lock).
constexpr int kMaxConnIds = 8;

struct HostLinkOptions {
  uint64_t commKey = 0;  // the communicator (loopback endpoints, network hellos)
  int rank = 0;
  int nranks = 1;
  int slots = 8;          // FIFO slots per connection (BRAID_STEPS)
  size_t slotBytes = 0;   // bytes per slot (until setSlotBytes)
  int64_t timeoutMs = 0;  // waits for a peer that makes its side of a connection
  const std::atomic<bool>* abort = nullptr;
};

class HostLinks : public FifoResolver {
 public:
  /// Registers this rank's loopback endpoint: made before the bootstrap, so that peer threads whose
  /// init completes find it.
  explicit HostLinks(const HostLinkOptions& options);
  /// This rank's shared-memory segments first, then what senders left for it that it never opened.
  ~HostLinks() override;

  /// Where the peers' network transports connect to this rank (a listener on `interfaceAddress`).
  Status listen(const net::SocketAddress& interfaceAddress, NetHandle* handle);
  /// True when large sends to other hosts leave their data in the caller's buffer (braid's own
  /// socket network: NetTransport::sendsByReference).
  bool sendsByReference() const { return network_ != nullptr && network_->sendsByReference(); }
  /// The listening network device's speed and latency (NetTransport::speedAndLatency).
  void speedAndLatency(int* mbps, float* latencyUs) const { network_->speedAndLatency(mbps, latencyUs); }

  /// Every rank's identity and network handle, from init's one exchange: picks each peer's
  /// transport and starts the network's proxies if a peer needs them. `shmKey` names the
  /// shared-memory segments (the same on every rank).
  Status start(const std::vector<PeerIdentity>& peers, std::vector<NetHandle> handles, uint64_t shmKey,
               bool shmDisabled);

  /// The transport of `peer` (after start).
  Kind kindOf(int peer) const { return kinds_[peer]; }

  /// Before start: the slot size of every FIFO, chosen once the peers are known (the same on every
  /// rank of the communicator: the algorithms' chunk).
  void setSlotBytes(size_t slotBytes);

  /// Waits on the FIFOs made from now on poll before yielding (every rank of the host has a CPU).
  void setBusyPoll(bool busy) { busyPoll_ = busy; }

  HostFifo* fifo(int channel, int connId, int src, int dst) override;

  /// Closes every connection this rank has made: peers waiting on them stop, naming this rank.
  void closeAll();

  /// The error of the last connection that could not be made (cleared). Every call asks, so the
  /// usual answer (none) takes no lock.
  Status takeError();
  /// Where this rank's network connections with `peer` stand (NetTransport::describePeer; any
  /// thread), "" where none carries its bytes (shared memory, loopback).
  std::string describePeer(int peer) const {
    return network_ != nullptr ? network_->describePeer(peer) : std::string();
  }

 private:
  static constexpr int kFastChannels = 4;
  std::atomic<HostFifo*>* fastEntry(int channel, int connId, int src, int dst);

  HostLinkOptions o_;  // (slotBytes: setSlotBytes)
  std::vector<Kind> kinds_;
  bool busyPoll_ = false;
  std::unique_ptr<HostTransport> transports_[kNumKinds];
  NetTransport* network_ = nullptr;    // transports_[kNet]
  LoopbackLinks* loopback_ = nullptr;  // transports_[kLoopback]
  std::unique_ptr<std::atomic<HostFifo*>[]> fast_;
  std::mutex mu_;
  std::map<std::tuple<int, int, int, int>, HostFifo*> cache_;
  Status error_;
  std::atomic<bool> hasError_{false};  // error_ holds one
};

}  // namespace braid::transport
