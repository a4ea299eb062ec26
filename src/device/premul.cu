// The first step of a pre-multiplied sum (braidRedOpCreatePreMulSum): the rank's input times its
// scalar into scratch, which the sum then reads. The arithmetic is reduce.cuh's prod, so the result
// is bit for bit the host executor's (exec/host_reduce.h: premultiplyElems).
#include <cuda_runtime.h>

#include "device/device_work.h"
#include "device/reduce.cuh"

namespace braid::device {
namespace {

template <class Fmt>
__global__ void __launch_bounds__(256) braid_PreMultiply(typename Fmt::Storage* dst, const typename Fmt::Storage* src,
                                                         size_t n, uint64_t value, const void* deviceScalar) {
  using Storage = typename Fmt::Storage;
  Storage s;
  if (deviceScalar != nullptr) {
    s = *static_cast<const Storage*>(deviceScalar);  // read as the kernel runs: graphs replay the current value
  } else {
    memcpy(&s, &value, sizeof(Storage));
  }
  const auto factor = Fmt::load(s);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dst[i] = Fmt::store(ProdOp::apply(Fmt::load(src[i]), factor));
  }
}

template <class Fmt>
int launchAs(void* dst, const void* src, size_t n, uint64_t value, const void* deviceScalar, void* stream) {
  const size_t blocks = (n + 255) / 256;
  braid_PreMultiply<Fmt><<<static_cast<unsigned>(blocks < 1024 ? (blocks > 0 ? blocks : 1) : 1024), 256, 0,
                           static_cast<cudaStream_t>(stream)>>>(
      static_cast<typename Fmt::Storage*>(dst), static_cast<const typename Fmt::Storage*>(src), n, value, deviceScalar);
  return static_cast<int>(cudaGetLastError());
}

// Each type's kernel, for loading at init (loadKernels) as every other kernel is.
const void* const kPremultiplyKernels[] = {
    reinterpret_cast<const void*>(braid_PreMultiply<Plain<int8_t, int8_t>>),
    reinterpret_cast<const void*>(braid_PreMultiply<Plain<uint8_t, uint8_t>>),
    reinterpret_cast<const void*>(braid_PreMultiply<Plain<int32_t, int32_t>>),
    reinterpret_cast<const void*>(braid_PreMultiply<Plain<uint32_t, uint32_t>>),
    reinterpret_cast<const void*>(braid_PreMultiply<Plain<int64_t, int64_t>>),
    reinterpret_cast<const void*>(braid_PreMultiply<Plain<uint64_t, uint64_t>>),
    reinterpret_cast<const void*>(braid_PreMultiply<HalfFmt>),
    reinterpret_cast<const void*>(braid_PreMultiply<Plain<float, float>>),
    reinterpret_cast<const void*>(braid_PreMultiply<Plain<double, double>>),
    reinterpret_cast<const void*>(braid_PreMultiply<Bf16Fmt>),
    reinterpret_cast<const void*>(braid_PreMultiply<E4m3Fmt>),
    reinterpret_cast<const void*>(braid_PreMultiply<E5m2Fmt>),
};

}  // namespace

int launchPremultiply(void* dst, const void* src, size_t n, int type, uint64_t value, const void* deviceScalar,
                      void* stream) {
  if (n == 0) return 0;
  switch (type) {
    case 0: return launchAs<Plain<int8_t, int8_t>>(dst, src, n, value, deviceScalar, stream);
    case 1: return launchAs<Plain<uint8_t, uint8_t>>(dst, src, n, value, deviceScalar, stream);
    case 2: return launchAs<Plain<int32_t, int32_t>>(dst, src, n, value, deviceScalar, stream);
    case 3: return launchAs<Plain<uint32_t, uint32_t>>(dst, src, n, value, deviceScalar, stream);
    case 4: return launchAs<Plain<int64_t, int64_t>>(dst, src, n, value, deviceScalar, stream);
    case 5: return launchAs<Plain<uint64_t, uint64_t>>(dst, src, n, value, deviceScalar, stream);
    case 6: return launchAs<HalfFmt>(dst, src, n, value, deviceScalar, stream);
    case 7: return launchAs<Plain<float, float>>(dst, src, n, value, deviceScalar, stream);
    case 8: return launchAs<Plain<double, double>>(dst, src, n, value, deviceScalar, stream);
    case 9: return launchAs<Bf16Fmt>(dst, src, n, value, deviceScalar, stream);
    case 10: return launchAs<E4m3Fmt>(dst, src, n, value, deviceScalar, stream);
    case 11: return launchAs<E5m2Fmt>(dst, src, n, value, deviceScalar, stream);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

const void* const* premultiplyKernels(int* count) {
  *count = static_cast<int>(sizeof(kPremultiplyKernels) / sizeof(kPremultiplyKernels[0]));
  return kPremultiplyKernels;
}

}  // namespace braid::device
