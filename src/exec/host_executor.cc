#include "exec/host_executor.h"

#include <functional>
#include <memory>
#include <vector>

namespace braid::exec {

namespace {

Status outcome(const CallFailure& failure, const HostCall& host, const char* what) {
  if (!failure.failed.load()) return Status::ok();
  if (host.abort != nullptr && host.abort->load()) return invalidUsage("the communicator was aborted");
  std::string call(what);
  if (failure.deadRank.load() >= 0) {
    return remoteError(call + ": rank " + std::to_string(failure.deadRank.load()) + " (process " +
                       std::to_string(failure.deadPid.load()) + ") exited during the call");
  }
  if (failure.stoppedBy.load() >= 0) {
    return remoteError(call + ": rank " + std::to_string(failure.stoppedBy.load()) +
                       " gave up on the call and closed its connection to this rank (its own error says why; over "
                       "sockets this is also how a rank that exited or lost its network shows)");
  }
  return remoteError(call + ": a peer sent a different amount of data than this rank expected (mismatched calls?)");
}

}  // namespace

Status runHostCall(const algo::Geometry& geometry, const algo::CallShape& call, const HostCall& hostIn,
                   FifoResolver& fifos, WorkerPool& pool) {
  CallFailure failure;
  HostCall host = hostIn;
  host.failure = &failure;
  const int lanes = algo::numLanes(call.algo);
  std::vector<algo::WorkArgs> work;
  for (int ch = 0; ch < call.nChannels; ++ch) work.push_back(algo::workFor(geometry, host.rank, ch, call));
  std::vector<std::unique_ptr<HostBackend>> backends;
  std::vector<std::function<void()>> tasks;
  for (int ch = 0; ch < call.nChannels; ++ch) {
    for (int lane = 0; lane < lanes; ++lane) {
      backends.push_back(std::make_unique<HostBackend>(host, fifos, ch));
      HostBackend* b = backends.back().get();
      const algo::WorkArgs* w = &work[ch];
      tasks.push_back([b, w, lane, &call] { algo::runLane(*b, call.coll, call.algo, *w, lane); });
    }
  }
  pool.runAll(tasks);
  return outcome(failure, host, algo::collName(call.coll));
}

Status runHostP2p(std::vector<algo::P2pOp> sends, std::vector<algo::P2pOp> recvs, int nChannels, size_t chunkBytes,
                  const HostCall& hostIn, FifoResolver& fifos, WorkerPool& pool) {
  CallFailure failure;
  HostCall host = hostIn;
  host.failure = &failure;
  algo::orderP2p(host.rank, host.nranks, &sends, &recvs);
  std::vector<algo::WorkArgs> work(nChannels);
  std::vector<std::unique_ptr<HostBackend>> backends;
  std::vector<std::function<void()>> tasks;
  for (int ch = 0; ch < nChannels; ++ch) {
    algo::WorkArgs& w = work[ch];
    w.rank = host.rank;
    w.nranks = host.nranks;
    w.channel = ch;
    w.nChannels = nChannels;
    w.chunkElems = chunkBytes;
    for (int lane = 0; lane < 2; ++lane) {
      backends.push_back(std::make_unique<HostBackend>(host, fifos, ch));
      HostBackend* b = backends.back().get();
      const std::vector<algo::P2pOp>& ops = lane == 0 ? sends : recvs;
      if (ops.empty()) continue;
      tasks.push_back([b, &w, &ops, lane] {
        if (lane == 0)
          algo::p2pSendLane(*b, w, ops.data(), static_cast<int>(ops.size()));
        else
          algo::p2pRecvLane(*b, w, ops.data(), static_cast<int>(ops.size()));
      });
    }
  }
  pool.runAll(tasks);
  return outcome(failure, host, "send/recv");
}

}  // namespace braid::exec
