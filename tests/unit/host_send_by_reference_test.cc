// Sends by reference (HostFifo::publishRef) on their own: the FIFO side (what stays in the slot,
// when a slot counts as freed) and the lane side (RefLedger through HostPrims: a lane writes
// nothing over bytes the network may still be reading, and ends its call only once they are sent).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "exec/host_prims.h"
#include "transport/host_fifo.h"

namespace braid::exec {
namespace {

using transport::HostFifo;
using transport::StopFlags;

constexpr size_t kLarge = HostFifo::kMinReferenceBytes;

std::unique_ptr<HostFifo> referenceFifo(size_t slotBytes) {
  auto fifo = std::make_unique<HostFifo>(4, slotBytes);
  fifo->allowByReference();
  return fifo;
}

TEST(HostFifoByReference, TheConsumerFindsTheDataWhereItLiesUntilItFreesTheSlot) {
  auto fifo = referenceFifo(kLarge);
  std::atomic<bool> abort{false};
  StopFlags stop{&abort, nullptr};
  EXPECT_TRUE(fifo->referenceSaves(kLarge));
  EXPECT_FALSE(fifo->referenceSaves(kLarge - 1));
  EXPECT_FALSE(HostFifo(4, kLarge).referenceSaves(kLarge)) << "only where allowed";
  std::vector<char> data(kLarge, 7);
  char* slot = fifo->waitWritable(stop);
  ASSERT_NE(slot, nullptr);
  std::memset(slot, 0, kLarge);
  uint64_t counter = fifo->publishRef(data.data(), data.size());
  EXPECT_EQ(counter, 0u);
  EXPECT_EQ(fifo->refAt(counter), data.data());
  EXPECT_EQ(fifo->sizeAt(counter), data.size());
  EXPECT_EQ(slot[0], 0) << "the data was copied, not referenced";
  EXPECT_FALSE(fifo->released(counter));
  size_t bytes = 0;
  ASSERT_NE(fifo->waitReadable(&bytes, stop), nullptr);
  EXPECT_EQ(bytes, data.size());
  fifo->release();
  EXPECT_TRUE(fifo->released(counter));
  EXPECT_TRUE(fifo->waitReleased(counter, stop));
  // A slot published by copy after it names no caller memory.
  ASSERT_NE(fifo->waitWritable(stop), nullptr);
  fifo->publish(8);
  EXPECT_EQ(fifo->refAt(1), nullptr);
}

TEST(HostFifoByReference, WaitingForAFreedSlotEndsWhenTheFifoCloses) {
  auto fifo = referenceFifo(kLarge);
  std::atomic<bool> abort{false};
  StopFlags stop{&abort, nullptr};
  std::vector<char> data(kLarge);
  ASSERT_NE(fifo->waitWritable(stop), nullptr);
  uint64_t counter = fifo->publishRef(data.data(), data.size());
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    fifo->close(1, "test");
  });
  EXPECT_FALSE(fifo->waitReleased(counter, stop));
  closer.join();
}

// One lane of a two-rank call on float32 sums, its send FIFO allowing sends by reference.
struct Lane {
  std::atomic<bool> abort{false};
  CallFailure failure;
  HostCall call;
  std::unique_ptr<HostFifo> send = referenceFifo(kLarge);
  std::unique_ptr<HostFifo> recv = std::make_unique<HostFifo>(4, kLarge);
  RefLedger refs;
  std::vector<float> in, out;

  explicit Lane(size_t n) : in(n), out(n) {
    for (size_t i = 0; i < n; ++i) in[i] = out[i] = static_cast<float>(i + 1);
    call.input = reinterpret_cast<const char*>(in.data());
    call.output = reinterpret_cast<char*>(out.data());
    call.elemSize = sizeof(float);
    call.nranks = 2;
    call.abort = &abort;
    call.failure = &failure;
    call.sendsByReference = true;
  }
  HostPrims prims() {
    const int peer = 1;
    HostFifo* r = recv.get();
    HostFifo* s = send.get();
    return HostPrims(call, &peer, &r, 1, &peer, &s, 1, 0, &refs);
  }
  // The peer's slot: `n` copies of `v`.
  void peerSends(size_t n, float v) {
    StopFlags stop{&abort, nullptr};
    auto* slot = reinterpret_cast<float*>(recv->waitWritable(stop));
    for (size_t i = 0; i < n; ++i) slot[i] = v;
    recv->publish(n * sizeof(float));
  }
};

