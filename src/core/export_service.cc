#include "core/export_service.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/log.h"
#include "net/one_request_server.h"

namespace braid::core {

namespace {
constexpr int kPollMs = 100;                 // how often the thread looks for a stop or a new listener
constexpr int64_t kIdleConnectionMs = 5000;  // a connection that has not sent a whole request by then goes
constexpr size_t kMaxPending = 64;           // connections being read at once; the oldest goes first
constexpr int64_t kReplyMs = 5000;           // to send a reply
}  // namespace

struct ExportListener::Entry {
  int rank = -1;
  net::Socket listener;
  std::mutex mu;  // serializes the target's calls with serve() and the entry's end
  uint64_t commKey = 0;
  bool serving = false;
  ExportTarget target;
  std::map<std::string, int> open;  // IPC handle bytes -> mappings peers hold open

  // Answers one request (mu held by the caller).
  ExportReply answer(const ExportRequest& q) {
    ExportReply r;
    r.magic = kExportReplyMagic;
    auto refuse = [&](const std::string& why) {
      std::snprintf(r.why, sizeof(r.why), "%s", why.c_str());
      return r;
    };
    if (!serving || q.commKey != commKey || q.rank != rank) {
      r.result = kExportNotServed;
      return refuse("rank " + std::to_string(q.rank) + " of that communicator is not served here");
    }
    const std::string key(reinterpret_cast<const char*>(q.ipc), kIpcHandleBytes);
    if (q.magic == kExportOpenMagic) {
      Status st = target.open(q.ipc, &r.at);
      if (!st.isOk()) return refuse(st.message());
      ++open[key];
    } else {
      auto it = open.find(key);
      if (it == open.end()) return refuse("no such mapping is open for rank " + std::to_string(q.from));
      target.close(q.ipc);
      if (--it->second == 0) open.erase(it);
    }
    r.result = kExportDone;
    return r;
  }

  // Closes the mappings peers left open (mu held).
  void end() {
    if (serving) {
      for (const auto& [key, count] : open) {
        for (int i = 0; i < count; ++i) target.close(reinterpret_cast<const uint8_t*>(key.data()));
      }
    }
    open.clear();
    serving = false;
  }
};

namespace {

// The thread that serves every listener of the process.
class Server {
 public:
  static Server& get() {
    static Server* s = new Server;  // never destroyed: the last entry stops the thread
    return *s;
  }

  void add(const std::shared_ptr<ExportListener::Entry>& e) {
    std::lock_guard<std::mutex> life(life_);
    std::lock_guard<std::mutex> lock(mu_);
    entries_.push_back(e);
    if (entries_.size() == 1) {
      running_ = true;
      thread_ = std::thread([this] { serve(); });
    }
  }

  // Once it returns, the thread no longer polls e's listener (it may still answer a connection
  // it accepted before; the entry then refuses).
  void remove(const std::shared_ptr<ExportListener::Entry>& e) {
    std::lock_guard<std::mutex> life(life_);
    std::thread t;
    {
      std::unique_lock<std::mutex> lock(mu_);
      entries_.erase(std::remove(entries_.begin(), entries_.end(), e), entries_.end());
      if (!entries_.empty()) {
        const uint64_t now = turns_;  // the turn under way may hold e: wait for the next to begin
        turned_.wait(lock, [&] { return turns_ > now; });
        return;
      }
      running_ = false;
      t = std::move(thread_);
    }
    if (t.joinable()) t.join();
  }

 private:
  // The listeners of this turn of the loop.
  std::vector<std::shared_ptr<ExportListener::Entry>> nextTurn(bool* running) {
    std::lock_guard<std::mutex> lock(mu_);
    ++turns_;
    turned_.notify_all();
    *running = running_;
    return entries_;
  }

