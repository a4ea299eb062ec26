// GPU mode in a build without CUDA (BRAID_ENABLE_CUDA=OFF): -g says so and exits with status 2.
#include "gpu_sweep.h"

namespace braid::perf {

const char* gpuModeUnavailable() { return "braid-perf was built without CUDA (configure with -DBRAID_ENABLE_CUDA=ON)"; }

int runGpuRanks(const Options&, const braidUniqueId*, int, int, bool, const char*) { return 2; }

}  // namespace braid::perf
