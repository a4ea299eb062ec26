#include "transport/net/net_connection.h"

#include <algorithm>

#include "core/log.h"
#include "transport/net/socket_net.h"

namespace braid::transport {

void pieceOf(size_t bytes, int lane, int lanes, size_t* begin, size_t* end) {
  size_t used = std::min<size_t>(static_cast<size_t>(lanes), std::max<size_t>(1, bytes / kMinPieceBytes));
  size_t i = static_cast<size_t>(lane);
  if (i >= used) {
    *begin = *end = 0;
    return;
  }
  *begin = bytes * i / used;
  *end = bytes * (i + 1) / used;
}

NetConnection::NetConnection(bool outgoing, int peer, int slots, size_t slotBytes, int lanes, FifoObserver* observer)
    : NetConnection(outgoing, peer, std::make_unique<HostFifo>(slots, slotBytes), lanes, observer) {}

NetConnection::NetConnection(bool outgoing, int peer, std::unique_ptr<HostFifo> fifo, int lanes, FifoObserver* observer)
    : outgoing_(outgoing), peer_(peer), fifo_(std::move(fifo)), observer_(observer), lanes_(lanes) {
  fifo_->setObserver(observer);
}

bool NetConnection::agreeLanes(int lanes) {
  int none = 0;
  if (lanes_.compare_exchange_strong(none, lanes, std::memory_order_acq_rel)) return true;
  return none == lanes;
}

void NetConnection::laneFinished() {
  if (lanesFinished_.fetch_add(1, std::memory_order_acq_rel) + 1 >= lanes()) fifo_->markReadersDone();
}

void NetConnection::laneDone(int lane, uint64_t slots) {
  laneDone_[lane].store(slots, std::memory_order_release);
  std::lock_guard<std::mutex> lock(mu_);
  int n = lanes();
  uint64_t all = UINT64_MAX;
  for (int i = 0; i < n; ++i) all = std::min(all, laneDone_[i].load(std::memory_order_acquire));
  if (outgoing_) {
    while (fifo_->headCount() < all) fifo_->release();
  } else {
    for (uint64_t t = fifo_->tailCount(); t < all; ++t)
      fifo_->publish(sizes_[t % fifo_->slots()], tags_[t % fifo_->slots()]);
    if (fifo_->tailCount() >= endBefore_) endNow();
  }
}

void NetConnection::endBefore(uint64_t counter, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (counter < endBefore_) {
      endBefore_ = counter;
      endWhy_ = why;
    }
    if (fifo_->tailCount() >= endBefore_) endNow();
  }
  observer_->peerGone(peer_, why);
}

void NetConnection::peerLeft(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (endBefore_ == UINT64_MAX) {
      endBefore_ = fifo_->headCount();  // every slot before it was sent
      endWhy_ = why;
    }
    endNow();
  }
  observer_->peerGone(peer_, why);
}

// An incoming host FIFO fails once the slots before the end are delivered: its reader takes them
// first. Every other kind waits until its side needs what will never move (checkEnded): an
// outgoing host FIFO until this rank publishes past the end, so that a peer that finished and
// left does not end this rank's wait for the slots it sent (a step's wait watches all its FIFOs).
void NetConnection::endNow() {
  if (!outgoing_ && !fifo_->sharedWithDevice()) {
    fail(endWhy_);
    return;
  }
  if (!ended_.load(std::memory_order_acquire)) {
    endAt_ = endBefore_;
    ended_.store(true, std::memory_order_release);
  }
  checkEnded();
}

bool NetConnection::checkEnded() {
  if (!ended_.load(std::memory_order_acquire) || fifo_->closedBy() >= 0) return false;
  uint64_t needed = outgoing_ ? fifo_->tailCount() : fifo_->wantedCount();
  if (needed <= endAt_) return false;
  fail(endWhy_);
  return true;
}

void NetConnection::notePeerGone() {
  if (!outgoing_) return;
  uint64_t none = UINT64_MAX;
  goneAt_.compare_exchange_strong(none, fifo_->tailCount(), std::memory_order_acq_rel);
}

