// The export service (core/export_service.h) with a target that maps nothing: what it answers to
// opens and closes, to requests for another communicator or rank, and to junk; and that a listener
// going away drops the mappings its peers left open.
#include "core/export_service.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "net/socket.h"

namespace braid {
namespace {

constexpr uint64_t kKey = 0x1234567887654321ull;
constexpr int64_t kTimeoutMs = 5000;

// A target that "maps" an allocation at an address made from the handle's first byte, and counts.
struct FakeTarget {
  std::mutex mu;
  std::map<int, int> mapped;  // the handle's first byte -> mappings held
  int opens = 0, closes = 0;
  bool failOpens = false;

  // The test reads what the service's thread wrote (the reply's socket orders them; TSan sees locks).
  int held(int first) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = mapped.find(first);
    return it == mapped.end() ? 0 : it->second;
  }
  size_t handlesHeld() {
    std::lock_guard<std::mutex> lock(mu);
    return mapped.size();
  }
  int counted(const int& n) {
    std::lock_guard<std::mutex> lock(mu);
    return n;
  }

  core::ExportTarget target() {
    return core::ExportTarget{[this](const uint8_t* ipc, uint64_t* at) {
                                std::lock_guard<std::mutex> lock(mu);
                                if (failOpens) return systemError("the fake cannot map it");
                                ++opens;
                                ++mapped[ipc[0]];
                                *at = 0x7f0000000000ull + (static_cast<uint64_t>(ipc[0]) << 20);
                                return Status::ok();
                              },
                              [this](const uint8_t* ipc) {
                                std::lock_guard<std::mutex> lock(mu);
                                ++closes;
                                if (--mapped[ipc[0]] == 0) mapped.erase(ipc[0]);
                              }};
  }
};

struct Service {
  std::unique_ptr<core::ExportListener> listener;
  net::SocketAddress address;

