// Network transport: connections between ranks on different hosts (and between processes of one
// host when BRAID_SHM_DISABLE=1) through the network layer (transport/net/network.h: a net plugin,
// or braid's built-in socket network), driven by proxy threads.
//
//   lane threads of the algorithm                 proxy threads (BRAID_SOCKET_NTHREADS)
//        |  HostFifo per connection                    |  each drives BRAID_NSOCKS_PERTHREAD
//        v                                             v  lanes (network connections) of every connection
//   [outgoing FIFO] ---- lanes 0..k-1 ---->  peer's acceptor hands them to its proxy threads
//
// Every rank listens once on one device of the network (the built-in one: the device with the
// bootstrap's address) and the 128-byte handles are exchanged at init. A connection is made on
// first use by its sender, which connects k = NTHREADS x NSOCKS_PERTHREAD lanes to the receiver's
// handle and introduces each with a hello message (communicator, ranks, channel, connection id,
// lane index, k). The receiver's acceptor checks the hello (anything else is dropped with a
// warning; the network itself drops what is not one of its connections) and gives the lane to a
// proxy thread. See net_connection.h for how the slots move.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/status.h"
#include "net/socket.h"
#include "transport/host_fifo.h"
#include "transport/host_transport.h"
#include "transport/net/net_connection.h"
#include "transport/net/network.h"
#include "transport/waker.h"

namespace braid::transport {

/// What a peer connects to: the handle its network's listen() wrote.
using NetHandle = std::array<unsigned char, network::kNetHandleBytes>;

struct NetOptions {
  int nThreads = 1;         // BRAID_SOCKET_NTHREADS: proxy threads of the communicator
  int nSocksPerThread = 2;  // BRAID_NSOCKS_PERTHREAD: lanes each proxy thread drives per connection
  int slots = 8;            // FIFO slots per connection (BRAID_STEPS)
  size_t slotBytes = 0;     // bytes per slot (BRAID_CHUNK_BYTES)
  int64_t timeoutMs = 0;    // connecting; flushing what is queued at destruction (capped at 10 s)
  // Connections are attached (attach()), never made on first use: a lane that arrives before its
  // connection is attached waits for it.
  bool attachedOnly = false;
  // Called (on a proxy thread) when a connection fails: its FIFO's other side may be a kernel,
  // which no closed FIFO stops. A peer that leaves fails an attached connection only once a
  // kernel needs what it will not send or receive (NetConnection::checkEnded).
  std::function<void(int peer, const std::string& why)> onFailure;
  // Tests: this network instead of the one Network::open chooses (plugins, BRAID_NET).
  const network::NetV11* network = nullptr;

  /// BRAID_SOCKET_NTHREADS and BRAID_NSOCKS_PERTHREAD (clamped), with these FIFO sizes.
  static NetOptions fromParams(int slots, size_t slotBytes, int64_t timeoutMs);
};

/// The longest sleep of the transport's threads (proxies, acceptor): how late a stop is seen.
constexpr int kNetPollMs = 100;

/// The first field of every lane's hello ("braidLNE"; not the socket network's own hello).
constexpr uint64_t kNetHelloMagic = 0x62726169644c4e45ull;

/// The message that introduces each lane of a connection, in the sender's byte order.
struct NetHello {
  uint64_t magic;
  uint64_t commKey;
  int32_t src, dst, channel, connId, index, lanes;
  int32_t flags;  // kHelloDataAlone, or 0
  int32_t unused;
};
/// NetHello::flags: the sender's slots travel as their data alone (HostFifo::wireContiguous() is
/// false: GPU memory the network reads itself), one lane a connection; the receiver's FIFO must
/// be of the same kind.
constexpr int32_t kHelloDataAlone = 1;

/// What is wrong with a hello that arrived at rank `rank` of communicator `commKey` ("" if nothing).
std::string checkNetHello(const NetHello& hello, uint64_t commKey, int rank, int nranks);

class NetTransport : public FifoObserver, public HostTransport {
 public:
  NetTransport(uint64_t commKey, int rank, int nranks, NetOptions options, const std::atomic<bool>* abort);
  /// Sends what is still queued (bounded by the timeout), stops the threads, closes every lane.
  ~NetTransport() override;

