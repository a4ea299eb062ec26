// Rendezvous through the launcher's PMIx server (mpirun of Open MPI, srun of Slurm with PMIx): the
// way MPI programs wire up, so that braid needs no address variable under those launchers.
//
//   rank 0: makes a unique id (its root served by a background thread, as braidGetUniqueId does),
//           PMIx_Put(GLOBAL, "braid.uniqueid") and PMIx_Commit
//   every rank: PMIx_Fence over the job's namespace (collecting the data)
//   the others: PMIx_Get of rank 0's "braid.uniqueid"
//
// The PMIx client library is loaded at run time (BRAID_PMIX_LIBRARY, default libpmix.so.2), so
// braid runs where it is absent; its types come from pmix.h at build time (Debian: libpmix-dev),
// and without that header this path is compiled out and says so.
#pragma once

#include <string>

#include "bootstrap/bootstrap.h"
#include "core/status.h"

namespace braid::bootstrap {

/// Whether this build can talk to a PMIx server (pmix.h was found).
bool pmixBuiltIn();

/// The unique id of the job's world through PMIx, for the process of launcher rank `rank` of
/// `nranks`. Errors say what was missing: no library, no server, a rank that disagrees with the
/// launcher's, or rank 0's id not arriving.
Status pmixUniqueId(int rank, int nranks, UniqueIdBytes* out);

}  // namespace braid::bootstrap
