// The ncclNet plugin conformance suite's fixture (the cases: conformance_connect_test.cc and
// conformance_transfer_test.cc). The suite drives a network plugin through its C ABI alone, both ends
// of every connection in this process, every wait bounded.
//
//   BRAID_NET_PLUGIN_UNDER_TEST=/path/to/libnccl-net-x.so ./braid_net_conformance
//
// Without the variable it checks braid's own libnccl-net-braid.so. Every test runs once per ABI
// version the plugin exports (v11 .. v8); older versions are driven through braid's adapters
// (src/transport/net/adapters.h), so that braid's plugin checks its down adapters and the loader's
// up adapters at once. A few tests read braid's handle format (junk on its listener, its own error
// rules) and skip, saying so, for other plugins.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstring>
#include <functional>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "net/socket_address.h"
#include "transport/net/adapters.h"
#include "transport/net/net_abi.h"

namespace braid::network::conformance {

using Clock = std::chrono::steady_clock;
inline constexpr int kWaitMs = 20000;  // the longest any exchange below may take; all finish in far less

inline std::string pluginPath() {
  const char* p = std::getenv("BRAID_NET_PLUGIN_UNDER_TEST");
  return p != nullptr && *p != '\0' ? p : BRAID_NET_PLUGIN_DEFAULT;
}

// What the plugin logged at WARN since the last clear(): its error messages must say something.
inline std::mutex gLogMutex;
inline std::string gWarnings;

inline void testLogger(int level, unsigned long, const char*, int, const char* fmt, ...) {
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  if (level == kNetLogWarn) {
    std::lock_guard<std::mutex> lock(gLogMutex);
    gWarnings += std::string(line) + "\n";
  }
}

inline std::string takeWarnings() {
  std::lock_guard<std::mutex> lock(gLogMutex);
  std::string out;
  out.swap(gWarnings);
  return out;
}

// The plugin, as a NetV11 table of the version under test.
struct Plugin {
  void* lib = nullptr;
  NetV11 net{};
  void* ctx = nullptr;
  std::string error;
};

inline Plugin& loaded(int version) {
  static Plugin plugins[12];
  Plugin& p = plugins[version];
  if (p.lib != nullptr || !p.error.empty()) return p;
  std::string path = pluginPath();
  p.lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (p.lib == nullptr) {
    p.error = std::string("dlopen ") + path + ": " + dlerror();
    return p;
  }
  std::string symbol = "ncclNetPlugin_v" + std::to_string(version);
  void* table = dlsym(p.lib, symbol.c_str());
  if (table == nullptr) {
    p.error = "skip:" + path + " exports no " + symbol;
    return p;
  }
  Status st = Status::ok();
  switch (version) {
    case 11: p.net = *static_cast<const NetV11*>(table); break;
    case 10: st = adaptV10(static_cast<const NetV10*>(table), &p.net); break;
    case 9: st = adaptV9(static_cast<const NetV9*>(table), &p.net); break;
    default: st = adaptV8(static_cast<const NetV8*>(table), &p.net); break;
  }
  if (!st.isOk()) {
    p.error = st.message();
    return p;
  }
  NetCommConfig config{kNetTrafficClassUndef};
  ncclResult_t r = p.net.init(&p.ctx, 0x1234, &config, testLogger, nullptr);
  if (r != ncclSuccess) p.error = symbol + " init failed with " + std::to_string(r) + ": " + takeWarnings();
  return p;
}

inline bool until(const std::function<bool()>& done, int ms = kWaitMs) {
  auto end = Clock::now() + std::chrono::milliseconds(ms);
  while (Clock::now() < end) {
    if (done()) return true;
  }
  return false;
}

class NetConformance : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    Plugin& p = loaded(GetParam());
    if (p.error.rfind("skip:", 0) == 0) GTEST_SKIP() << p.error.substr(5);
    ASSERT_TRUE(p.error.empty()) << p.error;
    net_ = &p.net;
    ctx_ = p.ctx;
    int n = 0;
    ASSERT_EQ(net_->devices(&n), ncclSuccess);
    ASSERT_GT(n, 0) << "a plugin that reports no device is not used";
    ASSERT_EQ(net_->getProperties(0, &props_), ncclSuccess);
    takeWarnings();
  }

  void TearDown() override {
    for (auto& m : regs_) net_->deregMr(m.first, m.second);
    for (auto& c : sends_) net_->closeSend(c);
    for (auto& c : recvs_) net_->closeRecv(c);
    for (auto& l : listens_) net_->closeListen(l);
  }

  bool braidPlugin() const { return std::string(net_->name) == "BraidSocket"; }

  void listen(char handle[kNetHandleBytes], void** listenComm) {
    std::memset(handle, 0, kNetHandleBytes);
    ASSERT_EQ(net_->listen(ctx_, 0, handle, listenComm), ncclSuccess) << takeWarnings();
    ASSERT_NE(*listenComm, nullptr);
    listens_.push_back(*listenComm);
  }

  // One connection, connect and accept driven alternately until both ends exist.
  void connectPair(void** sendComm, void** recvComm) {
    char handle[kNetHandleBytes];
    void* l = nullptr;
    listen(handle, &l);
    connectTo(handle, l, sendComm, recvComm);
  }

  void connectTo(char handle[kNetHandleBytes], void* l, void** sendComm, void** recvComm) {
    *sendComm = nullptr;
    *recvComm = nullptr;
    ncclResult_t rs = ncclSuccess, rr = ncclSuccess;
    bool ok = until([&] {
      if (*sendComm == nullptr) rs = net_->connect(ctx_, 0, handle, sendComm, nullptr);
      if (*recvComm == nullptr) rr = net_->accept(l, recvComm, nullptr);
      return rs != ncclSuccess || rr != ncclSuccess || (*sendComm != nullptr && *recvComm != nullptr);
    });
    ASSERT_EQ(rs, ncclSuccess) << takeWarnings();
    ASSERT_EQ(rr, ncclSuccess) << takeWarnings();
    ASSERT_TRUE(ok) << "connect/accept did not complete in " << kWaitMs << " ms";
    sends_.push_back(*sendComm);
    recvs_.push_back(*recvComm);
  }

  void* reg(void* comm, void* data, size_t size) {
    void* mh = nullptr;
    EXPECT_EQ(net_->regMr(comm, data, size, kPtrHost, &mh), ncclSuccess) << takeWarnings();
    regs_.emplace_back(comm, mh);
    return mh;
  }

  // Deregisters what was registered on `comm`, before the test closes it itself.
  void deregAll(void* comm) {
    for (auto it = regs_.begin(); it != regs_.end();) {
      if (it->first == comm) {
        net_->deregMr(it->first, it->second);
        it = regs_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void closeSend(void* comm) {
    deregAll(comm);
    EXPECT_EQ(net_->closeSend(comm), ncclSuccess);
    sends_.erase(std::find(sends_.begin(), sends_.end(), comm));
  }

  void closeRecv(void* comm) {
    deregAll(comm);
    EXPECT_EQ(net_->closeRecv(comm), ncclSuccess);
    recvs_.erase(std::find(recvs_.begin(), recvs_.end(), comm));
  }

  // Posts until the plugin takes the request (a null request means "again later").
  void* isend(void* comm, void* data, size_t size, int tag, void* mh) {
    void* req = nullptr;
    ncclResult_t r = ncclSuccess;
    until([&] {
      r = net_->isend(comm, data, size, tag, mh, nullptr, &req);
      return r != ncclSuccess || req != nullptr;
    });
    EXPECT_EQ(r, ncclSuccess) << takeWarnings();
    EXPECT_NE(req, nullptr);
    return req;
  }

  void* irecv(void* comm, void* data, size_t size, int tag, void* mh) {
    void* req = nullptr;
    ncclResult_t r = ncclSuccess;
    until([&] {
      r = net_->irecv(comm, 1, &data, &size, &tag, &mh, nullptr, &req);
      return r != ncclSuccess || req != nullptr;
    });
    EXPECT_EQ(r, ncclSuccess) << takeWarnings();
    EXPECT_NE(req, nullptr);
    return req;
  }

  // Tests every request until all are done; `sizes` gets what test() reported.
  void waitAll(std::vector<void*> reqs, std::vector<int>* sizes = nullptr) {
    std::vector<int> got(reqs.size(), -1);
    size_t left = reqs.size();
    ncclResult_t r = ncclSuccess;
    bool ok = until([&] {
      for (size_t i = 0; i < reqs.size(); ++i) {
        if (reqs[i] == nullptr) continue;
        int done = 0;
        r = net_->test(reqs[i], &done, &got[i]);
        if (r != ncclSuccess) return true;
        if (done) {
          reqs[i] = nullptr;
          --left;
        }
      }
      return left == 0;
    });
    ASSERT_EQ(r, ncclSuccess) << takeWarnings();
    ASSERT_TRUE(ok) << left << " request(s) not done after " << kWaitMs << " ms";
    if (sizes != nullptr) *sizes = got;
  }

  // Sends `size` bytes of a pattern and checks them on arrival; `recvSize` >= size.
  void roundTrip(void* s, void* r, size_t size, size_t recvSize, bool recvFirst) {
    std::vector<unsigned char> out(size), in(recvSize + 1, 0xEE);
    for (size_t i = 0; i < size; ++i) out[i] = static_cast<unsigned char>(i * 131 + size);
    void* smh = reg(s, out.data(), out.size());
    void* rmh = reg(r, in.data(), recvSize);
    struct Dereg {  // this round trip's buffers go with it
      NetConformance* t;
      void* comm;
      void* mh;
      ~Dereg() {
        t->net_->deregMr(comm, mh);
        t->regs_.erase(std::find(t->regs_.begin(), t->regs_.end(), std::make_pair(comm, mh)));
      }
    } ds{this, s, smh}, dr{this, r, rmh};
    void* rq = nullptr;
    void* sq = nullptr;
    if (recvFirst) rq = irecv(r, in.data(), recvSize, 7, rmh);
    sq = isend(s, out.data(), size, 7, smh);
    if (!recvFirst) rq = irecv(r, in.data(), recvSize, 7, rmh);
    std::vector<int> sizes;
    waitAll({sq, rq}, &sizes);
    EXPECT_EQ(sizes[0], static_cast<int>(size));
    EXPECT_EQ(sizes[1], static_cast<int>(size)) << "a receive reports the bytes that arrived";
    if (size > 0) {
      EXPECT_EQ(std::memcmp(out.data(), in.data(), size), 0) << "data of " << size << " bytes differ";
    }
    for (size_t i = size; i <= recvSize; ++i) {
      if (in[i] != 0xEE) {
        ADD_FAILURE() << "byte " << i << " beyond a " << size << "-byte message was written";
        break;
      }
    }
  }

  // A raw TCP connection to braid's listener (its handle's address).
  int rawConnect(const char handle[kNetHandleBytes]) {
    braid::net::SocketAddress to;
    EXPECT_TRUE(braid::net::decodeAddress(reinterpret_cast<const unsigned char*>(handle) + 16, &to).isOk());
    int fd = socket(to.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::connect(fd, to.sockaddrPtr(), to.sockaddrLength()), 0) << strerror(errno);
    return fd;
  }

  const NetV11* net_ = nullptr;
  void* ctx_ = nullptr;
  NetPropertiesV11 props_{};
  std::vector<void*> sends_, recvs_, listens_;
  std::vector<std::pair<void*, void*>> regs_;  // (comm, mhandle) registered and not yet deregistered
};

}  // namespace braid::network::conformance
