// What a peer sends to braid's socket network (transport/net/socket_net.cc), from outside: the hello
// that opens a connection to a listener (anyone can connect), then messages, each a 16-byte header
// (magic, tag, size) and its bytes, into posted receives. Each input goes down a real loopback TCP
// connection to a listener; the network must drop the connection, fail the receive or deliver it,
// never crash or hang. An input that begins with the hello's magic gets this listener's nonce in its
// next 8 bytes (random per listener: no input could guess it), so that the fuzzer reaches the
// message headers.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "net/socket_address.h"
#include "transport/net/socket_net.h"

namespace {

using braid::network::NetV11;
const NetV11* net = nullptr;
void* ctx = nullptr;
void* listenComm = nullptr;
uint64_t nonce = 0;
braid::net::SocketAddress listener;
constexpr uint64_t kHelloMagic = 0x627261696448454cull;  // "braidHEL", as socket_net.cc sends it

void quiet(int, unsigned long, const char*, int, const char*, ...) {}

void finish() {
  net->closeListen(listenComm);
  net->finalize(ctx);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("BRAID_SOCKET_IFNAME", "lo", 1);  // (before any thread exists)
  net = &braid::network::socketNetwork();
  braid::network::NetCommConfig config{braid::network::kNetTrafficClassUndef};
  char handle[braid::network::kNetHandleBytes];
  if (net->init(&ctx, 1, &config, quiet, nullptr) != ncclSuccess ||
      net->listen(ctx, 0, handle, &listenComm) != ncclSuccess ||
      !braid::net::decodeAddress(reinterpret_cast<const unsigned char*>(handle) + 16, &listener).isOk()) {
    std::abort();
  }
  std::memcpy(&nonce, handle + 8, sizeof(nonce));
  std::atexit(finish);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> in(data, data + size);
  if (size >= 16 && std::memcmp(in.data(), &kHelloMagic, 8) == 0) std::memcpy(in.data() + 8, &nonce, 8);
  int fd = socket(listener.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && listener.family() == AF_INET) {
    // Each input's connection from its own loopback address (127.0.0.0/8 is all this host's): the
    // side that closes first keeps its address and port in TIME_WAIT for a minute, and thousands of
    // inputs a second from 127.0.0.1 used up its ephemeral ports (on a 16-core machine with four
    // jobs, connect failed after about 200,000 inputs each).
    static uint32_t next = 0;
    sockaddr_in from{};
    from.sin_family = AF_INET;
    from.sin_addr.s_addr = htonl(0x7f000000u | (1u + next++ % 0xfffffdu));
    bind(fd, reinterpret_cast<const sockaddr*>(&from), sizeof(from));
  }
  if (fd < 0 || connect(fd, listener.sockaddrPtr(), listener.sockaddrLength()) != 0) {
    std::fprintf(stderr, "fuzz_socket_net: cannot connect to the listener: %s\n", std::strerror(errno));
    std::abort();  // the harness's own failure, not braid's
  }
  size_t sent = 0;
  while (sent < in.size()) {
    ssize_t n = send(fd, in.data() + sent, in.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  // The peer has said all it will, and over loopback it is all there once send returns: a few
  // accepts take the connection and its hello (or drop it), and every receive below ends.
  shutdown(fd, SHUT_WR);
  void* recvComm = nullptr;
  for (int i = 0; i < 100 && recvComm == nullptr; ++i) {
    if (net->accept(listenComm, &recvComm, nullptr) != ncclSuccess) std::abort();  // junk never fails the listener
  }
  if (recvComm != nullptr) {
    static char buffers[2][1024];
    void* mh[2] = {nullptr, nullptr};
    for (int b = 0; b < 2; ++b) net->regMr(recvComm, buffers[b], sizeof(buffers[b]), braid::network::kPtrHost, &mh[b]);
    bool failed = false;
    for (int m = 0; m < 4 && !failed; ++m) {  // up to four messages, tags 7 and 8 in turn, 1 KiB each
      void* bufs[1] = {buffers[m % 2]};
      size_t sizes[1] = {sizeof(buffers[0])};
      int tags[1] = {7 + m % 2};
      void* request = nullptr;
      if (net->irecv(recvComm, 1, bufs, sizes, tags, &mh[m % 2], nullptr, &request) != ncclSuccess) break;
      int done = 0, got[1] = {0};
      for (int i = 0; i < 1000 && !done; ++i) {
        if (net->test(request, &done, got) != ncclSuccess) {
          failed = true;
          break;
        }
      }
      if (!done && !failed) break;  // (a receive still waiting: closed with the connection)
    }
    for (int b = 0; b < 2; ++b) {
      if (mh[b] != nullptr) net->deregMr(recvComm, mh[b]);
    }
    net->closeRecv(recvComm);
  }
  close(fd);
  return 0;
}