  /// Before start: the slot size of the connections' FIFOs made from then on (NetOptions::slotBytes).
  void setSlotBytes(size_t slotBytes) { options_.slotBytes = slotBytes; }

  /// Opens the network and listens on the device for `interfaceAddress` (the bootstrap's);
  /// `*handle` is what peers connect to.
  Status listen(const net::SocketAddress& interfaceAddress, NetHandle* handle);
  /// Every rank's handle (indexed by rank); starts the acceptor and the proxy threads.
  Status start(std::vector<NetHandle> peers);
  /// "BraidSocket/0 (eth0, ptrSupport HOST, 10000 Mb/s)" once listening.
  std::string describe() const;
  /// For a hang report: each connection with `peer`, its slots counted at each hand-over (what this
  /// rank's sender published, the network sent and the peer freed; what the network received and
  /// this rank's reader consumed), so that a report tells a slot stuck in the network from one
  /// that was never sent.
  std::string describePeer(int peer) const;
  /// The listening device's ptrSupport (net_abi.h's kPtr* bits; 0 before listen).
  int ptrSupport() const;
  /// The listening device's speed (Mb/s) and latency (us) as the network reports them (0: unknown,
  /// or before listen).
  void speedAndLatency(int* mbps, float* latencyUs) const;
  /// True when host FIFOs' large sends go by reference (HostFifo::allowByReference): braid's own
  /// socket network, which reads any host memory (a plugin would need each buffer registered).
  bool sendsByReference() const { return network_ != nullptr && network_->builtIn(); }
  /// True when the network has regMrDmaBuf.
  bool registersDmaBuf() const { return network_ != nullptr && network_->api().regMrDmaBuf != nullptr; }
  /// True when the network has iflush.
  bool flushes() const { return network_ != nullptr && network_->api().iflush != nullptr; }

  /// The FIFO of connection (channel, connId) from `src` to `dst` (one of them this rank), made on
  /// first use: the sender connects its lanes, the receiver's arrive through the acceptor.
  Status fifo(int channel, int connId, int src, int dst, HostFifo** out) override;

  /// Connection (channel, connId) from `src` to `dst` (one of them this rank) over `fifo`, a FIFO
  /// whose other side is a GPU kernel (HostFifo::forDevice), made now: the sender connects its
  /// lanes, the receiver adopts them as they arrive. A FIFO whose data lies apart
  /// (HostFifo::forDeviceData) is one lane, and its slots travel as their data alone.
  /// `quiet`: the connection's end is no failure of the calls (a host link: the call ledger's), so
  /// it closes its FIFO and tells no one (options.onFailure is not called).
  Status attach(int channel, int connId, int src, int dst, std::unique_ptr<HostFifo> fifo, bool quiet = false);

  /// Between beginWork() and its endWork() a kernel may fill or drain attached FIFOs, which wakes
  /// nobody: the proxies poll them without sleeping meanwhile. Safe from any thread (the unit tests
  /// play kernels with it).
  void beginWork();
  void endWork();
  /// The same for eager launches, without host functions (DeviceTransport::eagerLaunch): the
  /// launching thread calls it before queuing a kernel (`begin`) and after queuing it and the
  /// probe's event; the proxies poll until `done` (setDoneProbe, before the first launch) says
  /// that every kernel queued before the last end has ended.
  void eagerLaunch(bool begin);
  void setDoneProbe(std::function<bool()> done) { doneProbe_ = std::move(done); }
  /// A kernel of this rank was captured into a CUDA graph, whose replays tell no one (a host
  /// function in a graph can hold other ranks' launches of the same process, bench/NOTES.md,
  /// twenty-second session), so while the count is above zero an idle proxy polls on for a while
  /// after anything moved and then naps briefly instead of sleeping. The caller decrements the
  /// count it is given once the graph is gone (it may outlive this transport).
  std::shared_ptr<std::atomic<int>> graphCaptured();
  /// Whether a kernel may be filling or draining the FIFOs (the proxies then poll).
  bool kernelsMayRun();