  void serve() {
    net::OneRequestServer<ExportRequest, std::shared_ptr<ExportListener::Entry>> server(kMaxPending, kIdleConnectionMs);
    for (;;) {
      bool running = false;
      std::vector<std::pair<net::Socket*, std::shared_ptr<ExportListener::Entry>>> listeners;
      for (const auto& e : nextTurn(&running)) listeners.emplace_back(&e->listener, e);
      if (!running) break;
      server.serveOnce(listeners, kPollMs, "export service listeners",
                       [](const std::shared_ptr<ExportListener::Entry>& e, net::Socket& s, const ExportRequest& q) {
                         if (q.magic != kExportOpenMagic && q.magic != kExportCloseMagic) return;  // junk: unanswered
                         ExportReply r;
                         {
                           std::lock_guard<std::mutex> lock(e->mu);
                           r = e->answer(q);
                         }
                         s.sendAll(&r, sizeof(r), net::Deadline::in(kReplyMs, nullptr)).ignore();
                       });
    }
  }

  std::mutex life_;  // orders a start after the stop before it has joined its thread
  std::mutex mu_;
  std::vector<std::shared_ptr<ExportListener::Entry>> entries_;
  bool running_ = false;
  uint64_t turns_ = 0;  // turns of the loop begun
  std::condition_variable turned_;
  std::thread thread_;
};

}  // namespace

ExportListener::~ExportListener() {
  if (entry_ == nullptr) return;
  Server::get().remove(entry_);  // the thread no longer polls its listener
  std::lock_guard<std::mutex> lock(entry_->mu);
  entry_->end();
  entry_->listener.close();  // a peer's request now finds the port closed (see askExportService)
}

Status ExportListener::listen(const net::SocketAddress& interfaceAddress, int rank,
                              std::unique_ptr<ExportListener>* out) {
  auto e = std::make_shared<Entry>();
  e->rank = rank;
  net::SocketAddress any = interfaceAddress;
  any.setPort(0);
  BRAID_RETURN_IF_ERROR(net::Socket::listen(any, &e->listener).withContext("the export service's listener"));
  out->reset(new ExportListener);
  (*out)->entry_ = e;
  Server::get().add(e);
  return Status::ok();
}

uint16_t ExportListener::port() const {
  net::SocketAddress bound;
  return entry_->listener.localAddress(&bound).isOk() ? bound.port() : 0;
}

void ExportListener::serve(uint64_t commKey, ExportTarget target) {
  std::lock_guard<std::mutex> lock(entry_->mu);
  entry_->commKey = commKey;
  entry_->target = std::move(target);
  entry_->serving = true;
}

Status askExportService(const net::SocketAddress& to, uint64_t commKey, int rank, int from, bool open,
                        const uint8_t* ipc, int64_t timeoutMs, uint64_t* at) {
  const std::string who = "the export service of rank " + std::to_string(rank);
  const net::Deadline deadline = net::Deadline::in(timeoutMs, nullptr);
  net::Socket s;
  // A closed port or connection: the rank's communicator is gone, and the mappings it held with it.
  auto gone = [&](const Status& st) { return !open && st.code() == Code::kRemoteError; };
  Status st = net::Socket::connect(to, who, deadline, &s, false);
  if (gone(st)) return Status::ok();
  BRAID_RETURN_IF_ERROR(st);
  ExportRequest q;
  q.magic = open ? kExportOpenMagic : kExportCloseMagic;
  q.rank = rank;
  q.commKey = commKey;
  q.from = from;
  std::memcpy(q.ipc, ipc, kIpcHandleBytes);
  st = s.sendAll(&q, sizeof(q), deadline);
  ExportReply r;
  if (st.isOk()) st = s.recvAll(&r, sizeof(r), deadline);
  if (gone(st)) return Status::ok();
  BRAID_RETURN_IF_ERROR(st.withContext(who));
  if (r.magic != kExportReplyMagic) return remoteError(who + " answered with junk");
  if (!open && r.result == kExportNotServed) return Status::ok();
  if (r.result != kExportDone) {
    r.why[sizeof(r.why) - 1] = '\0';
    return remoteError(who + (open ? " could not map" : " could not unmap") + " the buffer: " + r.why);
  }
  if (open) *at = r.at;
  return Status::ok();
}

}  // namespace braid::core
