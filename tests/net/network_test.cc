// The network loader (src/transport/net/network.h): NCCL's rules for finding a plugin, adapting an
// older one, skipping one that fails or has no device, the built-in fallback, BRAID_NET.
#include "transport/net/network.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "transport/net/net_connection.h"
#include "transport/net/socket_net.h"

namespace braid::network {
namespace {

class Env {
 public:
  Env(const char* name, const std::string& value) : name_(name) { setenv(name, value.c_str(), 1); }
  ~Env() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST(NetPluginCandidates, FollowNcclRules) {
  bool optional = false;
  EXPECT_EQ(pluginCandidates("", &optional), std::vector<std::string>{"libnccl-net.so"});
  EXPECT_TRUE(optional);
  EXPECT_TRUE(pluginCandidates("none", &optional).empty());
  EXPECT_FALSE(optional);
  EXPECT_EQ(pluginCandidates("braid", &optional), (std::vector<std::string>{"braid", "libnccl-net-braid.so"}));
  EXPECT_EQ(pluginCandidates("/opt/x.so, ofi ,", &optional),
            (std::vector<std::string>{"/opt/x.so", "ofi", "libnccl-net-ofi.so"}));
}

TEST(NetNames, CaseInsensitiveAndSocketNamesTheBuiltIn) {
  EXPECT_TRUE(networkNameMatches("", "Anything", false));
  EXPECT_TRUE(networkNameMatches("braidsocket", "BraidSocket", true));
  EXPECT_TRUE(networkNameMatches("Socket", "BraidSocket", true));
  EXPECT_FALSE(networkNameMatches("Socket", "IB", false));
  EXPECT_FALSE(networkNameMatches("IB", "BraidSocket", true));
}

TEST(NetOpen, NoneMeansTheBuiltInSocketNetwork) {
  Env e("BRAID_NET_PLUGIN", "none");
  std::unique_ptr<Network> n;
  ASSERT_TRUE(Network::open(1, &n).isOk());
  EXPECT_EQ(n->name(), "BraidSocket");
  EXPECT_TRUE(n->builtIn());
  EXPECT_EQ(n->origin(), "built-in");
  ASSERT_GE(n->deviceCount(), 1);
  EXPECT_NE(n->describeDevice(0).find("ptrSupport HOST"), std::string::npos) << n->describeDevice(0);
}

TEST(NetOpen, BraidsOwnPluginLoadsAsV11) {
  Env e("BRAID_NET_PLUGIN", BRAID_NET_PLUGIN_DEFAULT);
  std::unique_ptr<Network> n;
  ASSERT_TRUE(Network::open(2, &n).isOk());
  EXPECT_EQ(n->name(), "BraidSocket");
  EXPECT_FALSE(n->builtIn());
  EXPECT_EQ(n->origin(), std::string(BRAID_NET_PLUGIN_DEFAULT) + " (v11)");
}

TEST(NetOpen, NcclNetPluginIsReadWhenBraidsIsUnset) {
  Env e("NCCL_NET_PLUGIN", FAKE_PLUGIN_V9);
  std::unique_ptr<Network> n;
  ASSERT_TRUE(Network::open(3, &n).isOk());
  EXPECT_EQ(n->name(), "FakeNine");
  EXPECT_EQ(n->origin(), std::string(FAKE_PLUGIN_V9) + " (v9, adapted)");
  EXPECT_EQ(n->properties(0).speed, 1234);
  EXPECT_EQ(n->properties(0).maxP2pBytes, size_t{0}) << "v9 properties carry their own sizes";
}

TEST(NetOpen, FailingAndDevicelessPluginsAreSkippedInOrder) {
  Env e("BRAID_NET_PLUGIN", std::string(FAKE_PLUGIN_INIT_FAILS) + "," + FAKE_PLUGIN_NO_DEVICES + "," + FAKE_PLUGIN_V9);
  std::unique_ptr<Network> n;
  ASSERT_TRUE(Network::open(4, &n).isOk());
  EXPECT_EQ(n->name(), "FakeNine");
}

TEST(NetOpen, NoUsablePluginFallsBackToTheBuiltIn) {
  Env e("BRAID_NET_PLUGIN", std::string("/nonexistent/libnccl-net-x.so,") + FAKE_PLUGIN_INIT_FAILS);
  std::unique_ptr<Network> n;
  ASSERT_TRUE(Network::open(5, &n).isOk());
  EXPECT_TRUE(n->builtIn());
}

TEST(NetOpen, BraidNetPicksByNameAndAnUnknownNameIsAnError) {
  Env e("BRAID_NET_PLUGIN", FAKE_PLUGIN_V9);
  {
    Env only("BRAID_NET", "socket");
    std::unique_ptr<Network> n;
    ASSERT_TRUE(Network::open(6, &n).isOk());
    EXPECT_TRUE(n->builtIn()) << "FakeNine is not named Socket";
  }
  Env wrong("NCCL_NET", "IB");
  std::unique_ptr<Network> n;
  Status st = Network::open(7, &n);
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), Code::kInvalidUsage);
  EXPECT_NE(st.message().find("'IB' names no network"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("FakeNine"), std::string::npos) << st.message();
}

TEST(NetCheck, AFailedCallNamesTheNetworkTheCallAndWhatItLogged) {
  Env e("BRAID_NET_PLUGIN", FAKE_PLUGIN_V9);
  std::unique_ptr<Network> n;
  ASSERT_TRUE(Network::open(8, &n).isOk());
  char handle[kNetHandleBytes];
  void* listenComm = nullptr;
  Status st = n->check(n->api().listen(n->context(), 0, handle, &listenComm), "listen on device 0");
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), Code::kInternalError);
  EXPECT_EQ(st.message(),
            "network FakeNine: listen on device 0 failed with ncclInternalError: fake plugin: no connections here");
  EXPECT_TRUE(n->check(ncclSuccess, "anything").isOk());
}

