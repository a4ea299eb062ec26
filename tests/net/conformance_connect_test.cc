// The conformance suite (conformance.h): properties, making and closing connections, bad handles,
// junk on the listener.
#include "conformance.h"

namespace braid::network::conformance {
namespace {

TEST_P(NetConformance, PropertiesAreUsable) {
  int n = 0;
  ASSERT_EQ(net_->devices(&n), ncclSuccess);
  for (int d = 0; d < n; ++d) {
    NetPropertiesV11 p;
    ASSERT_EQ(net_->getProperties(d, &p), ncclSuccess);
    ASSERT_NE(p.name, nullptr);
    EXPECT_NE(p.ptrSupport & kPtrHost, 0) << "device " << d << " " << p.name;
    EXPECT_GT(p.speed, 0);
    EXPECT_GT(p.maxComms, 0);
    EXPECT_GE(p.maxRecvs, 1);
    EXPECT_GE(p.maxP2pBytes, size_t{1} << 20);
  }
  NetPropertiesV11 p;
  EXPECT_NE(net_->getProperties(n, &p), ncclSuccess) << "a device past the last is an error";
  EXPECT_FALSE(takeWarnings().empty()) << "the error is logged";
}

TEST_P(NetConformance, AcceptBeforeConnect) {
  char handle[kNetHandleBytes];
  void* l = nullptr;
  listen(handle, &l);
  void* r = nullptr;
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(net_->accept(l, &r, nullptr), ncclSuccess);
    ASSERT_EQ(r, nullptr) << "accept returned a connection nobody made";
  }
  void* s = nullptr;
  connectTo(handle, l, &s, &r);
  roundTrip(s, r, 100, 100, true);
}

TEST_P(NetConformance, ConnectCompletesBeforeAccept) {
  char handle[kNetHandleBytes];
  void* l = nullptr;
  listen(handle, &l);
  void* s = nullptr;
  ncclResult_t rs = ncclSuccess;
  until([&] {
    rs = net_->connect(ctx_, 0, handle, &s, nullptr);
    return rs != ncclSuccess || s != nullptr;
  });
  ASSERT_EQ(rs, ncclSuccess) << takeWarnings();
  ASSERT_NE(s, nullptr) << "a connect completes without the peer's accept (the network queues it)";
  sends_.push_back(s);
  void* r = nullptr;
  ASSERT_TRUE(until([&] { return net_->accept(l, &r, nullptr) != ncclSuccess || r != nullptr; }));
  ASSERT_NE(r, nullptr);
  recvs_.push_back(r);
  roundTrip(s, r, 4096, 4096, false);
}

TEST_P(NetConformance, CloseWithRequestsInFlight) {
  void *s, *r;
  connectPair(&s, &r);
  std::vector<char> out(8 << 20, 'x'), in(8 << 20);
  void* sq = isend(s, out.data(), out.size(), 1, reg(s, out.data(), out.size()));
  void* rq = irecv(r, in.data(), in.size(), 1, reg(r, in.data(), in.size()));
  int done = 0;
  net_->test(sq, &done, nullptr);
  net_->test(rq, &done, nullptr);
  // Closing both ends with the requests unfinished frees them; nothing may touch them after.
  closeSend(s);
  closeRecv(r);
}

TEST_P(NetConformance, TwoConnectionsBetweenTheSamePair) {
  char handle[kNetHandleBytes];
  void* l = nullptr;
  listen(handle, &l);
  char copy[kNetHandleBytes];
  std::memcpy(copy, handle, sizeof(copy));
  void *s1, *r1, *s2, *r2;
  connectTo(handle, l, &s1, &r1);
  connectTo(copy, l, &s2, &r2);
  ASSERT_NE(s1, s2);
  ASSERT_NE(r1, r2);
  std::vector<char> a(5000, 'a'), b(7000, 'b'), ina(5000), inb(7000);
  std::vector<void*> reqs{irecv(r2, inb.data(), 7000, 2, reg(r2, inb.data(), 7000)),
                          irecv(r1, ina.data(), 5000, 1, reg(r1, ina.data(), 5000)),
                          isend(s2, b.data(), 7000, 2, reg(s2, b.data(), 7000)),
                          isend(s1, a.data(), 5000, 1, reg(s1, a.data(), 5000))};
  std::vector<int> sizes;
  waitAll(reqs, &sizes);
  EXPECT_EQ(ina, a);
  EXPECT_EQ(inb, b);
  EXPECT_EQ(sizes[0], 7000);
  EXPECT_EQ(sizes[1], 5000);
}

TEST_P(NetConformance, BadHandlesAreErrorsNotHangs) {
  char junk[kNetHandleBytes];
  for (size_t i = 0; i < sizeof(junk); ++i) junk[i] = static_cast<char>(i * 37 + 11);
  void* s = nullptr;
  ncclResult_t r = ncclSuccess;
  until(
      [&] {
        r = net_->connect(ctx_, 0, junk, &s, nullptr);
        return r != ncclSuccess || s != nullptr;
      },
      5000);
  EXPECT_NE(r, ncclSuccess) << "a handle of junk bytes must be refused";
  EXPECT_EQ(s, nullptr);
  EXPECT_FALSE(takeWarnings().empty()) << "the refusal says why";

  // A real handle whose listener is gone: refused, within the bound.
  char handle[kNetHandleBytes];
  void* l = nullptr;
  listen(handle, &l);
  net_->closeListen(l);
  listens_.clear();
  r = ncclSuccess;
  s = nullptr;
  until(
      [&] {
        r = net_->connect(ctx_, 0, handle, &s, nullptr);
        return r != ncclSuccess || s != nullptr;
      },
      5000);
  if (s != nullptr) {
    // Some networks complete a connect before the peer answers; the first send then fails.
    sends_.push_back(s);
    char byte = 1;
    void* sq = isend(s, &byte, 1, 0, reg(s, &byte, 1));
    int done = 0;
    until(
        [&] {
          r = net_->test(sq, &done, nullptr);
          return r != ncclSuccess || done;
        },
        5000);
  }
  EXPECT_NE(r, ncclSuccess) << "connecting to a closed listener must fail";
}

TEST_P(NetConformance, JunkSilenceAndWrongHelloOnTheListener) {
  if (!braidPlugin()) GTEST_SKIP() << "needs braid's handle format to find the listener's address";
  char handle[kNetHandleBytes];
  void* l = nullptr;
  listen(handle, &l);
  int silent = rawConnect(handle);
  int junk = rawConnect(handle);
  const char garbage[] = "GET / HTTP/1.0\r\n\r\n";
  ASSERT_EQ(write(junk, garbage, 16), 16);
  int wrong = rawConnect(handle);
  uint64_t hello[2] = {0x627261696448454cull, 42};  // braid's hello magic, a nonce not the listener's
  ASSERT_EQ(write(wrong, hello, sizeof(hello)), static_cast<ssize_t>(sizeof(hello)));
  void* r = nullptr;
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(net_->accept(l, &r, nullptr), ncclSuccess);
    ASSERT_EQ(r, nullptr) << "junk, silence or a wrong hello became a connection";
  }
  std::string log = takeWarnings();
  EXPECT_NE(log.find("not a hello for this listener"), std::string::npos) << log;
  void* s = nullptr;
  connectTo(handle, l, &s, &r);  // a real peer still gets through, the silent one still waiting
  roundTrip(s, r, 300, 300, true);
  close(silent);
  close(junk);
  close(wrong);
}

std::string versionName(const ::testing::TestParamInfo<int>& info) { return "v" + std::to_string(info.param); }

// Every case of the suite (both files) once per ABI version.
INSTANTIATE_TEST_SUITE_P(Versions, NetConformance, ::testing::Values(11, 10, 9, 8), versionName);

}  // namespace
}  // namespace braid::network::conformance