// Recursive doubling's step: send a block, then reduce the peer's into it. The reduce waits until
// the network has read the block (its slot freed), so what was sent is the block before the reduce.
TEST(SendByReference, AReduceIntoABlockInFlightWaitsUntilItIsSent) {
  const size_t n = kLarge / sizeof(float);
  Lane lane(n);
  lane.peerSends(n, 100.0f);
  std::atomic<bool> reduced{false};
  std::thread worker([&] {
    HostPrims p = lane.prims();
    p.sendOutput(0, n);
    p.recvReduceOutput(0, n, false);
    reduced = true;
  });
  StopFlags stop{&lane.abort, nullptr};
  size_t bytes = 0;
  ASSERT_NE(lane.send->waitReadable(&bytes, stop), nullptr);
  ASSERT_EQ(bytes, n * sizeof(float));
  const float* sent = reinterpret_cast<const float*>(lane.send->refAt(0));
  ASSERT_EQ(sent, lane.out.data()) << "the block was copied, not sent by reference";
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(reduced.load()) << "the reduce did not wait for the send";
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(sent[i], static_cast<float>(i + 1)) << i;
  lane.send->release();
  worker.join();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(lane.out[i], static_cast<float>(i + 1) + 100.0f) << i;
  EXPECT_FALSE(lane.failure.failed.load());
}

// A lane's call ends (drain) only once the network has read what it sent by reference.
TEST(SendByReference, TheLaneEndsOnlyOnceItsSendsAreSent) {
  const size_t n = kLarge / sizeof(float);
  Lane lane(n);
  std::atomic<bool> drained{false};
  std::thread worker([&] {
    HostPrims p = lane.prims();
    p.send(0, n);
    drained = lane.refs.drain(lane.call.stop(), 0);
  });
  StopFlags stop{&lane.abort, nullptr};
  size_t bytes = 0;
  ASSERT_NE(lane.send->waitReadable(&bytes, stop), nullptr);
  EXPECT_EQ(lane.send->refAt(0), reinterpret_cast<const char*>(lane.in.data()));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(drained.load()) << "the lane ended with its send still in flight";
  lane.send->release();
  worker.join();
  EXPECT_TRUE(drained.load());
  EXPECT_TRUE(lane.refs.empty());
}

// A call that stops with a send in flight (it failed, or the watchdog ended it) closes that
// connection and returns only once the network reads nothing more from the caller's memory.
TEST(SendByReference, ACallThatStopsClosesItsSendsInFlightAndWaitsForTheNetwork) {
  const size_t n = kLarge / sizeof(float);
  Lane lane(n);
  lane.call.rank = 3;
  {
    HostPrims p = lane.prims();
    p.send(0, n);
  }
  ASSERT_EQ(lane.send->refAt(0), reinterpret_cast<const char*>(lane.in.data()));
  lane.failure.failed = true;  // another lane of the call failed
  std::atomic<int> drained{-1};
  std::thread worker([&] { drained = lane.refs.drain(lane.call.stop(), lane.call.rank) ? 1 : 0; });
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (lane.send->closedBy() < 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  EXPECT_EQ(lane.send->closedBy(), 3);
  EXPECT_NE(lane.send->closeReason().find("rank 3 gave up on a call with data in flight"), std::string::npos)
      << lane.send->closeReason();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(drained.load(), -1) << "returned while the network may still read the caller's memory";
  lane.send->markReadersDone();  // the transport: every lane of the connection closed
  worker.join();
  EXPECT_EQ(drained.load(), 0);
  EXPECT_TRUE(lane.refs.empty());
}

// Small sends and calls that do not allow it are copied.
TEST(SendByReference, SmallSendsAndCallsWithoutItAreCopied) {
  for (bool allowed : {true, false}) {
    const size_t n = allowed ? kLarge / sizeof(float) - 1 : kLarge / sizeof(float);
    Lane lane(n);
    lane.call.sendsByReference = allowed;
    HostPrims p = lane.prims();
    p.send(0, n);
    EXPECT_EQ(lane.send->refAt(0), nullptr) << "allowed " << allowed;
    EXPECT_TRUE(lane.refs.empty());
    size_t bytes = 0;
    StopFlags stop{&lane.abort, nullptr};
    const char* slot = lane.send->waitReadable(&bytes, stop);
    ASSERT_NE(slot, nullptr);
    EXPECT_EQ(std::memcmp(slot, lane.in.data(), bytes), 0);
  }
}

}  // namespace
}  // namespace braid::exec
