// A root that receives junk while real ranks bootstrap: every bad connection is dropped and the
// ranks still complete. The junk comes from this process, the ranks are worker processes.
#include <braid/braid.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <thread>

#include "bootstrap/bootstrap.h"
#include "bootstrap/frame.h"
#include "mp_util.h"

namespace braid::test {
namespace {

// A plain blocking TCP client; returns -1 when the root cannot be reached.
int connectTo(const bootstrap::SocketAddress& a) {
  int fd = socket(a.family(), SOCK_STREAM, 0);
  if (fd >= 0 && connect(fd, a.sockaddrPtr(), a.sockaddrLength()) == 0) return fd;
  if (fd >= 0) close(fd);
  return -1;
}

// False when the root no longer listens (it closes its listener once every rank has arrived).
bool sendAndClose(const bootstrap::SocketAddress& a, const void* data, size_t n) {
  int fd = connectTo(a);
  if (fd < 0) return false;
  bool sent = send(fd, data, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n);
  close(fd);
  return sent;
}

TEST(Garbage, RootDropsBadConnectionsAndRealRanksComplete) {
  braidUniqueId id;
  ASSERT_EQ(braidGetUniqueId(&id), braidSuccess);
  bootstrap::UniqueIdBytes bytes;
  std::memcpy(bytes.bytes, id.internal, sizeof(bytes.bytes));
  bootstrap::UniqueIdInfo info;
  ASSERT_TRUE(bootstrap::decodeUniqueId(bytes, &info).isOk());
  const bootstrap::SocketAddress& root = info.root;

  // A silent client holds a connection open through the whole rendezvous.
  int silent = connectTo(root);
  ASSERT_GE(silent, 0);
  // Random bytes.
  std::mt19937 rng(12345);
  std::vector<unsigned char> noise(4096);
  for (auto& b : noise) b = static_cast<unsigned char>(rng());
  ASSERT_TRUE(sendAndClose(root, noise.data(), noise.size()));
  // A well-formed header with the wrong magic.
  bootstrap::FrameHeader wrong = bootstrap::makeHeader(info.magic ^ 1, bootstrap::FrameType::kHello, 40);
  ASSERT_TRUE(sendAndClose(root, &wrong, sizeof(wrong)));
  // A truncated header (then the connection closes).
  bootstrap::FrameHeader good = bootstrap::makeHeader(info.magic, bootstrap::FrameType::kHello, 40);
  ASSERT_TRUE(sendAndClose(root, &good, 10));
  // The right magic claiming a 4 GB payload; the client stays connected, as if it would send it.
  bootstrap::FrameHeader huge = bootstrap::makeHeader(info.magic, bootstrap::FrameType::kHello, uint64_t{4} << 30);
  int liar = connectTo(root);
  ASSERT_GE(liar, 0);
  ASSERT_EQ(send(liar, &huge, sizeof(huge), MSG_NOSIGNAL), static_cast<ssize_t>(sizeof(huge)));

  // More junk arrives while the ranks are joining, until the root has finished and stops listening.
  std::thread late([&] {
    for (int i = 0; i < 20 && sendAndClose(root, noise.data() + i * 100, 100); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  std::vector<Report> reports = runRanksWithId(toHex(&id, sizeof(id)), 4, allRanks(4), "id", {});
  late.join();
  close(silent);
  close(liar);
  ASSERT_EQ(reports.size(), 4u);
  for (const Report& r : reports) EXPECT_TRUE(r.ok()) << r.describe();
}

}  // namespace
}  // namespace braid::test
