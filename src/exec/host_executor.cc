#include "exec/host_executor.h"

#include <functional>
#include <memory>
#include <vector>

namespace braid::exec {

namespace {

Status outcome(const std::atomic<bool>& failed, const HostCall& host, const char* what) {
  if (!failed.load()) return Status::ok();
  if (host.abort != nullptr && host.abort->load()) return invalidUsage("the communicator was aborted");
  return remoteError(std::string(what) +
                     ": a peer sent a different amount of data than this rank expected (mismatched calls?)");
}

}  // namespace

Status runHostCall(const algo::Geometry& geometry, const algo::CallShape& call, const HostCall& hostIn,
                   FifoResolver& fifos, WorkerPool& pool) {
  std::atomic<bool> failed{false};
  HostCall host = hostIn;
  host.failed = &failed;
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
  return outcome(failed, host, algo::collName(call.coll));
}

Status runHostP2p(std::vector<algo::P2pOp> sends, std::vector<algo::P2pOp> recvs, int nChannels, size_t chunkBytes,
                  const HostCall& hostIn, FifoResolver& fifos, WorkerPool& pool) {
  std::atomic<bool> failed{false};
  HostCall host = hostIn;
  host.failed = &failed;
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
  return outcome(failed, host, "send/recv");
}

}  // namespace braid::exec
