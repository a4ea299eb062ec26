// The shared-memory segment protocol, both sides in this process: whoever comes first creates the
// segment, the second side unlinks its name, a geometry mismatch is a clear error, a segment whose
// peer never came is unlinked by its destructor unless it holds a sender's unread slots for a
// receiver that lives, and a receiver removes what was left for it.
#include "transport/shm/shm_segment.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>

namespace braid::transport {
namespace {

std::string uniqueName(int salt) {
  std::random_device rd;
  return ShmFifoSegment::nameFor((uint64_t{rd()} << 32) ^ rd() ^ static_cast<uint64_t>(getpid()), 0, 1, salt, 0);
}

// One side's options: `peer` is the rank at the other end (all in this process); rank 1 receives.
ShmFifoOptions side(int slots, size_t slotBytes, int peer, long peerPid = getpid()) {
  ShmFifoOptions o;
  o.slots = slots;
  o.slotBytes = slotBytes;
  o.timeoutMs = 1000;
  o.peerRank = peer;
  o.peerPid = peerPid;
  o.sender = peer == 1;
  return o;
}

bool nameExists(const std::string& name) { return access(("/dev/shm" + name).c_str(), F_OK) == 0; }

TEST(ShmSegment, BothSidesShareOneFifoAndTheNameGoesAway) {
  std::string name = uniqueName(1);
  std::unique_ptr<ShmFifoSegment> a, b;
  ASSERT_TRUE(ShmFifoSegment::attach(name, side(4, 256, 1), &a).isOk());
  EXPECT_TRUE(nameExists(name));  // waiting for its peer
  ASSERT_TRUE(ShmFifoSegment::attach(name, side(4, 256, 0), &b).isOk());
  EXPECT_FALSE(nameExists(name));  // both mapped: unlinked
  char* slot = a->fifo().waitWritable(StopFlags{});
  ASSERT_NE(slot, nullptr);
  std::memcpy(slot, "braid", 6);
  a->fifo().publish(6);
  size_t bytes = 0;
  const char* got = b->fifo().waitReadable(&bytes, StopFlags{});
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(bytes, 6u);
  EXPECT_STREQ(got, "braid");
  b->fifo().release();
}

TEST(ShmSegment, GeometryMismatchIsAClearError) {
  std::string name = uniqueName(2);
  std::unique_ptr<ShmFifoSegment> a, b;
  ASSERT_TRUE(ShmFifoSegment::attach(name, side(8, 256, 1), &a).isOk());
  Status s = ShmFifoSegment::attach(name, side(4, 256, 0), &b);
  EXPECT_EQ(s.code(), Code::kInvalidUsage);
  EXPECT_NE(s.message().find("BRAID_STEPS / BRAID_CHUNK_BYTES differ"), std::string::npos) << s.message();
}

TEST(ShmSegment, UnattendedSegmentIsUnlinkedOnDestruction) {
  std::string name = uniqueName(3);
  std::unique_ptr<ShmFifoSegment> a;
  ASSERT_TRUE(ShmFifoSegment::attach(name, side(2, 64, 1), &a).isOk());
  EXPECT_TRUE(nameExists(name));
  a.reset();
  EXPECT_FALSE(nameExists(name));
}

// A pid that is certainly gone: a child that exited and was reaped.
long deadPid() {
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

// The exit race: a sender publishes and goes before its receiver has attached. Its name stays while
// the receiver lives and has not read, and the receiver, attaching later, reads the message and
// removes the name.
TEST(ShmSegment, UnreadSlotsOfADepartedSenderStayReadable) {
  std::string name = uniqueName(5);
  std::unique_ptr<ShmFifoSegment> sender, receiver;
  ASSERT_TRUE(ShmFifoSegment::attach(name, side(4, 64, 1), &sender).isOk());
  char* slot = sender->fifo().waitWritable(StopFlags{});
  ASSERT_NE(slot, nullptr);
  std::memcpy(slot, "late", 5);
  sender->fifo().publish(5);
  sender.reset();
  ASSERT_TRUE(nameExists(name)) << "the sender's unread message was unlinked";
  ASSERT_TRUE(ShmFifoSegment::attach(name, side(4, 64, 0), &receiver).isOk());
  EXPECT_FALSE(nameExists(name));
  size_t bytes = 0;
  const char* got = receiver->fifo().waitReadable(&bytes, StopFlags{});
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(bytes, 5u);
  EXPECT_STREQ(got, "late");
}

// ... but not for a receiver that is gone, nor once the slots were read, nor after the sender's call
// failed, nor for a receiver's side.
TEST(ShmSegment, NameGoesWhenNobodyCanReadIt) {
  std::string deadReceiver = uniqueName(6), readAll = uniqueName(7), receiverSide = uniqueName(8);
  std::unique_ptr<ShmFifoSegment> a, b;
  ASSERT_TRUE(ShmFifoSegment::attach(deadReceiver, side(4, 64, 1, deadPid()), &a).isOk());
  a->fifo().waitWritable(StopFlags{});
  a->fifo().publish(1);
  a.reset();
  EXPECT_FALSE(nameExists(deadReceiver));

  ASSERT_TRUE(ShmFifoSegment::attach(readAll, side(4, 64, 1), &a).isOk());
  a->fifo().waitWritable(StopFlags{});
  a->fifo().publish(1);
  ASSERT_TRUE(ShmFifoSegment::attach(readAll, side(4, 64, 0), &b).isOk());
  size_t bytes = 0;
  ASSERT_NE(b->fifo().waitReadable(&bytes, StopFlags{}), nullptr);
  b->fifo().release();
  a.reset();
  b.reset();
  EXPECT_FALSE(nameExists(readAll));

  // A sender whose call failed (it closed the FIFO): its slots will never be read.
  const std::string closedName = uniqueName(9);
  ASSERT_TRUE(ShmFifoSegment::attach(closedName, side(4, 64, 1), &a).isOk());
  a->fifo().waitWritable(StopFlags{});
  a->fifo().publish(1);
  a->fifo().close(0);
  a.reset();
  EXPECT_FALSE(nameExists(closedName));

  ShmFifoOptions o = side(4, 64, 1);
  o.sender = false;  // a receiver whose FIFO somehow holds data: it will read no more
  ASSERT_TRUE(ShmFifoSegment::attach(receiverSide, o, &a).isOk());
  a->fifo().waitWritable(StopFlags{});
  a->fifo().publish(1);
  a.reset();
  EXPECT_FALSE(nameExists(receiverSide));
}

// A receiver that never attached removes what was left for it, and only that.
TEST(ShmSegment, UnlinkAddressedToRemovesOnlyTheReceiversNames) {
  std::random_device rd;
  const uint64_t key = (uint64_t{rd()} << 32) ^ rd();
  const std::string toTwo = ShmFifoSegment::nameFor(key, 0, 2, 1, 3), toOne = ShmFifoSegment::nameFor(key, 2, 1, 0, 0),
                    otherComm = ShmFifoSegment::nameFor(key ^ 1, 0, 2, 0, 0);
  std::unique_ptr<ShmFifoSegment> a, b, c;
  ASSERT_TRUE(ShmFifoSegment::attach(toTwo, side(2, 64, 1), &a).isOk());
  ASSERT_TRUE(ShmFifoSegment::attach(toOne, side(2, 64, 1), &b).isOk());
  ASSERT_TRUE(ShmFifoSegment::attach(otherComm, side(2, 64, 1), &c).isOk());
  ShmFifoSegment::unlinkAddressedTo(key, {2});
  EXPECT_FALSE(nameExists(toTwo));
  EXPECT_TRUE(nameExists(toOne));
  EXPECT_TRUE(nameExists(otherComm));
}

// A receiver that made its segment and was killed before its sender came (its name is left as a
// killed process leaves it): the names addressed to it are removed as a peer of its host lets its
// links go, and only those: a live peer's stay.
TEST(ShmSegment, APeersLinksRemoveWhatWasLeftForADeadReceiver) {
  std::random_device rd;
  const uint64_t key = (uint64_t{rd()} << 32) ^ rd();
  const std::string toDead = ShmFifoSegment::nameFor(key, 0, 1, 0, 0),
                    toLive = ShmFifoSegment::nameFor(key, 0, 2, 0, 0);
  for (const std::string& name : {toDead, toLive}) {
    const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    ASSERT_GE(fd, 0) << name;
    close(fd);
  }
  { ShmLinks links(key, 0, side(2, 64, 1), {static_cast<long>(getpid()), deadPid(), static_cast<long>(getpid())}); }
  EXPECT_FALSE(nameExists(toDead));
  EXPECT_TRUE(nameExists(toLive));
  shm_unlink(toLive.c_str());
  shm_unlink(toDead.c_str());  // (left only where the links failed to remove it)
}

// A closed FIFO ends the other side's wait at once and says who closed it.
TEST(ShmSegment, CloseEndsThePeersWait) {
  std::string name = uniqueName(4);
  std::unique_ptr<ShmFifoSegment> a, b;
  ASSERT_TRUE(ShmFifoSegment::attach(name, side(2, 64, 1), &a).isOk());
  ASSERT_TRUE(ShmFifoSegment::attach(name, side(2, 64, 0), &b).isOk());
  a->fifo().close(3);
  size_t bytes = 0;
  EXPECT_EQ(b->fifo().waitReadable(&bytes, StopFlags{}), nullptr);
  EXPECT_EQ(b->fifo().closedBy(), 3);
}

}  // namespace
}  // namespace braid::transport
