// What every algorithm template needs: the host/device qualifier and small integer helpers that
// compile for both (no std:: in device paths).
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define BRAID_HOST_DEVICE __host__ __device__
#else
#define BRAID_HOST_DEVICE
#endif

namespace braid::algo {

/// How a call's slots are written (FIFO protocols; host memory uses Simple): one enum for the tuner
/// that chooses it and the kernels that run it (tune::Proto, device::Proto).
enum class Proto : int { kSimple = 0, kLL = 1, kLL128 = 2, kNumProtos = 3 };

BRAID_HOST_DEVICE inline size_t minSize(size_t a, size_t b) { return a < b ? a : b; }
BRAID_HOST_DEVICE inline size_t divUp(size_t a, size_t b) { return (a + b - 1) / b; }
/// (a mod n) for a possibly negative a.
BRAID_HOST_DEVICE inline int wrap(int a, int n) { return ((a % n) + n) % n; }
/// floor(log2 n) for n >= 1.
BRAID_HOST_DEVICE inline int floorLog2(int n) {
  int k = 0;
  while ((2 << k) <= n) ++k;
  return k;
}

}  // namespace braid::algo
