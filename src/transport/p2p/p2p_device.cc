#include "transport/p2p/p2p_device.h"

#include <cuda_runtime.h>

#include <cstring>

#include "transport/cuda_check.h"
#include "transport/p2p/cuda_ipc.h"

namespace braid::transport {

P2pDeviceTransport::P2pDeviceTransport(int device, int64_t pid, int nranks, const BlockLayout& layout)
    : MappedDeviceTransport("P2P", nranks, layout),
      device_(device),
      pid_(pid),
      opened_(nranks, false),
      handles_(nranks) {}

P2pDeviceTransport::~P2pDeviceTransport() {
  for (size_t r = 0; r < arenas_.size(); ++r) {
    if (opened_[r]) closeIpcMapping(device_, handles_[r].data());
  }
}

Status P2pDeviceTransport::reach(int peer, const PeerIdentity& identity, const DeviceOffer& offer, std::string* path) {
  if (identity.pid == pid_) {
    arenas_[peer] = reinterpret_cast<char*>(offer.base);
    if (identity.device == device_) {
      *path = "same device";
      return Status::ok();
    }
    int can = 0;
    cudaDeviceCanAccessPeer(&can, device_, identity.device);
    if (!can) {
      return internalError("CUDA device " + std::to_string(device_) + " cannot access device " +
                           std::to_string(identity.device) + " of " + describePeer(peer, identity) +
                           " but the communicator did not choose host memory");
    }
    cudaError_t err = cudaDeviceEnablePeerAccess(identity.device, 0);
    if (err != cudaErrorPeerAccessAlreadyEnabled) BRAID_RETURN_IF_ERROR(cudaCheck("cudaDeviceEnablePeerAccess", err));
    (void)cudaGetLastError();
    *path = "P2P/direct pointer";
    return Status::ok();
  }
  void* p = nullptr;
  BRAID_RETURN_IF_ERROR(openIpcMapping(device_, offer.ipc, "the buffers of " + describePeer(peer, identity), &p));
  arenas_[peer] = static_cast<char*>(p);
  opened_[peer] = true;
  std::memcpy(handles_[peer].data(), offer.ipc, kIpcHandleBytes);
  *path = identity.device == device_ ? "P2P/IPC (same device)" : "P2P/IPC";
  return Status::ok();
}

}  // namespace braid::transport
