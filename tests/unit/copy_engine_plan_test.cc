// The copy-engine path's plan (device/ce_work.h), which the host's pushes and the reducer kernel
// must agree on, and the tuner's choice of it (tune/cost.h): checked here without a GPU. The path
// itself runs in the gpu tier (tests/gpu/copy_engine_test.cc).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "device/ce_work.h"
#include "exec/ce_program.h"
#include "exec/cuda_engine.h"
#include "tune_fixtures.h"

namespace braid {
namespace {

using algo::Coll;
using device::CePlan;

// Each rank's shard is its chunks in order, end to end, each at most a slot; together the shards
// are the whole of what the collective moves, once.
TEST(CopyEnginePlan, ChunksTileEveryShardOnce) {
  for (Coll coll : {Coll::kAllReduce, Coll::kReduceScatter, Coll::kAllGather}) {
    for (int n : {2, 3, 4, 7, 8}) {
      for (size_t count : {size_t{1}, size_t{5}, size_t{1023}, size_t{100003}, (size_t{1} << 22) + 17}) {
        for (size_t es : {size_t{1}, size_t{2}, size_t{4}, size_t{8}}) {
          const size_t slot = 64 * 1024;
          const CePlan p = device::cePlan(coll, count, es, n, slot);
          SCOPED_TRACE(std::string(algo::collName(coll)) + " n " + std::to_string(n) + " count " +
                       std::to_string(count) + " elem " + std::to_string(es));
          EXPECT_EQ(p.reduces, coll == Coll::kAllReduce || coll == Coll::kReduceScatter);
          EXPECT_EQ(p.gathers, coll != Coll::kReduceScatter);
          EXPECT_EQ(p.chunkElems * es, slot);
          const size_t total = coll == Coll::kAllReduce ? count : count * n;
          size_t covered = 0, longest = 0;
          for (int q = 0; q < n; ++q) {
            const algo::Range shard = device::ceShard(p, q, n);
            EXPECT_EQ(shard.begin, covered) << "rank " << q;
            size_t at = shard.begin;
            for (uint32_t c = 0; c < p.chunks; ++c) {
              const algo::Range chunk = device::ceChunk(p, q, n, c);
              EXPECT_EQ(chunk.begin, at) << "rank " << q << " chunk " << c;
              EXPECT_LE(chunk.size(), p.chunkElems);
              at = chunk.end;
            }
            EXPECT_EQ(at, shard.end) << "rank " << q;
            covered = shard.end;
            longest = std::max(longest, shard.size());
          }
          EXPECT_EQ(covered, total);
          // No chunk more than the longest shard needs: the last one of it is not empty.
          ASSERT_GT(p.chunks, 0u);
          EXPECT_EQ((longest + p.chunkElems - 1) / p.chunkElems, p.chunks);
        }
      }
    }
  }
}

// A broadcast is one sender's all-gather half: the root's shard is the whole message, the others'
// are empty; the root's side streams push every chunk into each peer's AG slot, the others' only
// wait for the peer's kernel to be done.
TEST(CopyEnginePlan, BroadcastIsTheRootsPushes) {
  for (int n : {2, 3, 8}) {
    for (int root : {0, n - 1}) {
      const size_t count = 100003, slot = 64 * 1024;
      const CePlan p = device::cePlan(Coll::kBroadcast, count, 4, n, slot, root);
      EXPECT_FALSE(p.reduces);
      EXPECT_TRUE(p.gathers);
      EXPECT_EQ(p.chunks, (count * 4 + slot - 1) / slot);
      for (int q = 0; q < n; ++q) {
        const algo::Range shard = device::ceShard(p, q, n);
        EXPECT_EQ(shard.size(), q == root ? count : 0u) << "rank " << q;
        for (int peer = 0; peer < n; ++peer) {
          if (peer == q) continue;
          const std::vector<exec::CeOp> ops = exec::cePeerProgram(p, q, peer, n);
          size_t copied = 0, copies = 0;
          for (const exec::CeOp& op : ops) {
            if (op.kind != exec::CeOp::Kind::kCopy) continue;
            EXPECT_TRUE(op.gather);
            EXPECT_FALSE(op.fromOutput);
            EXPECT_EQ(op.srcElem, copied) << "the input in order";
            copied += op.elems;
            ++copies;
          }
          EXPECT_EQ(copied, q == root ? count : 0u) << "rank " << q << " to " << peer;
          EXPECT_EQ(copies, q == root ? p.chunks : 0u);
          ASSERT_FALSE(ops.empty());
          EXPECT_EQ(ops.front().kind, exec::CeOp::Kind::kRaise) << "the call has begun here";
          EXPECT_EQ(ops.front().word, exec::CeWord::kSent);
          EXPECT_EQ(ops.back().kind, exec::CeOp::Kind::kWait);
          EXPECT_EQ(ops.back().word, exec::CeWord::kDone);
        }
      }
    }
  }
}

// Every (half, sender, slot) of a receiver's region is its own slot, after the words and within the
// region; each sender of a receiver has its own owner index.
TEST(CopyEnginePlan, SlotsOfARegionAreDisjoint) {
  for (int n : {2, 3, 8}) {
    const size_t slot = 128 * 1024, region = device::ceRegionBytes(n, slot);
    for (int to = 0; to < n; ++to) {
      std::set<size_t> offsets;
      std::set<int> owners;
      for (int from = 0; from < n; ++from) {
        if (from == to) continue;
        const int owner = device::ceSlotOwner(from, to, n);
        EXPECT_GE(owner, 0);
        EXPECT_LT(owner, n - 1);
        owners.insert(owner);
        for (bool gather : {false, true}) {
          for (int s = 0; s < device::kCeDepth; ++s) {
            const size_t off = device::ceSlotOffset(gather, owner, s, n, slot);
            EXPECT_GE(off, device::kCeWordsBytes);
            EXPECT_LE(off + slot, region);
            EXPECT_EQ(off % slot, device::kCeWordsBytes % slot);
            offsets.insert(off);
          }
        }
      }
      EXPECT_EQ(owners.size(), static_cast<size_t>(n - 1));
      EXPECT_EQ(offsets.size(), static_cast<size_t>(2 * (n - 1) * device::kCeDepth));
    }
  }
  // The words a rank's stream clears come before the ones the kernels clear.
  EXPECT_LT(device::kCeClearedBytes, sizeof(device::CeWords));
}

TEST(CopyEnginePlan, SlotsStayWithinTheirBudget) {
  EXPECT_EQ(exec::ceSlotLimit(1, 2 << 20), 0u);
  EXPECT_EQ(exec::ceSlotLimit(9, 2 << 20), 0u);
  EXPECT_EQ(exec::ceSlotLimit(2, 2 << 20), size_t{2} << 20);
  EXPECT_EQ(exec::ceSlotLimit(2, 100000), size_t{65536});
  EXPECT_EQ(exec::ceSlotLimit(2, 1000), 0u);
  for (int n = 2; n <= 8; ++n) {
    const size_t slot = exec::ceSlotLimit(n, size_t{1} << 30);
    EXPECT_GT(slot, 0u) << n;
    EXPECT_LE(device::ceRegionBytes(n, slot), (size_t{32} << 20) + device::kCeWordsBytes) << n;
  }
}

using tune::Decision;
using tune::Tuner;
using tune::TunerConfig;
using tune::testing::fixture;
using tune::testing::machineOf;
using tune::testing::tunerFor;

// The tuner offers the path only once the engine says it has it; a small CTA budget makes it the
// choice for large all-reduce (its reducer needs fewer CTAs than a ring needs for the same rate),
// never for small calls or the collectives it does not run.
TEST(CopyEngineTuner, ChosenForLargeCallsOnASmallCtaBudget) {
  const tune::Machine m = machineOf(fixture("h200-2gpu.xml"));
  const size_t big = size_t{256} << 20;
  TunerConfig budget;
  budget.maxCTAs = 4;
  Tuner without = tunerFor(m, budget);
  EXPECT_NE(without.decide(Coll::kAllReduce, big).algo, algo::Algo::kCopyEngine);
  Tuner with = tunerFor(m, budget);
  with.setCopyEngine(64, false);
  const Decision d = with.decide(Coll::kAllReduce, big);
  EXPECT_EQ(d.algo, algo::Algo::kCopyEngine) << tune::describe(d);
  EXPECT_EQ(d.channels, 4) << "the reducer keeps to the budget";
  EXPECT_NE(with.decide(Coll::kAllReduce, 8).algo, algo::Algo::kCopyEngine);
  EXPECT_NE(with.decide(Coll::kReduce, big).algo, algo::Algo::kCopyEngine);
  // Its prediction: the copy engines' rate, or what the reducing CTAs reach, whichever is less.
  const tune::Prediction two = predict(with.machine(), Coll::kAllReduce, algo::Algo::kCopyEngine, tune::Proto::kSimple,
                                       big, 2),
                         many = predict(with.machine(), Coll::kAllReduce, algo::Algo::kCopyEngine, tune::Proto::kSimple,
                                        big, 64);
  EXPECT_LT(two.bandwidthGBs, many.bandwidthGBs);
  EXPECT_DOUBLE_EQ(many.bandwidthGBs, with.machine().ceGBs);
}

// BRAID_CE=1 (forced): every collective the path runs takes it, at every size, where the lists
// allow it; an algorithm list without "ce" still wins.
TEST(CopyEngineTuner, ForcedWhereTheListsAllowIt) {
  const tune::Machine m = machineOf(fixture("h200-2gpu.xml"));
  Tuner forced = tunerFor(m);
  forced.setCopyEngine(16, true);
  for (Coll c : {Coll::kAllReduce, Coll::kReduceScatter, Coll::kAllGather, Coll::kBroadcast}) {
    for (size_t bytes : {size_t{8}, size_t{1} << 20, size_t{1} << 30})
      EXPECT_EQ(forced.decide(c, bytes).algo, algo::Algo::kCopyEngine) << algo::collName(c) << " " << bytes;
  }
  EXPECT_NE(forced.decide(Coll::kReduce, 1 << 20).algo, algo::Algo::kCopyEngine);
  TunerConfig ring;
  ring.algorithm = "ring";
  Tuner listed = tunerFor(m, ring);
  listed.setCopyEngine(16, true);
  EXPECT_EQ(listed.decide(Coll::kAllReduce, 1 << 20).algo, algo::Algo::kRing);
  // Not offered (no slots, or ranks that do not reach each other): never, forced or listed.
  TunerConfig only;
  only.algorithm = "ce";
  Tuner none = tunerFor(m, only);
  none.setCopyEngine(0, true);
  const Decision d = none.decide(Coll::kAllReduce, 1 << 20);
  EXPECT_EQ(d.algo, algo::Algo::kRing);
  EXPECT_NE(d.note.find("nothing allowed"), std::string::npos) << tune::describe(d);
}

}  // namespace
}  // namespace braid