bool NetConnection::checkGone(const std::string& why) {
  const uint64_t at = goneAt_.load(std::memory_order_acquire);
  if (at == UINT64_MAX || fifo_->closedBy() >= 0 || fifo_->tailCount() <= at) return false;
  fail(why);
  return true;
}

void NetConnection::setSlotSize(uint64_t counter, uint64_t bytes, const CallTag& tag) {
  sizes_[counter % fifo_->slots()] = bytes;
  tags_[counter % fifo_->slots()] = tag;
  sizeKnown_[counter % fifo_->slots()].store(counter + 1, std::memory_order_release);
  if (lanes() > 1) observer_->wake();  // lanes of other proxy threads may wait for it
}

bool NetConnection::slotSize(uint64_t counter, uint64_t* bytes) const {
  if (sizeKnown_[counter % fifo_->slots()].load(std::memory_order_acquire) != counter + 1) return false;
  *bytes = sizes_[counter % fifo_->slots()];
  return true;
}

// The observer is told first: whoever finds the FIFO closed then finds the peer gone too, and this
// rank's other connections to it ended (NetTransport::peerGone).
void NetConnection::fail(const std::string& why) {
  if (fifo_->closedBy() >= 0) return;
  if (!quiet_) observer_->failed(peer_, why);
  fifo_->close(peer_, why);
}

NetLane::NetLane(std::shared_ptr<NetConnection> connection, int index, const network::Network* network, void* comm)
    : connection_(std::move(connection)), index_(index), network_(network), comm_(comm) {
  HostFifo& fifo = connection_->fifo();
  flushes_ = !connection_->outgoing() && fifo.dataMemType() != network::kPtrHost && network_->api().iflush != nullptr;
  for (int k = 0; k < fifo.slots(); ++k) {
    void* mh = nullptr;
    Status st = registerSlot(k, &mh);
    if (!st.isOk()) {
      BRAID_WARN(log::Subsys::kNet, "connection with rank ", connection_->peer(), ": ", st.message());
      finish(true, st.message());
      return;
    }
    mhandles_.push_back(mh);
  }
  // A FIFO whose data lies apart has this one lane: its registrations hold the DMA-BUF now.
  if (!fifo.wireContiguous()) fifo.releaseDmabuf();
}

NetLane::~NetLane() { closeComm(); }

// Slot k's memory as the network sends or receives it: its header and data in host memory, or its
// data alone (GPU memory: by its DMA-BUF where the FIFO has one; the type stays the memory's,
// NCCL_PTR_CUDA, as NCCL passes it: DMABUF is a capability bit, not a buffer type).
Status NetLane::registerSlot(int k, void** mh) {
  HostFifo& fifo = connection_->fifo();
  const network::NetV11& api = network_->api();
  if (fifo.wireContiguous()) {
    return network_->check(
        api.regMr(comm_, fifo.wireAt(k), HostFifo::kWireBytes + fifo.slotBytes(), network::kPtrHost, mh),
        "regMr of a FIFO slot");
  }
  if (fifo.dmabufFd() >= 0) {
    return network_->check(api.regMrDmaBuf(comm_, fifo.slotAt(k), fifo.slotBytes(), fifo.dataMemType(),
                                           fifo.slotOffset(k), fifo.dmabufFd(), mh),
                           "regMrDmaBuf of a FIFO slot");
  }
  return network_->check(api.regMr(comm_, fifo.slotAt(k), fifo.slotBytes(), fifo.dataMemType(), mh),
                         "regMr of a FIFO slot");
}

// Deregisters the slots and closes the network connection (requests in flight go with it; the peer
// sees it close).
void NetLane::closeComm() {
  if (comm_ == nullptr) return;
  for (void* mh : mhandles_) network_->api().deregMr(comm_, mh);
  mhandles_.clear();
  if (connection_->outgoing()) {
    network_->api().closeSend(comm_);
  } else {
    network_->api().closeRecv(comm_);
  }
  comm_ = nullptr;
}

