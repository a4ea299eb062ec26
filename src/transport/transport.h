// The transport seam: every way a rank reaches a peer, for host and GPU memory.
//
// Each rank's identity (host, process, device, bus id) is exchanged once at init. From two
// identities and a few facts of the communicator, one selection table picks the transport of each
// peer: the first row whose test passes. Each transport lives in its folder:
//
//   loopback/  threads of one process: FIFOs in this process's memory        (host memory)
//   p2p/       GPUs of one host: the peer's FIFOs in its GPU memory, reached by
//              pointer (same process) or CUDA IPC (another process)           (GPU)
//   shm/       processes of one host: FIFOs in shared memory; for GPUs, mapped
//              into the device's address space                                 (host memory, GPU)
//   net/       everything else: the network layer (ncclNet ABI) and proxy
//              threads that move FIFO slots                                    (host memory, GPU)
//
// A transport hands back a host FIFO (HostLinks, host_links.h: what host-memory collectives read
// and write) or device ends (DeviceLinks, device_links.h: what a kernel reads and writes), plus, for
// the network, progress work for its proxy. Adding a transport is a folder and a row here.
#pragma once

#include <cstdint>
#include <string>

namespace braid::transport {

/// What a rank is, as every other rank learns it at init (one exchange; core/comm.cc).
struct PeerIdentity {
  int64_t pid = 0;
  uint64_t host = 0;    // host identity (a hash of the host name or BRAID_HOSTID)
  int32_t device = -1;  // CUDA device ordinal; -1 for a host-memory communicator
  int32_t cpus = 1;     // CPUs its process may run on
  int32_t sms = 0;      // multiprocessors of its device
  int32_t noP2p = 0;    // it asks for no GPU peer access (BRAID_P2P_DISABLE=1)
  char busId[16] = {};  // its device's PCI bus id ("" for host memory)
  // Its network device's properties (a host-memory communicator's; 0: unknown): the cost model's
  // link between hosts (tune::hostMachine).
  int32_t netMbps = 0;
  float netLatencyUs = 0;
};

/// The transports, in the selection table's order.
enum class Kind : uint8_t { kLoopback, kP2p, kShm, kNet };
constexpr int kNumKinds = 4;

/// "loopback", "P2P", "SHM", "NET".
const char* kindName(Kind kind);

/// The communicator's facts that the choice depends on besides the two identities.
struct SelectFacts {
  bool gpu = false;          // GPU ranks (device ends); otherwise host memory (host FIFOs)
  bool shmDisabled = false;  // BRAID_SHM_DISABLE=1: processes of one host meet through the network
  bool hostMemory = false;   // GPU ranks whose FIFOs are mapped host memory (no peer access somewhere)
};

/// The transport between `me` and `peer` (the same answer on both sides).
Kind selectTransport(const PeerIdentity& me, const PeerIdentity& peer, const SelectFacts& facts);

/// Rank `peer`'s identity in words, for errors: "rank 3 (host 1a2b..., pid 123, device 0)".
std::string describePeer(int peer, const PeerIdentity& id);

}  // namespace braid::transport
