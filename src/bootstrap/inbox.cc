#include "bootstrap/inbox.h"

#include <algorithm>
#include <utility>

#include "core/log.h"

namespace braid::bootstrap {
namespace {

// Accepts at most this many connections per poll round so that a flood of connects cannot starve
// the connections already pending.
constexpr int kAcceptsPerRound = 64;
constexpr std::chrono::milliseconds kAcceptPause{100};

}  // namespace

Inbox::Inbox(Socket listener, uint64_t magic, uint32_t allowedTypes, std::string owner,
             std::chrono::milliseconds pendingTimeout)
    : listener_(std::move(listener)),
      magic_(magic),
      allowedTypes_(allowedTypes),
      owner_(std::move(owner)),
      pendingTimeout_(pendingTimeout) {}

Status Inbox::next(const Deadline& deadline, const std::string& waitingFor, Arrival* out) {
  std::vector<pollfd> fds;
  while (true) {
    if (pop(out)) return Status::ok();
    BRAID_RETURN_IF_ERROR(deadline.check(waitingFor));
    fds.clear();
    addPollFds(&fds);
    BRAID_RETURN_IF_ERROR(pollOnce(&fds, deadline.sliceMs(), waitingFor));
    onPoll(fds.data(), fds.size());
  }
}

bool Inbox::pop(Arrival* out) {
  if (ready_.empty()) return false;
  *out = std::move(ready_.front());
  ready_.pop_front();
  return true;
}

void Inbox::reject(Arrival arrival, const std::string& reason) { drop(arrival.from, reason); }

void Inbox::addPollFds(std::vector<pollfd>* fds) {
  polledListener_ = Clock::now() >= acceptPausedUntil_;
  if (polledListener_) fds->push_back({listener_.fd(), POLLIN, 0});
  for (const Pending& p : pending_) fds->push_back({p.socket.fd(), POLLIN, 0});
  polledPending_ = pending_.size();
}

void Inbox::onPoll(const pollfd* fds, size_t count) {
  size_t first = polledListener_ ? 1 : 0;
  if (count != first + polledPending_) return;  // not the set we listed; poll again
  // Pending connections first (indices match pending_ as listed), then new ones.
  auto now = Clock::now();
  size_t kept = 0;
  for (size_t i = 0; i < polledPending_; ++i) {
    Pending& p = pending_[i];
    bool stay = true;
    if (fds[first + i].revents != 0) stay = advance(p);
    if (stay && now >= p.deadline) {
      std::string ms = std::to_string(pendingTimeout_.count()) + " ms";
      drop(p.from, (p.headerDone ? "silent for " + ms : "no complete header within " + ms) + position(p));
      stay = false;
    }
    if (stay) {
      if (kept != i) pending_[kept] = std::move(p);
      ++kept;
    }
  }
  pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(kept),
                 pending_.begin() + static_cast<std::ptrdiff_t>(polledPending_));
  polledPending_ = 0;
  if (polledListener_ && fds[0].revents != 0) acceptNew();
}

void Inbox::acceptNew() {
  for (int i = 0; i < kAcceptsPerRound; ++i) {
    Pending p;
    Status st = listener_.tryAccept(&p.socket, &p.from);
    if (!st.isOk()) {
      BRAID_WARN(log::Subsys::kBootstrap, owner_, ": ", st.message(), "; pausing accepts for ", kAcceptPause.count(),
                 " ms");
      acceptPausedUntil_ = Clock::now() + kAcceptPause;
      return;
    }
    if (!p.socket.valid()) return;
    if (pending_.size() >= kMaxPendingConnections) {
      drop(p.from, "too many connections waiting for their first frame (" + std::to_string(pending_.size()) + ")");
      continue;
    }
    BRAID_TRACE(log::Subsys::kBootstrap, owner_, ": connection from ", p.from.toString());
    p.deadline = Clock::now() + pendingTimeout_;
    // Data may already be there; reading now saves a poll round.
    if (advance(p)) pending_.push_back(std::move(p));
  }
}

bool Inbox::advance(Pending& p) {
  while (true) {
    size_t n = 0;
    Status st;
    if (!p.headerDone) {
      auto* dst = reinterpret_cast<unsigned char*>(&p.header) + p.headerBytes;
      st = p.socket.recvSome(dst, sizeof(FrameHeader) - p.headerBytes, &n);
      p.headerBytes += n;
    } else {
      st = p.socket.recvSome(p.payload.data() + p.payloadBytes, p.payload.size() - p.payloadBytes, &n);
      p.payloadBytes += n;
    }
    if (!st.isOk()) {
      drop(p.from, st.message() + position(p));
      return false;
    }
    if (!p.headerDone && p.headerBytes == sizeof(FrameHeader)) {
      Status bad = checkFrameHeader(p.header, magic_, allowedTypes_);
      if (!bad.isOk()) {
        drop(p.from, bad.message());
        return false;
      }
      p.headerDone = true;
      p.payload.resize(p.header.length);
    }
    // Once the header has proven a peer of this communicator, the deadline bounds silence rather
    // than the whole frame: a large message on a slow link is not garbage.
    if (p.headerDone && n > 0) p.deadline = Clock::now() + pendingTimeout_;
    if (p.headerDone && p.payloadBytes == p.payload.size()) {
      ready_.push_back(Arrival{std::move(p.socket), p.from, p.header, std::move(p.payload)});
      return false;
    }
    if (n == 0) return true;  // would block: wait for the next poll
  }
}

void Inbox::drop(const SocketAddress& from, const std::string& reason) {
  ++dropped_;
  BRAID_WARN(log::Subsys::kBootstrap, owner_, ": dropped connection from ", from.toString(), ": ", reason);
}

std::string Inbox::position(const Pending& p) {
  if (!p.headerDone && p.headerBytes == 0) return " (before sending anything)";
  if (!p.headerDone) {
    return " (after " + std::to_string(p.headerBytes) + " of " + std::to_string(sizeof(FrameHeader)) + " header bytes)";
  }
  return std::string(" (after ") + std::to_string(p.payloadBytes) + " of " + std::to_string(p.payload.size()) +
         " payload bytes of a " + frameTypeName(p.header.type) + " frame)";
}

}  // namespace braid::bootstrap
