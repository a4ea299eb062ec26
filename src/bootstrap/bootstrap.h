// Bootstrap: how the ranks of a communicator find each other and exchange small messages over TCP
// before (and besides) any data transport exists.
//
//   getUniqueId            rank r (Bootstrap::create)                 root (RootServer thread)
//   -----------            ---------------------------               ------------------------
//   root listener  <------ connect, Hello{magic, rank, nranks, my listener address}
//                          <------------------------------------- Ring{next rank's address}
//                          connect to next rank, accept from previous rank
//                          ring all-gather of every rank's listener address
//
// Afterwards: allGather over the ring connections, send/recv of tagged messages (one connection
// per message to the peer's listener, unexpected messages queued), barrier. Every wait has a
// deadline; every incoming connection must present the magic in a well-formed frame of bounded
// length or it is dropped and logged while the real ranks carry on.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/net.h"
#include "core/status.h"

namespace braid::bootstrap {

/// The opaque 128 bytes of braidUniqueId.
struct UniqueIdBytes {
  unsigned char bytes[128];
};

/// What a unique id carries (serialized into UniqueIdBytes, native byte order of the sender).
struct UniqueIdInfo {
  uint64_t magic = 0;            // random (or derived from the rendezvous address); every frame carries it
  SocketAddress root;            // where the root listens
  bool rank0ServesRoot = false;  // true when rank 0 starts the root inside Bootstrap::create
};

void encodeUniqueId(const UniqueIdInfo& info, UniqueIdBytes* out);
Status decodeUniqueId(const UniqueIdBytes& in, UniqueIdInfo* out);

/// braidGetUniqueId: a random magic and a root address. Without BRAID_COMM_ID a root listener is
/// opened on the chosen interface (BRAID_SOCKET_IFNAME / BRAID_SOCKET_FAMILY) and served by a
/// background thread of this process; with BRAID_COMM_ID=host:port the id names that address and
/// rank 0 serves the root when it initializes.
Status createUniqueId(UniqueIdBytes* out);

/// Like createUniqueId without BRAID_COMM_ID, whatever the environment says: the root is served by
/// a background thread of this process. For ids made inside a running job (a split leader), where
/// the fixed BRAID_COMM_ID address belongs to the job's first communicator.
Status createLocalUniqueId(UniqueIdBytes* out);

/// 64 random bits from the kernel, never 0; if it cannot give them (very early boot, seccomp), a mix
/// of time and pid, which still differs between the jobs of one host.
uint64_t randomBits();

/// A unique id for a rendezvous at a fixed "host:port" that rank 0 serves (launcher environments).
/// The magic is derived from `jobKey` so that every rank computes the same id.
Status uniqueIdForAddress(const std::string& hostPort, const std::string& jobKey, UniqueIdBytes* out);

struct Options {
  /// Deadline of every wait, > 0 (create: of each phase; the root's own deadline is this value
  /// counted from the first rank's Hello). BRAID_BOOTSTRAP_TIMEOUT is the usual source.
  int64_t timeoutMs = 120000;
  /// When set to true (from any thread), every wait fails within ~100 ms with an internalError
  /// whose message starts with "aborted". Must outlive the Bootstrap.
  const std::atomic<bool>* abort = nullptr;
};

/// One rank's bootstrap. Calls on one Bootstrap must come from one thread at a time; only the abort
/// flag may be set from another thread. Errors name the peer rank and what was waited for.
class Bootstrap {
 public:
  /// Joins the communicator named by `id` as `rank` of `nranks` (the rendezvous above).
  /// A rank that does not arrive in time makes every other rank fail with a timeout naming it.
  static Status create(const UniqueIdBytes& id, int rank, int nranks, const Options& options,
                       std::unique_ptr<Bootstrap>* out);

  virtual ~Bootstrap() = default;

  virtual int rank() const = 0;
  virtual int nranks() const = 0;

  /// In place: `data` holds nranks slots of `bytesPerRank`; slot `rank()` is this rank's input, the
  /// others are filled from the other ranks.
  virtual Status allGather(void* data, size_t bytesPerRank) = 0;

  /// Sends `bytes` to `peer` under `tag`; does not wait for the receiver to call recv (a message
  /// larger than the socket buffers waits until the receiver makes any bootstrap call). Messages
  /// to oneself are allowed.
  virtual Status send(int peer, uint32_t tag, const void* data, size_t bytes) = 0;

  /// Receives the next message from `peer` with `tag` (FIFO per peer and tag; other messages that
  /// arrive meanwhile are kept); its size must equal `bytes`, or invalidUsage names both sizes.
  virtual Status recv(int peer, uint32_t tag, void* data, size_t bytes) = 0;

  /// Returns when every rank has entered the barrier.
  virtual Status barrier() = 0;

  /// The listener address of every rank, indexed by rank.
  virtual const std::vector<SocketAddress>& peerAddresses() const = 0;
};

}  // namespace braid::bootstrap
