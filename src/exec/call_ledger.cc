#include "exec/call_ledger.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace braid::exec {

namespace {

constexpr size_t kTagWords = sizeof(transport::CallTag) / sizeof(uint64_t);
static_assert(sizeof(transport::CallTag) % sizeof(uint64_t) == 0, "a tag is whole words");

// One collective: its number (0 while the owner rewrites the entry) and its tag, read as a seqlock.
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

std::string blockName(uint64_t key, int rank) {
  char name[64];
  std::snprintf(name, sizeof(name), "/braid-ledger-%016llx-%d", static_cast<unsigned long long>(key), rank);
  return name;
}

}  // namespace

// Zeroed by ftruncate: no entry, no verdict, abort word down.
struct CallLedger::Block {
  alignas(64) std::atomic<int32_t> abort;           // the kernels' abort flag (read as a volatile int)
  alignas(64) std::atomic<uint64_t> uncheckedFrom;  // the first collective queued into a graph (0: none)
  alignas(64) std::atomic<uint32_t> verdict;        // 1 once the fields below are written (once)
  int32_t verdictPeer;                              // the rank whose call differed from this rank's
  uint64_t verdictMine[kTagWords];
  uint64_t verdictTheirs[kTagWords];
  alignas(64) Entry entries[kEntries];
};
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<int32_t>::is_always_lock_free,
              "the ledger's words are shared between processes");
static_assert(sizeof(std::atomic<int32_t>) == sizeof(int), "the kernels read the abort word as an int");

size_t CallLedger::blockBytes() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (sizeof(Block) + page - 1) / page * page;
}

CallLedger::~CallLedger() {
  unlinkName();
  for (const Mapping& m : blocks_) munmap(m.base, blockBytes());
}

namespace {

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
  BRAID_RETURN_IF_ERROR(mapBlock(name, true, &p).withContext("the call ledger"));
  name_ = name;
  blocks_.push_back({rank, static_cast<Block*>(p)});
  return Status::ok();
}

Status CallLedger::attach(int peer) {
  void* p = nullptr;
  BRAID_RETURN_IF_ERROR(mapBlock(blockName(key_, peer), false, &p)
                            .withContext("the call ledger of rank " + std::to_string(peer) + " (same host)"));
  blocks_.push_back({peer, static_cast<Block*>(p)});
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

Status CallLedger::enter(const transport::CallTag& tag, bool captured) {
  Block* me = blockOf(rank_);
  if (me == nullptr || tag.seq == 0) return Status::ok();
  if (captured && me->uncheckedFrom.load(std::memory_order_relaxed) == 0) {
    me->uncheckedFrom.store(tag.seq, std::memory_order_release);
  }
  Entry& e = me->entries[tag.seq % kEntries];
  uint64_t words[kTagWords];
  pack(tag, words);
  e.number.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (size_t i = 0; i < kTagWords; ++i) e.words[i].store(words[i], std::memory_order_relaxed);
  e.number.store(tag.seq, std::memory_order_release);
  // Of two ranks queuing the same number, at least one sees the other's entry past this fence.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (me->uncheckedFrom.load(std::memory_order_relaxed) != 0) return Status::ok();
  for (int peer : compared_) {
    Block* b = blockOf(peer);
    if (b == nullptr) continue;
    Entry& theirs = b->entries[tag.seq % kEntries];
    if (theirs.number.load(std::memory_order_acquire) != tag.seq) continue;
    for (size_t i = 0; i < kTagWords; ++i) words[i] = theirs.words[i].load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (theirs.number.load(std::memory_order_relaxed) != tag.seq) continue;  // rewritten meanwhile
    // A peer marks its first captured call before writing its entry, so this sees the mark.
    const uint64_t from = b->uncheckedFrom.load(std::memory_order_acquire);
    if (from != 0 && from <= tag.seq) continue;
    const transport::CallTag other = unpack(words);
    if (other != tag) return mismatch(peer, tag, other);
  }
  return Status::ok();
}

Status CallLedger::mismatch(int peer, const transport::CallTag& mine, const transport::CallTag& theirs) {
  Block* me = blockOf(rank_);
  if (me->verdict.load(std::memory_order_relaxed) == 0) {
    me->verdictPeer = peer;
    pack(mine, me->verdictMine);
    pack(theirs, me->verdictTheirs);
    me->verdict.store(1, std::memory_order_release);
  }
  for (const Mapping& m : blocks_) m.base->abort.store(1, std::memory_order_release);
  return Status(Code::kInvalidUsage, describe(rank_, mine, peer, theirs));
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
    if (m.base->verdict.load(std::memory_order_acquire) == 0) continue;
    *why = Status(Code::kInvalidUsage,
                  describe(m.rank, unpack(m.base->verdictMine), m.base->verdictPeer, unpack(m.base->verdictTheirs)));
    return true;
  }
  return false;
}

}  // namespace braid::exec
