// The LL protocol's kernels (kernels.cuh).
#define BRAID_PROTO Proto::kLL
#include "device/kernels.cuh"

namespace braid::device {
BRAID_KERNEL_TABLE(LL)
}  // namespace braid::device
