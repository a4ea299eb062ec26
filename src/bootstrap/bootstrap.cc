// Bootstrap::create: the rendezvous of one rank, in the order of bootstrap.h's picture.
//
//   1. decode the id; rank 0 starts the root when the id says so
//   2. connect to the root (it may not be up yet: retried until the deadline)
//   3. open this rank's listener on the address the root connection left from (or on the
//      BRAID_SOCKET_IFNAME interface)
//   4. Hello -> root; wait for Ring (or an Error naming the missing ranks)
//   5. RingBootstrap::joinRing: connect to the next rank, accept the previous one, gather addresses
#include "bootstrap/bootstrap.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "bootstrap/frame.h"
#include "bootstrap/net.h"
#include "bootstrap/ring_bootstrap.h"
#include "bootstrap/root_server.h"
#include "core/log.h"
#include "core/param.h"

namespace braid::bootstrap {
namespace {

// How much longer than the root a rank waits for its answer, so that the root's precise "rank X did
// not arrive" reaches it before its own, vaguer, timeout: a quarter of the timeout, within bounds.
int64_t rootGraceMs(int64_t timeoutMs) { return std::min<int64_t>(2000, std::max<int64_t>(250, timeoutMs / 4)); }

// Rank 0 binds the id's address when it is one of this host's; otherwise (a name that resolves to
// a service or NAT address, or to 127.0.1.1 as some /etc/hosts do) the wildcard address at that
// port, so that the ranks that connect to the id's address still reach it.
SocketAddress rootBindAddress(const SocketAddress& root) {
  if (root.isLoopback()) return root;
  std::vector<InterfaceAddress> interfaces;
  if (listInterfaces(&interfaces).isOk()) {
    for (const InterfaceAddress& i : interfaces) {
      SocketAddress a = i.address;
      a.setPort(root.port());
      if (a == root) return root;
    }
  }
  BRAID_INFO(log::Subsys::kBootstrap, "the bootstrap root address ", root.toString(),
             " is not an address of this host; rank 0 listens on every interface at port ", root.port());
  return SocketAddress::any(root.family(), root.port());
}

Status listenAddress(const Socket& rootConnection, SocketAddress* out) {
  if (!param::getString(param::Id::kSocketIfname).empty()) return chooseInterfaceAddress(out);
  BRAID_RETURN_IF_ERROR(rootConnection.localAddress(out));
  out->setPort(0);
  return Status::ok();
}

// Step 4: Hello to the root, and its answer (a Ring, or an Error that is returned as it is).
Status askRoot(const UniqueIdInfo& id, int rank, int nranks, const Options& options, const SocketAddress& self,
               Socket& root, RingInfo* ring) {
  const std::string rootName = "the bootstrap root " + id.root.toString();
  Deadline deadline = Deadline::in(options.timeoutMs + rootGraceMs(options.timeoutMs), options.abort);
  FrameHeader header{};
  std::vector<unsigned char> payload;
  Status st =
      sendFrame(root, id.magic, FrameType::kHello, encodeHello(Hello{rank, nranks, options.timeoutMs, self}), deadline);
  if (st.isOk()) {
    st = recvFrame(root, id.magic, typeBit(FrameType::kRing) | typeBit(FrameType::kError), deadline, &header, &payload);
  }
  if (st.code() == Code::kTimeout) {
    return timeoutError(
        "no answer from " + rootName + " within " + std::to_string(deadline.totalMs) +
        " ms after this rank's Hello (the root names missing ranks itself; it may have exited or hung)");
  }
  if (st.code() == Code::kRemoteError && !deadline.aborted()) {
    return remoteError(rootName + " closed the connection before answering (" + st.message() +
                       "); did the process serving it exit?");
  }
  BRAID_RETURN_IF_ERROR(st);
  if (header.type == static_cast<uint32_t>(FrameType::kError)) return decodeError(payload);
  return decodeRing(payload, ring).withContext("answer from " + rootName);
}

Status rendezvous(const UniqueIdBytes& idBytes, int rank, int nranks, const Options& options,
                  std::unique_ptr<Bootstrap>* out) {
  UniqueIdInfo id;
  BRAID_RETURN_IF_ERROR(decodeUniqueId(idBytes, &id));
  RootThread rootThread;  // joined when this function returns: by then every rank has its answer
  if (id.rank0ServesRoot && rank == 0) {
    Status st = rootThread.start(rootBindAddress(id.root), id.magic);
    if (!st.isOk()) {
      return Status(st.code(), "rank 0 cannot serve the bootstrap root at " + id.root.toString() +
                                   " (is another job or communicator using that port?): " + st.message());
    }
  }
  Socket root;
  BRAID_RETURN_IF_ERROR(Socket::connect(id.root, "the bootstrap root " + id.root.toString(),
                                        Deadline::in(options.timeoutMs, options.abort), &root));
  SocketAddress listenAt, self;
  BRAID_RETURN_IF_ERROR(listenAddress(root, &listenAt));
  Socket listener;
  BRAID_RETURN_IF_ERROR(Socket::listen(listenAt, &listener).withContext("opening this rank's bootstrap listener"));
  BRAID_RETURN_IF_ERROR(listener.localAddress(&self));
  auto boot = std::make_unique<RingBootstrap>(rank, nranks, id.magic, options, std::move(listener), self);

  RingInfo ring;
  BRAID_RETURN_IF_ERROR(askRoot(id, rank, nranks, options, self, root, &ring));
  root.close();
  BRAID_RETURN_IF_ERROR(boot->joinRing(ring));
  *out = std::move(boot);
  return Status::ok();
}

}  // namespace

Status Bootstrap::create(const UniqueIdBytes& id, int rank, int nranks, const Options& options,
                         std::unique_ptr<Bootstrap>* out) {
  if (out == nullptr) return invalidArgument("Bootstrap::create: out is null");
  out->reset();
  if (nranks < 1) return invalidArgument("bootstrap: nranks " + std::to_string(nranks) + " must be at least 1");
  if (rank < 0 || rank >= nranks) {
    return invalidArgument("bootstrap: rank " + std::to_string(rank) + " is not in 0.." + std::to_string(nranks - 1));
  }
  if (options.timeoutMs <= 0) {
    return invalidArgument("bootstrap: timeout " + std::to_string(options.timeoutMs) + " ms must be positive");
  }
  return rendezvous(id, rank, nranks, options, out)
      .withContext("bootstrap of rank " + std::to_string(rank) + " of " + std::to_string(nranks));
}

}  // namespace braid::bootstrap
