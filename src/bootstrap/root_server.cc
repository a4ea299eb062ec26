#include "bootstrap/root_server.h"

#include <system_error>
#include <utility>

#include "bootstrap/frame.h"
#include "core/log.h"

namespace braid::bootstrap {
namespace {

// Answers are a few dozen bytes and fit in any socket buffer; this only guards against a rank
// whose connection is wedged.
constexpr int64_t kAnswerTimeoutMs = 10000;

std::string duration(int64_t ms) {
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

}  // namespace

Status RootServer::listen(const SocketAddress& address, uint64_t magic, std::shared_ptr<RootServer>* out) {
  Socket listener;
  BRAID_RETURN_IF_ERROR(Socket::listen(address, &listener).withContext("cannot serve the bootstrap root"));
  SocketAddress bound;
  BRAID_RETURN_IF_ERROR(listener.localAddress(&bound));
  out->reset(new RootServer(std::move(listener), bound, magic));
  return Status::ok();
}

RootServer::RootServer(Socket listener, const SocketAddress& address, uint64_t magic)
    : address_(address),
      magic_(magic),
      inbox_(std::move(listener), magic, typeBit(FrameType::kHello), "bootstrap root " + address.toString()) {}

Status RootServer::serve() {
  const std::string where = "bootstrap root " + address_.toString();
  std::vector<Rank> ranks;
  Deadline deadline = Deadline::never(&stop_);
  while (true) {
    Inbox::Arrival arrival;
    Status st = inbox_.next(deadline, "waiting for the ranks at the " + where, &arrival);
    if (!st.isOk()) {
      if (deadline.aborted() || nranks_ == 0) return st;
      std::vector<bool> present(ranks.size());
      for (size_t r = 0; r < ranks.size(); ++r) present[r] = ranks[r].socket.valid();
      Status failure = timeoutError("rank(s) " + missingRanks(present) + " did not arrive at the " + where +
                                    " within " + duration(timeoutMs_) + " (" + std::to_string(arrived_) + " of " +
                                    std::to_string(nranks_) + " arrived)");
      for (size_t r = 0; r < ranks.size(); ++r) {
        if (present[r]) answer(ranks[r], static_cast<int>(r), FrameType::kError, encodeError(failure));
      }
      return failure;
    }
    bool first = nranks_ == 0;
    if (!admit(arrival, &ranks)) continue;
    if (first) deadline = Deadline::in(timeoutMs_, &stop_);
    if (arrived_ < nranks_) continue;

    for (int r = 0; r < nranks_; ++r) {
      int next = (r + 1) % nranks_;
      answer(ranks[r], r, FrameType::kRing, encodeRing(RingInfo{next, nranks_, ranks[next].listener}));
    }
    BRAID_INFO(log::Subsys::kBootstrap, where, ": all ", nranks_, " ranks arrived; ring sent");
    return Status::ok();
  }
}

bool RootServer::admit(Inbox::Arrival& arrival, std::vector<Rank>* ranks) {
  Hello hello;
  Status bad = decodeHello(arrival.payload, &hello);
  if (!bad.isOk()) {
    refuse(arrival, bad);
    return false;
  }
  const std::string where = "the bootstrap root " + address_.toString();
  if (nranks_ == 0) {
    nranks_ = hello.nranks;
    firstRank_ = hello.rank;
    timeoutMs_ = hello.timeoutMs;
    ranks->resize(nranks_);
  } else if (hello.nranks != nranks_) {
    refuse(arrival,
           invalidUsage("rank " + std::to_string(hello.rank) + " was started with nranks " +
                        std::to_string(hello.nranks) + " but rank " + std::to_string(firstRank_) + " with " +
                        std::to_string(nranks_) + " (at " + where + "): every rank must pass the same nranks"));
    return false;
  }
  Rank& slot = (*ranks)[hello.rank];
  if (slot.socket.valid()) {
    refuse(arrival, invalidUsage("rank " + std::to_string(hello.rank) + " arrived twice at " + where + " (from " +
                                 slot.socket.peer() + " and from " + arrival.from.toString() +
                                 "): every rank must pass a distinct rank"));
    return false;
  }
  slot.socket = std::move(arrival.socket);
  slot.socket.setPeer("rank " + std::to_string(hello.rank) + " at " + arrival.from.toString());
  slot.listener = hello.listener;
  ++arrived_;
  BRAID_TRACE(log::Subsys::kBootstrap, where, ": rank ", hello.rank, " arrived from ", arrival.from.toString(),
              " (listener ", hello.listener.toString(), "), ", arrived_, " of ", nranks_);
  return true;
}

void RootServer::answer(Rank& rank, int r, FrameType type, const std::vector<unsigned char>& payload) {
  Status st = sendFrame(rank.socket, magic_, type, payload, Deadline::in(kAnswerTimeoutMs, &stop_));
  if (!st.isOk()) {
    BRAID_WARN(log::Subsys::kBootstrap, "bootstrap root ", address_.toString(), ": could not answer rank ", r, ": ",
               st.message());
  }
}

void RootServer::refuse(Inbox::Arrival& arrival, const Status& why) {
  // Tell the sender why (it may be a real but misconfigured rank), then forget it.
  sendFrame(arrival.socket, magic_, FrameType::kError, encodeError(why), Deadline::in(1000, &stop_)).ignore();
  inbox_.reject(std::move(arrival), why.message());
}

std::string RootServer::missingRanks(const std::vector<bool>& arrived) {
  std::string out;
  size_t n = arrived.size();
  for (size_t r = 0; r < n; ++r) {
    if (arrived[r]) continue;
    size_t end = r;
    while (end + 1 < n && !arrived[end + 1]) ++end;
    out += (out.empty() ? "" : ", ") + std::to_string(r);
    if (end > r) out += (end == r + 1 ? ", " : "-") + std::to_string(end);
    r = end;
  }
  return out;
}

Status serveInBackground(std::shared_ptr<RootServer> server) {
  try {
    std::thread([server] {
      Status st = server->serve();
      if (!st.isOk()) {
        BRAID_WARN(log::Subsys::kBootstrap, "bootstrap root ", server->address().toString(), ": ", st.message());
      }
    }).detach();
  } catch (const std::system_error& e) {
    return systemError(std::string("cannot start the bootstrap root thread: ") + e.what());
  }
  return Status::ok();
}

RootThread::~RootThread() {
  if (server_ != nullptr) server_->stop();
  if (thread_.joinable()) thread_.join();
}

Status RootThread::start(const SocketAddress& address, uint64_t magic) {
  BRAID_RETURN_IF_ERROR(RootServer::listen(address, magic, &server_));
  std::shared_ptr<RootServer> server = server_;
  try {
    thread_ = std::thread([server] {
      Status st = server->serve();
      if (!st.isOk()) {
        BRAID_INFO(log::Subsys::kBootstrap, "bootstrap root ", server->address().toString(), ": ", st.message());
      }
    });
  } catch (const std::system_error& e) {
    return systemError(std::string("cannot start the bootstrap root thread: ") + e.what());
  }
  return Status::ok();
}

}  // namespace braid::bootstrap
