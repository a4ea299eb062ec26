#include "exec/call_ledger.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/log.h"

namespace braid::exec {

namespace {

constexpr size_t kTagWords = sizeof(transport::CallTag) / sizeof(uint64_t);
static_assert(sizeof(transport::CallTag) % sizeof(uint64_t) == 0, "a tag is whole words");

// One collective: its number (0 while the owner rewrites the entry) and its tag, read as a seqlock.
// Every access is sequentially consistent: the seqlock needs its stores and loads in order, and of
// two ranks that write their entries and then read each other's, one sees the other's (no fences:
// ThreadSanitizer does not model them).
struct Entry {
  std::atomic<uint64_t> number;
  std::atomic<uint64_t> words[kTagWords];
};

void pack(const transport::CallTag& tag, uint64_t* words) { std::memcpy(words, &tag, sizeof(tag)); }

transport::CallTag unpack(const uint64_t* words) {
  transport::CallTag tag;
  std::memcpy(static_cast<void*>(&tag), words, sizeof(tag));
  return tag;
}

void write(Entry& e, const transport::CallTag& tag) {
  uint64_t words[kTagWords];
  pack(tag, words);
  e.number.store(0);
  for (size_t i = 0; i < kTagWords; ++i) e.words[i].store(words[i]);
  e.number.store(tag.seq);
}

// Entry `number`'s tag, if `e` holds it whole.
bool read(const Entry& e, uint64_t number, transport::CallTag* out) {
  if (e.number.load() != number) return false;
  uint64_t words[kTagWords];
  for (size_t i = 0; i < kTagWords; ++i) words[i] = e.words[i].load();
  if (e.number.load() != number) return false;  // rewritten meanwhile
  *out = unpack(words);
  return true;
}

// Whether collective `number` of a rank that first queued into a graph at `uncheckedFrom` (0:
// never) is compared.
bool comparable(uint64_t uncheckedFrom, uint64_t number) { return uncheckedFrom == 0 || uncheckedFrom > number; }

// A tag on the wire to a rank of another host: `unused` says that the sender compares no more, or
// that the tag is half of a verdict (the rank in `reserved`): the first call, then the second.
constexpr uint8_t kWireUnchecked = 1;
constexpr uint8_t kWireVerdictFirst = 2;
constexpr uint8_t kWireVerdictSecond = 4;

std::string blockName(uint64_t key, int rank) {
  char name[64];
  std::snprintf(name, sizeof(name), "/braid-ledger-%016llx-%d", static_cast<unsigned long long>(key), rank);
  return name;
}

}  // namespace

// Zeroed by ftruncate: no entry, no verdict, abort word down. The header says whose block it is
// (written by create before the bootstrap hands out the names; checked by attach).
struct CallLedger::Block {
  alignas(64) std::atomic<int32_t> abort;  // the kernels' abort flag (read as a volatile int)
  alignas(64) uint64_t magic;
  uint64_t key;
  int64_t pid;
  int32_t rank;
  alignas(64) std::atomic<uint64_t> uncheckedFrom;  // the first collective queued into a graph (0: none)
  alignas(64) std::atomic<uint32_t> verdict;        // 2 while claimed, 1 once the fields below are written
  int32_t verdictRank[2];                           // the two ranks whose calls differ
  uint64_t verdictTag[2][kTagWords];                // and their calls
  alignas(64) Entry entries[kEntries];
};
// A rank of another host, as the network brings its entries (this process's memory).
struct CallLedger::Remote {
  int rank = -1;
  uint32_t sent = 0;         // the last of this rank's numbers sent to it (its link's thread)
  bool verdictSent = false;  // (its link's thread)
  std::atomic<uint64_t> uncheckedFrom{0};
  Entry entries[kEntries] = {};
  transport::CallTag verdictFirst;  // the first half of a verdict on its way (its receiving thread's)
};

static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<int32_t>::is_always_lock_free,
              "the ledger's words are shared between processes");
static_assert(sizeof(std::atomic<int32_t>) == sizeof(int), "the kernels read the abort word as an int");

size_t CallLedger::blockBytes() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (sizeof(Block) + page - 1) / page * page;
}

CallLedger::CallLedger() = default;

CallLedger::~CallLedger() {
  unlinkName();
  for (const Mapping& m : blocks_) munmap(m.base, blockBytes());
}

