#include "transport/socket_connection.h"

#include <sys/socket.h>

#include <algorithm>

#include "core/log.h"

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

SocketConnection::SocketConnection(bool outgoing, int peer, int slots, size_t slotBytes, int lanes,
                                   FifoObserver* observer)
    : outgoing_(outgoing), peer_(peer), fifo_(slots, slotBytes), observer_(observer), lanes_(lanes) {
  fifo_.setObserver(observer);
}

bool SocketConnection::agreeLanes(int lanes) {
  int none = 0;
  if (lanes_.compare_exchange_strong(none, lanes, std::memory_order_acq_rel)) return true;
  return none == lanes;
}

void SocketConnection::laneDone(int lane, uint64_t slots) {
  laneDone_[lane].store(slots, std::memory_order_release);
  std::lock_guard<std::mutex> lock(mu_);
  int n = lanes();
  uint64_t all = UINT64_MAX;
  for (int i = 0; i < n; ++i) all = std::min(all, laneDone_[i].load(std::memory_order_acquire));
  if (outgoing_) {
    while (fifo_.headCount() < all) fifo_.release();
  } else {
    for (uint64_t t = fifo_.tailCount(); t < all; ++t)
      fifo_.publish(sizes_[t % fifo_.slots()], tags_[t % fifo_.slots()]);
    if (fifo_.tailCount() >= endBefore_) fail();
  }
}

void SocketConnection::endBefore(uint64_t counter) {
  std::lock_guard<std::mutex> lock(mu_);
  endBefore_ = std::min(endBefore_, counter);
  if (fifo_.tailCount() >= endBefore_) fail();
}

void SocketConnection::setSlotSize(uint64_t counter, uint64_t bytes, const CallTag& tag) {
  sizes_[counter % fifo_.slots()] = bytes;
  tags_[counter % fifo_.slots()] = tag;
  sizeKnown_[counter % fifo_.slots()].store(counter + 1, std::memory_order_release);
  if (lanes() > 1) observer_->wake();  // lanes of other proxy threads may wait for it
}

bool SocketConnection::slotSize(uint64_t counter, uint64_t* bytes) const {
  if (sizeKnown_[counter % fifo_.slots()].load(std::memory_order_acquire) != counter + 1) return false;
  *bytes = sizes_[counter % fifo_.slots()];
  return true;
}

void SocketConnection::fail() {
  if (fifo_.closedBy() < 0) fifo_.close(peer_);
}

bool SocketLane::step() {
  if (finished_) return false;
  if (connection_->fifo().closedBy() >= 0) {
    // Closed by this rank (a failed call, an abort) or by a lane that saw the peer go: stop, and
    // let the peer see the end of stream.
    finish(false);
    return true;
  }
  return connection_->outgoing() ? stepSend() : stepRecv();
}

void SocketLane::finish(bool failConnection) {
  finished_ = true;
  if (socket_.valid()) ::shutdown(socket_.fd(), SHUT_RDWR);
  if (failConnection) connection_->fail();
}

bool SocketLane::stepSend() {
  HostFifo& fifo = connection_->fifo();
  bool moved = false;
  for (;;) {
    if (!active_) {
      if (slot_ >= fifo.tailCount()) return moved;
      header_.size = fifo.sizeAt(slot_);
      header_.tag = fifo.tagAt(slot_);
      pieceOf(header_.size, index_, connection_->lanes(), &begin_, &end_);
      active_ = true;
      done_ = 0;
    }
    size_t headerBytes = index_ == 0 ? sizeof(header_) : 0;
    size_t total = headerBytes + (end_ - begin_);
    const char* data = fifo.slotAt(slot_) + begin_;
    while (done_ < total) {
      size_t n = 0;
      Status st = done_ < headerBytes ? socket_.sendSome(reinterpret_cast<const char*>(&header_) + done_,
                                                         headerBytes - done_, data, end_ - begin_, &n)
                                      : socket_.sendSome(data + (done_ - headerBytes), total - done_, &n);
      if (!st.isOk()) {
        BRAID_WARN(log::Subsys::kNet, "socket transport: ", st.message());
        finish(true);
        return true;
      }
      if (n == 0) return moved;
      done_ += n;
      moved = true;
    }
    active_ = false;
    connection_->laneDone(index_, ++slot_);
    moved = true;
  }
}

