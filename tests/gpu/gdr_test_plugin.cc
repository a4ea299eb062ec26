// libnccl-net-gdrtest.so: a network that takes GPU memory (ptrSupport HOST | CUDA, and DMABUF with
// BRAID_GDRTEST_DMABUF=1), for testing braid's GPUDirect RDMA path (transport/net/net_device.h)
// where no RDMA NIC exists: tests/net/staging_network.h over GPU memory, its copies CUDA copies.
// They run on one non-blocking stream, made at init: a copy queued behind a kernel that waits for
// it would never run (a real NIC's DMA waits in no CUDA queue).
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "staging_network.h"

namespace {

std::mutex gCopyMu;
cudaStream_t gStream = nullptr;

ncclResult_t cudaCopy(void* dst, const void* src, size_t bytes) {
  std::lock_guard<std::mutex> lock(gCopyMu);
  cudaError_t err = cudaSuccess;
  if (gStream == nullptr) err = cudaStreamCreateWithFlags(&gStream, cudaStreamNonBlocking);
  if (err == cudaSuccess && bytes > 0) err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, gStream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(gStream);
  return err == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}

void makeStream() { cudaCopy(nullptr, nullptr, 0); }

bool offersDmaBuf() {
  const char* v = std::getenv("BRAID_GDRTEST_DMABUF");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace

namespace braid::network {
NetV11 ncclNetPlugin_v11 = testnet::stagingNetwork({"BraidGdrTest", cudaCopy, offersDmaBuf(), makeStream});
}  // namespace braid::network
