#include "exec/host_prims.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "exec/host_reduce.h"

namespace braid::exec {

void RefLedger::add(transport::HostFifo* fifo, uint64_t counter, const char* data, size_t bytes) {
  prune();
  entries_.push_back({fifo, counter, data, data + bytes});
}

void RefLedger::prune() {
  entries_.erase(
      std::remove_if(entries_.begin(), entries_.end(), [](const Entry& e) { return e.fifo->released(e.counter); }),
      entries_.end());
}

bool RefLedger::clear(const char* dst, size_t bytes, const transport::StopFlags& stop,
                      const transport::HostFifo** failed) {
  for (const Entry& e : entries_) {
    if (e.begin < dst + bytes && dst < e.end && !e.fifo->waitReleased(e.counter, stop)) {
      *failed = e.fifo;
      return false;
    }
  }
  return true;
}

bool RefLedger::drain(const transport::StopFlags& stop, int rank) {
  if (entries_.empty()) return true;
  bool sent = true;
  for (const Entry& e : entries_) {
    if (sent && e.fifo->waitReleased(e.counter, stop)) continue;
    sent = false;
    if (!e.fifo->released(e.counter))
      e.fifo->close(rank, "rank " + std::to_string(rank) + " gave up on a call with data in flight");
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (const Entry& e : entries_) {
    while (!e.fifo->released(e.counter) && !e.fifo->readersDone() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  entries_.clear();
  return sent;
}

HostPrims::HostPrims(const HostCall& call, const int* recvPeers, transport::HostFifo* const* recv, int nRecv,
                     const int* sendPeers, transport::HostFifo* const* send, int nSend, int channel, RefLedger* refs)
    : call_(call), channel_(channel), nRecv_(nRecv), nSend_(nSend), refs_(refs) {
  for (int i = 0; i < nRecv; ++i) {
    recv_[i] = recv[i];
    recvPeer_[i] = recvPeers[i];
  }
  for (int i = 0; i < nSend; ++i) send_[i] = send[i], sendPeer_[i] = sendPeers[i];
  for (int i = 0; i < nRecv; ++i) watched_[i] = recv_[i];
  for (int i = 0; i < nSend; ++i) watched_[nRecv + i] = send_[i];
}

bool HostPrims::takeRecv(size_t bytes, const char** slots) {
  for (int i = 0; i < nRecv_; ++i) {
    size_t got = 0;
    transport::CallTag theirs;
    if (call_.progress != nullptr && recv_[i] != nullptr) noteWait(recvPeer_[i], false);
    slots[i] = recv_[i] == nullptr ? nullptr : recv_[i]->waitReadable(&got, stepStop(), &theirs);
    // A step is a wait that ended with a slot: a failed one is no progress (the watchdog keeps what
    // it gathered for a call that ended without a step).
    if (call_.progress != nullptr && slots[i] != nullptr) call_.progress->steps.fetch_add(1, std::memory_order_relaxed);
    if (slots[i] != nullptr && theirs != call_.tag) {
      failMismatch(recvPeer_[i], theirs);
      return false;
    }
    if (slots[i] == nullptr || got != bytes) {
      fail(recv_[i]);
      return false;
    }
  }
  return true;
}

transport::StopFlags HostPrims::stepStop() const {
  transport::StopFlags stop = call_.stop();
  stop.watched = watched_;
  stop.nWatched = nRecv_ + nSend_;
  return stop;
}

void HostPrims::failMismatch(int peer, const transport::CallTag& theirs) {
  CallFailure& f = *call_.failure;
  bool unclaimed = false;
  if (f.mismatchClaimed.compare_exchange_strong(unclaimed, true, std::memory_order_acq_rel)) {
    f.mismatchPeer = peer;
    f.theirs = theirs;
  }
  f.failed.store(true, std::memory_order_release);
}

void HostPrims::fail(const transport::HostFifo* fifo) {
  if (fifo != nullptr && fifo->peerDied()) {
    call_.failure->deadPid.store(fifo->peerPid());
    call_.failure->deadRank.store(fifo->peerRank());
  } else if (fifo != nullptr && fifo->closedBy() >= 0 && fifo->closedBy() != call_.rank) {
    call_.failure->stoppedBy.store(fifo->closedBy());
    call_.failure->stoppedFifo.store(fifo);
  } else {
    // Stopped by another FIFO of the step (StopFlags::watched): name the rank that closed it.
    for (transport::HostFifo* f : watched_) {
      if (f != nullptr && f->closedBy() >= 0 && f->closedBy() != call_.rank) {
        call_.failure->stoppedBy.store(f->closedBy());
        call_.failure->stoppedFifo.store(f);
        break;
      }
    }
  }
  call_.failure->failed.store(true, std::memory_order_release);
}

void HostPrims::releaseRecv() {
  for (int i = 0; i < nRecv_; ++i) recv_[i]->release();
}

bool HostPrims::takeSend(char** slots) {
  for (int i = 0; i < nSend_; ++i) {
    if (call_.progress != nullptr && send_[i] != nullptr) noteWait(sendPeer_[i], true);
    slots[i] = send_[i] == nullptr ? nullptr : send_[i]->waitWritable(stepStop());
    if (call_.progress != nullptr && slots[i] != nullptr) call_.progress->steps.fetch_add(1, std::memory_order_relaxed);
    if (slots[i] == nullptr) {
      fail(send_[i]);
      return false;
    }
  }
  return true;
}

void HostPrims::publishSend(char** slots, size_t bytes) {
  for (int i = 1; i < nSend_; ++i) std::memcpy(slots[i], slots[0], bytes);
  for (int i = 0; i < nSend_; ++i) send_[i]->publish(bytes, call_.tag);
}

bool HostPrims::publishByReference(const char* src, size_t bytes) {
  if (refs_ == nullptr || !call_.sendsByReference) return false;
  for (int i = 0; i < nSend_; ++i) {
    if (!send_[i]->referenceSaves(bytes)) return false;
  }
  for (int i = 0; i < nSend_; ++i) refs_->add(send_[i], send_[i]->publishRef(src, bytes, call_.tag), src, bytes);
  return true;
}

bool HostPrims::writable(const char* dst, size_t bytes) {
  const transport::HostFifo* failed = nullptr;
  if (refs_ == nullptr || refs_->empty() || refs_->clear(dst, bytes, stepStop(), &failed)) return true;
  fail(failed);  // (a FIFO of an earlier open() of the lane: not among these prims' watched)
  return false;
}

void HostPrims::reduceInto(char* dst, const char** slots, const char* src, size_t n, bool post) {
  reduceElems(dst, slots[0], src, n, call_.type, call_.op);
  for (int i = 1; i < nRecv_; ++i) reduceElems(dst, dst, slots[i], n, call_.type, call_.op);
  if (post) divideElems(dst, dst, n, call_.type, call_.nranks);
}

void HostPrims::sendFrom(const char* src, size_t n) {
  char* slots[algo::kMaxPeers];
  if (stopped() || !takeSend(slots) || publishByReference(src, n * call_.elemSize)) return;
  std::memcpy(slots[0], src, n * call_.elemSize);
  publishSend(slots, n * call_.elemSize);
}

void HostPrims::send(size_t inOff, size_t n) { sendFrom(in(inOff), n); }

void HostPrims::copySend(size_t inOff, size_t outOff, size_t n) {
  if (stopped()) return;
  if (in(inOff) != out(outOff)) {
    if (!writable(out(outOff), n * call_.elemSize)) return;
    std::memcpy(out(outOff), in(inOff), n * call_.elemSize);
  }
  char* slots[algo::kMaxPeers];
  if (!takeSend(slots) || publishByReference(in(inOff), n * call_.elemSize)) return;
  std::memcpy(slots[0], in(inOff), n * call_.elemSize);
  publishSend(slots, n * call_.elemSize);
}

void HostPrims::recv(size_t outOff, size_t n) {
  const char* slots[algo::kMaxPeers];
  if (stopped() || !writable(out(outOff), n * call_.elemSize) || !takeRecv(n * call_.elemSize, slots)) return;
  std::memcpy(out(outOff), slots[0], n * call_.elemSize);
  releaseRecv();
}

void HostPrims::recvCopySend(size_t outOff, size_t n) {
  const char* rslots[algo::kMaxPeers];
  char* sslots[algo::kMaxPeers];
  size_t bytes = n * call_.elemSize;
  if (stopped() || !writable(out(outOff), bytes) || !takeRecv(bytes, rslots) || !takeSend(sslots)) return;
  std::memcpy(out(outOff), rslots[0], bytes);
  if (publishByReference(out(outOff), bytes)) {
    releaseRecv();
    return;
  }
  std::memcpy(sslots[0], rslots[0], bytes);
  releaseRecv();
  publishSend(sslots, bytes);
}

void HostPrims::recvReduceSendFrom(const char* src, size_t n) {
  const char* rslots[algo::kMaxPeers];
  char* sslots[algo::kMaxPeers];
  if (stopped() || !takeRecv(n * call_.elemSize, rslots) || !takeSend(sslots)) return;
  reduceInto(sslots[0], rslots, src, n, false);
  releaseRecv();
  publishSend(sslots, n * call_.elemSize);
}

void HostPrims::recvReduceSend(size_t inOff, size_t n) { recvReduceSendFrom(in(inOff), n); }

void HostPrims::recvReduceCopy(size_t inOff, size_t outOff, size_t n, bool post) {
  const char* rslots[algo::kMaxPeers];
  if (stopped() || !writable(out(outOff), n * call_.elemSize) || !takeRecv(n * call_.elemSize, rslots)) return;
  reduceInto(out(outOff), rslots, in(inOff), n, post);
  releaseRecv();
}

void HostPrims::recvReduceCopySendFrom(const char* src, size_t outOff, size_t n, bool post) {
  const char* rslots[algo::kMaxPeers];
  char* sslots[algo::kMaxPeers];
  size_t bytes = n * call_.elemSize;
  if (stopped() || !writable(out(outOff), bytes) || !takeRecv(bytes, rslots) || !takeSend(sslots)) return;
  reduceInto(out(outOff), rslots, src, n, post);
  releaseRecv();
  if (publishByReference(out(outOff), bytes)) return;
  std::memcpy(sslots[0], out(outOff), bytes);
  publishSend(sslots, bytes);
}

void HostPrims::recvReduceCopySend(size_t inOff, size_t outOff, size_t n, bool post) {
  recvReduceCopySendFrom(in(inOff), outOff, n, post);
}

void HostPrims::copy(size_t inOff, size_t outOff, size_t n, bool post) {
  if (stopped() || (!post && in(inOff) == out(outOff)) || !writable(out(outOff), n * call_.elemSize)) return;
  if (post) {
    divideElems(out(outOff), in(inOff), n, call_.type, call_.nranks);
  } else {
    std::memcpy(out(outOff), in(inOff), n * call_.elemSize);
  }
}

void HostPrims::sendOutput(size_t outOff, size_t n) { sendFrom(out(outOff), n); }

void HostPrims::recvReduceOutput(size_t outOff, size_t n, bool post) {
  const char* rslots[algo::kMaxPeers];
  if (stopped() || !writable(out(outOff), n * call_.elemSize) || !takeRecv(n * call_.elemSize, rslots)) return;
  reduceInto(out(outOff), rslots, out(outOff), n, post);
  releaseRecv();
}

void HostPrims::recvReduceSendOutput(size_t outOff, size_t n) { recvReduceSendFrom(out(outOff), n); }

void HostPrims::recvReduceOutputSend(size_t outOff, size_t n, bool post) {
  recvReduceCopySendFrom(out(outOff), outOff, n, post);
}

HostPrims HostBackend::open(const int* recvPeers, int nRecv, const int* sendPeers, int nSend, int connId) {
  return open(recvPeers, nullptr, nRecv, sendPeers, nSend, connId);
}

HostPrims HostBackend::open(const int* recvPeers, const int* recvConns, int nRecv, const int* sendPeers, int nSend,
                            int connId) {
  transport::HostFifo* recv[algo::kMaxPeers] = {nullptr, nullptr};
  transport::HostFifo* send[algo::kMaxPeers] = {nullptr, nullptr};
  for (int i = 0; i < nRecv; ++i)
    recv[i] = fifos_.fifo(channel_, recvConns != nullptr ? recvConns[i] : connId, recvPeers[i], call_.rank);
  for (int i = 0; i < nSend; ++i) send[i] = fifos_.fifo(channel_, connId, call_.rank, sendPeers[i]);
  return HostPrims(call_, recvPeers, recv, nRecv, sendPeers, send, nSend, channel_, &refs_);
}

}  // namespace braid::exec