  explicit Service(int rank) {
    net::SocketAddress loopback;  // the port is replaced by one the kernel picks
    EXPECT_TRUE(net::parseHostPort("127.0.0.1:1", &loopback).isOk());
    EXPECT_TRUE(core::ExportListener::listen(loopback, rank, &listener).isOk());
    address = loopback;
    address.setPort(listener->port());
  }
};

std::vector<uint8_t> handleNamed(uint8_t first) {
  std::vector<uint8_t> h(core::kIpcHandleBytes, 0xab);
  h[0] = first;
  return h;
}

TEST(ExportService, OpensAndClosesForTheRankItServes) {
  FakeTarget fake;
  Service service(3);
  ASSERT_NE(service.listener->port(), 0);
  const auto h = handleNamed(5);
  uint64_t at = 0;
  Status st = core::askExportService(service.address, kKey, 3, 0, true, h.data(), kTimeoutMs, &at);
  EXPECT_EQ(st.code(), Code::kRemoteError) << "refused before serve(): " << st.message();
  EXPECT_NE(st.message().find("not served here"), std::string::npos) << st.message();
  EXPECT_TRUE(core::askExportService(service.address, kKey, 3, 0, false, h.data(), kTimeoutMs, &at).isOk())
      << "a rank not served holds no mapping: dropping one succeeds";

  service.listener->serve(kKey, fake.target());
  ASSERT_TRUE(core::askExportService(service.address, kKey, 3, 0, true, h.data(), kTimeoutMs, &at).isOk());
  EXPECT_EQ(at, 0x7f0000000000ull + (5ull << 20));
  uint64_t again = 0;
  ASSERT_TRUE(core::askExportService(service.address, kKey, 3, 1, true, h.data(), kTimeoutMs, &again).isOk());
  EXPECT_EQ(again, at);
  EXPECT_EQ(fake.held(5), 2);

  ASSERT_TRUE(core::askExportService(service.address, kKey, 3, 0, false, h.data(), kTimeoutMs, &at).isOk());
  EXPECT_EQ(fake.held(5), 1);
  // Another communicator's key, another rank, a handle never opened: refused, nothing changes.
  st = core::askExportService(service.address, kKey ^ 1, 3, 0, true, h.data(), kTimeoutMs, &at);
  EXPECT_NE(st.message().find("rank 3 of that communicator is not served here"), std::string::npos) << st.message();
  st = core::askExportService(service.address, kKey, 2, 0, true, h.data(), kTimeoutMs, &at);
  EXPECT_NE(st.message().find("not served here"), std::string::npos) << st.message();
  const auto other = handleNamed(9);
  st = core::askExportService(service.address, kKey, 3, 1, false, other.data(), kTimeoutMs, &at);
  EXPECT_NE(st.message().find("no such mapping is open for rank 1"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("the export service of rank 3 could not unmap"), std::string::npos) << st.message();
  EXPECT_EQ(fake.counted(fake.opens), 2);
  EXPECT_EQ(fake.counted(fake.closes), 1);
}

TEST(ExportService, ATargetThatCannotMapIsNamed) {
  FakeTarget fake;
  fake.failOpens = true;
  Service service(0);
  service.listener->serve(kKey, fake.target());
  const auto h = handleNamed(1);
  uint64_t at = 0;
  Status st = core::askExportService(service.address, kKey, 0, 2, true, h.data(), kTimeoutMs, &at);
  EXPECT_EQ(st.code(), Code::kRemoteError);
  EXPECT_NE(st.message().find("the export service of rank 0 could not map the buffer: the fake cannot map it"),
            std::string::npos)
      << st.message();
}

// Junk (a wrong magic, a request cut short and left open, a connection closed at once) is dropped
// unanswered; the next real request is served.
TEST(ExportService, JunkOnTheListenerChangesNothing) {
  FakeTarget fake;
  Service service(1);
  service.listener->serve(kKey, fake.target());
  const net::Deadline soon = net::Deadline::in(kTimeoutMs, nullptr);
  std::vector<net::Socket> held(3);
  for (net::Socket& s : held) {
    ASSERT_TRUE(net::Socket::connect(service.address, "the export service", soon, &s, false).isOk());
  }
  std::vector<char> junk(sizeof(core::ExportRequest), 'j');
  EXPECT_TRUE(held[0].sendAll(junk.data(), junk.size(), soon).isOk());
  EXPECT_TRUE(held[1].sendAll(junk.data(), 10, soon).isOk());  // cut short, left open
  held[2].close();
  char c;
  EXPECT_EQ(held[0].recvAll(&c, 1, soon).code(), Code::kRemoteError);  // closed without an answer
  const auto h = handleNamed(7);
  uint64_t at = 0;
  EXPECT_TRUE(core::askExportService(service.address, kKey, 1, 0, true, h.data(), kTimeoutMs, &at).isOk());
  EXPECT_EQ(fake.counted(fake.opens), 1);
}

// A rank that stops serving (its communicator destroyed) drops what its peers left mapped.
TEST(ExportService, ARankThatGoesDropsTheMappingsLeftOpen) {
  FakeTarget fake;
  {
    Service service(0);
    service.listener->serve(kKey, fake.target());
    uint64_t at = 0;
    for (uint8_t first : {1, 1, 2}) {
      const auto h = handleNamed(first);
      ASSERT_TRUE(core::askExportService(service.address, kKey, 0, 1, true, h.data(), kTimeoutMs, &at).isOk());
    }
    EXPECT_EQ(fake.handlesHeld(), 2u);
  }
  EXPECT_EQ(fake.handlesHeld(), 0u);
  EXPECT_EQ(fake.counted(fake.closes), 3);
}

// A peer whose service is gone: asking it to map names the rank; asking it to unmap succeeds (its
// mappings went with it).
TEST(ExportService, AServiceThatIsGoneIsNamed) {
  net::SocketAddress gone;
  {
    Service service(4);
    gone = service.address;
  }
  const auto h = handleNamed(1);
  uint64_t at = 0;
  Status st = core::askExportService(gone, kKey, 4, 0, true, h.data(), 2000, &at);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("the export service of rank 4"), std::string::npos) << st.message();
  EXPECT_TRUE(core::askExportService(gone, kKey, 4, 0, false, h.data(), 2000, &at).isOk());
}

}  // namespace
}  // namespace braid
