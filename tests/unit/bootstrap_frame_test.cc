// Frame headers and payloads, and the unique id: what a receiver accepts and what it refuses.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/frame.h"
#include "bootstrap/root_server.h"

namespace braid::bootstrap {
namespace {

constexpr uint64_t kMagic = 0x1234abcd5678ef00ull;
constexpr uint32_t kRankListener = typeBit(FrameType::kRingHello) | typeBit(FrameType::kMessage);

SocketAddress address(const std::string& text) {
  SocketAddress a;
  EXPECT_TRUE(parseHostPort(text, AF_UNSPEC, &a).isOk()) << text;
  return a;
}

std::string rejection(const FrameHeader& h, uint32_t allowed) {
  Status st = checkFrameHeader(h, kMagic, allowed);
  return st.isOk() ? "accepted" : st.message();
}

TEST(BootstrapFrame, AcceptsWellFormedHeaders) {
  EXPECT_EQ(rejection(makeHeader(kMagic, FrameType::kHello, kHelloBytes), typeBit(FrameType::kHello)), "accepted");
  EXPECT_EQ(rejection(makeHeader(kMagic, FrameType::kMessage, kMessageHeadBytes + 100), kRankListener), "accepted");
  EXPECT_EQ(rejection(makeHeader(kMagic, FrameType::kData, 0), typeBit(FrameType::kData)), "accepted");
  EXPECT_EQ(rejection(makeHeader(kMagic, FrameType::kData, kMaxFrameBytes), typeBit(FrameType::kData)), "accepted");
}

TEST(BootstrapFrame, RejectsWrongMagicAndVersion) {
  std::string why = rejection(makeHeader(kMagic + 1, FrameType::kHello, kHelloBytes), typeBit(FrameType::kHello));
  EXPECT_NE(why.find("wrong magic 0x1234abcd5678ef01"), std::string::npos) << why;
  FrameHeader h = makeHeader(kMagic, FrameType::kHello, kHelloBytes);
  h.version = 99;
  EXPECT_NE(rejection(h, typeBit(FrameType::kHello)).find("protocol version 99"), std::string::npos);
}

TEST(BootstrapFrame, RejectsUnknownAndUnexpectedTypes) {
  FrameHeader h = makeHeader(kMagic, FrameType::kData, 8);
  h.type = 77;
  EXPECT_NE(rejection(h, ~0u).find("unknown frame type 77"), std::string::npos);
  h.type = 0;
  EXPECT_NE(rejection(h, ~0u).find("unknown frame type 0"), std::string::npos);
  std::string why = rejection(makeHeader(kMagic, FrameType::kHello, kHelloBytes), kRankListener);
  EXPECT_NE(why.find("unexpected Hello"), std::string::npos) << why;
}

TEST(BootstrapFrame, RejectsAbsurdAndWrongLengths) {
  std::string why = rejection(makeHeader(kMagic, FrameType::kData, uint64_t{4} << 30), typeBit(FrameType::kData));
  EXPECT_NE(why.find("claims 4294967296 payload bytes"), std::string::npos) << why;
  EXPECT_NE(rejection(makeHeader(kMagic, FrameType::kMessage, ~uint64_t{0}), kRankListener), "accepted");
  why = rejection(makeHeader(kMagic, FrameType::kHello, kHelloBytes + 1), typeBit(FrameType::kHello));
  EXPECT_NE(why.find("expected exactly 40"), std::string::npos) << why;
  EXPECT_NE(rejection(makeHeader(kMagic, FrameType::kRingHello, 4), kRankListener), "accepted");
  EXPECT_NE(rejection(makeHeader(kMagic, FrameType::kMessage, kMessageHeadBytes - 1), kRankListener), "accepted");
  EXPECT_NE(rejection(makeHeader(kMagic, FrameType::kError, 8 + kMaxErrorTextBytes + 1), typeBit(FrameType::kError)),
            "accepted");
}

TEST(BootstrapFrame, HelloRoundTripAndFieldChecks) {
  Hello in{3, 5, 2500, address("10.0.0.7:41000")}, out;
  std::vector<unsigned char> bytes = encodeHello(in);
  ASSERT_EQ(bytes.size(), kHelloBytes);
  ASSERT_TRUE(decodeHello(bytes, &out).isOk());
  EXPECT_EQ(out.rank, 3);
  EXPECT_EQ(out.nranks, 5);
  EXPECT_EQ(out.timeoutMs, 2500);
  EXPECT_EQ(out.listener, in.listener);

  EXPECT_FALSE(decodeHello(encodeHello(Hello{5, 5, 1, in.listener}), &out).isOk());   // rank >= nranks
  EXPECT_FALSE(decodeHello(encodeHello(Hello{-1, 5, 1, in.listener}), &out).isOk());  // negative rank
  EXPECT_FALSE(decodeHello(encodeHello(Hello{0, 0, 1, in.listener}), &out).isOk());   // no ranks
  EXPECT_FALSE(decodeHello(encodeHello(Hello{0, 1, 0, in.listener}), &out).isOk());   // no timeout
  EXPECT_FALSE(decodeHello(encodeHello(Hello{0, 1, 1, SocketAddress()}), &out).isOk());
  bytes.pop_back();
  EXPECT_FALSE(decodeHello(bytes, &out).isOk());
}

TEST(BootstrapFrame, RingRingHelloMessageAndErrorRoundTrip) {
  RingInfo ring{2, 3, address("[fd00::9]:7")}, ringOut;
  ASSERT_TRUE(decodeRing(encodeRing(ring), &ringOut).isOk());
  EXPECT_EQ(ringOut.nextRank, 2);
  EXPECT_EQ(ringOut.nranks, 3);
  EXPECT_EQ(ringOut.next, ring.next);
  EXPECT_FALSE(decodeRing(encodeRing(RingInfo{3, 3, ring.next}), &ringOut).isOk());

  RingHello hello{4, 9}, helloOut;
  ASSERT_TRUE(decodeRingHello(encodeRingHello(hello), &helloOut).isOk());
  EXPECT_EQ(helloOut.rank, 4);
  EXPECT_EQ(helloOut.nranks, 9);

  MessageHead head = decodeMessageHead(encodeMessageHead(MessageHead{6, 0xfeedu, 1ull << 40}));
  EXPECT_EQ(head.from, 6);
  EXPECT_EQ(head.tag, 0xfeedu);
  EXPECT_EQ(head.seq, 1ull << 40);

  Status err = decodeError(encodeError(timeoutError("rank(s) 3 did not arrive")));
  EXPECT_EQ(err.code(), Code::kTimeout);
  EXPECT_EQ(err.message(), "rank(s) 3 did not arrive");
  std::vector<unsigned char> bogus = encodeError(invalidUsage("x"));
  bogus[0] = 200;  // unknown code: reported as a remote error, never as success
  EXPECT_EQ(decodeError(bogus).code(), Code::kRemoteError);
}

TEST(BootstrapFrame, MissingRanksAreListedAsRanges) {
  EXPECT_EQ(RootServer::missingRanks({true, false, true}), "1");
  EXPECT_EQ(RootServer::missingRanks({false, true, true, false, false, true, false, false, false}), "0, 3, 4, 6-8");
  EXPECT_EQ(RootServer::missingRanks({true, true}), "");
}

// --- unique id -------------------------------------------------------------------------------

TEST(BootstrapUniqueId, RoundTrip) {
  UniqueIdInfo in;
  in.magic = 0x0102030405060708ull;
  in.root = address("[fd00::1]:29500");
  in.rank0ServesRoot = true;
  UniqueIdBytes bytes;
  encodeUniqueId(in, &bytes);
  UniqueIdInfo out;
  ASSERT_TRUE(decodeUniqueId(bytes, &out).isOk());
  EXPECT_EQ(out.magic, in.magic);
  EXPECT_EQ(out.root, in.root);
  EXPECT_TRUE(out.rank0ServesRoot);
}

TEST(BootstrapUniqueId, RejectsCorruptedOrForeignIds) {
  UniqueIdInfo in;
  in.magic = 42;
  in.root = address("10.0.0.1:4242");
  UniqueIdBytes good;
  encodeUniqueId(in, &good);
  UniqueIdInfo out;
  for (size_t i : {0u, 9u, 20u, 40u, 41u, 45u, 100u, 127u}) {
    UniqueIdBytes bad = good;
    bad.bytes[i] ^= 0x10;
    Status st = decodeUniqueId(bad, &out);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << "byte " << i;
  }
  UniqueIdBytes zero{};
  Status st = decodeUniqueId(zero, &out);
  EXPECT_NE(st.message().find("not a braid id"), std::string::npos) << st.message();
}

TEST(BootstrapUniqueId, ForAddressIsTheSameOnEveryRankAndDiffersPerJob) {
  UniqueIdBytes a, b, c;
  ASSERT_TRUE(uniqueIdForAddress("127.0.0.1:29501", "job-1", &a).isOk());
  ASSERT_TRUE(uniqueIdForAddress("127.0.0.1:29501", "job-1", &b).isOk());
  ASSERT_TRUE(uniqueIdForAddress("127.0.0.1:29501", "job-2", &c).isOk());
  UniqueIdInfo ia, ib, ic;
  ASSERT_TRUE(decodeUniqueId(a, &ia).isOk());
  ASSERT_TRUE(decodeUniqueId(b, &ib).isOk());
  ASSERT_TRUE(decodeUniqueId(c, &ic).isOk());
  EXPECT_EQ(ia.magic, ib.magic);
  EXPECT_NE(ia.magic, ic.magic);
  EXPECT_TRUE(ia.rank0ServesRoot);
  EXPECT_EQ(ia.root.toString(), "127.0.0.1:29501");
  EXPECT_EQ(uniqueIdForAddress("nonsense", "job", &a).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace braid::bootstrap
