// This machine: its identity (which ranks share a host) and its topology (discovered, or loaded
// from BRAID_TOPO_FILE).
#pragma once

#include <string>

#include "bootstrap/bootstrap.h"
#include "core/status.h"
#include "topology/graph.h"

namespace braid::core {

/// Which host this process runs on: BRAID_HOSTID when set (tests pretend to be several hosts),
/// else the host name and the kernel's boot id (two containers of one name on different machines
/// differ).
std::string hostIdentity();

/// A readable name for this host in topologies and logs: BRAID_HOSTID, else the host name.
std::string hostName();

/// Benchmarks on one machine: communicators this thread creates by a blocking init count as on
/// host `id`, over BRAID_HOSTID and the machine's own identity, so that thread ranks of one process
/// can pretend to be several hosts (braid-perf --hosts). "" ends the pretence.
void setThreadHostIdentity(const std::string& id);

/// This host's topology. With BRAID_TOPO_FILE: the file's host named hostName(), or its only host,
/// renamed to hostName(); else discovery (hwloc, sysfs, NVML, the CUDA runtime's devices).
Status localTopology(topology::Host* out);

/// The communicator's machine: every rank's localTopology() gathered through the bootstrap, one
/// host per distinct host name (in rank order of first appearance).
Status communicatorTopology(bootstrap::Bootstrap& bootstrap, topology::System* out);

}  // namespace braid::core
