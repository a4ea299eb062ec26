// RootServer: the rendezvous point of one communicator's bootstrap.
//
//   rank 0 ---Hello--->  +--------+   every rank arrived:  --Ring{1, addr1}--> rank 0
//   rank 1 ---Hello--->  |  root  |                        --Ring{2, addr2}--> rank 1
//   rank 2 ---Hello--->  +--------+                        --Ring{0, addr0}--> rank 2
//   junk   ---xxxxx--->  (dropped, logged)
//
// Each rank says who it is and where its own listener is; once all nranks have arrived, the root
// tells each rank the listener of the next rank in the ring, and is done. Before the first valid
// Hello it waits indefinitely (it may be a background thread started long before the ranks); from
// then on it gives the ranks the timeout the first Hello carried. At that deadline it tells every
// rank that did arrive which ranks did not ("rank(s) 3, 5 did not arrive ... within 2 s"), so the
// error the user sees names the missing rank rather than a bare timeout.
//
// Hellos that contradict the first (another nranks, a rank that already arrived) are answered with
// an Error frame and dropped; the real ranks carry on.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "bootstrap/inbox.h"
#include "bootstrap/net.h"
#include "core/status.h"

namespace braid::bootstrap {

class RootServer {
 public:
  /// Binds the root's listener at `address` (port 0: an ephemeral port). EADDRINUSE and other bind
  /// failures come back here, naming the address, before any thread is started.
  static Status listen(const SocketAddress& address, uint64_t magic, std::shared_ptr<RootServer>* out);

  /// The address the listener is bound to (with the actual port).
  const SocketAddress& address() const { return address_; }

  /// Serves one rendezvous: returns once every rank got its Ring frame (ok), at the deadline after
  /// telling the arrived ranks who is missing (timeout), or soon after stop() (aborted).
  Status serve();

  /// Makes serve() return promptly (from any thread).
  void stop() { stop_.store(true, std::memory_order_release); }

  /// For the timeout message: "3, 5-7" for the ranks whose Hello is not in `arrived`.
  static std::string missingRanks(const std::vector<bool>& arrived);

 private:
  RootServer(Socket listener, const SocketAddress& address, uint64_t magic);

  struct Rank {
    Socket socket;  // the connection its Hello came on; the answer goes back on it
    SocketAddress listener;
  };

  /// Takes one Hello; false (after answering with an Error frame) when it contradicts the others.
  bool admit(Inbox::Arrival& arrival, std::vector<Rank>* ranks);
  void answer(Rank& rank, int r, FrameType type, const std::vector<unsigned char>& payload);
  void refuse(Inbox::Arrival& arrival, const Status& why);

  SocketAddress address_;
  uint64_t magic_;
  std::atomic<bool> stop_{false};
  Inbox inbox_;
  int nranks_ = 0;         // from the first valid Hello
  int firstRank_ = -1;     // who sent it
  int64_t timeoutMs_ = 0;  // the timeout it carried
  int arrived_ = 0;
};

/// Runs `server->serve()` on a detached thread that owns the server until serve() returns
/// (braidGetUniqueId without BRAID_COMM_ID); its result is logged.
Status serveInBackground(std::shared_ptr<RootServer> server);

/// A root served by a thread its owner joins (rank 0 with BRAID_COMM_ID): the destructor stops the
/// server if it is still running and joins the thread.
class RootThread {
 public:
  RootThread() = default;
  ~RootThread();
  RootThread(const RootThread&) = delete;
  RootThread& operator=(const RootThread&) = delete;

  Status start(const SocketAddress& address, uint64_t magic);

 private:
  std::shared_ptr<RootServer> server_;
  std::thread thread_;
};

}  // namespace braid::bootstrap
