// braid-perf's GPU mode (-g n): CUDA communicators, buffers in device memory, one stream per rank,
// times from CUDA events around eager calls or one CUDA graph launch, and with --compare nccl the same
// rows through NCCL. Built only with BRAID_ENABLE_CUDA; gpu_sweep_none.cc stands in otherwise.
#pragma once

#include <braid/braid.h>

#include "perf_options.h"

namespace braid::perf {

constexpr int kNoDeviceExit = 77;

/// Why GPU mode cannot run in this build (null when it can). Makes no CUDA call, so it is safe
/// before a fork.
const char* gpuModeUnavailable();

/// Runs this process's GPU ranks of an n-rank communicator: o.threads threads (1 with fromEnv) of
/// o.gpus ranks each, global ranks firstRank.. (fromEnv: the launcher's rank, one per process). Global
/// rank 0 prints the header, saying `how` the ranks run, and the table. Returns 0 when every check
/// passed, 1 on an error or a wrong element, kNoDeviceExit where there is no CUDA device (the gpu test
/// tier counts it as skipped), 2 when NCCL cannot be loaded.
int runGpuRanks(const Options& o, const braidUniqueId* id, int firstRank, int n, bool fromEnv, const char* how);

}  // namespace braid::perf
