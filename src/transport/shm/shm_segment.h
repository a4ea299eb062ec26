// ShmFifoSegment: one FIFO in a named POSIX shared-memory segment, between two processes of a host.
//
//   /dev/shm/braid-<comm>-<src>-<dst>-<channel>-<conn>
//   [ SegmentHeader: ready, attached, geometry ][ FifoBlock: head, tail, sizes ][ slots ... ]
//
// Either side may come first: shm_open(O_CREAT | O_EXCL) decides who creates it (sizes it, which
// zeroes it, and marks it ready); the other opens it and waits for the mark. Each side counts itself
// in `attached` once mapped, and the side that brings it to 2 unlinks the name at once: from then on
// the memory lives only as long as the mappings, so it is freed by the kernel when both processes
// unmap it or die.
//
// A name whose peer never attached is unlinked by the destructor, but for one case: a sender whose
// published slots nobody has read yet while the receiver still lives (and the FIFO is not closed:
// a failed call's slots are never read). A sender may finish its part
// of a call (its slots fit the FIFO), destroy its communicator and exit before the receiver has even
// looked; unlinking then would leave the receiver to create a fresh, empty segment under the same
// name and wait for data that is gone (it saw "rank N exited during the call"). So the sender leaves
// the name, the receiver attaches later as the second side and unlinks it, and a receiver that
// never does (its call failed first) removes every name addressed to it when its communicator goes
// (unlinkAddressedTo). A receiver that dies cannot: the names addressed to it are removed by each
// peer of its host as that peer's communicator goes.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "transport/host_fifo.h"
#include "transport/host_transport.h"

namespace braid::transport {

/// One side of a segment: its FIFO's geometry, the peer, and which end this side is.
struct ShmFifoOptions {
  int slots = 0;
  size_t slotBytes = 0;
  int64_t timeoutMs = 0;  // how long to wait for a creating peer
  StopFlags stop;
  int peerRank = -1;  // the peer is rank `peerRank`, process `peerPid` (its death ends the FIFO's waits)
  long peerPid = 0;
  bool sender = false;  // this side publishes into the FIFO
};

class ShmFifoSegment {
 public:
  /// Creates or opens the segment `name` and maps it.
  static Status attach(const std::string& name, const ShmFifoOptions& options, std::unique_ptr<ShmFifoSegment>* out);

  ~ShmFifoSegment();
  ShmFifoSegment(const ShmFifoSegment&) = delete;
  ShmFifoSegment& operator=(const ShmFifoSegment&) = delete;

  HostFifo& fifo() { return *fifo_; }

  /// The segment name for a connection of a communicator.
  static std::string nameFor(uint64_t commKey, int src, int dst, int channel, int connId);
  /// Unlinks every name of communicator `commKey` whose receiver is one of `receivers` (they read
  /// no more).
  static void unlinkAddressedTo(uint64_t commKey, const std::vector<int>& receivers);

 private:
  ShmFifoSegment() = default;

  std::string name_;
  void* base_ = nullptr;
  size_t bytes_ = 0;
  bool unlinked_ = false;
  bool sender_ = false;
  long peerPid_ = 0;
  std::unique_ptr<HostFifo> fifo_;
};

/// The shared-memory transport of one host-memory rank: a segment per connection with a process of
/// this host, made when a call first opens it. On destruction its segments go, then every name
/// addressed to this rank that no call opened (it reads no more), or to a peer whose process died.
class ShmLinks : public HostTransport {
 public:
  /// `options` gives every connection's geometry and stop flags; `pids[r]` is rank r's process.
  ShmLinks(uint64_t shmKey, int rank, const ShmFifoOptions& options, std::vector<long> pids)
      : shmKey_(shmKey), rank_(rank), options_(options), pids_(std::move(pids)) {}
  ~ShmLinks() override;
  Status fifo(int channel, int connId, int src, int dst, HostFifo** out) override;

 private:
  const uint64_t shmKey_;
  const int rank_;
  const ShmFifoOptions options_;
  const std::vector<long> pids_;
  std::mutex mu_;
  std::vector<std::unique_ptr<ShmFifoSegment>> segments_;
};

}  // namespace braid::transport
