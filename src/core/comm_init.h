// The ways to make communicators besides Comm::start with a unique id: all ranks in one process
// (one per GPU), and from launcher environment variables.
#pragma once

#include <memory>
#include <vector>

#include "core/comm.h"

namespace braid::core {

/// One process, `ndev` CUDA communicators on devices `devlist` (0..ndev-1 when null), each rank
/// initialized on its own thread. All or nothing: on error no communicator is returned.
Status initAll(int ndev, const int* devlist, std::vector<std::shared_ptr<Comm>>* out);

/// From torchrun / Open MPI / Slurm variables (bootstrap/launcher_env.h). A CUDA communicator binds
/// device LOCAL_RANK modulo the device count.
Status initFromEnv(const CommConfig& config, std::shared_ptr<Comm>* out);

}  // namespace braid::core