  /// FifoObserver: a FIFO changed, the proxy threads may have work.
  void wake() override;
  /// FifoObserver: a slot was freed. The proxies are woken (one asleep posts a receive into it, or
  /// sees a send done), but nobody steps the lanes here: a caller that consumed a received slot
  /// goes on to send its own next slot first, instead of reading the peer's next message before
  /// it (bench/NOTES.md, twenty-ninth session).
  void freed() override;
  /// FifoObserver: a caller polls a FIFO: it steps the lanes of every proxy that is not stepping
  /// them (a message that arrives then reaches it without waking the proxy).
  void stepInline() override;
  /// FifoObserver: a connection failed; told to options.onFailure.
  void failed(int peer, const std::string& why) override;
  /// FifoObserver: `peer` closed a connection or went away. This rank's connections to it fail at
  /// the next slot published to them (NetConnection::notePeerGone). Once every lane it made has arrived
  /// (drainGone), a connection from it that has none fails: it will never send on it (it is in
  /// another call, failed, or ended its communicator), and nothing else would end a wait on it.
  void peerGone(int peer, const std::string& why) override;

 private:
  struct Proxy;
  struct Pending;
  using Key = std::tuple<int, int, int, int>;  // channel, connId, src, dst

  void acceptLoop();
  bool stepPending(Pending& pending);
  void adopt(const NetHello& hello, void* recvComm);
  void adoptInto(std::shared_ptr<NetConnection> connection, const NetHello& hello, void* recvComm);
  void addLane(std::shared_ptr<NetConnection> connection, int index, void* comm);
  std::shared_ptr<NetConnection> findOrMake(const Key& key, bool outgoing, int lanes);
  Status connectOutgoing(const Key& key, std::unique_ptr<HostFifo> fifo, std::shared_ptr<NetConnection>* out,
                         bool quiet = false);
  Status connectLane(int dst, const NetHello& hello, const net::Deadline& deadline, void** sendComm);
  void flush();
  void checkEnded();
  std::vector<std::pair<std::shared_ptr<NetConnection>, std::string>> goneOutgoing();
  void drainGone(std::chrono::steady_clock::time_point passBegan);
  bool drainedGone(int peer, std::string* why);
  static std::string neverSent(const Key& key, const std::string& why);

  const uint64_t commKey_;
  const int rank_;
  const int nranks_;
  NetOptions options_;  // (slotBytes: setSlotBytes)
  const std::atomic<bool>* abort_;
  std::unique_ptr<network::Network> network_;
  int device_ = 0;
  void* listenComm_ = nullptr;
  std::vector<NetHandle> peers_;
  std::vector<std::unique_ptr<Proxy>> proxies_;
  Waker acceptWaker_;
  std::thread acceptor_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::map<Key, std::shared_ptr<NetConnection>> connections_;
  std::multimap<Key, std::pair<NetHello, void*>> parked_;  // lanes waiting for attach() (guarded by mu_)
  struct Gone {
    std::string why;
    std::chrono::steady_clock::time_point at;
    bool drained = false;  // every lane it made has arrived
  };
  std::map<int, Gone> gone_;          // peers that closed a connection or left (guarded by mu_)
  std::atomic<size_t> goneCount_{0};  // gone_.size()
  std::atomic<size_t> drainedCount_{0};
  std::atomic<int> working_{0};  // kernels between beginWork and endWork
  std::shared_ptr<std::atomic<int>> liveGraphs_ = std::make_shared<std::atomic<int>>(0);  // graphCaptured
  // Eager launches: begun and ended (queued) so far, and the count of begun at which the probe
  // last found every kernel ended.
  std::atomic<uint64_t> eagerBegun_{0};
  std::atomic<uint64_t> eagerQueued_{0};
  std::atomic<uint64_t> eagerQuietAt_{0};
  std::function<bool()> doneProbe_;
};

}  // namespace braid::transport
