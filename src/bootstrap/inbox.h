// Inbox: the incoming side of a bootstrap listener (the root's, and every rank's).
//
// Anyone can connect to a listening port, so nothing that arrives is trusted. The Inbox polls the
// listener and every connection that has not yet delivered its first frame, all at once, and
// completes frames incrementally as bytes come in:
//
//   listener --accept--> pending[] --header ok?--> payload ... --complete--> ready queue --> owner
//                            |            |                        |
//                            +------------+---- drop + warn: wrong magic, unknown or unexpected
//                                              type, absurd length, closed mid-frame, or silent
//                                              past its own deadline (pendingTimeout)
//
// A connection gets pendingTimeout to deliver a valid header; after that (the magic has proven it
// a peer) pendingTimeout bounds each silence, so a large message on a slow link still gets through.
//
// So a slow, silent or hostile connection never blocks the real ranks behind it. Only the first
// frame of a connection passes through here; the owner gets the connection with it and decides
// whether to keep it (a Hello at the root, a RingHello at a rank) or let it close (a Message).
// Never reads past the end of that frame, so what follows on a kept connection is untouched.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "bootstrap/frame.h"
#include "bootstrap/net.h"
#include "core/status.h"

namespace braid::bootstrap {

/// How long a connection may take to deliver a valid header, and then may stay silent mid-payload.
constexpr std::chrono::milliseconds kPendingTimeout{10000};
/// Connections waiting for their first frame beyond this are refused (and logged).
constexpr size_t kMaxPendingConnections = 1024;

class Inbox final : public PollClient {
 public:
  /// A complete first frame and the connection it came on (still open).
  struct Arrival {
    Socket socket;
    SocketAddress from;
    FrameHeader header{};
    std::vector<unsigned char> payload;
  };

  /// Serves `listener`, accepting first frames that carry `magic` and one of `allowedTypes`
  /// (typeBit() values). `owner` names this inbox in log lines ("bootstrap root 10.0.0.1:4242").
  Inbox(Socket listener, uint64_t magic, uint32_t allowedTypes, std::string owner,
        std::chrono::milliseconds pendingTimeout = kPendingTimeout);

  const Socket& listener() const { return listener_; }

  /// Hands over the next complete frame, waiting for one until `deadline`; the timeout error says
  /// "timed out after N ms <waitingFor>".
  Status next(const Deadline& deadline, const std::string& waitingFor, Arrival* out);

  /// Hands over a frame that is already complete; false when there is none.
  bool pop(Arrival* out);

  /// Drops a connection whose frame the owner found wrong (logged like the Inbox's own drops).
  void reject(Arrival arrival, const std::string& reason);

  /// Connections dropped so far, and connections still waiting for their first frame.
  size_t droppedCount() const { return dropped_; }
  size_t pendingCount() const { return pending_.size(); }

  // PollClient: lets a transfer elsewhere keep this inbox going while it waits.
  void addPollFds(std::vector<pollfd>* fds) override;
  void onPoll(const pollfd* fds, size_t count) override;

 private:
  struct Pending {
    Socket socket;
    SocketAddress from;
    Clock::time_point deadline;
    FrameHeader header{};
    size_t headerBytes = 0;  // of sizeof(FrameHeader) received
    bool headerDone = false;
    std::vector<unsigned char> payload;
    size_t payloadBytes = 0;  // of header.length received
  };

  void acceptNew();
  /// Reads what is available; false when the connection left `pending_` (complete or dropped).
  bool advance(Pending& p);
  void drop(const SocketAddress& from, const std::string& reason);
  static std::string position(const Pending& p);

  Socket listener_;
  uint64_t magic_;
  uint32_t allowedTypes_;
  std::string owner_;
  std::chrono::milliseconds pendingTimeout_;
  std::vector<Pending> pending_;
  std::deque<Arrival> ready_;
  size_t dropped_ = 0;
  size_t polledPending_ = 0;               // how many pending_ entries the last addPollFds listed
  bool polledListener_ = false;            // whether it listed the listener
  Clock::time_point acceptPausedUntil_{};  // after accept() fails (e.g. out of descriptors)
};

}  // namespace braid::bootstrap
