#include "core/group.h"

#include <map>
#include <thread>
#include <vector>

#include "core/comm.h"

namespace braid::core {
namespace {
thread_local int tlsDepth = 0;
thread_local std::vector<std::function<Status()>> tlsHeld;
// Point-to-point batches per communicator, in posting order.
thread_local std::map<Comm*, std::pair<std::shared_ptr<Comm>, std::vector<P2pRequest>>> tlsP2p;
thread_local double tlsEstimateUs = 0;  // predicted time of the held calls
}  // namespace

void addToGroupEstimate(double us) { tlsEstimateUs += us; }

Status groupSimulateEnd(double* estimatedUs) {
  if (tlsDepth == 0) return invalidUsage("group simulation without a matching group start on this thread");
  *estimatedUs = tlsEstimateUs;
  if (--tlsDepth > 0) return Status::ok();
  tlsHeld.clear();
  tlsP2p.clear();
  tlsEstimateUs = 0;
  return Status::ok();
}

Status groupStart() {
  ++tlsDepth;
  return Status::ok();
}

Status groupEnd() {
  if (tlsDepth == 0) return invalidUsage("braidGroupEnd without a matching braidGroupStart on this thread");
  if (--tlsDepth > 0) return Status::ok();
  for (auto& kv : tlsP2p) {
    std::shared_ptr<Comm> comm = kv.second.first;
    std::vector<P2pRequest> batch = std::move(kv.second.second);
    tlsHeld.push_back([comm, batch] { return comm->p2p(batch); });
  }
  tlsP2p.clear();
  tlsEstimateUs = 0;
  std::vector<std::function<Status()>> calls;
  calls.swap(tlsHeld);
  if (calls.empty()) return Status::ok();
  std::vector<Status> results(calls.size());
  std::vector<std::thread> threads;
  for (size_t i = 1; i < calls.size(); ++i) threads.emplace_back([&, i] { results[i] = calls[i](); });
  results[0] = calls[0]();
  for (std::thread& t : threads) t.join();
  for (const Status& s : results) BRAID_RETURN_IF_ERROR(s);
  return Status::ok();
}

Status runOrDefer(std::function<Status()> call) {
  if (tlsDepth == 0) return call();
  tlsHeld.push_back(std::move(call));
  return Status::ok();
}

Status runOrDeferP2p(std::shared_ptr<Comm> comm, P2pRequest request) {
  if (tlsDepth == 0) return comm->p2p({request});
  addToGroupEstimate(comm->estimateUs(request));
  auto& entry = tlsP2p[comm.get()];
  entry.first = comm;
  entry.second.push_back(std::move(request));
  return Status::ok();
}

int groupDepth() { return tlsDepth; }

}  // namespace braid::core
