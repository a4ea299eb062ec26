// ShmFifoSegment: one FIFO in a named POSIX shared-memory segment, between two processes of a host.
//
//   /dev/shm/braid-<comm>-<src>-<dst>-<channel>-<conn>
//   [ SegmentHeader: ready, attached, geometry ][ FifoBlock: head, tail, sizes ][ slots ... ]
//
// Either side may come first: shm_open(O_CREAT | O_EXCL) decides who creates it (sizes it, which
// zeroes it, and marks it ready); the other opens it and waits for the mark. Each side counts itself
// in `attached` once mapped, and the side that brings it to 2 unlinks the name at once: from then on
// the memory lives only as long as the mappings, so it is freed by the kernel when both processes
// unmap it or die. A name whose peer never attached is unlinked by the destructor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "transport/host_fifo.h"

namespace braid::transport {

class ShmFifoSegment {
 public:
  /// Creates or opens the segment `name` and maps it; waits for a creating peer until `timeoutMs`.
  /// The peer is rank `peerRank`, process `peerPid` (its death ends the FIFO's waits).
  static Status attach(const std::string& name, int slots, size_t slotBytes, int64_t timeoutMs, const StopFlags& stop,
                       int peerRank, long peerPid, std::unique_ptr<ShmFifoSegment>* out);

  ~ShmFifoSegment();
  ShmFifoSegment(const ShmFifoSegment&) = delete;
  ShmFifoSegment& operator=(const ShmFifoSegment&) = delete;

  HostFifo& fifo() { return *fifo_; }

  /// The segment name for a connection of a communicator.
  static std::string nameFor(uint64_t commKey, int src, int dst, int channel, int connId);

 private:
  ShmFifoSegment() = default;

  std::string name_;
  void* base_ = nullptr;
  size_t bytes_ = 0;
  bool unlinked_ = false;
  std::unique_ptr<HostFifo> fifo_;
};

}  // namespace braid::transport