void* NetLane::memoryOf(uint64_t slot) { return mhandles_[slot % mhandles_.size()]; }

void NetLane::finish(bool failConnection, const std::string& why) {
  if (finished_) return;
  finished_ = true;
  closeComm();
  posted_.clear();
  connection_->laneFinished();
  if (failConnection) connection_->fail(why);
}

bool NetLane::step() {
  if (finished_) return false;
  if (connection_->fifo().closedBy() >= 0) {
    // Closed by this rank (a failed call, an abort) or by a lane that saw the peer go: stop, and
    // let the peer see the connection end.
    finish(false);
    return true;
  }
  bool moved = post();
  if (finished_) return true;
  moved |= complete();
  if (!finished_ && moved) post();
  return moved;
}

bool NetLane::post() {
  HostFifo& fifo = connection_->fifo();
  bool moved = false;
  while (!finished_ && drainBefore_ == UINT64_MAX && posted_.size() < static_cast<size_t>(fifo.slots())) {
    bool ok = connection_->outgoing() ? postSend(next_) : postRecv(next_);
    if (!ok) break;
    ++next_;
    moved = true;
  }
  return moved;
}

// Lane 0 sends [size, tag, piece 0] from the slot's own memory; other lanes their piece, if any.
// A slot whose data lies apart from its header goes alone, on the one lane.
bool NetLane::postSend(uint64_t slot) {
  HostFifo& fifo = connection_->fifo();
  if (slot >= fifo.tailCount()) return false;
  const size_t size = fifo.sharedWithDevice() ? fifo.kernelSizeAt(slot) : fifo.sizeAt(slot);
  char* data = fifo.slotAt(slot);
  size_t bytes = size;
  const char* prefix = nullptr;  // lane 0 of a slot published by reference: its size and tag
  if (fifo.wireContiguous()) {
    size_t begin = 0, end = 0;
    pieceOf(size, index_, connection_->lanes(), &begin, &end);
    // A slot published by reference (built-in network only) has its data in the caller's memory:
    // lane 0 sends the size and tag from the slot, then its piece from there, as one message.
    const char* ref = fifo.refAt(slot);
    if (ref != nullptr) {
      data = const_cast<char*>(ref) + begin;
      bytes = end - begin;
      if (index_ == 0) prefix = fifo.wireAt(slot);
    } else {
      data = index_ == 0 ? fifo.wireAt(slot) : data + begin;
      bytes = index_ == 0 ? HostFifo::kWireBytes + end : end - begin;
    }
    if (index_ == 0 && fifo.sharedWithDevice()) fifo.setSizeAt(slot, size);  // the kernel wrote it beside its tail
  }
  if (index_ != 0 && bytes == 0) {
    posted_.push_back({slot, nullptr});
    return true;
  }
  void* request = nullptr;
  ncclResult_t r =
      prefix != nullptr
          ? network::socketNetIsendParts(comm_, prefix, HostFifo::kWireBytes, data, bytes, index_, &request)
          : network_->api().isend(comm_, data, bytes, index_, memoryOf(slot), nullptr, &request);
  Status st = network_->check(r, "isend to rank " + std::to_string(connection_->peer()));
  if (!st.isOk()) {
    BRAID_WARN(log::Subsys::kNet, st.message());
    finish(true, st.message());
    return false;
  }
  if (request == nullptr) return false;  // the network is full: later
  BRAID_TRACE(log::Subsys::kNet, "to rank ", connection_->peer(), " lane ", index_, ": slot ", slot, " of ", size,
              " bytes, ", bytes, " sent", prefix != nullptr ? " from the caller's memory" : "");
  posted_.push_back({slot, request});
  return true;
}