// Bytes that arrived on `comm`'s socket and are not read yet.
int unread(void* comm) {
  int n = -1;
  return ioctl(socketNetFd(comm), FIONREAD, &n) == 0 ? n : -1;
}

// The built-in network reads a message only for the receive tested, and no further: irecv reads
// nothing, and a test of the first of two receives leaves the second message in the socket, for
// the caller to act on the first before paying the second's system calls (a rank that read its
// peer's next message before sending its own made the two ranks take turns: docs/network.md).
// The built-in network, and one connection of it in this process (both ends), within 10 s.
struct BuiltInPair {
  Env env{"BRAID_NET_PLUGIN", "none"};
  std::unique_ptr<Network> n;
  void *listenComm = nullptr, *sendComm = nullptr, *recvComm = nullptr;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool waiting() const { return std::chrono::steady_clock::now() < deadline; }
  void connect() {
    ASSERT_TRUE(Network::open(9, &n).isOk());
    const NetV11& api = n->api();
    char handle[kNetHandleBytes] = {};
    ASSERT_EQ(api.listen(n->context(), 0, handle, &listenComm), ncclSuccess);
    while ((sendComm == nullptr || recvComm == nullptr) && waiting()) {
      if (sendComm == nullptr) {
        ASSERT_EQ(api.connect(n->context(), 0, handle, &sendComm, nullptr), ncclSuccess);
      }
      if (recvComm == nullptr) {
        ASSERT_EQ(api.accept(listenComm, &recvComm, nullptr), ncclSuccess);
      }
    }
    ASSERT_TRUE(sendComm != nullptr && recvComm != nullptr) << "no connection within 10 s";
  }
  // Waits until `bytes` have arrived at the receiving end, unread; returns how many have.
  int arrived(int bytes) const {
    while (unread(recvComm) < bytes && waiting()) {
    }
    return unread(recvComm);
  }
};

