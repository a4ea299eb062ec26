// The Simple protocol's kernels (kernels.cuh).
#define BRAID_PROTO Proto::kSimple
#include "device/kernels.cuh"

namespace braid::device {
BRAID_KERNEL_TABLE(Simple)
}  // namespace braid::device
