// Argument checks shared by the C entry points. Each error message names the argument.
#pragma once

#include <cstddef>

#include "algo/call.h"
#include "braid/braid.h"
#include "core/status.h"

namespace braid::api {

Status checkNotNull(const void* p, const char* name);
Status checkType(braidDataType_t type);
Status checkOp(braidRedOp_t op);
/// `value` must be in [0, nranks); `name` is the argument ("root", "peer", "rank").
Status checkRank(int value, int nranks, const char* name);

/// How one collective uses its arguments, so a single routine checks them all.
struct CollShape {
  const char* countName = "count";
  bool perRankSend = false;  // send buffer is nranks x count (reduce-scatter, all-to-all)
  bool perRankRecv = false;  // recv buffer is nranks x count (all-gather, all-to-all)
  bool hasSend = true, hasRecv = true;
  bool sendOnRootOnly = false;  // broadcast: only the root reads sendbuff
  bool recvOnRootOnly = false;  // reduce: only the root writes recvbuff
  bool hasOp = false;
  bool hasRoot = false;  // `root` argument
  bool hasPeer = false;  // `peer` argument (send/recv)
};

/// Checks a call's arguments, as the entry point put them in its record (algo/call.h; `root` holds
/// send's and receive's peer), for a communicator of `nranks` ranks where this is `rank`.
Status checkCollective(const CollShape& shape, const algo::Call& args, int rank, int nranks);

}  // namespace braid::api
