// What a host-memory rank's transports hand back: the FIFO of a connection (host_fifo.h).
#pragma once

#include "core/status.h"
#include "transport/host_fifo.h"

namespace braid::transport {

/// Finds the FIFO of a directed connection (src -> dst) of a channel: what HostPrims read and write.
class FifoResolver {
 public:
  virtual ~FifoResolver() = default;
  virtual HostFifo* fifo(int channel, int connId, int src, int dst) = 0;
};

/// One transport's host-memory connections: the FIFO of (channel, connId, src -> dst), one end of
/// which is this rank, made when a call first opens it.
class HostTransport {
 public:
  virtual ~HostTransport() = default;
  virtual Status fifo(int channel, int connId, int src, int dst, HostFifo** out) = 0;
};

}  // namespace braid::transport
