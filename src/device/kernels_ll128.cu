// The LL128 protocol's kernels (kernels.cuh).
#define BRAID_PROTO Proto::kLL128
#define BRAID_SUFFIX LL128
#include "device/kernels.cuh"
