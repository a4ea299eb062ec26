#include "transport/shm/shm_segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <thread>

namespace braid::transport {
namespace {

constexpr uint64_t kReady = 0x62726169645f7368ull;  // "braid_sh"

struct SegmentHeader {
  std::atomic<uint64_t> ready;
  std::atomic<uint32_t> attached;
  uint32_t slots;
  uint64_t slotBytes;
};
constexpr size_t kHeaderBytes = 64;
static_assert(sizeof(SegmentHeader) <= kHeaderBytes, "the header fits its cache line");

using Clock = std::chrono::steady_clock;

}  // namespace

std::string ShmFifoSegment::nameFor(uint64_t commKey, int src, int dst, int channel, int connId) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "/braid-%016" PRIx64 "-%d-%d-%d-%d", commKey, src, dst, channel, connId);
  return buf;
}

void ShmFifoSegment::unlinkAddressedTo(uint64_t commKey, const std::vector<int>& receivers) {
  const std::string prefix = nameFor(commKey, 0, 0, 0, 0).substr(1, 23);  // "braid-<16 hex digits>-"
  DIR* d = opendir("/dev/shm");
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    int src = -1, to = -1, channel = -1, conn = -1;
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0) continue;
    if (std::sscanf(e->d_name + prefix.size(), "%d-%d-%d-%d", &src, &to, &channel, &conn) == 4 &&
        std::find(receivers.begin(), receivers.end(), to) != receivers.end()) {
      shm_unlink(("/" + std::string(e->d_name)).c_str());
    }
  }
  closedir(d);
}

Status ShmFifoSegment::attach(const std::string& name, const ShmFifoOptions& o, std::unique_ptr<ShmFifoSegment>* out) {
  const int slots = o.slots;
  const size_t slotBytes = o.slotBytes;
  const StopFlags& stop = o.stop;
  std::unique_ptr<ShmFifoSegment> seg(new ShmFifoSegment());
  seg->name_ = name;
  seg->sender_ = o.sender;
  seg->peerPid_ = o.peerPid;
  seg->bytes_ = kHeaderBytes + HostFifo::blockBytes(slots, slotBytes);
  auto deadline = Clock::now() + std::chrono::milliseconds(o.timeoutMs);
  bool creator = true;
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 && errno == EEXIST) {
    creator = false;
    fd = shm_open(name.c_str(), O_RDWR, 0600);
  }
  if (fd < 0) return errnoError("shm_open " + name, errno);
  if (creator && ftruncate(fd, static_cast<off_t>(seg->bytes_)) != 0) {
    int err = errno;
    close(fd);
    shm_unlink(name.c_str());
    return errnoError("ftruncate " + name + " (is /dev/shm full?)", err);
  }
  // An opener may arrive before the creator sized the segment: wait for the size.
  for (struct stat st{}; !creator; std::this_thread::sleep_for(std::chrono::microseconds(50))) {
    if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= seg->bytes_) break;
    if (Clock::now() > deadline || stop.raised()) {
      close(fd);
      return timeoutError("shared-memory segment " + name + " was not sized by its peer in time");
    }
  }
  seg->base_ = mmap(nullptr, seg->bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int mmapErr = errno;
  close(fd);
  if (seg->base_ == MAP_FAILED) {
    seg->base_ = nullptr;
    return errnoError("mmap " + name, mmapErr);
  }
  auto* header = static_cast<SegmentHeader*>(seg->base_);
  if (creator) {
    header->slots = static_cast<uint32_t>(slots);
    header->slotBytes = slotBytes;
    header->ready.store(kReady, std::memory_order_release);
  }
  while (header->ready.load(std::memory_order_acquire) != kReady) {
    if (Clock::now() > deadline || stop.raised()) {
      return timeoutError("shared-memory segment " + name + " was not initialised by its peer in time");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  if (header->slots != static_cast<uint32_t>(slots) || header->slotBytes != slotBytes) {
    return invalidUsage("shared-memory segment " + name + " has " + std::to_string(header->slots) + " slots of " +
                        std::to_string(header->slotBytes) + " bytes, this rank expects " + std::to_string(slots) +
                        " of " + std::to_string(slotBytes) + " (BRAID_STEPS / BRAID_CHUNK_BYTES differ across ranks)");
  }
  if (header->attached.fetch_add(1, std::memory_order_acq_rel) + 1 == 2) {
    shm_unlink(name.c_str());  // both sides mapped it: the name is no longer needed
    seg->unlinked_ = true;
  }
  seg->fifo_ = std::make_unique<HostFifo>(static_cast<char*>(seg->base_) + kHeaderBytes, slots, slotBytes, o.peerRank,
                                          o.peerPid);
  *out = std::move(seg);
  return Status::ok();
}

ShmFifoSegment::~ShmFifoSegment() {
  // The peer never attached (or this side did not know it had): no name is left behind, unless it
  // holds slots this side published for a receiver that lives and has not looked yet (see above).
  bool unlink = !unlinked_;
  if (unlink && base_ != nullptr) {
    auto* header = static_cast<SegmentHeader*>(base_);
    const bool peerAttached = header->attached.load(std::memory_order_acquire) >= 2;  // it unlinked the name
    // Only a call that went well leaves slots worth keeping: a closed FIFO's are never read.
    const bool unread = sender_ && fifo_ != nullptr && fifo_->closedBy() < 0 && fifo_->tailCount() > fifo_->headCount();
    unlink = !peerAttached && !(unread && !processGone(peerPid_));
  }
  fifo_.reset();
  if (base_ != nullptr) munmap(base_, bytes_);
  if (unlink) shm_unlink(name_.c_str());
}

ShmLinks::~ShmLinks() {
  segments_.clear();
  // This rank reads no more, nor does a peer whose process has died (killed, say, after it made a
  // segment as the receiver that this rank never attached as the sender).
  std::vector<int> done{rank_};
  for (int r = 0; r < static_cast<int>(pids_.size()); ++r) {
    if (r != rank_ && processGone(pids_[r])) done.push_back(r);
  }
  ShmFifoSegment::unlinkAddressedTo(shmKey_, done);
}

Status ShmLinks::fifo(int channel, int connId, int src, int dst, HostFifo** out) {
  ShmFifoOptions o = options_;
  o.sender = src == rank_;
  o.peerRank = o.sender ? dst : src;
  o.peerPid = pids_[o.peerRank];
  std::unique_ptr<ShmFifoSegment> segment;
  BRAID_RETURN_IF_ERROR(
      ShmFifoSegment::attach(ShmFifoSegment::nameFor(shmKey_, src, dst, channel, connId), o, &segment));
  *out = &segment->fifo();
  std::lock_guard<std::mutex> lock(mu_);
  segments_.push_back(std::move(segment));
  return Status::ok();
}

}  // namespace braid::transport