// Into free slots only; lane 0 takes the size and tag with its piece, the others wait for them.
bool NetLane::postRecv(uint64_t slot) {
  HostFifo& fifo = connection_->fifo();
  if (slot - fifo.headCount() >= static_cast<uint64_t>(fifo.slots())) return false;
  void* data = fifo.wireAt(slot);
  size_t bytes = HostFifo::kWireBytes + fifo.slotBytes();
  if (!fifo.wireContiguous()) {
    data = fifo.slotAt(slot);
    bytes = fifo.slotBytes();
  } else if (index_ != 0) {
    uint64_t size = 0;
    if (!connection_->slotSize(slot, &size)) return false;
    size_t begin = 0, end = 0;
    pieceOf(size, index_, connection_->lanes(), &begin, &end);
    if (end == begin) {
      posted_.push_back({slot, nullptr});
      return true;
    }
    data = fifo.slotAt(slot) + begin;
    bytes = end - begin;
  }
  int tag = index_;
  void* request = nullptr;
  ncclResult_t r =
      network_->api().irecv(comm_, 1, &data, &bytes, &tag, &mhandles_[slot % mhandles_.size()], nullptr, &request);
  Status st = network_->check(r, "irecv from rank " + std::to_string(connection_->peer()));
  if (r == ncclRemoteError) {
    // The peer went away: the receives posted before this one may still have completed; they are
    // tested first, then the connection ends before this slot.
    BRAID_INFO(log::Subsys::kNet, st.message(), " (slot ", slot, ", lane ", index_, ")");
    drainBefore_ = slot;
    drainWhy_ = st.message();
    return false;
  }
  if (!st.isOk()) {
    BRAID_WARN(log::Subsys::kNet, st.message());
    finish(true, st.message());
    return false;
  }
  if (request == nullptr) return false;
  BRAID_TRACE(log::Subsys::kNet, "from rank ", connection_->peer(), " lane ", index_, ": slot ", slot, ", up to ",
              bytes, " bytes posted");
  posted_.push_back({slot, request});
  return true;
}

bool NetLane::complete() {
  HostFifo& fifo = connection_->fifo();
  bool moved = false;
  while (!finished_ && !posted_.empty()) {
    Posted& p = posted_.front();
    if (p.flush != nullptr) {
      if (!testFlush(p)) break;
      posted_.pop_front();
      connection_->laneDone(index_, ++done_);
      moved = true;
      continue;
    }
    int size = 0;
    if (p.request != nullptr) {
      int done = 0;
      ncclResult_t r = network_->api().test(p.request, &done, &size);
      if (r != ncclSuccess) {
        Status st =
            network_->check(r, "test of a " + std::string(connection_->outgoing() ? "send to" : "receive from") +
                                   " rank " + std::to_string(connection_->peer()));
        uint64_t slot = p.slot;
        if (!connection_->outgoing() && r == ncclRemoteError) {
          // The peer went away: what the other lanes finish before this slot still arrives.
          BRAID_INFO(log::Subsys::kNet, st.message(), " (slot ", slot, ", lane ", index_, ")");
          finish(false);
          connection_->endBefore(slot, st.message());
        } else {
          BRAID_WARN(log::Subsys::kNet, st.message());
          finish(true, st.message());
        }
        return true;
      }
      if (!done) break;
    }
    if (!connection_->outgoing() && !fifo.wireContiguous()) {
      if (static_cast<size_t>(size) > fifo.slotBytes()) {
        std::string why = "rank " + std::to_string(connection_->peer()) + " sent " + std::to_string(size) +
                          " bytes for a slot of " + std::to_string(fifo.slotBytes()) +
                          " (mismatched BRAID_CHUNK_BYTES?)";
        BRAID_WARN(log::Subsys::kNet, "network transport: ", why);
        finish(true, why);
        return true;
      }
      connection_->setSlotSize(p.slot, static_cast<uint64_t>(size), CallTag{});
      if (flushes_ && size > 0) {
        // The data is in GPU memory, but a kernel may see it only once the network has flushed it.
        if (!startFlush(p, size)) return true;
        if (p.flush != nullptr) {
          moved = true;
          continue;
        }
      }
    } else if (!connection_->outgoing() && index_ == 0) {
      uint64_t bytes = fifo.sizeAt(p.slot);
      size_t begin = 0, end = 0;
      pieceOf(bytes, 0, std::max(1, connection_->lanes()), &begin, &end);
      if (bytes > fifo.slotBytes() || static_cast<size_t>(size) != HostFifo::kWireBytes + end) {
        std::string why = "rank " + std::to_string(connection_->peer()) + " sent " + std::to_string(size) +
                          " bytes for a slot announced as " + std::to_string(bytes) +
                          " bytes (this rank's slots hold " + std::to_string(fifo.slotBytes()) +
                          "; mismatched BRAID_CHUNK_BYTES?)";
        BRAID_WARN(log::Subsys::kNet, "network transport: ", why);
        finish(true, why);
        return true;
      }
      connection_->setSlotSize(p.slot, bytes, fifo.tagAt(p.slot));
    }
    BRAID_TRACE(log::Subsys::kNet, connection_->outgoing() ? "to" : "from", " rank ", connection_->peer(), " lane ",
                index_, ": slot ", p.slot, " done (", size, " bytes)");
    posted_.pop_front();
    connection_->laneDone(index_, ++done_);
    moved = true;
    // One received slot a step: the thread stepping may be the caller waiting for it, which then
    // acts on it (sends its next slot) before anyone reads the slot behind it.
    if (!connection_->outgoing()) break;
  }
  if (!finished_ && posted_.empty() && drainBefore_ != UINT64_MAX) {
    finish(false);
    connection_->endBefore(drainBefore_, drainWhy_);
    moved = true;
  }
  return moved;
}

