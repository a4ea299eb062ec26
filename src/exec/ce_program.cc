#include "exec/ce_program.h"

namespace braid::exec {

uint32_t* ceWordIn(device::CeWords* words, CeWord word, int peer) {
  switch (word) {
    case CeWord::kFreed: return &words->freed[peer];
    case CeWord::kGfreed: return &words->gfreed[peer];
    case CeWord::kDone: return &words->done[peer];
    case CeWord::kReduced: return &words->reduced;
    case CeWord::kSent: return &words->sent[peer];
    case CeWord::kGsent: return &words->gsent[peer];
  }
  return nullptr;
}

namespace {

class ProgramBuilder {
 public:
  ProgramBuilder(const device::CePlan& plan, int me, int q, int nranks) : p_(plan), me_(me), q_(q), n_(nranks) {}

  std::vector<CeOp> build() {
    const uint32_t k = p_.chunks;
    if (p_.coll == static_cast<int>(algo::Coll::kBroadcast)) {
      // First "this call has begun here" (sent = 1, no data), which q's kernel waits for: its own
      // end (and its `done` to this rank) then comes after this rank's memset of the call before,
      // as the pushes make it in the other collectives; a root's kernel waits for nothing else.
      raise(CeWord::kSent, 1);
      for (uint32_t c = 0; c < k && me_ == p_.root; ++c) pushGather(c);
    } else if (p_.reduces && p_.gathers) {
      for (uint32_t c = 0; c < k; ++c) {
        pushReduce(c);
        if (c > 0) pushGather(c - 1);
      }
      if (k > 0) pushGather(k - 1);
    } else {
      for (uint32_t c = 0; c < k; ++c) p_.reduces ? pushReduce(c) : pushGather(c);
    }
    wait(CeWord::kDone, 1);  // q's kernel cleared its words and is over
    return std::move(ops_);
  }

 private:
  void wait(CeWord w, uint32_t value) { ops_.push_back(word(CeOp::Kind::kWait, w, value)); }
  void raise(CeWord w, uint32_t value) { ops_.push_back(word(CeOp::Kind::kRaise, w, value)); }
  CeOp word(CeOp::Kind kind, CeWord w, uint32_t value) const {
    CeOp op;
    op.kind = kind;
    op.word = w;
    op.peer = q_;
    op.value = value;
    return op;
  }
  void copy(bool gather, bool fromOutput, uint32_t c, size_t srcElem, size_t elems) {
    CeOp op;
    op.kind = CeOp::Kind::kCopy;
    op.peer = q_;
    op.gather = gather;
    op.fromOutput = fromOutput;
    op.chunk = c;
    op.srcElem = srcElem;
    op.elems = elems;
    ops_.push_back(op);
  }
  // Chunk c of q's shard of this rank's input, into q's RS slot once q freed the slot.
  void pushReduce(uint32_t c) {
    if (c >= device::kCeDepth) wait(CeWord::kFreed, c + 1 - device::kCeDepth);
    const algo::Range chunk = device::ceChunk(p_, q_, n_, c);
    copy(false, false, c, chunk.begin, chunk.size());
    raise(CeWord::kSent, c + 1);
  }
  // Chunk c of this rank's result (all-reduce: once reduced) or input (all-gather, broadcast), into
  // q's AG slot.
  void pushGather(uint32_t c) {
    const bool allReduce = p_.reduces;
    if (allReduce) wait(CeWord::kReduced, c + 1);
    if (c >= device::kCeDepth) wait(CeWord::kGfreed, c + 1 - device::kCeDepth);
    const algo::Range chunk = device::ceChunk(p_, me_, n_, c);
    const size_t shift = p_.coll == static_cast<int>(algo::Coll::kAllGather) ? p_.count * static_cast<size_t>(me_) : 0;
    copy(true, allReduce, c, chunk.begin - shift, chunk.size());
    raise(CeWord::kGsent, c + 1);
  }

  const device::CePlan& p_;
  const int me_, q_, n_;
  std::vector<CeOp> ops_;
};

}  // namespace

std::vector<CeOp> cePeerProgram(const device::CePlan& plan, int me, int q, int nranks) {
  return ProgramBuilder(plan, me, q, nranks).build();
}

}  // namespace braid::exec
