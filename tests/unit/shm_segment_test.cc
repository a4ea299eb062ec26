// The shared-memory segment protocol, both sides in this process: whoever comes first creates the
// segment, the second side unlinks its name, a geometry mismatch is a clear error, and a segment
// whose peer never came is unlinked by its destructor.
#include "transport/shm_segment.h"

#include <gtest/gtest.h>
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

bool nameExists(const std::string& name) { return access(("/dev/shm" + name).c_str(), F_OK) == 0; }

TEST(ShmSegment, BothSidesShareOneFifoAndTheNameGoesAway) {
  std::string name = uniqueName(1);
  std::unique_ptr<ShmFifoSegment> a, b;
  ASSERT_TRUE(ShmFifoSegment::attach(name, 4, 256, 1000, StopFlags{}, 1, getpid(), &a).isOk());
  EXPECT_TRUE(nameExists(name));  // waiting for its peer
  ASSERT_TRUE(ShmFifoSegment::attach(name, 4, 256, 1000, StopFlags{}, 0, getpid(), &b).isOk());
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
  ASSERT_TRUE(ShmFifoSegment::attach(name, 8, 256, 1000, StopFlags{}, 1, getpid(), &a).isOk());
  Status s = ShmFifoSegment::attach(name, 4, 256, 1000, StopFlags{}, 0, getpid(), &b);
  EXPECT_EQ(s.code(), Code::kInvalidUsage);
  EXPECT_NE(s.message().find("BRAID_STEPS / BRAID_CHUNK_BYTES differ"), std::string::npos) << s.message();
}

TEST(ShmSegment, UnattendedSegmentIsUnlinkedOnDestruction) {
  std::string name = uniqueName(3);
  std::unique_ptr<ShmFifoSegment> a;
  ASSERT_TRUE(ShmFifoSegment::attach(name, 2, 64, 1000, StopFlags{}, 1, getpid(), &a).isOk());
  EXPECT_TRUE(nameExists(name));
  a.reset();
  EXPECT_FALSE(nameExists(name));
}

// A closed FIFO ends the other side's wait at once and says who closed it.
TEST(ShmSegment, CloseEndsThePeersWait) {
  std::string name = uniqueName(4);
  std::unique_ptr<ShmFifoSegment> a, b;
  ASSERT_TRUE(ShmFifoSegment::attach(name, 2, 64, 1000, StopFlags{}, 1, getpid(), &a).isOk());
  ASSERT_TRUE(ShmFifoSegment::attach(name, 2, 64, 1000, StopFlags{}, 0, getpid(), &b).isOk());
  a->fifo().close(3);
  size_t bytes = 0;
  EXPECT_EQ(b->fifo().waitReadable(&bytes, StopFlags{}), nullptr);
  EXPECT_EQ(b->fifo().closedBy(), 3);
}

}  // namespace
}  // namespace braid::transport
