// The conformance suite (conformance.h): moving messages: sizes, posting order, larger buffers,
// multi-receive, requests in flight, a peer closing mid-transfer, the refusals.
#include "conformance.h"

namespace braid::network::conformance {
namespace {

TEST_P(NetConformance, MessagesFromZeroBytesTo64MiB) {
  void *s, *r;
  connectPair(&s, &r);
  for (size_t size : {size_t{0}, size_t{1}, size_t{7}, size_t{128}, size_t{4096}, size_t{65537}, size_t{1} << 20,
                      (size_t{1} << 22) + 3, size_t{64} << 20}) {
    SCOPED_TRACE("message of " + std::to_string(size) + " bytes");
    roundTrip(s, r, size, size, size % 2 == 0);
  }
}

TEST_P(NetConformance, ReceivePostedBeforeAndAfterTheSend) {
  void *s, *r;
  connectPair(&s, &r);
  roundTrip(s, r, 1000, 1000, true);
  roundTrip(s, r, 1000, 1000, false);
  roundTrip(s, r, 3 << 20, 3 << 20, true);
  roundTrip(s, r, 3 << 20, 3 << 20, false);
}

TEST_P(NetConformance, ReceiveBufferLargerThanTheMessage) {
  void *s, *r;
  connectPair(&s, &r);
  roundTrip(s, r, 1000, 1 << 20, true);
  roundTrip(s, r, 0, 4096, false);
  roundTrip(s, r, 5, 6, true);
}

TEST_P(NetConformance, MultiReceiveWithTagsOrRefusedBeyondMaxRecvs) {
  void *s, *r;
  connectPair(&s, &r);
  int n = props_.maxRecvs;
  if (n > 1) {
    std::vector<std::vector<char>> in(static_cast<size_t>(n), std::vector<char>(256)), out = in;
    std::vector<void*> data, mh;
    std::vector<size_t> sizes;
    std::vector<int> tags;
    for (int i = 0; i < n; ++i) {
      for (char& c : out[static_cast<size_t>(i)]) c = static_cast<char>(i + 1);
      data.push_back(in[static_cast<size_t>(i)].data());
      mh.push_back(reg(r, data.back(), 256));
      sizes.push_back(256);
      tags.push_back(100 + i);
    }
    void* rq = nullptr;
    ASSERT_TRUE(until([&] {
      return net_->irecv(r, n, data.data(), sizes.data(), tags.data(), mh.data(), nullptr, &rq) != ncclSuccess ||
             rq != nullptr;
    }));
    std::vector<void*> reqs{rq};
    for (int i = n - 1; i >= 0; --i) {
      reqs.push_back(
          isend(s, out[static_cast<size_t>(i)].data(), 256, 100 + i, reg(s, out[static_cast<size_t>(i)].data(), 256)));
    }
    waitAll(reqs);
    for (int i = 0; i < n; ++i) EXPECT_EQ(in[static_cast<size_t>(i)], out[static_cast<size_t>(i)]) << "tag " << 100 + i;
  }
  // One buffer more than maxRecvs: refused with an error, never taken.
  std::vector<char> buf(16);
  std::vector<void*> data(static_cast<size_t>(n) + 1, buf.data()), mh(data.size(), nullptr);
  std::vector<size_t> sizes(data.size(), 16);
  std::vector<int> tags(data.size(), 1);
  void* rq = nullptr;
  EXPECT_NE(net_->irecv(r, n + 1, data.data(), sizes.data(), tags.data(), mh.data(), nullptr, &rq), ncclSuccess);
  EXPECT_EQ(rq, nullptr);
  EXPECT_FALSE(takeWarnings().empty()) << "the refusal is logged";
  roundTrip(s, r, 64, 64, true);  // and the connection still works
}

TEST_P(NetConformance, ThirtyTwoRequestsInFlight) {
  void *s, *r;
  connectPair(&s, &r);
  constexpr int kN = kNetMaxRequests;
  constexpr size_t kBytes = 64 << 10;
  std::vector<std::vector<uint32_t>> out(kN, std::vector<uint32_t>(kBytes / 4)), in = out;
  std::vector<void*> reqs;
  for (int i = 0; i < kN; ++i) {
    std::iota(out[i].begin(), out[i].end(), static_cast<uint32_t>(i) << 20);
    reqs.push_back(irecv(r, in[i].data(), kBytes, 3, reg(r, in[i].data(), kBytes)));
  }
  for (int i = 0; i < kN; ++i) reqs.push_back(isend(s, out[i].data(), kBytes, 3, reg(s, out[i].data(), kBytes)));
  waitAll(reqs);
  for (int i = 0; i < kN; ++i) EXPECT_EQ(in[i], out[i]) << "message " << i << " (matched in posting order)";
}

TEST_P(NetConformance, PeerClosingMidTransferIsAnError) {
  void *s, *r;
  connectPair(&s, &r);
  std::vector<char> out(64 << 20, 'z'), in(64 << 20);
  void* sq = isend(s, out.data(), out.size(), 9, reg(s, out.data(), out.size()));
  void* rq = irecv(r, in.data(), in.size(), 9, reg(r, in.data(), in.size()));
  // The sender fills what the network buffers, the receiver takes part of it once: 64 MiB cannot
  // be in flight at once, so the message is cut when the sender closes.
  int done = 0;
  for (int i = 0; i < 5; ++i) ASSERT_EQ(net_->test(sq, &done, nullptr), ncclSuccess);
  ASSERT_EQ(done, 0) << "64 MiB went without the receiver: nothing left to interrupt";
  int rdone = 0;
  ASSERT_EQ(net_->test(rq, &rdone, nullptr), ncclSuccess);
  ASSERT_EQ(rdone, 0);
  closeSend(s);
  ncclResult_t result = ncclSuccess;
  ASSERT_TRUE(until([&] {
    result = net_->test(rq, &rdone, nullptr);
    return result != ncclSuccess || rdone;
  })) << "the receive neither failed nor finished after its sender closed";
  EXPECT_NE(result, ncclSuccess) << "a receive whose sender closed mid-message completed";
  EXPECT_EQ(rdone, 0);
  EXPECT_FALSE(takeWarnings().empty()) << "the failure is logged";
}

TEST_P(NetConformance, BraidRefusesAMessageThatDisagreesWithItsReceive) {
  if (!braidPlugin()) GTEST_SKIP() << "the contract leaves a too-small buffer or a wrong tag to each network";
  for (int variant = 0; variant < 2; ++variant) {
    void *s, *r;
    connectPair(&s, &r);
    std::vector<char> out(100, 'q'), in(100);
    void* sq = isend(s, out.data(), variant == 0 ? 100 : 50, 5, reg(s, out.data(), 100));
    // The receive may fail as it is posted (the header is there already) or when tested.
    void* data = in.data();
    size_t size = variant == 0 ? 60 : 100;
    int tag = variant == 0 ? 5 : 6;
    void* mh = reg(r, in.data(), 100);
    void* rq = nullptr;
    ncclResult_t result = ncclSuccess;
    int sent = 0, received = 0;  // (the send's completion says nothing of the receive's)
    ASSERT_TRUE(until([&] {
      net_->test(sq, &sent, nullptr);
      if (rq == nullptr) {
        result = net_->irecv(r, 1, &data, &size, &tag, &mh, nullptr, &rq);
      } else {
        result = net_->test(rq, &received, nullptr);
      }
      return result != ncclSuccess || received != 0;
    }));
    EXPECT_EQ(result, ncclInvalidUsage);
    std::string log = takeWarnings();
    EXPECT_NE(log.find(variant == 0 ? "receive buffer of 60 bytes" : "posted with tag 6"), std::string::npos) << log;
  }
}

TEST_P(NetConformance, RegisteringCudaMemoryOnAHostNetworkIsRefused) {
  if ((props_.ptrSupport & kPtrCuda) != 0) GTEST_SKIP() << "this device reads CUDA memory";
  void *s, *r;
  connectPair(&s, &r);
  char buf[64];
  void* mh = nullptr;
  EXPECT_NE(net_->regMr(s, buf, sizeof(buf), kPtrCuda, &mh), ncclSuccess);
  EXPECT_FALSE(takeWarnings().empty());
}

}  // namespace
}  // namespace braid::network::conformance
