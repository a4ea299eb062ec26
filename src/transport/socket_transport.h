// Socket transport: connections over TCP between ranks on different hosts (and between processes
// of one host when BRAID_SHM_DISABLE=1), driven by proxy threads.
//
//   lane threads of the algorithm                 proxy threads (BRAID_SOCKET_NTHREADS)
//        |  HostFifo per connection                    |  each drives BRAID_NSOCKS_PERTHREAD
//        v                                             v  sockets of every connection
//   [outgoing FIFO] ---- sockets 0..k-1 ---->  peer's acceptor hands them to its proxy threads
//
// Every rank listens on one port (on the bootstrap's interface); the addresses are exchanged at
// init. A connection is made on first use by its sender, which opens k = NTHREADS x
// NSOCKS_PERTHREAD sockets to the receiver and introduces each with a hello (communicator, ranks,
// channel, connection id, socket index, k). The receiver's acceptor checks the hello (anything else
// is dropped with a warning) and gives the socket to a proxy thread. See socket_connection.h for
// how the slots move.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "core/status.h"
#include "net/socket.h"
#include "transport/host_fifo.h"
#include "transport/socket_connection.h"
#include "transport/waker.h"

namespace braid::transport {

struct SocketOptions {
  int nThreads = 1;         // BRAID_SOCKET_NTHREADS: proxy threads of the communicator
  int nSocksPerThread = 2;  // BRAID_NSOCKS_PERTHREAD: sockets each proxy thread drives per connection
  int slots = 8;            // FIFO slots per connection (BRAID_STEPS)
  size_t slotBytes = 0;     // bytes per slot (BRAID_CHUNK_BYTES)
  int64_t timeoutMs = 0;    // connecting; flushing what is queued at destruction (capped at 10 s)
};

/// The hello that introduces each socket of a connection, in the sender's byte order.
struct SocketHello {
  uint64_t magic;
  uint64_t commKey;
  int32_t src, dst, channel, connId, index, lanes;
};

/// What is wrong with a hello that arrived at rank `rank` of communicator `commKey` ("" if nothing).
std::string checkSocketHello(const SocketHello& hello, uint64_t commKey, int rank, int nranks);

class SocketTransport : public FifoObserver {
 public:
  SocketTransport(uint64_t commKey, int rank, int nranks, SocketOptions options, const std::atomic<bool>* abort);
  /// Sends what is still queued (bounded by the timeout), stops the threads, closes every socket.
  ~SocketTransport() override;

  /// Opens this rank's listener on `interfaceAddress` (any port); `*address` is what peers connect to.
  Status listen(const net::SocketAddress& interfaceAddress, net::SocketAddress* address);
  /// Every rank's listening address (indexed by rank); starts the acceptor and the proxy threads.
  Status start(std::vector<net::SocketAddress> peers);

  /// The FIFO of connection (channel, connId) from `src` to `dst` (one of them this rank), made on
  /// first use: the sender connects its sockets, the receiver's arrive through the acceptor.
  Status connection(int channel, int connId, int src, int dst, HostFifo** out);

  /// FifoObserver: a FIFO changed, the proxy threads may have work.
  void wake() override;

 private:
  struct Proxy;
  struct Pending;
  using Key = std::tuple<int, int, int, int>;  // channel, connId, src, dst

  void acceptLoop();
  bool readHello(Pending& pending);
  void adopt(const SocketHello& hello, net::Socket socket);
  void addLane(std::shared_ptr<SocketConnection> connection, int index, net::Socket socket);
  std::shared_ptr<SocketConnection> findOrMake(const Key& key, bool outgoing, int lanes);
  void flush();

  const uint64_t commKey_;
  const int rank_;
  const int nranks_;
  const SocketOptions options_;
  const std::atomic<bool>* abort_;
  net::Socket listener_;
  net::SocketAddress address_;
  std::vector<net::SocketAddress> peers_;
  std::vector<std::unique_ptr<Proxy>> proxies_;
  Waker acceptWaker_;
  std::thread acceptor_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::map<Key, std::shared_ptr<SocketConnection>> connections_;
};

}  // namespace braid::transport
