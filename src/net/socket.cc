#include "net/socket.h"

#include <netinet/tcp.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include "core/log.h"

namespace braid::net {
namespace {

constexpr int64_t kCenturyMs = int64_t{100} * 365 * 24 * 3600 * 1000;
constexpr int kMaxConnectBackoffMs = 100;

bool wouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == EINTR; }

// Refused: nobody listens yet (the root or a peer is still starting). Timed out / reset: a SYN was
// lost or the listener's backlog overflowed. All of these are worth another try before the deadline.
bool retryConnect(int err) { return err == ECONNREFUSED || err == ETIMEDOUT || err == ECONNRESET; }

Status setNoDelay(int fd, const std::string& peer) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    return errnoError("setsockopt(TCP_NODELAY) for " + peer, errno);
  }
  return Status::ok();
}

std::string progress(const char* verb, size_t done, size_t total) {
  return std::string(" (") + verb + " " + std::to_string(done) + " of " + std::to_string(total) + " bytes)";
}

Status withProgress(const Status& st, const char* verb, size_t done, size_t total) {
  return Status(st.code(), st.message() + progress(verb, done, total));
}

// The result of one non-blocking send or sendmsg that returned `n`.
Status sendOutcome(ssize_t n, const std::string& peer, size_t* done) {
  if (n >= 0) {
    *done = static_cast<size_t>(n);
    return Status::ok();
  }
  if (wouldBlock(errno)) return Status::ok();
  if (errno == EPIPE || errno == ECONNRESET) return remoteError("connection closed by " + peer + " while sending");
  return errnoError("send to " + peer, errno);
}

}  // namespace

Deadline Deadline::in(int64_t ms, const std::atomic<bool>* abort) {
  int64_t clamped = std::min(std::max<int64_t>(ms, 0), kCenturyMs);
  return Deadline{Clock::now() + std::chrono::milliseconds(clamped), abort, ms};
}

int64_t Deadline::msLeft() const {
  if (at == Clock::time_point::max()) return kCenturyMs;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at - Clock::now()).count();
  return std::max<int64_t>(left, 0);
}

int Deadline::sliceMs() const { return static_cast<int>(std::min<int64_t>(kPollSliceMs, msLeft())); }

Status Deadline::check(const std::string& what) const {
  if (aborted()) return abortedError(what);
  if (passed()) {
    return timeoutError(totalMs >= 0 ? "timed out after " + std::to_string(totalMs) + " ms " + what
                                     : "timed out " + what);
  }
  return Status::ok();
}

Status abortedError(const std::string& what) { return internalError("aborted " + what); }

Status pollOnce(std::vector<pollfd>* fds, int timeoutMs, const std::string& what) {
  int rc = ::poll(fds->data(), fds->size(), timeoutMs);
  if (rc < 0 && errno != EINTR) return errnoError("poll while " + what, errno);
  if (rc < 0) {
    for (pollfd& p : *fds) p.revents = 0;
  }
  return Status::ok();
}

Socket::Socket(Socket&& other) noexcept : fd_(other.fd_), peer_(std::move(other.peer_)) { other.fd_ = -1; }

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    peer_ = std::move(other.peer_);
    other.fd_ = -1;
  }
  return *this;
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);  // nothing useful to do on failure: the descriptor is gone either way
  fd_ = -1;
}

Status Socket::listen(const SocketAddress& address, Socket* out) {
  std::string where = address.toString();
  int fd = ::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return errnoError("socket() for a listener at " + where, errno);
  Socket s(fd, "listener at " + where);
  int one = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
    return errnoError("setsockopt(SO_REUSEADDR) on listener at " + where, errno);
  }
  if (::bind(fd, address.sockaddrPtr(), address.sockaddrLength()) != 0) return errnoError("bind to " + where, errno);
  if (::listen(fd, SOMAXCONN) != 0) return errnoError("listen on " + where, errno);
  SocketAddress bound;
  BRAID_RETURN_IF_ERROR(s.localAddress(&bound));
  s.setPeer("listener at " + bound.toString());
  *out = std::move(s);
  return Status::ok();
}

Status Socket::localAddress(SocketAddress* out) const {
  sockaddr_storage ss{};
  socklen_t length = sizeof(ss);
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &length) != 0) {
    return errnoError("getsockname of socket to " + peer_, errno);
  }
  return SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&ss), length, out);
}

