// RingBootstrap: the Bootstrap of one rank once the root has told it its ring neighbour.
//
//        prev_ (accepted: RingHello)           next_ (connected: RingHello)
//   rank r-1 ---------------------> rank r ---------------------> rank r+1
//                                     ^
//                                     | listener (Inbox): RingHello from r-1, then one connection
//                                     | per Message from any rank, queued per (from, tag)
//
// The ring connections carry only Data frames (all-gather slots, one direction each); tagged
// messages each use a fresh connection to the receiver's listener, so a message can be sent to any
// rank at any time and is queued there until recv() asks for it. Every transfer also serves the
// Inbox, so a rank stuck sending a large message still drains what others send to it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/frame.h"
#include "bootstrap/inbox.h"
#include "bootstrap/net.h"

namespace braid::bootstrap {

class RingBootstrap final : public Bootstrap {
 public:
  /// `listener` is this rank's listening socket, bound at `self` (the address sent in the Hello).
  RingBootstrap(int rank, int nranks, uint64_t magic, const Options& options, Socket listener,
                const SocketAddress& self);

  /// Connects to the next rank named by the root, accepts the previous one, and gathers every
  /// rank's listener address.
  Status joinRing(const RingInfo& ring);

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  Status allGather(void* data, size_t bytesPerRank) override;
  Status send(int peer, uint32_t tag, const void* data, size_t bytes) override;
  Status recv(int peer, uint32_t tag, void* data, size_t bytes) override;
  Status barrier() override;
  const std::vector<SocketAddress>& peerAddresses() const override { return peers_; }

 private:
  Deadline newDeadline() const { return Deadline::in(options_.timeoutMs, options_.abort); }
  int nextRank() const { return (rank_ + 1) % nranks_; }
  int prevRank() const { return (rank_ + nranks_ - 1) % nranks_; }
  Status checkPeer(const char* op, int peer) const;
  Status acceptPrevious(const Deadline& deadline);
  Status ringAllGather(unsigned char* data, size_t bytesPerRank, const Deadline& deadline);
  /// Files a frame that arrived on the listener: a Message goes to the mailbox (in the order its
  /// sender sent it), anything else is dropped.
  void absorb(Inbox::Arrival arrival);

  int rank_;
  int nranks_;
  uint64_t magic_;
  Options options_;
  SocketAddress self_;
  Inbox inbox_;
  Socket next_;
  Socket prev_;
  std::vector<SocketAddress> peers_;
  // Messages received before recv() asked for them, FIFO per (from, tag).
  std::map<std::pair<int, uint32_t>, std::deque<std::vector<unsigned char>>> mailbox_;
  // Per peer: the sequence number of the next message to it, and of the next one expected from
  // it; messages that overtook an earlier one from the same sender wait in early_ (by (from, seq)).
  std::vector<uint64_t> sendSeq_;
  std::vector<uint64_t> recvSeq_;
  std::map<std::pair<int, uint64_t>, std::pair<uint32_t, std::vector<unsigned char>>> early_;
};

}  // namespace braid::bootstrap