TEST(BuiltInSocketNetwork, ATestReadsNoFurtherThanTheReceiveItTests) {
  BuiltInPair pair;
  ASSERT_NO_FATAL_FAILURE(pair.connect());
  const NetV11& api = pair.n->api();
  void *sendComm = pair.sendComm, *recvComm = pair.recvComm;
  auto waiting = [&] { return pair.waiting(); };

  uint64_t out[2] = {11, 22}, in[2] = {0, 0};
  void *smh = nullptr, *rmh = nullptr;
  ASSERT_EQ(api.regMr(sendComm, out, sizeof(out), kPtrHost, &smh), ncclSuccess);
  ASSERT_EQ(api.regMr(recvComm, in, sizeof(in), kPtrHost, &rmh), ncclSuccess);
  void* sent[2] = {nullptr, nullptr};
  for (int i = 0; i < 2; ++i) {
    while (sent[i] == nullptr && waiting())
      ASSERT_EQ(api.isend(sendComm, &out[i], 8, 0, smh, nullptr, &sent[i]), ncclSuccess);
  }
  for (int i = 0, done = 0; i < 2; ++i, done = 0) {
    while (!done && waiting()) ASSERT_EQ(api.test(sent[i], &done, nullptr), ncclSuccess);
  }
  const int both = pair.arrived(2 * (16 + 8));
  ASSERT_EQ(both % 2, 0);
  ASSERT_GT(both, 2 * 8) << "two 8-byte messages and their headers";

  void* received[2] = {nullptr, nullptr};
  for (int i = 0; i < 2; ++i) {
    void* data = &in[i];
    size_t size = 8;
    int tag = 0;
    ASSERT_EQ(api.irecv(recvComm, 1, &data, &size, &tag, &rmh, nullptr, &received[i]), ncclSuccess);
    ASSERT_NE(received[i], nullptr);
  }
  EXPECT_EQ(unread(recvComm), both) << "irecv read from the socket";
  int done = 0, size = -1;
  while (!done && waiting()) ASSERT_EQ(api.test(received[0], &done, &size), ncclSuccess);
  ASSERT_TRUE(done);
  EXPECT_EQ(size, 8);
  EXPECT_EQ(in[0], 11u);
  EXPECT_EQ(unread(recvComm), both / 2) << "the test of the first receive read the second message too";
  EXPECT_EQ(in[1], 0u);
  done = 0;
  while (!done && waiting()) ASSERT_EQ(api.test(received[1], &done, &size), ncclSuccess);
  ASSERT_TRUE(done);
  EXPECT_EQ(in[1], 22u);
  EXPECT_EQ(unread(recvComm), 0);

  api.deregMr(sendComm, smh);
  api.deregMr(recvComm, rmh);
  api.closeSend(sendComm);
  api.closeRecv(recvComm);
  api.closeListen(pair.listenComm);
}

