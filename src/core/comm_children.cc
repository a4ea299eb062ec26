// The communicators made from one (braidCommSplit, braidCommShrink): the members meet over the
// parent's bootstrap and start a child with a fresh unique id.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/comm.h"
#include "core/log.h"

namespace braid::core {

Status Comm::split(int color, int key, const CommConfig& config, std::shared_ptr<Comm>* out) {
  BRAID_RETURN_IF_ERROR(checkUsable());
  struct Entry {
    int color;
    int key;
  };
  std::vector<Entry> entries(nranks_);
  entries[rank_] = {color, key};
  BRAID_RETURN_IF_ERROR(bootstrap_->allGather(entries.data(), sizeof(Entry)).withContext("split"));

  // Members of my color, ordered by (key, parent rank); the first one makes the new unique id.
  std::vector<int> members;
  for (int r = 0; r < nranks_; ++r) {
    if (entries[r].color == color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return entries[a].key < entries[b].key; });
  bool leader = color != BRAID_SPLIT_NOCOLOR && members.front() == rank_;

  std::vector<bootstrap::UniqueIdBytes> ids(nranks_);
  std::memset(ids.data(), 0, ids.size() * sizeof(ids[0]));
  // A leader that cannot make an id still takes part in the exchange, so that nobody waits for it;
  // its members then fail on the all-zero id instead of timing out.
  Status idStatus = leader ? bootstrap::createLocalUniqueId(&ids[rank_]) : Status::ok();
  BRAID_RETURN_IF_ERROR(bootstrap_->allGather(ids.data(), sizeof(ids[0])).withContext("split"));
  BRAID_RETURN_IF_ERROR(idStatus.withContext("split: making the new unique id"));
  if (color == BRAID_SPLIT_NOCOLOR) return Status::ok();

  InitArgs args;
  args.id = ids[members.front()];
  args.nranks = static_cast<int>(members.size());
  args.rank = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
  args.config = config;
  args.config.deviceKind = cudaDevice_ >= 0 ? DeviceKind::kCuda : DeviceKind::kHost;
  args.cudaDevice = cudaDevice_ >= 0 ? cudaDevice_ : kCurrentDevice;
  BRAID_INFO(log::Subsys::kInit, "split: color ", color, " key ", key, " -> rank ", args.rank, " of ", args.nranks);
  return start(args, out);
}

// The survivors meet without the excluded ranks: the lowest survivor makes the new unique id and
// sends it to each other survivor over the bootstrap's tagged messages (a fresh connection to each
// receiver's listener; the ring, which passes through the excluded ranks, is not used).
Status Comm::shrink(const std::vector<int>& excluded, const CommConfig& config, bool abortFirst,
                    std::shared_ptr<Comm>* out) {
  switch (state()) {
    case State::kInitializing: return checkUsable();
    case State::kFinalized: return invalidUsage("the communicator was finalized; only destroy is allowed");
    default: break;
  }
  std::vector<bool> gone(nranks_, false);
  for (int r : excluded) {
    if (r < 0 || r >= nranks_) {
      return invalidArgument("excluded rank " + std::to_string(r) + " is not in 0.." + std::to_string(nranks_ - 1));
    }
    if (gone[r]) return invalidArgument("rank " + std::to_string(r) + " is excluded twice");
    gone[r] = true;
  }
  if (gone[rank_]) {
    return invalidUsage("rank " + std::to_string(rank_) +
                        " is in its own exclude list: excluded ranks do not call shrink");
  }
  std::vector<int> members;
  for (int r = 0; r < nranks_; ++r) {
    if (!gone[r]) members.push_back(r);
  }
  if (bootstrap_ == nullptr) {
    return invalidUsage("the communicator's init failed before its ranks met (" + asyncError().message() +
                        "): there is nothing to shrink; make a new one");
  }
  // BRAID_CHECK: a checked call holds checkMu_ from its exchange over the bootstrap to the end of
  // its run, and the bootstrap takes one caller at a time. With abortFirst such a call is ended
  // (its FIFO waits by abortCalls, a wait in the bootstrap by bootstrapAbort_, raised until it has
  // let go); without, the shrink waits for it.
  std::unique_lock<std::mutex> checked(checkMu_, std::defer_lock);
  if (abortFirst) abortCalls();
  if (checkCalls_) {
    if (abortFirst) bootstrapAbort_.store(true, std::memory_order_release);
    checked.lock();
    if (abortFirst) bootstrapAbort_.store(false, std::memory_order_release);
  }
  const uint32_t tag = kShrinkTag + shrinks_++;
  bootstrap::UniqueIdBytes id;
  std::memset(&id, 0, sizeof(id));
  if (members.front() == rank_) {
    // One that cannot make an id still sends the zeroes, so that the others fail instead of waiting;
    // a member it cannot reach does not keep the id from the rest.
    Status made = bootstrap::createLocalUniqueId(&id);
    Status sent;
    for (size_t i = 1; i < members.size(); ++i) {
      Status s = bootstrap_->send(members[i], tag, &id, sizeof(id));
      if (sent.isOk() && !s.isOk()) sent = s;
    }
    BRAID_RETURN_IF_ERROR(made.withContext("shrink: making the new unique id"));
    BRAID_RETURN_IF_ERROR(sent.withContext("shrink"));
  } else {
    BRAID_RETURN_IF_ERROR(bootstrap_->recv(members.front(), tag, &id, sizeof(id)).withContext("shrink"));
  }
  InitArgs args;
  args.id = id;
  args.nranks = static_cast<int>(members.size());
  args.rank = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
  args.config = config;
  args.config.deviceKind = cudaDevice_ >= 0 ? DeviceKind::kCuda : DeviceKind::kHost;
  args.cudaDevice = cudaDevice_ >= 0 ? cudaDevice_ : kCurrentDevice;
  BRAID_INFO(log::Subsys::kInit, "shrink: ", excluded.size(), " rank(s) excluded",
             abortFirst ? " (calls aborted first)" : "", " -> rank ", args.rank, " of ", args.nranks);
  return start(args, out);
}

}  // namespace braid::core
