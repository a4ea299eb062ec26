// CallLedger: mismatched collectives between the GPU ranks of one host, found on the host as the
// calls are queued, at no cost to the kernels.
//
// Each rank of a GPU communicator keeps a shared-memory block: its last kEntries collectives
// (number and call tag, as host memory's slots carry them) and the word its kernels poll to give up
// (the engine's abort flag). The ranks of a host map each other's blocks. Queuing collective #n, a
// rank writes its entry, then (after a full fence) reads entry #n of the ranks before and after it
// on the host: of any two neighbours the later to queue sees the other's entry, and if every pair of
// neighbours agrees every rank of the host does. A difference fails the call before it is launched,
// and the rank that found it writes the two calls into its block and raises every host rank's abort
// word, so the kernels already queued (which wait for data the failing rank will not send) give up.
// Those ranks learn why from the verdict (stopped()), which their next call and
// braidCommGetAsyncError return.
//
// Between hosts, the lowest rank of each host is compared with those of the hosts before and after
// it (in rank order) over the network: a thread per link sends the rank's new entries in batches
// (outgoing), off the launch path, and compares each entry that arrives with the rank's own
// (arrived); both hosts of a pair find a mismatch. With every host's ranks linked and the hosts in
// a cycle, any mismatch differs across some compared pair. A verdict crosses the links too
// (verdictFor: the two calls, sent by the linked rank of the host that has one, passed on around
// the cycle), so that every host's kernels stop.
//
// Not covered here (docs/reliability.md says what covers them): send/recv, ranks more than kEntries
// collectives apart, and calls after a rank's first captured call (a graph's replays do not pass
// through here, so call numbers stop lining up between ranks).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "transport/host_fifo.h"

namespace braid::exec {

class CallLedger {
 public:
  // A rank further ahead of a neighbour than this has overwritten the entry the neighbour would
  // compare: that pair is not compared (CUDA queues about a thousand launches before it blocks).
  static constexpr size_t kEntries = 1024;

  CallLedger();
  ~CallLedger();
  CallLedger(const CallLedger&) = delete;
  CallLedger& operator=(const CallLedger&) = delete;

  /// Creates this rank's block, named from the communicator's key and the rank (zeroed). Where it
  /// cannot be shared (no shared memory; the name taken), the block is this process's alone: the
  /// abort word works, and shared() is false.
  Status create(uint64_t commKey, int rank, std::string (*describeTag)(const transport::CallTag&));
  /// Whether create shared the block (the host's other ranks can attach it).
  bool shared() const { return shared_; }
  /// Maps the block of `peer`, a rank of this host (process `pid`), made by its create: an error
  /// if the name holds anything else (another size, communicator, rank or process).
  Status attach(int peer, int64_t pid);
  /// The ranks whose entries this rank compares with its own (its neighbours on the host; any
  /// number, attached first).
  void compareWith(std::vector<int> peers) { compared_ = std::move(peers); }
  /// A rank of another host compared with this one: this rank's entries go to it (outgoing,
  /// verdictFor) and its come back (arrived), on its link's thread. Before the first enter.
  void addRemote(int peer);
  /// Removes the names (after every rank attached); the mappings stay.
  void unlinkName();

  /// The word this rank's kernels poll (host address; nonzero: give up). 4-byte aligned, at the
  /// start of a page-aligned mapping, so that it can be registered with CUDA.
  volatile int* abortWord() const;
  /// The block's mapping (to register with CUDA) and its size.
  void* block() const { return blocks_.empty() ? nullptr : blocks_.front().base; }
  static size_t blockBytes();

  /// Records collective `tag` (tag.seq its number) and compares it with the neighbours' entries of
  /// the same number. `captured`: queued into a CUDA graph; from this rank's first such call on,
  /// it and its neighbours compare no more. A mismatch returns the error (the call must not run),
  /// leaves the verdict and raises every attached rank's abort word.
  Status enter(const transport::CallTag& tag, bool captured);

  /// For the link with remote rank `peer` (its thread only): up to `max` of this rank's entries
  /// not yet sent to it, in order, into `out` (an entry overwritten before it went is skipped);
  /// returns how many. Each says whether this rank compares no more.
  size_t outgoing(int peer, transport::CallTag* out, size_t max);

  /// Entry `tag` of remote rank `peer`, as the network brought it (any thread, in the order sent):
  /// compared with this rank's own entry of that number, if queued. Of the two threads, this and
  /// the enter of the same number, at least one sees both entries. A mismatch returns the error
  /// and stops the kernels, as in enter.
  Status arrived(int peer, const transport::CallTag& tag);

  /// This host's verdict, once there is one, for the link with `peer` (its thread; which then
  /// passes it on): `half` gets the two calls, true the one time per link.
  bool verdictFor(int peer, transport::CallTag half[2]);

  /// The thread of the link with remote rank `peer` (`out` carries this rank's entries to it, `in`
  /// brings its; heap FIFOs a network moves): hands each batch that arrives to arrived (at once:
  /// the FIFO's producer wakes it), and sends this rank's new entries and this host's verdict in
  /// batches of its own, every 2 ms while calls come (up to 50 ms apart when idle), and once more
  /// after `stop` is raised (a verdict found just before the communicator ends still goes). Sending
  /// never waits for a slot. Returns after that last pass, or once either FIFO closes (the peer
  /// left, or its network failed: the log says that calls are compared across it no more).
  void serveLink(int peer, transport::HostFifo& out, transport::HostFifo& in, const std::atomic<bool>& stop);

  /// True when a rank of this host stopped this communicator's kernels on a mismatch; `*why` says
  /// which calls (this rank's own finding if it has one, else the first verdict among the blocks
  /// it maps: ranks that found different pairs at once name different pairs).
  bool stopped(Status* why) const;

 private:
  struct Block;
  struct Remote;
  struct Mapping {
    int rank = -1;
    Block* base = nullptr;
  };
  Block* blockOf(int rank) const;
  Remote* remoteOf(int rank) const;
  Status mismatch(int peer, const transport::CallTag& mine, const transport::CallTag& theirs);
  // Leaves the verdict (unless this rank has one) and raises every attached rank's abort word.
  void stop(int rankA, const transport::CallTag& a, int rankB, const transport::CallTag& b);
  std::string describe(int rankA, const transport::CallTag& a, int rankB, const transport::CallTag& b) const;

  uint64_t key_ = 0;
  int rank_ = -1;
  std::string name_;  // until unlinkName
  bool shared_ = false;
  std::vector<Mapping> blocks_;  // this rank's first
  std::vector<int> compared_;
  std::vector<std::unique_ptr<Remote>> remotes_;
  std::atomic<uint32_t> lastEntered_{0};  // the number of the latest enter (numbers wrap at 2^32)
  std::string (*describeTag_)(const transport::CallTag&) = nullptr;
};

}  // namespace braid::exec