// A send of two parts (braid's proxies: a slot's size and tag, then its data from the caller's
// memory) is one message: the receiver gets the parts back to back, also when the socket takes
// them over many partial sends. A receive comm is no place for one.
TEST(BuiltInSocketNetwork, ASendOfTwoPartsArrivesAsOneMessage) {
  BuiltInPair pair;
  ASSERT_NO_FATAL_FAILURE(pair.connect());
  const NetV11& api = pair.n->api();
  auto waiting = [&] { return pair.waiting(); };
  std::vector<char> prefix(40), data(3 << 20), in(prefix.size() + data.size() + 8, 0);
  for (size_t i = 0; i < prefix.size(); ++i) prefix[i] = static_cast<char>(i + 1);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 7) % 251);
  // Small socket buffers: the message goes over many partial sends.
  int small = 16 << 10;
  ASSERT_EQ(setsockopt(socketNetFd(pair.sendComm), SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
  ASSERT_EQ(setsockopt(socketNetFd(pair.recvComm), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
  void* rmh = nullptr;
  ASSERT_EQ(api.regMr(pair.recvComm, in.data(), in.size(), kPtrHost, &rmh), ncclSuccess);
  void* wrong = nullptr;
  EXPECT_NE(socketNetIsendParts(pair.recvComm, prefix.data(), prefix.size(), data.data(), data.size(), 0, &wrong),
            ncclSuccess);
  void* sent = nullptr;
  while (sent == nullptr && waiting()) {
    ASSERT_EQ(socketNetIsendParts(pair.sendComm, prefix.data(), prefix.size(), data.data(), data.size(), 3, &sent),
              ncclSuccess);
  }
  void* buffer = in.data();
  size_t capacity = in.size();
  int tag = 3;
  void* received = nullptr;
  ASSERT_EQ(api.irecv(pair.recvComm, 1, &buffer, &capacity, &tag, &rmh, nullptr, &received), ncclSuccess);
  ASSERT_NE(received, nullptr);
  int sendDone = 0, recvDone = 0, size = -1;
  while ((!sendDone || !recvDone) && waiting()) {
    if (!sendDone) {
      ASSERT_EQ(api.test(sent, &sendDone, nullptr), ncclSuccess);
    }
    if (!recvDone) {
      ASSERT_EQ(api.test(received, &recvDone, &size), ncclSuccess);
    }
  }
  ASSERT_TRUE(sendDone && recvDone) << "not done within 10 s";
  EXPECT_EQ(size, static_cast<int>(prefix.size() + data.size()));
  EXPECT_EQ(std::memcmp(in.data(), prefix.data(), prefix.size()), 0);
  EXPECT_EQ(std::memcmp(in.data() + prefix.size(), data.data(), data.size()), 0);
  EXPECT_EQ(in[prefix.size() + data.size()], 0) << "more than the message arrived";
  api.deregMr(pair.recvComm, rmh);
  api.closeSend(pair.sendComm);
  api.closeRecv(pair.recvComm);
  api.closeListen(pair.listenComm);
}

// A receiving lane finishes one slot a step, though more have arrived: the thread stepping may be
// a caller waiting for the first, which acts on it before anyone reads the next (docs/network.md).
TEST(BuiltInSocketNetwork, AReceivingLaneFinishesOneSlotAStep) {
  BuiltInPair pair;
  ASSERT_NO_FATAL_FAILURE(pair.connect());
  constexpr int kSlots = 4;
  auto out = std::make_shared<transport::NetConnection>(true, 1, kSlots, 64, 1, nullptr);
  auto in = std::make_shared<transport::NetConnection>(false, 0, kSlots, 64, 1, nullptr);
  transport::NetLane sender(out, 0, pair.n.get(), pair.sendComm), receiver(in, 0, pair.n.get(), pair.recvComm);
  for (uint64_t v : {uint64_t{11}, uint64_t{22}}) {
    transport::StopFlags none;
    char* slot = out->fifo().waitWritable(none);
    ASSERT_NE(slot, nullptr);
    std::memcpy(slot, &v, sizeof(v));
    out->fifo().publish(sizeof(v));
  }
  while (out->fifo().headCount() < 2 && pair.waiting()) sender.step();  // both sent
  ASSERT_EQ(out->fifo().headCount(), 2u);
  // Each message: the network's 16-byte header, the slot's size and tag, its 8 bytes.
  const int message = 16 + static_cast<int>(transport::HostFifo::kWireBytes) + 8;
  ASSERT_EQ(pair.arrived(2 * message), 2 * message);
  receiver.step();
  EXPECT_EQ(in->fifo().tailCount(), 1u) << "one step finished more than one slot";
  receiver.step();
  EXPECT_EQ(in->fifo().tailCount(), 2u);
  pair.n->api().closeListen(pair.listenComm);
}

}  // namespace
}  // namespace braid::network
