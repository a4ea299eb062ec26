// Buffer registrations exported to the other processes of one host (braidCommRegister /
// ncclCommRegister, comm_buffers.cc). Registering a buffer is not a collective, so the rank that
// registers cannot wait for its peers to map it; instead it asks each peer process's export service
// to map the buffer's allocation for the peer rank (CUDA IPC) and to answer where that process sees
// it. A direct call then writes that address into the peer's slot (device/direct.cuh), as it does for
// a window. NCCL's proxy thread does the same for its registered buffers.
//
// The service: a thread per process (started with the first communicator that needs it), one
// listener per communicator rank on its bootstrap interface, one fixed-size request per connection
// and one reply. A request names the communicator instance and the rank it is for; anything else
// (junk, a partial request that stalls, a stranger's key) is answered with an error or dropped,
// and nothing a connection sends stops the others being served.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "net/socket.h"

namespace braid::core {

constexpr int kIpcHandleBytes = 64;  // a cudaIpcMemHandle_t

/// One request on the wire.
struct ExportRequest {
  uint32_t magic = 0;  // kExportOpenMagic or kExportCloseMagic
  int32_t rank = -1;   // the rank, in the serving process, the mapping is for
  uint64_t commKey = 0;
  int32_t from = -1;  // the asking rank, for messages
  uint32_t pad = 0;
  uint8_t ipc[kIpcHandleBytes] = {};
};
static_assert(sizeof(ExportRequest) == 88, "ExportRequest crosses sockets byte for byte");

/// One reply on the wire.
struct ExportReply {
  uint32_t magic = 0;  // kExportReplyMagic
  int32_t result = 0;  // kExportDone, kExportRefused or kExportNotServed
  uint64_t at = 0;     // open: where the serving process sees the allocation
  char why[176] = {};
};
static_assert(sizeof(ExportReply) == 192, "ExportReply crosses sockets byte for byte");

constexpr uint32_t kExportOpenMagic = 0x4f455242;   // "BREO"
constexpr uint32_t kExportCloseMagic = 0x43455242;  // "BREC"
constexpr uint32_t kExportReplyMagic = 0x52455242;  // "BRER"
constexpr int32_t kExportRefused = 0;               // `why` says why
constexpr int32_t kExportDone = 1;
constexpr int32_t kExportNotServed = 2;  // no such rank here, or it has stopped serving (it holds no mapping)

/// What the service does for one rank: map an allocation another process exported (`*at` gets
/// where this process sees it), or drop one such mapping. Each successful open is matched by a
/// close; the service closes what a peer left open when the rank stops serving.
struct ExportTarget {
  std::function<Status(const uint8_t* ipc, uint64_t* at)> open;
  std::function<void(const uint8_t* ipc)> close;
};

/// One rank's place in the service, from listen() until it is destroyed (which closes, through the
/// target, every mapping peers left open, and stops the thread with the last one).
class ExportListener {
 public:
  ~ExportListener();
  ExportListener(const ExportListener&) = delete;
  ExportListener& operator=(const ExportListener&) = delete;

  /// Listens on `interfaceAddress`'s interface for requests for `rank`. Requests are refused until
  /// serve() names the communicator instance.
  static Status listen(const net::SocketAddress& interfaceAddress, int rank, std::unique_ptr<ExportListener>* out);
  /// The listener's port.
  uint16_t port() const;
  /// From now on answers requests that name `commKey` and this rank, through `target`.
  void serve(uint64_t commKey, ExportTarget target);

  struct Entry;

 private:
  ExportListener() = default;
  std::shared_ptr<Entry> entry_;
};

/// Asks the export service at `to` (rank `rank` of `commKey`, asked by rank `from`) to map the
/// allocation whose IPC handle is `ipc` (`open`; `*at` gets where it sees it) or to drop one mapping
/// of it. Bounded by `timeoutMs`; the error names the rank and what it said. Dropping a mapping from
/// a rank that no longer serves (its port closed, the connection closed unanswered, or the answer
/// "not served") succeeds: its communicator is gone, and its mappings with it.
Status askExportService(const net::SocketAddress& to, uint64_t commKey, int rank, int from, bool open,
                        const uint8_t* ipc, int64_t timeoutMs, uint64_t* at);

}  // namespace braid::core