// Starts the flush of received slot `p` (`size` bytes): false if it failed (the lane is finished).
// A network that needs none completes it at once (no request).
bool NetLane::startFlush(Posted& p, int size) {
  void* data = connection_->fifo().slotAt(p.slot);
  void* request = nullptr;
  Status st =
      network_->check(network_->api().iflush(comm_, 1, &data, &size, &mhandles_[p.slot % mhandles_.size()], &request),
                      "iflush of a receive from rank " + std::to_string(connection_->peer()));
  if (!st.isOk()) {
    BRAID_WARN(log::Subsys::kNet, st.message());
    finish(true, st.message());
    return false;
  }
  p.request = nullptr;
  p.flush = request;
  return true;
}

// True once slot `p`'s flush is done (false while it runs, or when it failed: the lane is finished).
bool NetLane::testFlush(Posted& p) {
  int done = 0;
  Status st = network_->check(network_->api().test(p.flush, &done, nullptr),
                              "test of a flush of a receive from rank " + std::to_string(connection_->peer()));
  if (!st.isOk()) {
    BRAID_WARN(log::Subsys::kNet, st.message());
    finish(true, st.message());
    return false;
  }
  return done != 0;
}

pollfd NetLane::pollEntry() const {
  pollfd p{-1, 0, 0};
  if (finished_ || !network_->builtIn()) return p;
  p.fd = network::socketNetFd(comm_);
  if (connection_->outgoing()) {
    // In flight: wait for room in the socket. Idle: nothing comes from the receiver, so readable
    // means it closed or died.
    p.events = posted_.empty() ? POLLIN : POLLOUT;
  } else if (!posted_.empty()) {
    p.events = POLLIN;
  } else {
    p.fd = -1;  // no free slot: leave the data in the socket
  }
  return p;
}

void NetLane::checkIdle(short revents) {
  if (finished_ || !connection_->outgoing() || !posted_.empty() || revents == 0) return;
  if (network::socketNetPeerClosed(comm_)) {
    BRAID_INFO(log::Subsys::kNet, "network transport: connection to rank ", connection_->peer(), " ended");
    // Worded as a failed receive is (the network, then its words), whichever end saw it first;
    // before finish() closes the comm that knows the peer's address.
    const std::string why = "network " + network_->name() + ": its send connection to rank " +
                            std::to_string(connection_->peer()) + ": connection closed by " +
                            network::socketNetPeer(comm_) + " while idle (between messages: the peer closed it)";
    finish(false);
    connection_->peerLeft(why);
  }
}

}  // namespace braid::transport
