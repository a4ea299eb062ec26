// The unique id (braidUniqueId, 128 bytes) and where it comes from.
//
//   0        8        16                       40     41    44          48            128
//   +--------+--------+------------------------+------+-----+-----------+-------------+
//   | marker | magic  | root address (wire)    |flags | 0   | checksum  | zero        |
//   +--------+--------+------------------------+------+-----+-----------+-------------+
//
// The marker and the checksum catch an id that was not produced by braid, or was damaged or only
// partly copied on its way to the other ranks, before anyone connects anywhere.
#include <sys/random.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "bootstrap/bootstrap.h"
#include "bootstrap/net.h"
#include "bootstrap/root_server.h"
#include "core/log.h"
#include "core/param.h"

namespace braid::bootstrap {
namespace {

constexpr unsigned char kMarker[8] = {'b', 'r', 'a', 'i', 'd', 'I', 'D', 1};
constexpr size_t kMagicAt = 8;
constexpr size_t kRootAt = 16;
constexpr size_t kFlagsAt = kRootAt + kWireAddressBytes;  // 40
constexpr size_t kChecksumAt = 44;
constexpr size_t kUsedBytes = 48;
constexpr unsigned char kRank0ServesRoot = 1;

uint32_t fnv1a32(const unsigned char* p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 16777619u;
  return h;
}

uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

uint64_t randomBits() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(v))) {
    auto now = std::chrono::high_resolution_clock::now().time_since_epoch().count();
    v = fnv1a64(std::to_string(now) + "/" + std::to_string(getpid()));
  }
  return v == 0 ? 1 : v;
}

void encodeUniqueId(const UniqueIdInfo& info, UniqueIdBytes* out) {
  std::memset(out->bytes, 0, sizeof(out->bytes));
  std::memcpy(out->bytes, kMarker, sizeof(kMarker));
  std::memcpy(out->bytes + kMagicAt, &info.magic, sizeof(info.magic));
  encodeAddress(info.root, out->bytes + kRootAt);
  out->bytes[kFlagsAt] = info.rank0ServesRoot ? kRank0ServesRoot : 0;
  uint32_t sum = fnv1a32(out->bytes, kChecksumAt);
  std::memcpy(out->bytes + kChecksumAt, &sum, sizeof(sum));
}

Status decodeUniqueId(const UniqueIdBytes& in, UniqueIdInfo* out) {
  const unsigned char* b = in.bytes;
  if (std::memcmp(b, kMarker, sizeof(kMarker)) != 0) {
    return invalidArgument(
        "the unique id is not a braid id: pass every rank the id that braidGetUniqueId produced, unchanged");
  }
  uint32_t sum = 0;
  std::memcpy(&sum, b + kChecksumAt, sizeof(sum));
  bool tailZero = true;
  for (size_t i = kUsedBytes; i < sizeof(in.bytes); ++i) tailZero = tailZero && b[i] == 0;
  bool padZero = b[kFlagsAt + 1] == 0 && b[kFlagsAt + 2] == 0 && b[kFlagsAt + 3] == 0;
  if (sum != fnv1a32(b, kChecksumAt) || !tailZero || !padZero || (b[kFlagsAt] & ~kRank0ServesRoot) != 0) {
    return invalidArgument(
        "the unique id is corrupted (checksum or padding mismatch): it was changed or only partly "
        "copied on its way to this rank");
  }
  UniqueIdInfo info;
  std::memcpy(&info.magic, b + kMagicAt, sizeof(info.magic));
  BRAID_RETURN_IF_ERROR(decodeAddress(b + kRootAt, &info.root).withContext("the unique id's root address"));
  if (info.root.empty() || info.root.port() == 0 || info.magic == 0) {
    return invalidArgument("the unique id has no root address or magic");
  }
  info.rank0ServesRoot = (b[kFlagsAt] & kRank0ServesRoot) != 0;
  *out = info;
  return Status::ok();
}

Status createUniqueId(UniqueIdBytes* out) {
  std::string commId = param::getString(param::Id::kCommId);
  if (commId.empty()) return createLocalUniqueId(out);
  UniqueIdInfo info;
  info.magic = randomBits();
  BRAID_RETURN_IF_ERROR(parseHostPort(commId, &info.root).withContext("BRAID_COMM_ID"));
  info.rank0ServesRoot = true;
  BRAID_INFO(log::Subsys::kBootstrap, "unique id: root ", info.root.toString(), " (BRAID_COMM_ID, served by rank 0)");
  encodeUniqueId(info, out);
  return Status::ok();
}

Status createLocalUniqueId(UniqueIdBytes* out) {
  UniqueIdInfo info;
  info.magic = randomBits();
  SocketAddress local;
  BRAID_RETURN_IF_ERROR(chooseInterfaceAddress(&local));
  std::shared_ptr<RootServer> server;
  BRAID_RETURN_IF_ERROR(
      RootServer::listen(local, info.magic, &server).withContext("cannot open the bootstrap root listener"));
  info.root = server->address();
  BRAID_RETURN_IF_ERROR(serveInBackground(std::move(server)));
  BRAID_INFO(log::Subsys::kBootstrap, "unique id: root ", info.root.toString(), " (served by this process)");
  encodeUniqueId(info, out);
  return Status::ok();
}

Status uniqueIdForAddress(const std::string& hostPort, const std::string& jobKey, UniqueIdBytes* out) {
  UniqueIdInfo info;
  BRAID_RETURN_IF_ERROR(parseHostPort(hostPort, &info.root));
  // Every rank derives the same magic from what the launcher told all of them alike.
  info.magic = fnv1a64("braid-bootstrap/" + jobKey);
  if (info.magic == 0) info.magic = 1;
  info.rank0ServesRoot = true;
  encodeUniqueId(info, out);
  return Status::ok();
}

}  // namespace braid::bootstrap
