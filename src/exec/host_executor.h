// The host executor: runs one call of a host communicator, every (channel, lane) program of this
// rank on its own thread over HostPrims, and returns when all are done.
#pragma once

#include <vector>

#include "algo/geometry.h"
#include "algo/p2p.h"
#include "core/status.h"
#include "exec/host_prims.h"
#include "exec/worker_pool.h"

namespace braid::exec {

Status runHostCall(const algo::Geometry& geometry, const algo::CallShape& call, const HostCall& host,
                   transport::FifoResolver& fifos, WorkerPool& pool);

/// Runs a group's point-to-point messages of this rank: offsets and counts in bytes from
/// host.input (sends) and host.output (receives), host.elemSize 1. Each channel runs a send lane and
/// a receive lane with the messages in ring-distance order (algo/p2p.h).
Status runHostP2p(std::vector<algo::P2pOp> sends, std::vector<algo::P2pOp> recvs, int nChannels, size_t chunkBytes,
                  const HostCall& host, transport::FifoResolver& fifos, WorkerPool& pool);

}  // namespace braid::exec
