// Socket: a TCP socket that closes itself, and the waits of the bootstrap.
//
// Every socket is non-blocking; every wait is a poll() in slices of at most kPollSliceMs so that a
// Deadline (absolute, steady clock) and an abort flag set by another thread (braidCommAbort) both
// end it promptly. Every system call is checked here, once, and its error names the call and the
// peer (a Socket carries a description of who is at the other end, e.g. "rank 2 (previous in
// ring) at 10.0.0.2:41234"). Sends use MSG_NOSIGNAL: a dead peer is an error, never SIGPIPE.
//
// While a transfer waits it can also serve a PollClient (the Inbox of this rank's listener), so
// that a rank blocked sending a large message to a peer still drains the messages that peer, or
// any other, is sending to it: no cycle of blocked senders can form.
#pragma once

#include <poll.h>
#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "net/socket_address.h"

namespace braid::net {

using Clock = std::chrono::steady_clock;

/// Longest single poll(): how late an abort or a deadline may be noticed.
constexpr int kPollSliceMs = 100;

/// When a wait must end: an absolute time, or earlier when `*abort` becomes true.
struct Deadline {
  Clock::time_point at = Clock::time_point::max();
  const std::atomic<bool>* abort = nullptr;
  int64_t totalMs = -1;  // the timeout this deadline was made from (for messages); -1: none

  /// `ms` from now (clamped to a century, so the arithmetic cannot overflow).
  static Deadline in(int64_t ms, const std::atomic<bool>* abort);
  static Deadline never(const std::atomic<bool>* abort) { return Deadline{Clock::time_point::max(), abort, -1}; }

  bool passed() const { return Clock::now() >= at; }
  bool aborted() const { return abort != nullptr && abort->load(std::memory_order_acquire); }
  /// Milliseconds until `at` (0 when passed).
  int64_t msLeft() const;
  /// Timeout for the next poll(): min(kPollSliceMs, msLeft()).
  int sliceMs() const;
  /// The status of a wait that ended: timeoutError / abortedError naming `what`; ok if neither.
  Status check(const std::string& what) const;
};

/// The error of every wait that ended because the abort flag was set.
Status abortedError(const std::string& what);

/// One poll() of at most `timeoutMs`; EINTR counts as "nothing ready". `what` names the wait.
Status pollOnce(std::vector<pollfd>* fds, int timeoutMs, const std::string& what);

/// True when a connected socket's own address is its peer's. A connect to a port of this host's
/// ephemeral range that nobody listens on gets, once in some ten thousand tries, that very port as
/// its source port; TCP then joins the socket to itself (a "simultaneous open"), connect succeeds
/// without a listener, and the port is held against the listener about to bind it (the bootstrap
/// root). Socket::connect treats such a socket as refused.
bool connectedToItself(int fd);

/// Something else to serve while a socket waits: adds its descriptors to a poll set, and handles
/// their results (it keeps its own errors; it never ends the wait).
class PollClient {
 public:
  virtual ~PollClient() = default;
  virtual void addPollFds(std::vector<pollfd>* fds) = 0;
  virtual void onPoll(const pollfd* fds, size_t count) = 0;
};

class Socket {
 public:
  Socket() = default;
  Socket(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {}
  ~Socket() { close(); }
  Socket(Socket&& other) noexcept;
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  /// Who is at the other end, for error messages.
  const std::string& peer() const { return peer_; }
  void setPeer(std::string peer) { peer_ = std::move(peer); }
  void close();

  /// A listening socket bound to `address` (port 0: an ephemeral port), SO_REUSEADDR set.
  static Status listen(const SocketAddress& address, Socket* out);
  /// getsockname: the address this socket is bound to.
  Status localAddress(SocketAddress* out) const;

  /// Accepts one connection if one is pending; `*out` stays invalid when none is.
  Status tryAccept(Socket* out, SocketAddress* from);
  /// Waits for one connection.
  Status accept(const Deadline& deadline, Socket* out, SocketAddress* from);

  /// Connects to `to` (TCP_NODELAY), retrying while it is refused or times out (the peer may not
  /// be listening yet) until `deadline`. `peer` describes it in errors ("the bootstrap root ...").
  /// With `retryRefused` false a refused connection is an error at once: for a listener known to be
  /// open already (a peer's socket transport after init), a refusal means its owner is gone.
  static Status connect(const SocketAddress& to, const std::string& peer, const Deadline& deadline, Socket* out,
                        bool retryRefused = true);

  /// Non-blocking connect in steps, for callers that must never wait (a network plugin's connect):
  /// startConnect issues it (`*connected` true when it completed at once); finishConnect looks
  /// whether it has completed since, without waiting. A refusal is a remoteError naming `peer`.
  static Status startConnect(const SocketAddress& to, const std::string& peer, Socket* out, bool* connected);
  Status finishConnect(bool* connected);

  /// One non-blocking step: `*done` bytes moved (0 when it would block). A closed connection or a
  /// reset is a remoteError naming the peer.
  Status sendSome(const void* data, size_t bytes, size_t* done);
  /// Like sendSome on the concatenation of `n` buffers (empty ones allowed), in one system call.
  Status sendSome(const iovec* parts, int n, size_t* done);
  Status recvSome(void* data, size_t bytes, size_t* done);

  Status sendAll(const void* data, size_t bytes, const Deadline& deadline, PollClient* also = nullptr);
  Status recvAll(void* data, size_t bytes, const Deadline& deadline, PollClient* also = nullptr);

 private:
  int fd_ = -1;
  std::string peer_;
};

/// Sends `sendBytes` to `to` while receiving `recvBytes` from `from`, both at once, so that two
/// ranks that send each other (or a ring that sends around) more than the socket buffers hold
/// cannot deadlock. Either side may be null / zero bytes.
Status sendRecv(Socket* to, const void* sendData, size_t sendBytes, Socket* from, void* recvData, size_t recvBytes,
                const Deadline& deadline, PollClient* also = nullptr);

}  // namespace braid::net
