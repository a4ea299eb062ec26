// Call checking (BRAID_CHECK=1). A collective that ranks call with different arguments hangs or
// returns garbage, far from the line that caused it. With checking on, every call first all-gathers
// a fingerprint of itself over the bootstrap, before any data moves; every rank then compares the
// same table, so all of them reach the same verdict: run, or return invalidUsage naming the ranks
// and fields that differ. Nothing ran, so the communicator stays usable.
//
//   collective:      all-gather CallFingerprint ──► compareCalls ──► run
//   send/recv group: all-gather CallFingerprint ──► compareCalls ──► all-gather each rank's
//                    (peer, bytes, isSend) list, padded to the longest ──► compareSendRecv ──► run
//
// Both kinds of call start with the same fixed-size fingerprint, so a rank in a send/recv group
// while the others are in a collective is reported as such rather than tripping over the sizes of
// the second exchange. The compare functions are pure (tested without communicators).
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "core/host_engine.h"
#include "core/status.h"

namespace braid::core {

/// The `kind` of a send/recv group (collectives use their algo::Coll value).
constexpr int32_t kSendRecvKind = static_cast<int32_t>(algo::Coll::kNumColls);

/// What must agree across ranks for one call; all-gathered as raw bytes.
struct CallFingerprint {
  int32_t kind = 0;  // algo::Coll, or kSendRecvKind
  int32_t type = 0;  // braidDataType_t
  int32_t op = 0;    // braidRedOp_t
  int32_t root = 0;
  uint64_t count = 0;  // elements; for a send/recv group, how many sends and receives it holds
  uint64_t seq = 0;    // the call's number on its communicator, from 1
};
static_assert(std::is_trivially_copyable<CallFingerprint>::value && sizeof(CallFingerprint) == 32,
              "CallFingerprint is exchanged as bytes");

/// One send or receive of a group as its peers must see it.
struct P2pFingerprint {
  int32_t peer = 0;
  int32_t isSend = 0;
  uint64_t bytes = 0;
};
static_assert(std::is_trivially_copyable<P2pFingerprint>::value && sizeof(P2pFingerprint) == 16,
              "P2pFingerprint is exchanged as bytes");

CallFingerprint collFingerprint(const CollRequest& request, uint64_t seq);
CallFingerprint sendRecvFingerprint(size_t requests, uint64_t seq);
std::vector<P2pFingerprint> p2pFingerprints(const std::vector<P2pRequest>& requests);

/// OK when every rank (index = rank) makes the same call. Fields a collective does not use (op of
/// broadcast and all-gather, root of the unrooted ones, the size of a send/recv group) are ignored.
/// Otherwise invalidUsage, e.g. "call 7 does not match across ranks: count is 1024 on ranks 0,1,3
/// but 1000 on rank 2; datatype is float32 on ranks 0-2 but int32 on rank 3".
Status compareCalls(const std::vector<CallFingerprint>& calls);

/// OK when, for every ordered pair of ranks, the i-th send from one to the other has the bytes of
/// the i-th receive posted for it (index = rank, lists in posting order). Otherwise invalidUsage,
/// e.g. "send/recv group (call 3) does not match across ranks: rank 0 sends 4000 bytes to rank 1,
/// which receives 400 bytes from rank 0".
Status compareSendRecv(uint64_t seq, const std::vector<std::vector<P2pFingerprint>>& perRank);

/// The exchanges: every rank of `bootstrap` calls the same one, then compares as above.
Status checkCollective(bootstrap::Bootstrap& bootstrap, const CollRequest& request, uint64_t seq);
Status checkSendRecv(bootstrap::Bootstrap& bootstrap, const std::vector<P2pRequest>& requests, uint64_t seq);

}  // namespace braid::core
