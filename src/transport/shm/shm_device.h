// The SHM transport for GPUs: where ranks of one host cannot reach each other's GPU memory, every
// rank's arena lives in a shared-memory segment, registered with CUDA as mapped memory; a peer in
// another process maps the segment too, one in this process uses the address it offers.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "transport/device_links.h"

namespace braid::transport {

/// Shared-memory segments mapped into this process and registered with CUDA; unregistered and
/// unmapped on destruction (after the communicator's last kernel).
class SharedArenas {
 public:
  SharedArenas() = default;
  ~SharedArenas();
  SharedArenas(const SharedArenas&) = delete;
  SharedArenas& operator=(const SharedArenas&) = delete;
  /// Maps segment `name` (creating it, zeroed, with `bytes` when `create`), registers it, and
  /// returns its device address.
  Status map(const std::string& name, size_t bytes, bool create, char** device);

 private:
  std::vector<std::pair<void*, size_t>> maps_;
};

class ShmDeviceTransport : public DeviceTransport {
 public:
  ShmDeviceTransport(int64_t pid, int nranks, const BlockLayout& layout)
      : pid_(pid), layout_(layout), arenas_(nranks, nullptr) {}

  Status reach(int peer, const PeerIdentity& identity, const DeviceOffer& offer, std::string* path) override;
  char* arena(int peer) const override { return arenas_[peer]; }
  Status ends(int channel, int connId, int peer, char* mine, char* theirs, device::PeerConn* pc) override;

 private:
  const int64_t pid_;
  const BlockLayout layout_;
  std::vector<char*> arenas_;
  SharedArenas maps_;  // the peers' segments of other processes
};

}  // namespace braid::transport
