// braid-memops-probe: how long a stream memory operation (cuStreamWaitValue32 / WriteValue32) takes
// to see a word change, the copy-engine path's ordering (docs/gpu.md). Round trips, each timed over
// `iters` (default 200) in one batch:
//   memop<->memop       two streams, each writing a word the other waits for
//   kernel<->memop      a one-thread kernel spinning on a word a stream raises after waiting for
//                       the kernel's word (the reducer and its side streams)
//   ... + copy          the same with a cudaMemcpyAsync of 8 B or 1 MiB between wait and write
// Exit 77 where there is no CUDA device.
//
//   braid-memops-probe [iters]
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

using MemOp = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

MemOp entry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess)
    return nullptr;
  return reinterpret_cast<MemOp>(fn);
}

__global__ void pingKernel(volatile unsigned* mine, volatile unsigned* theirs, int iters) {
  if (threadIdx.x != 0) return;
  for (int i = 1; i <= iters; ++i) {
    *mine = i;
    __threadfence_system();
    while (*theirs < static_cast<unsigned>(i)) {
    }
  }
}

bool check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "braid-memops-probe: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 200;
  if (iters < 1) {
    std::fprintf(stderr, "usage: braid-memops-probe [iters >= 1]\n");
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1) {
    std::printf("braid-memops-probe: no CUDA device\n");
    return 77;
  }
  const MemOp write = entry("cuStreamWriteValue32"), wait = entry("cuStreamWaitValue32");
  if (write == nullptr || wait == nullptr) {
    std::fprintf(stderr, "braid-memops-probe: the driver has no stream memory operations\n");
    return 1;
  }
  unsigned* words = nullptr;
  char *src = nullptr, *dst = nullptr;
  cudaStream_t a = nullptr, b = nullptr;
  if (!check(cudaMalloc(&words, 256), "cudaMalloc") || !check(cudaMalloc(&src, 1 << 20), "cudaMalloc") ||
      !check(cudaMalloc(&dst, 1 << 20), "cudaMalloc") ||
      !check(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), "cudaStreamCreate") ||
      !check(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), "cudaStreamCreate"))
    return 1;
  const auto word = [&](int i) { return reinterpret_cast<CUdeviceptr>(words + i); };
  const char* names[] = {"memop<->memop", "kernel<->memop", "kernel<->memop + 8 B copy", "kernel<->memop + 1 MiB copy"};
  const char* env = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  std::printf("# %d round trips each, CUDA_DEVICE_MAX_CONNECTIONS=%s\n", iters, env != nullptr ? env : "(unset: 8)");
  for (int mode = 0; mode < 4; ++mode) {
    if (!check(cudaMemset(words, 0, 256), "cudaMemset") || !check(cudaDeviceSynchronize(), "sync")) return 1;
    const auto t0 = std::chrono::steady_clock::now();
    bool ok = true;
    if (mode == 0) {
      for (int i = 1; i <= iters && ok; ++i) {
        ok = write(a, word(0), i, CU_STREAM_WRITE_VALUE_DEFAULT) == CUDA_SUCCESS &&
             wait(a, word(1), i, CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS &&
             wait(b, word(0), i, CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS &&
             write(b, word(1), i, CU_STREAM_WRITE_VALUE_DEFAULT) == CUDA_SUCCESS;
      }
    } else {
      pingKernel<<<1, 32, 0, a>>>(words, words + 1, iters);
      for (int i = 1; i <= iters && ok; ++i) {
        ok = wait(b, word(0), i, CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS;
        if (ok && mode >= 2)
          ok = cudaMemcpyAsync(dst, src, mode == 2 ? 8 : (1 << 20), cudaMemcpyDeviceToDevice, b) == cudaSuccess;
        ok = ok && write(b, word(1), i, CU_STREAM_WRITE_VALUE_DEFAULT) == CUDA_SUCCESS;
      }
    }
    if (!ok) {
      std::fprintf(stderr, "braid-memops-probe: queuing %s failed\n", names[mode]);
      return 1;
    }
    if (!check(cudaDeviceSynchronize(), names[mode])) return 1;
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%-28s %9.2f us per round trip\n", names[mode], us / iters);
  }
  return 0;
}
