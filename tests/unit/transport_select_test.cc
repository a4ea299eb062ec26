// The selection table (transport/transport.h): which transport reaches a peer, for host-memory and
// GPU ranks, against the rules docs/layout.md states; and a host-memory rank's links following it.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "transport/device_links.h"
#include "transport/host_links.h"
#include "transport/transport.h"

namespace braid::transport {
namespace {

PeerIdentity rankOn(uint64_t host, int64_t pid, int device) {
  PeerIdentity p;
  p.host = host;
  p.pid = pid;
  p.device = device;
  return p;
}

struct Case {
  const char* what;
  PeerIdentity peer;
  Kind host, hostNoShm, gpu, gpuMapped;  // host memory (SHM on, off); GPU (peer access, mapped host memory)
};

TEST(TransportSelection, EachPeerGetsTheFirstTransportThatReachesIt) {
  const PeerIdentity me = rankOn(1, 100, 0);
  const Case cases[] = {
      {"a thread of this process", rankOn(1, 100, 0), Kind::kLoopback, Kind::kLoopback, Kind::kP2p, Kind::kShm},
      {"a thread of this process on another GPU", rankOn(1, 100, 1), Kind::kLoopback, Kind::kLoopback, Kind::kP2p,
       Kind::kShm},
      {"another process of this host", rankOn(1, 200, 1), Kind::kShm, Kind::kNet, Kind::kP2p, Kind::kShm},
      {"another host", rankOn(2, 300, 0), Kind::kNet, Kind::kNet, Kind::kNet, Kind::kNet},
      {"another host, the same pid", rankOn(2, 100, 0), Kind::kNet, Kind::kNet, Kind::kNet, Kind::kNet},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    SelectFacts host, hostNoShm, gpu, gpuMapped;
    hostNoShm.shmDisabled = true;
    gpu.gpu = gpuMapped.gpu = true;
    gpuMapped.hostMemory = true;
    EXPECT_EQ(kindName(selectTransport(me, c.peer, host)), std::string(kindName(c.host)));
    EXPECT_EQ(kindName(selectTransport(me, c.peer, hostNoShm)), std::string(kindName(c.hostNoShm)));
    EXPECT_EQ(kindName(selectTransport(me, c.peer, gpu)), std::string(kindName(c.gpu)));
    EXPECT_EQ(kindName(selectTransport(me, c.peer, gpuMapped)), std::string(kindName(c.gpuMapped)));
    // Both sides choose alike.
    EXPECT_EQ(selectTransport(c.peer, me, host), selectTransport(me, c.peer, host));
    EXPECT_EQ(selectTransport(c.peer, me, gpuMapped), selectTransport(me, c.peer, gpuMapped));
  }
}

TEST(TransportSelection, NamesEveryKindAndDescribesAPeer) {
  EXPECT_STREQ(kindName(Kind::kLoopback), "loopback");
  EXPECT_STREQ(kindName(Kind::kP2p), "P2P");
  EXPECT_STREQ(kindName(Kind::kShm), "SHM");
  EXPECT_STREQ(kindName(Kind::kNet), "NET");
  std::string d = describePeer(3, rankOn(0xab, 42, 1));
  EXPECT_NE(d.find("rank 3"), std::string::npos) << d;
  EXPECT_NE(d.find("pid 42"), std::string::npos) << d;
  EXPECT_NE(d.find("device 1"), std::string::npos) << d;
  EXPECT_EQ(describePeer(0, rankOn(0xab, 42, -1)).find("device"), std::string::npos);
}

// GPUDirect RDMA for the network FIFOs: all ranks or none (the two ends of a connection must agree
// on where its slots' data lies), so one rank without it stages every rank's.
TEST(TransportSelection, GpuDirectOnlyWhereEveryRankTakesIt) {
  std::vector<DeviceOffer> offers(3);
  for (DeviceOffer& o : offers) o.netGdr = 1;
  EXPECT_EQ(firstRankWithoutGpuDirect(offers), -1);
  for (size_t r = 0; r < offers.size(); ++r) {
    std::vector<DeviceOffer> oneWithout = offers;
    oneWithout[r].netGdr = 0;
    EXPECT_EQ(firstRankWithoutGpuDirect(oneWithout), static_cast<int>(r));
  }
  offers[2].netGdr = 0;
  offers[1].netGdr = 0;
  EXPECT_EQ(firstRankWithoutGpuDirect(offers), 1) << "the first one is named";
}

// Two ranks of a host-memory communicator as threads of this process: their links pick loopback
// for each other, and a slot published into one rank's FIFO is the one the other reads.
TEST(HostLinks, ThreadsOfOneProcessMeetThroughTheirLoopbackEndpoints) {
  std::atomic<bool> abort{false};
  HostLinkOptions o;
  o.commKey = 0x7e57;
  o.nranks = 2;
  o.slots = 2;
  o.slotBytes = 64;
  o.abort = &abort;
  HostLinks rank0(o);
  o.rank = 1;
  HostLinks rank1(o);
  std::vector<PeerIdentity> ids(2, rankOn(1, 100, -1));
  ASSERT_TRUE(rank0.start(ids, std::vector<NetHandle>(2), 1, false).isOk());
  ASSERT_TRUE(rank1.start(ids, std::vector<NetHandle>(2), 1, false).isOk());
  EXPECT_EQ(rank0.kindOf(1), Kind::kLoopback);
  HostFifo* out = rank0.fifo(0, 0, 0, 1);
  HostFifo* in = rank1.fifo(0, 0, 0, 1);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out, in);
  EXPECT_EQ(rank0.fifo(0, 0, 0, 1), out);  // cached
  EXPECT_TRUE(rank0.takeError().isOk());
}

// A peer thread whose communicator is gone: the connection fails with words, not a null FIFO.
TEST(HostLinks, APeerThreadWithoutAnEndpointIsAnError) {
  std::atomic<bool> abort{false};
  HostLinkOptions o;
  o.commKey = 0x7e58;
  o.nranks = 2;
  o.slotBytes = 64;
  o.abort = &abort;
  HostLinks rank0(o);
  std::vector<PeerIdentity> ids(2, rankOn(1, 100, -1));
  ASSERT_TRUE(rank0.start(ids, std::vector<NetHandle>(2), 1, false).isOk());
  EXPECT_EQ(rank0.fifo(0, 0, 0, 1), nullptr);
  Status s = rank0.takeError();
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("loopback"), std::string::npos) << s.message();
  EXPECT_TRUE(rank0.takeError().isOk());  // told once
}

}  // namespace
}  // namespace braid::transport
