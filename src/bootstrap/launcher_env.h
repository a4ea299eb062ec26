// Rendezvous from a launcher's environment: rank, size and a unique id without any broadcast.
//
// Launchers that set a rank and a size for every process, tried in this order:
//
//   launcher   rank                   size                   local rank                   job identity
//   torchrun   RANK                   WORLD_SIZE             LOCAL_RANK                   TORCHELASTIC_RUN_ID
//   Open MPI   OMPI_COMM_WORLD_RANK   OMPI_COMM_WORLD_SIZE   OMPI_COMM_WORLD_LOCAL_RANK   OMPI_MCA_ess_base_jobid,
//                                                                                         PMIX_NAMESPACE
//   Slurm      SLURM_PROCID           SLURM_NTASKS           SLURM_LOCALID                SLURM_JOB_ID, SLURM_STEP_ID
//
// Under mpirun and srun with neither address variable below, where the launcher names a PMIx server
// (PMIX_NAMESPACE, PMIX_RANK), rank 0's unique id travels through PMIx (pmix_rendezvous.h), as MPI
// programs wire up: nothing to set.
//
// The rendezvous address is BRAID_COMM_ID=host:port, or else MASTER_ADDR with port MASTER_PORT+1:
// MASTER_PORT itself is normally taken by PyTorch's TCPStore (torchrun's agent, or
// init_process_group on rank 0), which listens there on the same host as rank 0. Rank 0 serves the
// root at that address. Every rank derives the same magic from the address, the size and the job
// identity of its launcher (only that launcher's: under mpirun inside a Slurm job, ranks on
// different nodes see different SLURM_STEP_IDs), so two jobs that happen to use the same address
// do not join each other.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "bootstrap/bootstrap.h"
#include "core/status.h"

namespace braid::bootstrap {

/// Added to MASTER_PORT to get the bootstrap port (subtracted when MASTER_PORT is 65535).
constexpr int kMasterPortOffset = 1;

struct LaunchInfo {
  int rank = -1;
  int nranks = 0;
  int localRank = -1;    // -1 when the launcher does not say
  std::string launcher;  // "torchrun", "Open MPI" or "Slurm"
  std::string address;   // the rendezvous host:port ("" with pmix)
  bool pmix = false;     // the id comes from rank 0 through the launcher's PMIx server
  std::string jobKey;    // what the magic was derived from
  UniqueIdBytes id{};
};

/// Looks up one environment variable; nullopt when unset. Empty values count as unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

/// The launch information from the variables `env` returns (testable without touching environ).
/// With `pmix` set the id is not yet known: launchInfoFromEnv gets it.
Status launchInfoFromLookup(const EnvLookup& env, LaunchInfo* out);

/// launchInfoFromLookup over this process's environment, and the PMIx exchange where it says so.
Status launchInfoFromEnv(LaunchInfo* out);

}  // namespace braid::bootstrap
