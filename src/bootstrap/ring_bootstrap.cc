#include "bootstrap/ring_bootstrap.h"

#include <cstring>
#include <utility>

#include "core/log.h"

namespace braid::bootstrap {
namespace {

std::string rankText(int r) { return "rank " + std::to_string(r); }

}  // namespace

RingBootstrap::RingBootstrap(int rank, int nranks, uint64_t magic, const Options& options, Socket listener,
                             const SocketAddress& self)
    : rank_(rank),
      nranks_(nranks),
      magic_(magic),
      options_(options),
      self_(self),
      inbox_(std::move(listener), magic, typeBit(FrameType::kRingHello) | typeBit(FrameType::kMessage),
             "bootstrap rank " + std::to_string(rank) + " listener " + self.toString()),
      sendSeq_(nranks, 0),
      recvSeq_(nranks, 0) {}

Status RingBootstrap::joinRing(const RingInfo& ring) {
  peers_.assign(nranks_, SocketAddress());
  peers_[rank_] = self_;
  if (ring.nranks != nranks_ || ring.nextRank != nextRank()) {
    return internalError("the bootstrap root sent rank " + std::to_string(ring.nextRank) + " of " +
                         std::to_string(ring.nranks) + " as the next rank of rank " + std::to_string(rank_) + " of " +
                         std::to_string(nranks_));
  }
  if (nranks_ == 1) return Status::ok();

  Deadline deadline = newDeadline();
  std::string nextName = rankText(nextRank()) + " (next in ring)";
  BRAID_RETURN_IF_ERROR(Socket::connect(ring.next, nextName + " at " + ring.next.toString(), deadline, &next_));
  next_.setPeer(nextName);
  BRAID_RETURN_IF_ERROR(
      sendFrame(next_, magic_, FrameType::kRingHello, encodeRingHello(RingHello{rank_, nranks_}), deadline, &inbox_));
  BRAID_RETURN_IF_ERROR(acceptPrevious(deadline));

  // Every rank's listener address, in wire form, gathered around the ring.
  std::vector<unsigned char> table(static_cast<size_t>(nranks_) * kWireAddressBytes);
  encodeAddress(self_, table.data() + static_cast<size_t>(rank_) * kWireAddressBytes);
  BRAID_RETURN_IF_ERROR(ringAllGather(table.data(), kWireAddressBytes, deadline).withContext("exchanging addresses"));
  for (int r = 0; r < nranks_; ++r) {
    BRAID_RETURN_IF_ERROR(decodeAddress(table.data() + static_cast<size_t>(r) * kWireAddressBytes, &peers_[r])
                              .withContext("listener address of rank " + std::to_string(r)));
  }
  BRAID_INFO(log::Subsys::kBootstrap, "bootstrap rank ", rank_, " of ", nranks_, " connected: listener ",
             self_.toString(), ", next ", ring.next.toString());
  return Status::ok();
}

Status RingBootstrap::acceptPrevious(const Deadline& deadline) {
  const std::string waiting = "waiting for " + rankText(prevRank()) + " (previous in ring) to connect";
  while (!prev_.valid()) {
    Inbox::Arrival arrival;
    BRAID_RETURN_IF_ERROR(inbox_.next(deadline, waiting, &arrival));
    if (arrival.header.type != static_cast<uint32_t>(FrameType::kRingHello)) {
      absorb(std::move(arrival));  // a Message: kept for recv()
      continue;
    }
    RingHello hello;
    Status st = decodeRingHello(arrival.payload, &hello);
    if (st.isOk() && (hello.rank != prevRank() || hello.nranks != nranks_)) {
      st = invalidArgument("RingHello from rank " + std::to_string(hello.rank) + " of " + std::to_string(hello.nranks) +
                           "; expected rank " + std::to_string(prevRank()) + " of " + std::to_string(nranks_));
    }
    if (!st.isOk()) {
      inbox_.reject(std::move(arrival), st.message());
      continue;
    }
    prev_ = std::move(arrival.socket);
    prev_.setPeer(rankText(prevRank()) + " (previous in ring)");
  }
  return Status::ok();
}

// n-1 steps; at step s rank r passes slot (r - s) on and receives slot (r - s - 1):
//
//   step 0:  r sends its own slot      r-1's slot arrives
//   step 1:  r forwards r-1's slot     r-2's slot arrives   ...
//
// Each step sends a Data header and the slot while receiving the same from the previous rank
// (full duplex, so any slot size works); the received header is checked before its payload is read.
Status RingBootstrap::ringAllGather(unsigned char* data, size_t bytesPerRank, const Deadline& deadline) {
  for (int step = 0; step < nranks_ - 1; ++step) {
    size_t sendSlot = static_cast<size_t>((rank_ - step + nranks_) % nranks_);
    size_t recvSlot = static_cast<size_t>((rank_ - step - 1 + 2 * nranks_) % nranks_);
    std::string where = "all-gather step " + std::to_string(step + 1) + " of " + std::to_string(nranks_ - 1);
    FrameHeader out = makeHeader(magic_, FrameType::kData, bytesPerRank), in{};
    BRAID_RETURN_IF_ERROR(
        sendRecv(&next_, &out, sizeof(out), &prev_, &in, sizeof(in), deadline, &inbox_).withContext(where));
    Status bad = checkFrameHeader(in, magic_, typeBit(FrameType::kData));
    if (!bad.isOk()) return remoteError(where + ": bad frame from " + prev_.peer() + ": " + bad.message());
    if (in.length != bytesPerRank) {
      return invalidUsage(where + ": " + prev_.peer() + " gathers " + std::to_string(in.length) +
                          " bytes per rank but this rank " + std::to_string(bytesPerRank) +
                          " (every rank must pass the same size)");
    }
    BRAID_RETURN_IF_ERROR(sendRecv(&next_, data + sendSlot * bytesPerRank, bytesPerRank, &prev_,
                                   data + recvSlot * bytesPerRank, bytesPerRank, deadline, &inbox_)
                              .withContext(where));
  }
  return Status::ok();
}

Status RingBootstrap::allGather(void* data, size_t bytesPerRank) {
  if (bytesPerRank > kMaxFrameBytes) {
    return invalidArgument("allGather of " + std::to_string(bytesPerRank) + " bytes per rank (the bootstrap limit is " +
                           std::to_string(kMaxFrameBytes) + ")");
  }
  if (data == nullptr && bytesPerRank != 0) return invalidArgument("allGather: data is null");
  if (nranks_ == 1 || bytesPerRank == 0) return Status::ok();
  return ringAllGather(static_cast<unsigned char*>(data), bytesPerRank, newDeadline())
      .withContext("bootstrap allGather on rank " + std::to_string(rank_));
}

Status RingBootstrap::barrier() {
  // An all-gather cannot complete before every rank has contributed its slot, i.e. entered.
  std::vector<unsigned char> slots(nranks_, 1);
  if (nranks_ == 1) return Status::ok();
  return ringAllGather(slots.data(), 1, newDeadline())
      .withContext("bootstrap barrier on rank " + std::to_string(rank_));
}

Status RingBootstrap::checkPeer(const char* op, int peer) const {
  if (peer < 0 || peer >= nranks_) {
    return invalidArgument(std::string(op) + ": peer rank " + std::to_string(peer) + " is not in 0.." +
                           std::to_string(nranks_ - 1));
  }
  return Status::ok();
}

Status RingBootstrap::send(int peer, uint32_t tag, const void* data, size_t bytes) {
  BRAID_RETURN_IF_ERROR(checkPeer("bootstrap send", peer));
  if (data == nullptr && bytes != 0) return invalidArgument("bootstrap send: data is null");
  if (bytes > kMaxFrameBytes - kMessageHeadBytes) {
    return invalidArgument("bootstrap send of " + std::to_string(bytes) + " bytes (the limit is " +
                           std::to_string(kMaxFrameBytes - kMessageHeadBytes) + ")");
  }
  if (peer == rank_) {
    const auto* p = static_cast<const unsigned char*>(data);
    mailbox_[{rank_, tag}].emplace_back(p, p + bytes);
    return Status::ok();
  }
  const std::string context = "bootstrap send to rank " + std::to_string(peer) + " (tag " + std::to_string(tag) + ", " +
                              std::to_string(bytes) + " bytes)";
  Deadline deadline = newDeadline();
  Socket socket;
  BRAID_RETURN_IF_ERROR(
      Socket::connect(peers_[peer], rankText(peer) + " at " + peers_[peer].toString(), deadline, &socket)
          .withContext(context));
  std::vector<unsigned char> head = encodeMessageHead(MessageHead{rank_, tag, sendSeq_[peer]++});
  return sendFrame(socket, magic_, FrameType::kMessage, head.data(), head.size(), data, bytes, deadline, &inbox_)
      .withContext(context);
}

Status RingBootstrap::recv(int peer, uint32_t tag, void* data, size_t bytes) {
  BRAID_RETURN_IF_ERROR(checkPeer("bootstrap recv", peer));
  if (data == nullptr && bytes != 0) return invalidArgument("bootstrap recv: data is null");
  const std::string waiting = "waiting for a message from " + rankText(peer) + " with tag " + std::to_string(tag) +
                              " (" + std::to_string(bytes) + " bytes) on rank " + std::to_string(rank_);
  Deadline deadline = newDeadline();
  while (true) {
    Inbox::Arrival arrival;
    while (inbox_.pop(&arrival)) absorb(std::move(arrival));
    auto it = mailbox_.find({peer, tag});
    if (it != mailbox_.end() && !it->second.empty()) {
      std::vector<unsigned char>& message = it->second.front();
      if (message.size() != bytes) {
        return invalidUsage("bootstrap recv from rank " + std::to_string(peer) + " with tag " + std::to_string(tag) +
                            ": expected " + std::to_string(bytes) + " bytes but the message has " +
                            std::to_string(message.size()));
      }
      if (bytes != 0) std::memcpy(data, message.data(), bytes);
      it->second.pop_front();
      if (it->second.empty()) mailbox_.erase(it);
      return Status::ok();
    }
    BRAID_RETURN_IF_ERROR(inbox_.next(deadline, waiting, &arrival));
    absorb(std::move(arrival));
  }
}

void RingBootstrap::absorb(Inbox::Arrival arrival) {
  if (arrival.header.type != static_cast<uint32_t>(FrameType::kMessage)) {
    std::string why =
        std::string("unexpected ") + frameTypeName(arrival.header.type) + " frame after the ring is connected";
    inbox_.reject(std::move(arrival), why);
    return;
  }
  MessageHead head = decodeMessageHead(arrival.payload);
  if (head.from < 0 || head.from >= nranks_ || head.from == rank_ || head.seq < recvSeq_[head.from]) {
    std::string why = "Message #" + std::to_string(head.seq) + " from rank " + std::to_string(head.from) + " of " +
                      std::to_string(nranks_) + " (a duplicate, or not from a peer)";
    inbox_.reject(std::move(arrival), why);
    return;
  }
  arrival.payload.erase(arrival.payload.begin(), arrival.payload.begin() + kMessageHeadBytes);
  early_[{head.from, head.seq}] = {head.tag, std::move(arrival.payload)};
  // Deliver this sender's messages in the order it sent them, as far as they are complete.
  for (auto it = early_.find({head.from, recvSeq_[head.from]}); it != early_.end();
       it = early_.find({head.from, recvSeq_[head.from]})) {
    mailbox_[{head.from, it->second.first}].push_back(std::move(it->second.second));
    early_.erase(it);
    ++recvSeq_[head.from];
  }
}

}  // namespace braid::bootstrap
