#include "transport/shm/shm_device.h"

#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "transport/cuda_check.h"

namespace braid::transport {

SharedArenas::~SharedArenas() {
  for (auto& m : maps_) {
    cudaHostUnregister(m.first);
    munmap(m.first, m.second);
  }
}

Status SharedArenas::map(const std::string& name, size_t bytes, bool create, char** device) {
  int fd = shm_open(name.c_str(), create ? (O_CREAT | O_EXCL | O_RDWR) : O_RDWR, 0600);
  if (fd < 0) return Status(Code::kSystemError, "shm_open " + name + ": " + std::strerror(errno));
  if (create && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    shm_unlink(name.c_str());
    return Status(Code::kSystemError, "ftruncate " + name + ": " + std::strerror(errno));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return Status(Code::kSystemError, "mmap " + name + ": " + std::strerror(errno));
  maps_.push_back({p, bytes});
  BRAID_RETURN_IF_ERROR(
      cudaCheck("cudaHostRegister", cudaHostRegister(p, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable)));
  void* d = nullptr;
  BRAID_RETURN_IF_ERROR(cudaCheck("cudaHostGetDevicePointer", cudaHostGetDevicePointer(&d, p, 0)));
  *device = static_cast<char*>(d);
  return Status::ok();
}

Status ShmDeviceTransport::reach(int peer, const PeerIdentity& identity, const DeviceOffer& offer, std::string* path) {
  *path = "SHM/mapped host memory";
  if (identity.pid == pid_) {
    // The same process sees the peer's registered segment at its address.
    arenas_[peer] = reinterpret_cast<char*>(offer.base);
    return Status::ok();
  }
  return maps_.map(offer.shm, offer.bytes, false, &arenas_[peer])
      .withContext("mapping the host-memory FIFOs of " + describePeer(peer, identity));
}

}  // namespace braid::transport
