// Kernel launch by (kind, protocol).
#include <cuda_runtime.h>

#include <array>
#include <utility>

#include "device/ce_work.h"
#include "device/device_work.h"

namespace braid::device {
namespace {

constexpr int kTableKernels = static_cast<int>(KernelKind::kSendRecv) + 1;
using KernelTable = std::array<KernelRef, kTableKernels>;

// Protocol P's kernels in KernelKind order up to kSendRecv, gathered from its kKernelParts units.
template <Proto P, int... Part>
KernelTable gatherKernels(std::integer_sequence<int, Part...>) {
  KernelTable table{};
  (fillKernels<P, Part>(table.data()), ...);
  return table;
}

template <Proto P>
const KernelRef* kernelsOf() {
  static const KernelTable table = gatherKernels<P>(std::make_integer_sequence<int, kKernelParts>());
  return table.data();
}

const KernelRef& kernelFor(KernelKind kind, Proto proto) {
  if (kind >= KernelKind::kAllReduceOneShot) return kernelOneShot(kind, true);
  const KernelRef* table = proto == Proto::kLL      ? kernelsOf<Proto::kLL>()
                           : proto == Proto::kLL128 ? kernelsOf<Proto::kLL128>()
                                                    : kernelsOf<Proto::kSimple>();
  return table[static_cast<int>(kind)];
}

// The kernel a launch of `nCalls` calls runs: a one-shot launch of one call has a kernel of its own.
const KernelRef& kernelFor(KernelKind kind, Proto proto, int nCalls) {
  return kind >= KernelKind::kAllReduceOneShot && nCalls == 1 ? kernelOneShot(kind, false) : kernelFor(kind, proto);
}

// Launches `kernel` on `channels` CTAs of `threads` threads with the parameter `args`.
template <class Args>
int launchWith(const KernelRef& kernel, int channels, int threads, const Args& args, void* stream) {
  void* params[] = {const_cast<Args*>(&args)};
  return static_cast<int>(
      cudaLaunchKernel(kernel.fn, dim3(channels), dim3(threads), params, 0, static_cast<cudaStream_t>(stream)));
}

}  // namespace

int launchCollKernel(KernelKind kind, Proto proto, int channels, const CollKernelArgs& args, void* stream) {
  if (kind == KernelKind::kSendRecv) return static_cast<int>(cudaErrorInvalidValue);
  const int threads = args.base.nLanes * args.base.laneThreads;
  const KernelRef& kernel = kernelFor(kind, proto, args.nCalls);
  if (kind >= KernelKind::kAllReduceOneShot && args.nCalls == 1) {
    const OneShotKernelArgs one{args.base, args.calls[0]};  // the one-call kernel: a small parameter
    return launchWith(kernel, channels, threads, one, stream);
  }
  return launchWith(kernel, channels, threads, args, stream);
}

int launchP2pKernel(Proto proto, int channels, const P2pKernelArgs& args, void* stream) {
  return launchWith(kernelFor(KernelKind::kSendRecv, proto), channels, 2 * args.base.laneThreads, args, stream);
}

int launchDirectKernel(int coll, int channels, const DirectKernelArgs& args, void* stream) {
  if (coll < 0 || coll >= kDirectColls || channels < 1 || channels > kMaxDirectCtas)
    return static_cast<int>(cudaErrorInvalidValue);
  return launchWith(kernelDirect(coll), channels, args.base.laneThreads, args, stream);
}

const char* kernelName(KernelKind kind, Proto proto, int nCalls) { return kernelFor(kind, proto, nCalls).name; }

const char* directKernelName(int coll) { return kernelDirect(coll).name; }

int loadKernels(size_t* localBytes) {
  *localBytes = 0;
  auto load = [&](const KernelRef& kernel) {
    cudaFuncAttributes attr;
    cudaError_t err = cudaFuncGetAttributes(&attr, kernel.fn);
    if (err == cudaSuccess && attr.localSizeBytes > *localBytes) *localBytes = attr.localSizeBytes;
    return err;
  };
  for (int p = 0; p < static_cast<int>(Proto::kNumProtos); ++p) {
    for (int k = 0; k < static_cast<int>(KernelKind::kNumKinds); ++k) {
      const auto kind = static_cast<KernelKind>(k);
      // The one-shot kernels (one call's and a group's) have one protocol: load them once.
      if (p != 0 && kind >= KernelKind::kAllReduceOneShot) break;
      cudaError_t err = load(kernelFor(kind, static_cast<Proto>(p)));
      if (err == cudaSuccess && kind >= KernelKind::kAllReduceOneShot) err = load(kernelOneShot(kind, false));
      if (err != cudaSuccess) return static_cast<int>(err);
    }
  }
  for (int c = 0; c < kDirectColls; ++c) {
    cudaError_t err = load(kernelDirect(c));
    if (err != cudaSuccess) return static_cast<int>(err);
  }
  if (cudaError_t err = load(KernelRef{ceKernel(), ceKernelName()}); err != cudaSuccess) return static_cast<int>(err);
  int premul = 0;
  const void* const* premulKernels = premultiplyKernels(&premul);
  for (int i = 0; i < premul; ++i) {
    cudaError_t err = load(KernelRef{premulKernels[i], "braid_PreMultiply"});
    if (err != cudaSuccess) return static_cast<int>(err);
  }
  size_t limit = 0;
  cudaError_t err = cudaDeviceGetLimit(&limit, cudaLimitStackSize);
  if (err == cudaSuccess && limit < *localBytes) err = cudaDeviceSetLimit(cudaLimitStackSize, *localBytes);
  return static_cast<int>(err);
}

}  // namespace braid::device
