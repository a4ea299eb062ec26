#include "core/group.h"

#include <chrono>
#include <map>
#include <thread>
#include <vector>

#include "core/comm.h"
#include "exec/cuda_device.h"

namespace braid::core {
namespace {
thread_local int tlsDepth = 0;
// A held call: a collective (run with the collectives next to it, so that a GPU launches them
// together) or any other call.
struct Held {
  std::function<Status()> call;  // empty for a collective
  std::shared_ptr<Comm> comm;    // a collective's communicator
  CollRequest request;
  std::string name;  // a collective's API function, for its errors
};
// Held calls per communicator, in posting order; the communicators in first-use order.
using HeldList = std::vector<Held>;
using HeldLists = std::vector<std::pair<const Comm*, HeldList>>;
thread_local HeldLists tlsHeld;
// Point-to-point batches per communicator, in posting order.
thread_local std::map<Comm*, std::pair<std::shared_ptr<Comm>, std::vector<P2pRequest>>> tlsP2p;
thread_local double tlsEstimateUs = 0;  // predicted time of the held calls
thread_local Status tlsFailure;         // the group's first failed call
// Communicators whose init the group started; the outermost end waits for them.
thread_local std::vector<std::shared_ptr<Comm>> tlsInits;

// Waits until every communicator of `inits` has finished its init; the first failure, if any.
Status waitForInits(const std::vector<std::shared_ptr<Comm>>& inits) {
  Status first;
  for (const auto& comm : inits) {
    while (comm->state() == Comm::State::kInitializing) std::this_thread::sleep_for(std::chrono::microseconds(100));
    Status s = comm->asyncError();
    if (first.isOk() && !s.isOk()) first = s.withContext("communicator init in a group");
  }
  return first;
}

// The held list of `comm` in `lists`, appended if it has none yet.
HeldList& heldListOf(HeldLists* lists, const Comm* comm) {
  for (auto& entry : *lists) {
    if (entry.first == comm) return entry.second;
  }
  lists->emplace_back(comm, HeldList{});
  return lists->back().second;
}

// Runs a held list in order: each run of consecutive collectives as one Comm::collectives.
Status runHeld(const HeldList& list) {
  for (size_t i = 0; i < list.size();) {
    if (list[i].call) {
      BRAID_RETURN_IF_ERROR(list[i].call());
      ++i;
      continue;
    }
    std::vector<CollRequest> batch;
    size_t end = i;
    for (; end < list.size() && !list[end].call; ++end) batch.push_back(list[end].request);
    Status st = list[i].comm->collectives(batch);
    if (!st.isOk()) {
      return st.withContext(end - i == 1 ? list[i].name
                                         : list[i].name + " or one of the " + std::to_string(end - i - 1) +
                                               " collectives after it in the group");
    }
    i = end;
  }
  return Status::ok();
}

}  // namespace

void addToGroupEstimate(double us) { tlsEstimateUs += us; }

Status groupSimulateEnd(double* estimatedUs) {
  if (tlsDepth == 0) return invalidUsage("group simulation without a matching group start on this thread");
  *estimatedUs = tlsEstimateUs;
  if (--tlsDepth > 0) return Status::ok();
  std::vector<std::shared_ptr<Comm>> inits;
  inits.swap(tlsInits);
  Status initFailed = waitForInits(inits);  // communicators are made, even when the calls are not
  tlsHeld.clear();
  tlsP2p.clear();
  tlsEstimateUs = 0;
  tlsFailure = Status::ok();
  return initFailed;
}

Status groupStart() {
  ++tlsDepth;
  return Status::ok();
}

Status groupEnd() {
  if (tlsDepth == 0) return invalidUsage("braidGroupEnd without a matching braidGroupStart on this thread");
  if (--tlsDepth > 0) return Status::ok();
  std::vector<std::shared_ptr<Comm>> inits;
  inits.swap(tlsInits);
  Status initFailed = waitForInits(inits);
  if (!initFailed.isOk() && tlsFailure.isOk()) tlsFailure = initFailed;
  if (!tlsFailure.isOk()) {
    Status failed = tlsFailure;
    tlsHeld.clear();
    tlsP2p.clear();
    tlsEstimateUs = 0;
    tlsFailure = Status::ok();
    return failed.withContext("a call of the group failed, so none of its calls was issued");
  }
  HeldLists lists;
  lists.swap(tlsHeld);
  for (auto& kv : tlsP2p) {
    std::shared_ptr<Comm> comm = kv.second.first;
    std::vector<P2pRequest> batch = std::move(kv.second.second);
    heldListOf(&lists, comm.get()).push_back(Held{[comm, batch] { return comm->p2p(batch); }, nullptr, {}, {}});
  }
  tlsP2p.clear();
  tlsEstimateUs = 0;
  if (lists.empty()) return Status::ok();
  // One thread per communicator; its calls in order (the first error of a list ends that list).
  // A worker thread first makes the communicator's device current: the calls then find it so and
  // leave it so, instead of restoring the new thread's device 0 (which would create a context there).
  auto runList = [](const std::pair<const Comm*, HeldList>& list, bool worker) {
    if (worker && list.first != nullptr && list.first->cudaDevice() >= 0)
      BRAID_RETURN_IF_ERROR(exec::cudaSelectDevice(list.first->cudaDevice()));
    return runHeld(list.second);
  };
  std::vector<Status> results(lists.size());
  std::vector<std::thread> threads;
  for (size_t i = 1; i < lists.size(); ++i) threads.emplace_back([&, i] { results[i] = runList(lists[i], true); });
  results[0] = runList(lists[0], false);
  for (std::thread& t : threads) t.join();
  for (const Status& st : results) BRAID_RETURN_IF_ERROR(st);
  return Status::ok();
}

Status runOrDefer(const Comm* comm, std::function<Status()> call) {
  if (tlsDepth == 0) return call();
  heldListOf(&tlsHeld, comm).push_back(Held{std::move(call), nullptr, {}, {}});
  return Status::ok();
}

Status runOrDeferCollective(std::shared_ptr<Comm> comm, const CollRequest& request, const char* function) {
  if (tlsDepth == 0) return comm->collective(request);
  addToGroupEstimate(comm->estimateUs(request));
  Comm* key = comm.get();
  heldListOf(&tlsHeld, key).push_back(Held{nullptr, std::move(comm), request, function});
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

void addGroupInit(std::shared_ptr<Comm> comm) { tlsInits.push_back(std::move(comm)); }

Status failGroup(Status s) {
  if (!s.isOk() && tlsDepth > 0 && tlsFailure.isOk()) tlsFailure = s;
  return s;
}

int groupDepth() { return tlsDepth; }

}  // namespace braid::core
