// What one rank's side stream for one peer queues in a copy-engine call (device/ce_work.h has the
// scheme): a list of waits on this rank's own words, chunk copies into the peer's slots, and
// raises of this rank's own words. cuda_ce.cc issues it as stream memory operations and
// cudaMemcpyAsync; tests/unit/copy_engine_protocol_test.cc runs it against a model of the reducer
// kernels on the CPU, every interleaving it draws, so the protocol is checked without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algo/collectives.h"
#include "device/ce_work.h"

namespace braid::exec {

/// A word of this rank's own block (device::CeWords), by field and peer index.
enum class CeWord : uint8_t { kFreed, kGfreed, kDone, kReduced, kSent, kGsent };

/// One operation of a side stream.
struct CeOp {
  enum class Kind : uint8_t { kWait, kCopy, kRaise } kind = Kind::kWait;
  // kWait / kRaise: word `word` (index `peer` where it has one) of this rank's block; wait until it
  // is at least `value`, or set it to `value`.
  CeWord word = CeWord::kSent;
  int peer = 0;
  uint32_t value = 0;
  // kCopy: `elems` elements from `fromOutput` (the result) or the input, starting at element
  // `srcElem`, into the peer's slot for this rank (`gather`: the AG half), slot chunk % kCeDepth.
  bool gather = false;
  bool fromOutput = false;
  uint32_t chunk = 0;
  size_t srcElem = 0;
  size_t elems = 0;
};

/// The address of `word` (index `peer`) in a rank's words block.
uint32_t* ceWordIn(device::CeWords* words, CeWord word, int peer);

/// The ops rank `me`'s side stream for peer `q` queues for a call of plan `plan` over `nranks`
/// ranks: each chunk of q's part of this rank's input into q's RS slot (once q freed it), and
/// (all-reduce: once this rank reduced it, one chunk behind) each chunk of this rank's shard into
/// q's AG slot (broadcast: the root's whole input, the others nothing); last, a wait for q's word
/// that its kernel is done.
std::vector<CeOp> cePeerProgram(const device::CePlan& plan, int me, int q, int nranks);

}  // namespace braid::exec
