// The P2P transport: GPUs of one host reach each other's arena in GPU memory directly, by pointer
// within a process (peer access enabled between two devices) or by CUDA IPC across processes.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "transport/device_links.h"
#include "transport/p2p/cuda_ipc.h"

namespace braid::transport {

class P2pDeviceTransport : public MappedDeviceTransport {
 public:
  /// This rank's `device`, process `pid` of a communicator of `nranks`; blocks laid out as `layout`.
  P2pDeviceTransport(int device, int64_t pid, int nranks, const BlockLayout& layout);
  /// Closes the IPC mappings it opened (after the communicator's last kernel).
  ~P2pDeviceTransport() override;

  Status reach(int peer, const PeerIdentity& identity, const DeviceOffer& offer, std::string* path) override;

 private:
  const int device_;
  const int64_t pid_;
  std::vector<bool> opened_;                                         // by CUDA IPC (cuda_ipc.h)
  std::vector<std::array<unsigned char, kIpcHandleBytes>> handles_;  // what each opened, to release
};

}  // namespace braid::transport
