// The Simple protocol's kernels (kernels.cuh).
#define BRAID_PROTO Proto::kSimple
#define BRAID_SUFFIX Simple
#include "device/kernels.cuh"