Status Socket::tryAccept(Socket* out, SocketAddress* from) {
  *out = Socket();
  sockaddr_storage ss{};
  socklen_t length = sizeof(ss);
  int fd = accept4(fd_, reinterpret_cast<sockaddr*>(&ss), &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) {
    // A connection that was reset before we got to it is simply gone.
    if (wouldBlock(errno) || errno == ECONNABORTED || errno == EPROTO) return Status::ok();
    return errnoError("accept on " + peer_, errno);
  }
  Socket s(fd, "");
  BRAID_RETURN_IF_ERROR(SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&ss), length, from));
  s.setPeer(from->toString());
  BRAID_RETURN_IF_ERROR(setNoDelay(fd, s.peer()));
  *out = std::move(s);
  return Status::ok();
}

Status Socket::accept(const Deadline& deadline, Socket* out, SocketAddress* from) {
  while (true) {
    BRAID_RETURN_IF_ERROR(tryAccept(out, from));
    if (out->valid()) return Status::ok();
    BRAID_RETURN_IF_ERROR(deadline.check("waiting for a connection on " + peer_));
    std::vector<pollfd> fds{{fd_, POLLIN, 0}};
    BRAID_RETURN_IF_ERROR(pollOnce(&fds, deadline.sliceMs(), "accepting on " + peer_));
  }
}

bool connectedToItself(int fd) {
  sockaddr_storage self{}, peer{};
  socklen_t selfLength = sizeof(self), peerLength = sizeof(peer);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &selfLength) != 0) return false;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peerLength) != 0) return false;
  SocketAddress a, b;
  return SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&self), selfLength, &a).isOk() &&
         SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&peer), peerLength, &b).isOk() && a == b;
}

Status Socket::connect(const SocketAddress& to, const std::string& peer, const Deadline& deadline, Socket* out,
                       bool retryRefused) {
  int backoffMs = 1;
  int lastError = 0;
  for (int attempt = 1;; ++attempt) {
    std::string lastText = lastError == 0 ? std::string() : errnoError("last error", lastError).message();
    BRAID_RETURN_IF_ERROR(deadline.check("connecting to " + peer + (lastText.empty() ? "" : " (" + lastText + ")")));
    int fd = ::socket(to.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return errnoError("socket() for connecting to " + peer, errno);
    Socket s(fd, peer);
    BRAID_RETURN_IF_ERROR(setNoDelay(fd, peer));
    int err = ::connect(fd, to.sockaddrPtr(), to.sockaddrLength()) == 0 ? 0 : errno;
    while (err == EINPROGRESS) {
      std::vector<pollfd> fds{{fd, POLLOUT, 0}};
      BRAID_RETURN_IF_ERROR(pollOnce(&fds, deadline.sliceMs(), "connecting to " + peer));
      if (fds[0].revents != 0) {
        socklen_t length = sizeof(err);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &length) != 0) {
          return errnoError("getsockopt(SO_ERROR) connecting to " + peer, errno);
        }
      } else {
        BRAID_RETURN_IF_ERROR(deadline.check("connecting to " + peer + " (no answer to the connection request)"));
      }
    }
    if (err == 0 && connectedToItself(fd)) err = ECONNREFUSED;
    if (err == 0) {
      *out = std::move(s);
      return Status::ok();
    }
    if (err == ECONNREFUSED && !retryRefused) {
      return Status(Code::kRemoteError, "connect to " + peer +
                                            " refused: nothing listens there any more (it exited, or destroyed or "
                                            "aborted its communicator)");
    }
    if (!retryConnect(err)) return errnoError("connect to " + peer, err);
    if (attempt == 1 || attempt % 50 == 0) {
      BRAID_TRACE(log::Subsys::kBootstrap, "connect to ", peer, " attempt ", attempt, ": ",
                  errnoError("connect", err).message(), "; retrying");
    }
    lastError = err;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(backoffMs, deadline.msLeft())));
    backoffMs = std::min(backoffMs * 2, kMaxConnectBackoffMs);
  }
}

namespace {

Status connectOutcome(int err, int fd, const std::string& peer, bool* connected) {
  if (err == 0 && connectedToItself(fd)) err = ECONNREFUSED;
  *connected = err == 0;
  if (err == 0 || err == EINPROGRESS || err == EALREADY) return Status::ok();
  if (err == ECONNREFUSED) return remoteError("connect to " + peer + " refused: nothing listens there");
  return errnoError("connect to " + peer, err);
}

}  // namespace

