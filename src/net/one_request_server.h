// The serving side of a small protocol of one fixed-size request per connection, answered (or not)
// and closed: the watchdog's state queries (core/watchdog.cc) and the export service's requests
// (core/export_service.cc). One thread polls its listeners and the connections being read; a
// request is read without blocking as it comes. Junk (a partial request that stalls, more
// connections than it keeps) is dropped; nothing one connection sends stops the others being served.
#pragma once

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "net/socket.h"

namespace braid::net {

/// `Owner` names what a listener serves; each request is handed to its listener's owner.
template <typename Request, typename Owner>
class OneRequestServer {
 public:
  /// At most `maxPending` connections are read at once (the oldest goes first); one that has not
  /// sent a whole request within `idleMs` goes.
  OneRequestServer(size_t maxPending, int64_t idleMs) : maxPending_(maxPending), idleMs_(idleMs) {}

  /// Polls `listeners` (an invalid socket is skipped) and the connections being read for up to
  /// `timeoutMs`, accepts what the listeners have, reads what has come, and calls
  /// `handle(owner, socket, request)` for each whole request, then closes its connection.
  template <typename Handle>
  void serveOnce(const std::vector<std::pair<Socket*, Owner>>& listeners, int timeoutMs, const char* what,
                 Handle handle) {
    std::vector<pollfd> fds;
    for (const auto& l : listeners) fds.push_back({l.first->valid() ? l.first->fd() : -1, POLLIN, 0});
    for (const Pending& p : pending_) fds.push_back({p.socket.fd(), POLLIN, 0});
    pollOnce(&fds, timeoutMs, what).ignore();
    for (size_t i = 0; i < listeners.size(); ++i) {
      if ((fds[i].revents & POLLIN) == 0) continue;
      Socket s;
      SocketAddress from;
      if (!listeners[i].first->tryAccept(&s, &from).isOk()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));  // out of descriptors: no busy loop
        continue;
      }
      if (!s.valid()) continue;
      if (pending_.size() >= maxPending_) pending_.erase(pending_.begin());
      pending_.push_back(Pending{listeners[i].second, std::move(s), Request{}, 0, Clock::now()});
    }
    for (Pending& p : pending_) {
      size_t done = 0;
      if (!p.socket.recvSome(reinterpret_cast<char*>(&p.request) + p.got, sizeof(Request) - p.got, &done).isOk()) {
        p.socket.close();
        continue;
      }
      p.got += done;
      if (p.got < sizeof(Request)) continue;
      handle(p.owner, p.socket, p.request);
      p.socket.close();
    }
    const auto now = Clock::now();
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                  [&](const Pending& p) {
                                    return !p.socket.valid() || now - p.since > std::chrono::milliseconds(idleMs_);
                                  }),
                   pending_.end());
  }

 private:
  struct Pending {
    Owner owner;
    Socket socket;
    Request request;
    size_t got = 0;
    Clock::time_point since;
  };
  const size_t maxPending_;
  const int64_t idleMs_;
  std::vector<Pending> pending_;
};

}  // namespace braid::net
