// Adapters between the versions of the ncclNet ABI (net_abi.h).
//
// Up: a plugin that exports only an older struct (v8, v9, v10) is driven through a NetV11 table
// whose functions forward to it, as NCCL does: v11's per-communicator context becomes none, sizes
// travel as int where v8 takes int (a message over INT_MAX bytes is refused, and v8 devices report
// 1 GiB as their largest message), v10's per-connection config is the one given to init.
//
// Down: braid's plugin exports its v11 network also as v8, v9 and v10, for NCCL 2.20-2.27.
//
// The forwarding functions are plain C functions, so each adapted table remembers its target in
// one slot per version and direction: one plugin per version at a time in a process (a second
// adaptation of another table of the same version is refused).
#pragma once

#include "core/status.h"
#include "transport/net/net_abi.h"

namespace braid::network {

Status adaptV8(const NetV8* old, NetV11* out);
Status adaptV9(const NetV9* old, NetV11* out);
Status adaptV10(const NetV10* old, NetV11* out);

NetV8 exportAsV8(const NetV11& base);
NetV9 exportAsV9(const NetV11& base);
NetV10 exportAsV10(const NetV11& base);

}  // namespace braid::network
