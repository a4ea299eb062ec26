#include "transport/p2p/cuda_ipc.h"

#include <cuda_runtime.h>

#include <cstring>
#include <map>
#include <mutex>

#include "transport/cuda_check.h"

namespace braid::transport {
namespace {

static_assert(sizeof(cudaIpcMemHandle_t) == kIpcHandleBytes, "a CUDA IPC handle is 64 bytes");

struct Mapping {
  void* at = nullptr;
  int users = 0;
};
std::mutex mappingsMu;
std::map<std::string, Mapping>& mappings() {
  static auto* m = new std::map<std::string, Mapping>;  // never destroyed: used until the last comm ends
  return *m;
}
std::string keyOf(int device, const unsigned char* handle) {
  return std::to_string(device) + ":" + std::string(reinterpret_cast<const char*>(handle), kIpcHandleBytes);
}

}  // namespace

Status openIpcMapping(int device, const unsigned char* handle, const std::string& what, void** at) {
  std::lock_guard<std::mutex> lock(mappingsMu);
  Mapping& m = mappings()[keyOf(device, handle)];
  if (m.users == 0) {
    cudaIpcMemHandle_t h;
    std::memcpy(&h, handle, sizeof(h));
    const cudaError_t err = cudaIpcOpenMemHandle(&m.at, h, cudaIpcMemLazyEnablePeerAccess);
    if (err != cudaSuccess) {
      mappings().erase(keyOf(device, handle));
      return cudaCheck("cudaIpcOpenMemHandle of " + what, err);
    }
  }
  ++m.users;
  *at = m.at;
  return Status::ok();
}

void closeIpcMapping(int device, const unsigned char* handle) {
  std::lock_guard<std::mutex> lock(mappingsMu);
  auto it = mappings().find(keyOf(device, handle));
  if (it == mappings().end() || --it->second.users > 0) return;
  cudaIpcCloseMemHandle(it->second.at);
  mappings().erase(it);
}

}  // namespace braid::transport
