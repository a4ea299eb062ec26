// DecisionCache: the tuner's recent decisions by collective and message size, so that a loop of
// equal calls runs the cost model once (it took ~0.14 us of a 0.8 us host all-reduce of 8 B).
//
// 64 entries, placed by a hash of (collective, bytes); a newer size takes an older one's place.
// Any thread may look up while another stores: each entry carries a sequence number that is odd
// while it is written (a seqlock), so a reader sees a whole decision or none, and a writer that
// finds an entry being written leaves it. A copy starts empty; so does clear().
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "tune/cost.h"

namespace braid::tune {

struct Decision;

class DecisionCache {
 public:
  DecisionCache() = default;
  DecisionCache(const DecisionCache&) {}
  DecisionCache& operator=(const DecisionCache&) {
    clear();
    return *this;
  }

  /// The decision stored for (coll, bytes), if any.
  bool find(algo::Coll coll, size_t bytes, Decision* out) const;
  /// Keeps `d` for (coll, bytes). Decisions with a note (forced choices) are not kept.
  void store(algo::Coll coll, size_t bytes, const Decision& d);
  /// Forgets every decision (the tuner's inputs changed); waits for a store in progress.
  void clear();

 private:
  struct Entry {
    std::atomic<uint32_t> seq{0};   // odd while written
    std::atomic<uint32_t> coll{0};  // collective + 1; 0: empty
    std::atomic<uint64_t> bytes{0};
    std::atomic<uint64_t> choice{0};  // algo | proto << 8 | channels << 16
    std::atomic<uint64_t> chunkBytes{0};
    std::atomic<double> predictedUs{0};
  };
  static size_t indexOf(algo::Coll coll, size_t bytes);

  std::array<Entry, 64> entries_;
};

}  // namespace braid::tune
