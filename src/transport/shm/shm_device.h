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

class ShmDeviceTransport : public MappedDeviceTransport {
 public:
  ShmDeviceTransport(int64_t pid, int nranks, const BlockLayout& layout)
      : MappedDeviceTransport("SHM", nranks, layout), pid_(pid) {}

  Status reach(int peer, const PeerIdentity& identity, const DeviceOffer& offer, std::string* path) override;

 private:
  const int64_t pid_;
  SharedArenas maps_;  // the peers' segments of other processes
};

}  // namespace braid::transport
