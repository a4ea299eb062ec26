#include "tune/decision_cache.h"

#include "tune/tuner.h"

namespace braid::tune {

size_t DecisionCache::indexOf(algo::Coll coll, size_t bytes) {
  uint64_t h = (static_cast<uint64_t>(bytes) ^ (static_cast<uint64_t>(coll) << 56)) * 0x9e3779b97f4a7c15ull;
  return static_cast<size_t>(h >> 58);  // the top 6 bits: 64 entries
}

bool DecisionCache::find(algo::Coll coll, size_t bytes, Decision* out) const {
  const Entry& e = entries_[indexOf(coll, bytes)];
  uint32_t before = e.seq.load(std::memory_order_acquire);
  if ((before & 1) != 0) return false;
  // Acquire loads: the second look at seq cannot move above them, and one that reads a writer's
  // field sees that writer's odd seq (no standalone fence, which ThreadSanitizer cannot follow;
  // on x86 these are plain loads).
  uint32_t c = e.coll.load(std::memory_order_acquire);
  uint64_t b = e.bytes.load(std::memory_order_acquire);
  uint64_t choice = e.choice.load(std::memory_order_acquire);
  uint64_t chunk = e.chunkBytes.load(std::memory_order_acquire);
  double us = e.predictedUs.load(std::memory_order_acquire);
  if (e.seq.load(std::memory_order_relaxed) != before) return false;
  if (c != static_cast<uint32_t>(coll) + 1 || b != bytes) return false;
  out->algo = static_cast<algo::Algo>(choice & 0xff);
  out->proto = static_cast<Proto>((choice >> 8) & 0xff);
  out->channels = static_cast<int>(choice >> 16);
  out->chunkBytes = static_cast<size_t>(chunk);
  out->predictedUs = us;
  out->note.clear();
  return true;
}

void DecisionCache::store(algo::Coll coll, size_t bytes, const Decision& d) {
  if (!d.note.empty()) return;
  Entry& e = entries_[indexOf(coll, bytes)];
  uint32_t s = e.seq.load(std::memory_order_relaxed);
  if ((s & 1) != 0 || !e.seq.compare_exchange_strong(s, s + 1, std::memory_order_acquire)) return;
  // Release stores: a reader that sees one of them sees the odd seq before it.
  e.coll.store(static_cast<uint32_t>(coll) + 1, std::memory_order_release);
  e.bytes.store(bytes, std::memory_order_release);
  e.choice.store(
      static_cast<uint64_t>(d.algo) | static_cast<uint64_t>(d.proto) << 8 | static_cast<uint64_t>(d.channels) << 16,
      std::memory_order_release);
  e.chunkBytes.store(d.chunkBytes, std::memory_order_release);
  e.predictedUs.store(d.predictedUs, std::memory_order_release);
  e.seq.store(s + 2, std::memory_order_release);
}

void DecisionCache::clear() {
  for (Entry& e : entries_) {
    uint32_t s = e.seq.load(std::memory_order_relaxed);
    while ((s & 1) != 0 || !e.seq.compare_exchange_weak(s, s + 1, std::memory_order_acquire)) {
      s = e.seq.load(std::memory_order_relaxed);  // a writer is finishing: wait for it
    }
    e.coll.store(0, std::memory_order_relaxed);
    e.seq.store(s + 2, std::memory_order_release);
  }
}

}  // namespace braid::tune
