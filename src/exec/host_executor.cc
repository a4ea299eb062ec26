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
  if (failure.mismatchClaimed.load()) {
    auto name = [&](const transport::CallTag& t) { return host.describeTag ? host.describeTag(t) : call; };
    return invalidUsage("mismatched calls: rank " + std::to_string(failure.mismatchPeer) + " sent data of " +
                        name(failure.theirs) + " to rank " + std::to_string(host.rank) + ", which is in " +
                        name(host.tag) +
                        " (every rank must make the same collective calls in the same order, with the same count, "
                        "type, op and root)");
  }
  if (failure.deadRank.load() >= 0) {
    return remoteError(call + ": rank " + std::to_string(failure.deadRank.load()) + " (process " +
                       std::to_string(failure.deadPid.load()) + ") exited during the call");
  }
  if (failure.stoppedBy.load() >= 0) {
    const transport::HostFifo* fifo = failure.stoppedFifo.load();
    std::string said = fifo != nullptr ? fifo->closeReason() : std::string();
    return remoteError(call + ": rank " + std::to_string(failure.stoppedBy.load()) +
                       " gave up on the call and closed its connection to this rank (its own error says why; over "
                       "a network this is also how a rank that exited or lost its network shows)" +
                       (said.empty() ? std::string() : "; the network: " + said));
  }
  return remoteError(call + ": a peer sent a different amount of data than this rank expected (mismatched calls?)");
}

}  // namespace

Status runHostCall(const algo::Geometry& geometry, const algo::CallShape& call, const HostCall& hostIn,
                   transport::FifoResolver& fifos, WorkerPool& pool) {
  CallFailure failure;
  HostCall host = hostIn;
  host.failure = &failure;
  const int lanes = algo::numLanes(call.algo);
  // One lane a channel: what a lane sends only it writes (the channels' ranges are apart).
  host.sendsByReference = lanes == 1;
  if (call.nChannels == 1 && lanes == 1) {
    // The common small call: one program, on this thread, nothing allocated.
    algo::WorkArgs w = algo::workFor(geometry, host.rank, 0, call);
    HostBackend b(host, fifos, 0);
    algo::runLane(b, call.coll, call.algo, w, 0);
    b.finish();
  } else {
    std::vector<algo::WorkArgs> work;
    for (int ch = 0; ch < call.nChannels; ++ch) work.push_back(algo::workFor(geometry, host.rank, ch, call));
    pool.runAll(call.nChannels * lanes, [&](int task) {
      int ch = task / lanes;
      HostBackend b(host, fifos, ch);
      algo::runLane(b, call.coll, call.algo, work[ch], task % lanes);
      b.finish();
    });
  }
  return outcome(failure, host, algo::collName(call.coll));
}

Status runHostP2p(std::vector<algo::P2pOp> sends, std::vector<algo::P2pOp> recvs, int nChannels, size_t chunkBytes,
                  const HostCall& hostIn, transport::FifoResolver& fifos, WorkerPool& pool) {
  CallFailure failure;
  HostCall host = hostIn;
  host.failure = &failure;
  algo::orderP2p(host.rank, host.nranks, &sends, &recvs);
  // The send lane sends by reference: no receive of the call writes what a send reads (a receive
  // into a buffer a send of the same group reads races the send, copied or not, as in NCCL; an
  // in-place all-to-all stages its input first, api_coll.cc).
  host.sendsByReference = true;
  std::vector<algo::WorkArgs> work(nChannels);
  for (int ch = 0; ch < nChannels; ++ch) {
    algo::WorkArgs& w = work[ch];
    w.rank = host.rank;
    w.nranks = host.nranks;
    w.channel = ch;
    w.nChannels = nChannels;
    w.chunkElems = chunkBytes;
  }
  // Two lanes per channel: sends, receives (a lane with nothing to do returns at once).
  pool.runAll(nChannels * 2, [&](int task) {
    const algo::WorkArgs& w = work[task / 2];
    HostBackend b(host, fifos, w.channel);
    if (task % 2 == 0) {
      if (!sends.empty()) algo::p2pSendLane(b, w, sends.data(), static_cast<int>(sends.size()));
      b.finish();
    } else if (!recvs.empty()) {
      algo::p2pRecvLane(b, w, recvs.data(), static_cast<int>(recvs.size()));
    }
  });
  return outcome(failure, host, "send/recv");
}

}  // namespace braid::exec