Status Socket::startConnect(const SocketAddress& to, const std::string& peer, Socket* out, bool* connected) {
  *connected = false;
  int fd = ::socket(to.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return errnoError("socket() for connecting to " + peer, errno);
  Socket s(fd, peer);
  BRAID_RETURN_IF_ERROR(setNoDelay(fd, peer));
  int err = ::connect(fd, to.sockaddrPtr(), to.sockaddrLength()) == 0 ? 0 : errno;
  BRAID_RETURN_IF_ERROR(connectOutcome(err, fd, peer, connected));
  *out = std::move(s);
  return Status::ok();
}

Status Socket::finishConnect(bool* connected) {
  *connected = false;
  std::vector<pollfd> fds{{fd_, POLLOUT, 0}};
  BRAID_RETURN_IF_ERROR(pollOnce(&fds, 0, "connecting to " + peer_));
  if (fds[0].revents == 0) return Status::ok();
  int err = 0;
  socklen_t length = sizeof(err);
  if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &length) != 0) {
    return errnoError("getsockopt(SO_ERROR) connecting to " + peer_, errno);
  }
  return connectOutcome(err, fd_, peer_, connected);
}

Status Socket::sendSome(const void* data, size_t bytes, size_t* done) {
  *done = 0;
  if (bytes == 0) return Status::ok();
  return sendOutcome(::send(fd_, data, bytes, MSG_NOSIGNAL | MSG_DONTWAIT), peer_, done);
}

Status Socket::sendSome(const iovec* parts, int n, size_t* done) {
  *done = 0;
  size_t bytes = 0;
  for (int i = 0; i < n; ++i) bytes += parts[i].iov_len;
  if (bytes == 0) return Status::ok();
  msghdr message{};
  message.msg_iov = const_cast<iovec*>(parts);
  message.msg_iovlen = static_cast<size_t>(n);
  return sendOutcome(::sendmsg(fd_, &message, MSG_NOSIGNAL | MSG_DONTWAIT), peer_, done);
}

Status Socket::recvSome(void* data, size_t bytes, size_t* done) {
  *done = 0;
  if (bytes == 0) return Status::ok();
  ssize_t n = ::recv(fd_, data, bytes, MSG_DONTWAIT);
  if (n > 0) {
    *done = static_cast<size_t>(n);
    return Status::ok();
  }
  if (n == 0) return remoteError("connection closed by " + peer_);
  if (wouldBlock(errno)) return Status::ok();
  if (errno == ECONNRESET) return remoteError("connection reset by " + peer_);
  return errnoError("recv from " + peer_, errno);
}

Status Socket::sendAll(const void* data, size_t bytes, const Deadline& deadline, PollClient* also) {
  return sendRecv(this, data, bytes, nullptr, nullptr, 0, deadline, also);
}

Status Socket::recvAll(void* data, size_t bytes, const Deadline& deadline, PollClient* also) {
  return sendRecv(nullptr, nullptr, 0, this, data, bytes, deadline, also);
}

Status sendRecv(Socket* to, const void* sendData, size_t sendBytes, Socket* from, void* recvData, size_t recvBytes,
                const Deadline& deadline, PollClient* also) {
  const auto* out = static_cast<const unsigned char*>(sendData);
  auto* in = static_cast<unsigned char*>(recvData);
  size_t sent = 0, got = 0;
  if (to == nullptr) sendBytes = 0;
  if (from == nullptr) recvBytes = 0;
  std::vector<pollfd> fds;
  while (true) {
    size_t n = 0;
    if (sent < sendBytes) {
      Status st = to->sendSome(out + sent, sendBytes - sent, &n);
      if (!st.isOk()) return withProgress(st, "sent", sent, sendBytes);
      sent += n;
    }
    if (got < recvBytes) {
      Status st = from->recvSome(in + got, recvBytes - got, &n);
      if (!st.isOk()) return withProgress(st, "received", got, recvBytes);
      got += n;
    }
    if (sent == sendBytes && got == recvBytes) return Status::ok();

    std::string what;
    if (got < recvBytes) what = "waiting for " + from->peer() + progress("received", got, recvBytes);
    if (sent < sendBytes) {
      what += (what.empty() ? "sending to " : " while sending to ") + to->peer() + progress("sent", sent, sendBytes);
    }
    BRAID_RETURN_IF_ERROR(deadline.check(what));
    fds.clear();
    if (sent < sendBytes) fds.push_back({to->fd(), POLLOUT, 0});
    if (got < recvBytes) fds.push_back({from->fd(), POLLIN, 0});
    size_t own = fds.size();
    if (also != nullptr) also->addPollFds(&fds);
    BRAID_RETURN_IF_ERROR(pollOnce(&fds, deadline.sliceMs(), what));
    if (also != nullptr) also->onPoll(fds.data() + own, fds.size() - own);
  }
}

}  // namespace braid::net
