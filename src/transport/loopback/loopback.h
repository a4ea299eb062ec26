// Loopback: the transport between ranks that are threads of one process.
//
// Each rank of a communicator owns an endpoint holding its incoming FIFOs, one per (channel,
// connection id, source rank), made on first use by whichever side asks first. Endpoints are found
// through a process-wide table keyed by (communicator id, rank), filled before the bootstrap
// completes, so that a rank whose init returned finds every peer of its process already there.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/status.h"
#include "transport/host_fifo.h"
#include "transport/host_transport.h"

namespace braid::transport {

class LoopbackEndpoint {
 public:
  explicit LoopbackEndpoint(int slots) : slots_(slots) {}

  /// The FIFO from `src` into this rank on (channel, connId), made with slots of `slotBytes` by
  /// whichever side asks first (both sides of a communicator use the same size, chosen once its
  /// ranks are known: HostLinks::setSlotBytes).
  HostFifo* incoming(int channel, int connId, int src, size_t slotBytes);

 private:
  const int slots_;
  std::mutex mu_;
  std::map<std::tuple<int, int, int>, std::unique_ptr<HostFifo>> fifos_;
};

/// Registers rank `rank` of communicator `commKey` in this process; unregisters when the returned
/// handle is destroyed.
class LoopbackRegistration {
 public:
  LoopbackRegistration(uint64_t commKey, int rank, std::shared_ptr<LoopbackEndpoint> endpoint);
  ~LoopbackRegistration();
  LoopbackRegistration(const LoopbackRegistration&) = delete;
  LoopbackRegistration& operator=(const LoopbackRegistration&) = delete;

 private:
  uint64_t commKey_;
  int rank_;
};

/// The endpoint of `rank` of `commKey` in this process, or null.
std::shared_ptr<LoopbackEndpoint> findLoopbackEndpoint(uint64_t commKey, int rank);

/// The loopback transport of one rank: its endpoint, registered for as long as it lives, and the
/// peer threads' endpoints it found (kept alive while their FIFOs are in use).
class LoopbackLinks : public HostTransport {
 public:
  LoopbackLinks(uint64_t commKey, int rank, int slots, size_t slotBytes);
  /// Before the first fifo().
  void setSlotBytes(size_t slotBytes) { slotBytes_ = slotBytes; }
  Status fifo(int channel, int connId, int src, int dst, HostFifo** out) override;

 private:
  const uint64_t commKey_;
  size_t slotBytes_;
  std::shared_ptr<LoopbackEndpoint> endpoint_;
  LoopbackRegistration registration_;
  std::mutex mu_;
  std::vector<std::shared_ptr<LoopbackEndpoint>> found_;
};

}  // namespace braid::transport
