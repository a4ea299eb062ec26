// A network for tests that takes "GPU memory" (ptrSupport HOST | CUDA) where no RDMA NIC exists:
// braid's socket network, where memory registered as NCCL_PTR_CUDA is staged through a host copy
// of the network's own:
//   isend  copies the registered bytes out, then sends the copy;
//   irecv  receives into the copy, and test() reports it done with the bytes still there;
//   iflush copies them into the registered memory.
// So, as with a NIC whose writes a GPU may not see before a flush, a receiver that published a slot
// without its iflush would hand its reader stale bytes. The unit tests use it over plain memory
// (memcpy); libnccl-net-gdrtest.so (tests/gpu/gdr_test_plugin.cc) over GPU memory (CUDA copies).
#pragma once

#include <cstddef>

#include "transport/net/net_abi.h"

namespace braid::testnet {

struct StagingSpec {
  const char* name;
  // Moves `bytes` between registered memory and the network's copy (either way).
  ncclResult_t (*copy)(void* dst, const void* src, size_t bytes);
  bool dmaBuf = false;         // also offer NCCL_PTR_DMABUF and take regMrDmaBuf (an open descriptor)
  void (*onInit)() = nullptr;  // called by every init, before the socket network's
};

/// The network of `spec` (the first spec a process gives is the one it keeps).
network::NetV11 stagingNetwork(const StagingSpec& spec);
/// iflush calls that copied bytes, since the process began.
long stagingFlushes();
/// Slots registered by regMrDmaBuf (with an open descriptor), since the process began.
long stagingDmaBufs();

}  // namespace braid::testnet
