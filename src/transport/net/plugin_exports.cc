// libnccl-net-braid.so: braid's socket network as an ncclNet plugin, for NCCL itself
// (NCCL_NET_PLUGIN=braid) or any other program that loads net plugins. It exports the same network
// as v11 (NCCL 2.28-2.29) and, through the down adapters, as v10, v9 and v8 (NCCL 2.20-2.27); a
// version script (cmake/nccl-net.map) exports these four symbols and nothing else.
#include <cstdlib>

#include "transport/net/adapters.h"
#include "transport/net/socket_net.h"

namespace {

// A program that loads this plugin speaks NCCL's variable names: the interface choice follows
// NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY unless braid's own names are set.
__attribute__((constructor)) void adoptNcclSocketEnvironment() {
  const char* names[][2] = {{"NCCL_SOCKET_IFNAME", "BRAID_SOCKET_IFNAME"},
                            {"NCCL_SOCKET_FAMILY", "BRAID_SOCKET_FAMILY"}};
  for (const auto& n : names) {
    const char* v = std::getenv(n[0]);
    if (v != nullptr && std::getenv(n[1]) == nullptr) setenv(n[1], v, 0);
  }
}

}  // namespace

namespace braid::network {

// Declared with C linkage in net_abi.h.
NetV11 ncclNetPlugin_v11 = socketNetwork();
NetV10 ncclNetPlugin_v10 = exportAsV10(socketNetwork());
NetV9 ncclNetPlugin_v9 = exportAsV9(socketNetwork());
NetV8 ncclNetPlugin_v8 = exportAsV8(socketNetwork());

}  // namespace braid::network
