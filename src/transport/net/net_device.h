// The network transport for GPUs: a connection to a GPU rank on another host is two FIFOs of this
// rank's own, moved by the network transport's proxy threads.
//
//   sender's GPU --stores--> outbox                          inbox --loads--> receiver's GPU
//                              |  proxy: isend of each         ^  proxy: irecv into each free
//                              +--  published slot ------------+  slot, (iflush,) then publish
//
// Both are HostFifo blocks, so the network transport's lanes move them exactly as they move
// host-memory FIFOs. Their counters (and the size of each slot the kernel fills) are in pinned,
// mapped host memory, where kernel and proxy poll them. The slots' data is there too (the kernel
// reaches it over PCIe; lane 0 sends a slot's size word with its data, the receiver checks it),
// unless the network reads and writes GPU memory itself (ptrSupport CUDA or DMABUF, BRAID_NET_GDR=1):
// then the data lies in GPU memory (HostFifo::forDeviceData), registered as such (by a DMA-BUF
// the driver exports where the network takes one, else as CUDA memory), and each
// receive is flushed (iflush) before its slot is published: GPUDirect RDMA, "/GDRDMA" in the log.
// The kernel cannot wake a proxy: an eager launch tells it at once (eagerLaunch), and while a CUDA
// graph of this rank's kernels lives the proxy never sleeps long (captured). A connection that fails
// sets the abort flag, so no kernel waits for data that will never come, and the communicator
// reports the network's words.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "net/socket_address.h"
#include "transport/device_links.h"
#include "transport/net/net_transport.h"

namespace braid::transport {

struct NetDeviceOptions {
  uint64_t commKey = 0;
  int rank = 0;
  int nranks = 1;
  int slots = 8;             // FIFO slots per connection (the kernels' steps)
  size_t slotBytes = 0;      // the largest slot any protocol fills, header included
  int64_t timeoutMs = 0;     // connecting
  int* abortFlag = nullptr;  // mapped host memory: set when a connection fails, so kernels stop
  std::function<void(const std::string& why)> onFailure;  // the first failure, in words
  void* setupStream = nullptr;  // a cudaStream_t that waits for no other stream: zeroes GPU slots
};

class NetDeviceTransport : public DeviceTransport {
 public:
  explicit NetDeviceTransport(const NetDeviceOptions& options);
  /// Sends what is queued, stops the proxy, closes the connections, frees the FIFOs (after the
  /// communicator's last kernel).
  ~NetDeviceTransport() override;

  /// Listens on the network (before the offers are exchanged): `handle` goes in this rank's offer.
  Status listen(const net::SocketAddress& interfaceAddress, unsigned char handle[128]);

  Status reach(int peer, const PeerIdentity& identity, const DeviceOffer& offer, std::string* path) override;
  char* arena(int) const override { return nullptr; }
  Status start(const std::vector<DeviceOffer>& offers) override;
  /// GPUDirect RDMA for the FIFOs only where every rank's network takes it (`agree`): a rank
  /// whose network cannot, or that set BRAID_NET_GDR=0, stages every rank's.
  void agree(const std::vector<DeviceOffer>& offers) override;
  /// What this rank's offer says (DeviceOffer::netGdr): its network may keep the data in GPU memory.
  bool gpuDirectCapable() { return localGdr() != Gdr::kNone; }
  Status ends(int channel, int connId, int peer, char* mine, char* theirs, device::PeerConn* pc) override;
  Status captured(void* stream) override;
  void eagerLaunch(bool begin) override;
  void setDoneProbe(std::function<bool()> done) override;
  /// A link of host-memory FIFOs with `peer`, both ways, for the host's own messages (the call
  /// ledger's batches of entries), slots of kHostLinkSlotBytes: `*outbox` this rank publishes to,
  /// `*inbox` it reads; the connections own both. Channel and connection id kHostLinkId, which no
  /// kernel's connection has. Its end is no failure (attach's quiet).
  Status link(int peer, HostFifo** outbox, HostFifo** inbox);
  static constexpr int kHostLinkId = 1023;
  static constexpr size_t kHostLinkSlotBytes = 2048;
  std::string describeLinks(int peer) const override {
    return net_ == nullptr ? std::string() : net_->describePeer(peer);
  }

 private:
  enum class Gdr { kNone, kCuda, kDmaBuf };  // the slots' data: host memory, or GPU memory registered so
  Gdr localGdr();                            // what this rank's network and driver allow (probed once)
  Gdr gpuDirect() const { return gdr_; }     // what every rank does (agree; none before it)

  const NetDeviceOptions o_;
  std::unique_ptr<NetTransport> net_;
  std::vector<void*> blocks_;     // the FIFOs' pinned host memory
  std::vector<void*> gpuBlocks_;  // their data in GPU memory (GPUDirect RDMA)
  bool localKnown_ = false;
  Gdr local_ = Gdr::kNone;
  Gdr gdr_ = Gdr::kNone;
};

}  // namespace braid::transport
