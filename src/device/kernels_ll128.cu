// The LL128 protocol's kernels (kernels.cuh).
#define BRAID_PROTO Proto::kLL128
#include "device/kernels.cuh"

namespace braid::device {
BRAID_KERNEL_TABLE(LL128)
}  // namespace braid::device
