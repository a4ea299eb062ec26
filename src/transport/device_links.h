// What a GPU rank's transports hand back: the device ends of each connection (device_work.h's
// PeerConn: the FIFO a kernel receives on, the peer's FIFO it writes, the head and tail counters,
// and for a network peer the slot stride of its host-staged FIFO), plus, for the network, progress
// work for its proxy around each kernel.
//
// The CUDA engine (exec/cuda_engine.cc) lays out each rank's arena of FIFO blocks and asks the
// selection table (transport.h) which transport reaches each peer; it does not know how:
//   p2p/  the peer's arena in GPU memory, by pointer (same process) or CUDA IPC;
//   shm/  arenas in shared host memory, mapped into each GPU's address space;
//   net/  FIFOs of this rank's own in pinned host memory, moved by the network proxy.
// Built with CUDA only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "device/device_work.h"
#include "transport/transport.h"

namespace braid::transport {

/// What a GPU rank offers its peers, in init's one exchange of connection handles (the identities
/// came before): each transport reads its own part.
struct DeviceOffer {
  uint64_t base = 0;             // the arena's address in the offering process (p2p, shm)
  uint64_t bytes = 0;            // the arena's size
  unsigned char ipc[64] = {0};   // p2p: cudaIpcMemHandle_t of the arena (GPU memory)
  char shm[48] = {0};            // shm: the arena's shared-memory name (host memory)
  unsigned char net[128] = {0};  // net: the handle of the rank's network listener
  uint8_t netGdr = 0;            // net: this rank's network may keep the FIFOs' data in GPU memory
};

/// The first rank whose offer says its network may not keep the network FIFOs' data in GPU memory
/// (GPUDirect RDMA), or -1 when every rank's may: only then does any rank, since the two ends of a
/// connection must agree.
int firstRankWithoutGpuDirect(const std::vector<DeviceOffer>& offers);

/// Where a FIFO block's parts lie, from its start (the engine's layout; the same on every rank).
struct BlockLayout {
  size_t tail = 0;      // the receiver's tail: senders publish here
  size_t head = 0;      // the sender's head: receivers report consumption here
  size_t recvStep = 0;  // slots received, sent (the watchdog reads them)
  size_t sendStep = 0;
  size_t simple = 0;  // the slots of each protocol
  size_t ll = 0;
  size_t ll128 = 0;
};

/// One transport's GPU connections, with the peers the selection table gave it.
class DeviceTransport {
 public:
  virtual ~DeviceTransport() = default;
  /// Reaches `peer` (before any of its ends): maps its arena, or prepares what carries its bytes.
  /// `path` names the way for the log ("P2P/IPC", "SHM/mapped host memory", "NET/Socket").
  virtual Status reach(int peer, const PeerIdentity& identity, const DeviceOffer& offer, std::string* path) = 0;
  /// The peer's arena as this rank's kernels address it; null where the transport keeps FIFOs of
  /// its own (the network).
  virtual char* arena(int peer) const = 0;
  /// After every peer is reached, with every rank's offer (the network starts its proxy).
  virtual Status start(const std::vector<DeviceOffer>& offers) { return Status::ok(); }
  /// Every rank's offer, before the first reach: what all ranks must choose alike is settled here.
  virtual void agree(const std::vector<DeviceOffer>& offers) {}
  /// The ends of connection (channel, connId) with `peer`: `mine` is this rank's block for it,
  /// `theirs` the peer's block for this rank (null where arena(peer) is). `pc`'s step counters are
  /// set already.
  virtual Status ends(int channel, int connId, int peer, char* mine, char* theirs, device::PeerConn* pc) = 0;
  /// Before each kernel captured into a CUDA graph on `stream` (a cudaStream_t): the network's
  /// proxy learns that a graph of this rank's kernels lives, whose replays tell no one.
  virtual Status captured(void* stream) { return Status::ok(); }
  /// Around each eager launch, on the launching thread at once (no stream-ordered work: a host
  /// function queued behind a kernel that waits for another rank of the same process could hold
  /// that rank's launch; bench/NOTES.md, twenty-first session): `begin` before the kernel is
  /// queued, the end once it and the probe's event are. The network's proxy polls from a begin
  /// until the probe (setDoneProbe) says every kernel queued before the last end has ended.
  virtual void eagerLaunch(bool begin) {}
  virtual void setDoneProbe(std::function<bool()> done) {}
  /// For a hang report: where the bytes between this rank and `peer` stand in this transport
  /// ("" where it keeps nothing between the two kernels, as mapped memory does).
  virtual std::string describeLinks(int peer) const { return std::string(); }
};

/// Both ends of a connection whose blocks are mapped here (p2p, shm): the sender writes the
/// receiver's slots and tail, the receiver the sender's head.
void mappedEnds(const BlockLayout& layout, char* mine, char* theirs, device::PeerConn* pc);

/// A transport that maps its peers' arenas here (p2p, shm): reach() fills arenas_, and every
/// connection's ends come from the two blocks (mappedEnds).
class MappedDeviceTransport : public DeviceTransport {
 public:
  char* arena(int peer) const override { return arenas_[peer]; }
  Status ends(int channel, int connId, int peer, char* mine, char* theirs, device::PeerConn* pc) override;

 protected:
  /// `name` for errors ("P2P"); `nranks` arenas, none mapped yet.
  MappedDeviceTransport(const char* name, int nranks, const BlockLayout& layout)
      : arenas_(nranks, nullptr), name_(name), layout_(layout) {}
  std::vector<char*> arenas_;  // per rank: its arena as this rank's kernels address it

 private:
  const char* name_;
  const BlockLayout layout_;
};

}  // namespace braid::transport