namespace {

constexpr uint64_t kMagic = 0x62646c6564676572ULL;  // "bdledger"

Status mapBlock(const std::string& name, bool create, void** out) {
  const size_t bytes = CallLedger::blockBytes();
  int fd = shm_open(name.c_str(), create ? (O_CREAT | O_EXCL | O_RDWR) : O_RDWR, 0600);
  if (fd < 0) return Status(Code::kSystemError, "shm_open " + name + ": " + std::strerror(errno));
  if (create && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int e = errno;
    close(fd);
    shm_unlink(name.c_str());
    return Status(Code::kSystemError, "ftruncate " + name + ": " + std::strerror(e));
  }
  struct stat st;
  if (!create && (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes)) {
    close(fd);  // (mapping a smaller object would fault on the first access past its end)
    return Status(Code::kSystemError, name + " is not a call ledger of this build (" +
                                          std::to_string(static_cast<long long>(st.st_size)) + " bytes, not " +
                                          std::to_string(bytes) + ")");
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int e = errno;
  close(fd);
  if (p == MAP_FAILED) {
    if (create) shm_unlink(name.c_str());
    return Status(Code::kSystemError, "mmap " + name + ": " + std::strerror(e));
  }
  *out = p;
  return Status::ok();
}

}  // namespace

Status CallLedger::create(uint64_t commKey, int rank, std::string (*describeTag)(const transport::CallTag&)) {
  key_ = commKey;
  rank_ = rank;
  describeTag_ = describeTag;
  const std::string name = blockName(commKey, rank);
  void* p = nullptr;
  Status shared = mapBlock(name, true, &p);
  if (shared.isOk()) {
    name_ = name;
    shared_ = true;
  } else {
    // No shared memory here (or the name taken): a block of this process alone. The kernels' abort
    // word still works; the host's other ranks cannot attach, so they do not compare with this one.
    p = mmap(nullptr, blockBytes(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return Status(Code::kSystemError, std::string("mmap (call ledger): ") + std::strerror(errno));
    BRAID_WARN(log::Subsys::kInit, "rank ", rank, ": the call ledger is not shared (", shared.message(),
               "): mismatched calls with this rank are not found as they are queued");
  }
  Block* b = static_cast<Block*>(p);
  b->magic = kMagic;
  b->key = commKey;
  b->pid = static_cast<int64_t>(getpid());
  b->rank = rank;
  blocks_.push_back({rank, b});
  return Status::ok();
}

Status CallLedger::attach(int peer, int64_t pid) {
  void* p = nullptr;
  const std::string what = "the call ledger of rank " + std::to_string(peer) + " (same host)";
  BRAID_RETURN_IF_ERROR(mapBlock(blockName(key_, peer), false, &p).withContext(what));
  Block* b = static_cast<Block*>(p);
  if (b->magic != kMagic || b->key != key_ || b->rank != peer || b->pid != pid) {
    Status foreign(Code::kSystemError, what + ": its name holds another process's block (process " +
                                           std::to_string(b->pid) + ", not " + std::to_string(pid) +
                                           "; left by an earlier run?)");
    munmap(p, blockBytes());
    return foreign;
  }
  blocks_.push_back({peer, b});
  return Status::ok();
}

void CallLedger::unlinkName() {
  if (!name_.empty()) shm_unlink(name_.c_str());
  name_.clear();
}

volatile int* CallLedger::abortWord() const {
  Block* b = blockOf(rank_);
  return b == nullptr ? nullptr : reinterpret_cast<volatile int*>(&b->abort);
}

CallLedger::Block* CallLedger::blockOf(int rank) const {
  for (const Mapping& m : blocks_) {
    if (m.rank == rank) return m.base;
  }
  return nullptr;
}

void CallLedger::addRemote(int peer) {
  auto r = std::make_unique<Remote>();
  r->rank = peer;
  remotes_.push_back(std::move(r));
}

size_t CallLedger::outgoing(int peer, transport::CallTag* out, size_t max) {
  Remote* r = remoteOf(peer);
  Block* me = blockOf(rank_);
  if (r == nullptr || me == nullptr) return 0;
  // Numbers wrap at 2^32 (and 0 is no collective's): distances are taken modulo 2^32.
  const uint32_t last = lastEntered_.load();
  const uint32_t behind = std::min<uint32_t>(last - r->sent, kEntries);
  uint32_t n = last - behind + 1;
  size_t count = 0;
  for (; n != last + 1 && count < max; ++n) {
    if (n == 0 || !read(me->entries[n % kEntries], n, &out[count])) continue;  // overwritten: gone
    out[count].unused = comparable(me->uncheckedFrom.load(), n) ? 0 : kWireUnchecked;
    ++count;
  }
  r->sent = n - 1;
  return count;
}

CallLedger::Remote* CallLedger::remoteOf(int rank) const {
  for (const auto& r : remotes_) {
    if (r->rank == rank) return r.get();
  }
  return nullptr;
}

Status CallLedger::enter(const transport::CallTag& tag, bool captured) {
  Block* me = blockOf(rank_);
  if (me == nullptr || tag.seq == 0) return Status::ok();
  if (captured && me->uncheckedFrom.load() == 0) me->uncheckedFrom.store(tag.seq);
  write(me->entries[tag.seq % kEntries], tag);
  lastEntered_.store(tag.seq);  // (the links' threads send it)
  if (me->uncheckedFrom.load() != 0) return Status::ok();
  transport::CallTag other;
  for (int peer : compared_) {
    Block* b = blockOf(peer);
    // A peer marks its first captured call before writing its entry, so this sees the mark.
    if (b == nullptr || !read(b->entries[tag.seq % kEntries], tag.seq, &other)) continue;
    if (comparable(b->uncheckedFrom.load(), tag.seq) && other != tag) return mismatch(peer, tag, other);
  }
  for (const auto& r : remotes_) {
    if (!read(r->entries[tag.seq % kEntries], tag.seq, &other)) continue;
    if (comparable(r->uncheckedFrom.load(), tag.seq) && other != tag) return mismatch(r->rank, tag, other);
  }
  return Status::ok();
}

Status CallLedger::arrived(int peer, const transport::CallTag& wire) {
  Remote* r = remoteOf(peer);
  Block* me = blockOf(rank_);
  if (r == nullptr || me == nullptr || wire.seq == 0) return Status::ok();
  if ((wire.unused & kWireVerdictFirst) != 0) {
    r->verdictFirst = wire;
    return Status::ok();
  }
  if ((wire.unused & kWireVerdictSecond) != 0) {
    transport::CallTag a = r->verdictFirst, b = wire;
    const int rankA = static_cast<int>(a.reserved), rankB = static_cast<int>(b.reserved);
    a.unused = b.unused = 0;
    a.reserved = b.reserved = 0;
    stop(rankA, a, rankB, b);
    return Status(Code::kInvalidUsage, describe(rankA, a, rankB, b) + " (found on another host)");
  }
  if ((wire.unused & kWireUnchecked) != 0 && r->uncheckedFrom.load() == 0) r->uncheckedFrom.store(wire.seq);
  transport::CallTag theirs = wire;
  theirs.unused = 0;
  write(r->entries[wire.seq % kEntries], theirs);
  transport::CallTag mine;
  if (!comparable(r->uncheckedFrom.load(), wire.seq) || !read(me->entries[wire.seq % kEntries], wire.seq, &mine) ||
      !comparable(me->uncheckedFrom.load(), wire.seq) || mine == theirs) {
    return Status::ok();
  }
  return mismatch(peer, mine, theirs);
}

Status CallLedger::mismatch(int peer, const transport::CallTag& mine, const transport::CallTag& theirs) {
  stop(rank_, mine, peer, theirs);
  return Status(Code::kInvalidUsage, describe(rank_, mine, peer, theirs));
}

void CallLedger::stop(int rankA, const transport::CallTag& a, int rankB, const transport::CallTag& b) {
  Block* me = blockOf(rank_);
  uint32_t unclaimed = 0;
  if (me->verdict.compare_exchange_strong(unclaimed, 2)) {  // the first finding is the verdict
    me->verdictRank[0] = rankA;
    me->verdictRank[1] = rankB;
    pack(a, me->verdictTag[0]);
    pack(b, me->verdictTag[1]);
    me->verdict.store(1, std::memory_order_release);
  }
  for (const Mapping& m : blocks_) m.base->abort.store(1, std::memory_order_release);
}

bool CallLedger::verdictFor(int peer, transport::CallTag half[2]) {
  Remote* r = remoteOf(peer);
  Block* me = blockOf(rank_);
  if (r == nullptr || me == nullptr || r->verdictSent || me->abort.load(std::memory_order_acquire) == 0) return false;
  for (const Mapping& m : blocks_) {
    if (m.base->verdict.load(std::memory_order_acquire) != 1) continue;
    for (int i = 0; i < 2; ++i) {
      half[i] = unpack(m.base->verdictTag[i]);
      half[i].reserved = static_cast<uint32_t>(m.base->verdictRank[i]);
      half[i].unused = i == 0 ? kWireVerdictFirst : kWireVerdictSecond;
    }
    r->verdictSent = true;
    return true;
  }
  return false;
}

void CallLedger::serveLink(int peer, transport::HostFifo& out, transport::HostFifo& in, const std::atomic<bool>& stop) {
  std::vector<transport::CallTag> tags(std::max(out.slotBytes(), in.slotBytes()) / sizeof(transport::CallTag));
  const size_t outBatch = out.slotBytes() / sizeof(transport::CallTag);
  int waitMs = 2;
  for (bool last = false; !last;) {
    last = stop.load();
    bool busy = false;
    for (bool ready = in.readableWithin(std::chrono::milliseconds(last ? 0 : waitMs)); ready;
         ready = in.readableWithin(std::chrono::milliseconds(0))) {
      size_t bytes = 0;
      const char* data = in.waitReadable(&bytes, transport::StopFlags{});  // (readable: no wait)
      const size_t n = std::min(bytes / sizeof(transport::CallTag), tags.size());
      std::memcpy(static_cast<void*>(tags.data()), data, n * sizeof(transport::CallTag));
      in.release();
      for (size_t i = 0; i < n; ++i) {
        Status st = arrived(peer, tags[i]);
        if (!st.isOk()) BRAID_WARN(log::Subsys::kColl, "rank ", rank_, ": ", st.message());
      }
      busy = true;
    }
    if (in.closedBy() >= 0 || out.closedBy() >= 0) {
      if (!last) {
        const std::string why = in.closedBy() >= 0 ? in.closeReason() : out.closeReason();
        BRAID_INFO(log::Subsys::kColl, "rank ", rank_, ": the call ledger's link with rank ", peer, " closed (",
                   why.empty() ? "the peer left" : why, "): calls are compared across it no more");
      }
      return;
    }
    // A slot is taken before the verdict and entries are: what the ledger hands over counts as sent.
    while (out.tailCount() - out.headCount() < static_cast<uint64_t>(out.slots())) {
      char* slot = out.waitWritable(transport::StopFlags{});  // (a slot is free: no wait)
      if (slot == nullptr) break;                             // closed meanwhile: seen on the next pass
      size_t n = verdictFor(peer, tags.data()) ? 2 : 0;
      n += outgoing(peer, tags.data() + n, outBatch - n);
      if (n == 0) break;
      std::memcpy(slot, tags.data(), n * sizeof(transport::CallTag));
      out.publish(n * sizeof(transport::CallTag));
      busy = true;
    }
    waitMs = busy ? 2 : std::min(waitMs * 2, 50);
  }
}

std::string CallLedger::describe(int rankA, const transport::CallTag& a, int rankB, const transport::CallTag& b) const {
  if (rankB < rankA) return describe(rankB, b, rankA, a);
  auto name = [this](const transport::CallTag& t) { return describeTag_ ? describeTag_(t) : std::string("a call"); };
  return "mismatched calls: rank " + std::to_string(rankA) + " queued " + name(a) + " and rank " +
         std::to_string(rankB) + " " + name(b) +
         " (every rank must make the same collective calls in the same order, with the same count, type, op "
         "and root); the kernels of every rank of this host on this communicator were stopped";
}

bool CallLedger::stopped(Status* why) const {
  Block* me = blockOf(rank_);
  if (me == nullptr || me->abort.load(std::memory_order_acquire) == 0) return false;
  for (const Mapping& m : blocks_) {
    if (m.base->verdict.load(std::memory_order_acquire) != 1) continue;
    *why = Status(Code::kInvalidUsage, describe(m.base->verdictRank[0], unpack(m.base->verdictTag[0]),
                                                m.base->verdictRank[1], unpack(m.base->verdictTag[1])));
    return true;
  }
  return false;
}

}  // namespace braid::exec