bool SocketLane::canStartRecv() const {
  const HostFifo& fifo = const_cast<SocketConnection&>(*connection_).fifo();
  if (slot_ - fifo.headCount() >= static_cast<uint64_t>(fifo.slots())) return false;
  uint64_t bytes = 0;
  return index_ == 0 || connection_->slotSize(slot_, &bytes);
}

bool SocketLane::stepRecv() {
  HostFifo& fifo = connection_->fifo();
  bool moved = false;
  for (;;) {
    if (!active_) {
      if (!canStartRecv()) return moved;
      active_ = true;
      done_ = 0;
      if (index_ != 0) {
        uint64_t bytes = 0;
        connection_->slotSize(slot_, &bytes);
        pieceOf(bytes, index_, connection_->lanes(), &begin_, &end_);
      }
    }
    size_t headerBytes = index_ == 0 ? sizeof(header_) : 0;
    while (done_ < headerBytes || done_ < headerBytes + (end_ - begin_)) {
      size_t n = 0;
      Status st = done_ < headerBytes
                      ? socket_.recvSome(reinterpret_cast<char*>(&header_) + done_, headerBytes - done_, &n)
                      : socket_.recvSome(fifo.slotAt(slot_) + begin_ + (done_ - headerBytes),
                                         headerBytes + (end_ - begin_) - done_, &n);
      if (!st.isOk()) {
        BRAID_INFO(log::Subsys::kNet, "socket transport: ", st.message(), " (", done_, " bytes into slot ", slot_,
                   " on socket ", index_, ")");
        if (done_ == 0) {
          finish(false);
          connection_->endBefore(slot_);
        } else {
          finish(true);
        }
        return true;
      }
      if (n == 0) return moved;
      moved = true;
      done_ += n;
      if (headerBytes != 0 && done_ == headerBytes) {
        if (header_.size > fifo.slotBytes()) {
          BRAID_WARN(log::Subsys::kNet, "socket transport: rank ", connection_->peer(), " announced a slot of ",
                     header_.size, " bytes, more than the ", fifo.slotBytes(),
                     " of this rank's FIFO (mismatched BRAID_CHUNK_BYTES?)");
          finish(true);
          return true;
        }
        connection_->setSlotSize(slot_, header_.size, header_.tag);
        pieceOf(header_.size, index_, connection_->lanes(), &begin_, &end_);
      }
    }
    active_ = false;
    connection_->laneDone(index_, ++slot_);
    moved = true;
  }
}

pollfd SocketLane::pollEntry() const {
  pollfd p{socket_.fd(), 0, 0};
  if (finished_) {
    p.fd = -1;
  } else if (connection_->outgoing()) {
    // Mid-slot: wait for room in the socket. Idle: nothing comes from the receiver, so readable
    // means it closed or died.
    p.events = active_ ? POLLOUT : POLLIN;
  } else if (active_ || canStartRecv()) {
    p.events = POLLIN;
  } else {
    p.fd = -1;  // no free slot: leave the data in the socket (a hang-up would wake poll() in a loop)
  }
  return p;
}

void SocketLane::checkIdle(short revents) {
  if (finished_ || !connection_->outgoing() || active_ || revents == 0) return;
  char byte = 0;
  size_t n = 0;
  Status st = socket_.recvSome(&byte, 1, &n);
  if (!st.isOk() || n != 0) {
    BRAID_INFO(log::Subsys::kNet, "socket transport: connection to rank ", connection_->peer(),
               " ended: ", st.isOk() ? std::string("unexpected data") : st.message());
    finish(true);
  }
}

}  // namespace braid::transport
