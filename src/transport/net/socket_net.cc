#include "transport/net/socket_net.h"

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "net/socket.h"
#include "transport/net/socket_net_devices.h"

namespace braid::network {
namespace {

using namespace socketnet;
using braid::net::Socket;
using braid::net::SocketAddress;

constexpr uint64_t kHandleMagic = 0x627261696453434bull;  // "braidSCK"
constexpr uint64_t kHelloMagic = 0x627261696448454cull;   // "braidHEL"
constexpr uint32_t kHeaderMagic = 0x6272444du;            // "brDM"
constexpr size_t kMaxMessageBytes = size_t{1} << 30;      // test() reports sizes as int
constexpr size_t kMaxPendingAccepts = 64;                 // silent connections kept per listener
// ---- wire formats ----

// What listen() writes into the 128-byte handle. `pending` is the caller's own: 0 in the copy the
// listener writes, then the connect in progress that this copy of the handle drives.
struct Handle {
  uint64_t magic;
  uint64_t nonce;
  unsigned char address[braid::net::kWireAddressBytes];
  uint64_t pending;
};
static_assert(sizeof(Handle) <= kNetHandleBytes, "the handle must fit NCCL_NET_HANDLE_MAXSIZE");

struct Hello {
  uint64_t magic;
  uint64_t nonce;
};

struct Header {
  uint32_t magic;
  int32_t tag;
  uint64_t size;
};
static_assert(sizeof(Header) == 16, "message header layout");

uint64_t randomNonce() {
  std::random_device source;
  uint64_t v = (uint64_t{source()} << 32) ^ source();
  return v == 0 ? 1 : v;
}

// ---- communicators and requests ----

struct Comm;

struct Request {
  Comm* comm = nullptr;
  bool used = false;
  bool done = false;
  char* data = nullptr;
  // A send of two parts (socketNetIsendParts): `prefix` goes first, then `data`; the message's size
  // (header.size) counts both.
  const char* prefix = nullptr;
  size_t prefixBytes = 0;
  size_t capacity = 0;  // the receive buffer's size (receives)
  int postedTag = 0;    // the tag the receive was posted with
  Header header{};      // sent, or being received
  size_t headerMoved = 0;
  size_t dataMoved = 0;
};

// The first member of every comm this network hands out, telling what it is.
enum class Kind : uint64_t {
  kSend = 0x62726169645f5344ull,
  kRecv = 0x62726169645f5243ull,
  kListen = 0x62726169645f4c53ull
};

struct Comm {
  explicit Comm(bool sending) : kind(sending ? Kind::kSend : Kind::kRecv), send(sending) {}
  const Kind kind;
  const bool send;
  Socket socket;
  Request requests[kNetMaxRequests];
  std::deque<Request*> queue;  // posted, in order, not yet complete
  ncclResult_t failed = ncclSuccess;
  std::string failure;
};

struct ListenComm {
  const Kind kind = Kind::kListen;
  Socket socket;
  uint64_t nonce = 0;
  std::string where;  // "eth0 10.0.0.1:41234"
  struct Pending {
    Socket socket;
    std::string from;
    Hello hello{};
    size_t got = 0;
  };
  std::deque<Pending> pending;
};

struct Connecting {
  Socket socket;
  bool connected = false;
  Hello hello{};
  size_t sent = 0;
};

struct Memory {
  void* data;
  size_t size;
};

struct Context {
  uint64_t commId;
};

// Connects in progress, by the value stored in a handle's `pending` (a handle from elsewhere may
// hold any bytes there: only these values are followed).
std::mutex gConnectingMu;
std::set<Connecting*> gConnecting;

// `between`: the connection ended between two messages (its peer closed it after its last one):
// an end, logged as information, still an error for the receive that waited.
ncclResult_t failComm(Comm* c, const Status& st, bool between) {
  if (c->failed == ncclSuccess) {
    c->failed = resultOf(st);
    c->failure = st.message();
    std::string what = std::string(c->send ? "send" : "receive") + " connection failed: " + st.message();
    if (between && c->failed == ncclRemoteError) {
      logLine(kNetLogInfo, "NET/BraidSocket: " + what + " (between messages: the peer closed it)");
    } else {
      fail(c->failed, what);
    }
  }
  return c->failed;
}

// Sends what the socket takes of [header | prefix | data] from where it stopped.
Status progressSend(Request* r, bool* finished) {
  Socket& s = r->comm->socket;
  *finished = false;
  const size_t total = sizeof(Header) + r->header.size;
  while (r->headerMoved + r->dataMoved < total) {
    const size_t at = r->headerMoved + r->dataMoved;
    const char* pieces[3] = {reinterpret_cast<const char*>(&r->header), r->prefix, r->data};
    const size_t lengths[3] = {sizeof(Header), r->prefixBytes, r->header.size - r->prefixBytes};
    iovec parts[3];
    size_t begin = 0;
    for (int i = 0; i < 3; ++i) {
      size_t skip = std::min(lengths[i], at > begin ? at - begin : 0);
      parts[i] = {const_cast<char*>(pieces[i]) + skip, lengths[i] - skip};
      begin += lengths[i];
    }
    size_t moved = 0;
    BRAID_RETURN_IF_ERROR(s.sendSome(parts, 3, &moved));
    size_t toHeader = std::min(moved, sizeof(Header) - r->headerMoved);
    r->headerMoved += toHeader;
    r->dataMoved += moved - toHeader;
    if (moved == 0) return Status::ok();
  }
  *finished = true;
  return Status::ok();
}

Status checkHeader(const Request& r) {
  const Header& h = r.header;
  if (h.magic != kHeaderMagic) {
    return remoteError("bytes that are not a message header arrived from " + r.comm->socket.peer());
  }
  if (h.tag != r.postedTag) {
    return invalidUsage("a message with tag " + std::to_string(h.tag) + " arrived from " + r.comm->socket.peer() +
                        " for a receive posted with tag " + std::to_string(r.postedTag));
  }
  if (h.size > r.capacity) {
    return invalidUsage("a message of " + std::to_string(h.size) + " bytes arrived from " + r.comm->socket.peer() +
                        " for a receive buffer of " + std::to_string(r.capacity) + " bytes");
  }
  return Status::ok();
}

Status progressRecv(Request* r, bool* finished) {
  Socket& s = r->comm->socket;
  *finished = false;
  char* h = reinterpret_cast<char*>(&r->header);
  while (r->headerMoved < sizeof(Header)) {
    size_t moved = 0;
    BRAID_RETURN_IF_ERROR(s.recvSome(h + r->headerMoved, sizeof(Header) - r->headerMoved, &moved));
    if (moved == 0) return Status::ok();
    r->headerMoved += moved;
    if (r->headerMoved == sizeof(Header)) BRAID_RETURN_IF_ERROR(checkHeader(*r));
  }
  while (r->dataMoved < r->header.size) {
    size_t moved = 0;
    BRAID_RETURN_IF_ERROR(s.recvSome(r->data + r->dataMoved, r->header.size - r->dataMoved, &moved));
    if (moved == 0) return Status::ok();
    r->dataMoved += moved;
  }
  *finished = true;
  return Status::ok();
}

// Moves what the socket takes now, oldest request first. A receiving connection stops once
// `upTo` (the request tested) has finished: a message behind it that has already arrived is read
// by its own test. Reading it now would cost its system calls before the caller of this test can
// act on the one it waits for (a rank that received a small message of call k would read the
// peer's message of call k + 1 before sending its own of call k + 1, and the two ranks would take
// turns instead of sending at once: bench/NOTES.md, twenty-ninth session).
ncclResult_t progress(Comm* c, const Request* upTo = nullptr) {
  if (c->failed != ncclSuccess) return c->failed;
  while (!c->queue.empty()) {
    Request* r = c->queue.front();
    bool finished = false;
    Status st = c->send ? progressSend(r, &finished) : progressRecv(r, &finished);
    if (!st.isOk()) return failComm(c, st, !c->send && r->headerMoved == 0);
    if (!finished) break;
    r->done = true;
    c->queue.pop_front();
    if (!c->send && r == upTo) break;
  }
  return ncclSuccess;
}

Request* freeRequest(Comm* c) {
  for (Request& r : c->requests) {
    if (!r.used) return &r;
  }
  return nullptr;
}

// ---- the v11 functions ----

ncclResult_t socketInit(void** ctx, uint64_t commId, NetCommConfig* config, NetLogger logFunction,
                        NetProfilerCallback profFunction) {
  if (logFunction != nullptr) setLogger(logFunction);
  ncclResult_t r = discover();
  if (r != ncclSuccess) return r;
  if (ctx != nullptr) *ctx = new Context{commId};
  return ncclSuccess;
}

ncclResult_t socketDevices(int* ndev) {
  if (ndev == nullptr) return fail(ncclInternalError, "devices: null pointer");
  *ndev = deviceCount();
  return ncclSuccess;
}

ncclResult_t socketGetProperties(int dev, NetPropertiesV11* props) {
  if (props == nullptr) return fail(ncclInternalError, "getProperties: null pointer");
  Device* d = nullptr;
  ncclResult_t r = deviceAt(dev, &d);
  if (r != ncclSuccess) return r;
  std::memset(props, 0, sizeof(*props));
  props->name = const_cast<char*>(d->name.c_str());
  props->pciPath = d->pciPath.empty() ? nullptr : const_cast<char*>(d->pciPath.c_str());
  props->guid = static_cast<uint64_t>(dev);
  props->ptrSupport = kPtrHost;
  props->regIsGlobal = 0;
  props->forceFlush = 0;
  props->speed = d->speedMbps;
  props->port = 0;
  props->latency = 0;
  props->maxComms = 65536;
  props->maxRecvs = 1;
  props->netDeviceType = 0;
  props->netDeviceVersion = 0;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = kMaxMessageBytes;
  props->maxCollBytes = kMaxMessageBytes;
  props->maxMultiRequestSize = 1;
  return ncclSuccess;
}

ncclResult_t socketListen(void* ctx, int dev, void* handle, void** listenComm) {
  if (handle == nullptr || listenComm == nullptr) return fail(ncclInternalError, "listen: null pointer");
  *listenComm = nullptr;
  Device* d = nullptr;
  ncclResult_t r = deviceAt(dev, &d);
  if (r != ncclSuccess) return r;
  auto l = std::make_unique<ListenComm>();
  Status st = Socket::listen(d->address, &l->socket);
  SocketAddress bound;
  if (st.isOk()) st = l->socket.localAddress(&bound);
  if (!st.isOk()) return failStatus(st.withContext("listen on " + d->ifname));
  l->nonce = randomNonce();
  l->where = d->ifname + " " + bound.toString();
  std::memset(handle, 0, kNetHandleBytes);
  Handle h{};
  h.magic = kHandleMagic;
  h.nonce = l->nonce;
  braid::net::encodeAddress(bound, h.address);
  std::memcpy(handle, &h, sizeof(h));
  *listenComm = l.release();
  return ncclSuccess;
}

ncclResult_t dropConnect(Handle* h, Connecting* pending, void* handle) {
  {
    std::lock_guard<std::mutex> lock(gConnectingMu);
    gConnecting.erase(pending);
  }
  delete pending;
  h->pending = 0;
  std::memcpy(handle, h, sizeof(*h));
  return ncclSuccess;
}

ncclResult_t socketConnect(void* ctx, int dev, void* handle, void** sendComm, NetDeviceHandle** sendDevComm) {
  if (handle == nullptr || sendComm == nullptr) return fail(ncclInternalError, "connect: null pointer");
  *sendComm = nullptr;
  Handle h;
  std::memcpy(&h, handle, sizeof(h));
  if (h.magic != kHandleMagic) {
    return fail(ncclInternalError,
                "connect: the handle is not one of this network's (it starts with bytes that "
                "are not BraidSocket's marker)");
  }
  Connecting* c = reinterpret_cast<Connecting*>(static_cast<uintptr_t>(h.pending));
  if (c == nullptr) {
    SocketAddress to;
    Status st = braid::net::decodeAddress(h.address, &to);
    if (!st.isOk()) return fail(ncclInternalError, "connect: the handle holds no valid address: " + st.message());
    auto fresh = std::make_unique<Connecting>();
    st = Socket::startConnect(to, "the listener at " + to.toString(), &fresh->socket, &fresh->connected);
    if (!st.isOk()) return failStatus(st);
    fresh->hello = Hello{kHelloMagic, h.nonce};
    c = fresh.release();
    {
      std::lock_guard<std::mutex> lock(gConnectingMu);
      gConnecting.insert(c);
    }
    h.pending = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(c));
    std::memcpy(handle, &h, sizeof(h));
  } else {
    std::lock_guard<std::mutex> lock(gConnectingMu);
    if (gConnecting.count(c) == 0) {
      return fail(ncclInternalError,
                  "connect: the handle names a connect in progress that this process does "
                  "not have (a copied or corrupted handle)");
    }
  }
  Status st = c->connected ? Status::ok() : c->socket.finishConnect(&c->connected);
  while (st.isOk() && c->connected && c->sent < sizeof(Hello)) {
    size_t moved = 0;
    st = c->socket.sendSome(reinterpret_cast<const char*>(&c->hello) + c->sent, sizeof(Hello) - c->sent, &moved);
    if (moved == 0) break;
    c->sent += moved;
  }
  if (!st.isOk()) {
    std::string what = st.message();
    dropConnect(&h, c, handle);
    return failStatus(Status(st.code(), what));
  }
  if (c->sent < sizeof(Hello)) return ncclSuccess;  // call again
  auto comm = std::make_unique<Comm>(true);
  comm->socket = std::move(c->socket);
  dropConnect(&h, c, handle);
  *sendComm = comm.release();
  return ncclSuccess;
}

ncclResult_t socketAccept(void* listenComm, void** recvComm, NetDeviceHandle** recvDevComm) {
  if (listenComm == nullptr || recvComm == nullptr) return fail(ncclInternalError, "accept: null pointer");
  *recvComm = nullptr;
  ListenComm* l = static_cast<ListenComm*>(listenComm);
  for (;;) {
    Socket s;
    SocketAddress from;
    Status st = l->socket.tryAccept(&s, &from);
    if (!st.isOk()) return failStatus(st.withContext("accept on " + l->where));
    if (!s.valid()) break;
    if (l->pending.size() >= kMaxPendingAccepts) {
      logLine(kNetLogWarn, "NET/BraidSocket: " + l->where + ": dropped a connection from " + l->pending.front().from +
                               " that sent no hello (" + std::to_string(kMaxPendingAccepts) + " pending)");
      l->pending.pop_front();
    }
    ListenComm::Pending p;
    p.from = from.toString();
    s.setPeer("the sender at " + p.from);
    p.socket = std::move(s);
    l->pending.push_back(std::move(p));
  }
  for (auto it = l->pending.begin(); it != l->pending.end();) {
    size_t moved = 0;
    Status st = it->socket.recvSome(reinterpret_cast<char*>(&it->hello) + it->got, sizeof(Hello) - it->got, &moved);
    it->got += moved;
    bool junk =
        !st.isOk() || (it->got == sizeof(Hello) && (it->hello.magic != kHelloMagic || it->hello.nonce != l->nonce));
    if (junk) {
      logLine(kNetLogWarn,
              "NET/BraidSocket: " + l->where + ": dropped a connection from " + it->from + ": " +
                  (st.isOk() ? std::string("its first bytes are not a hello for this listener") : st.message()));
      it = l->pending.erase(it);
      continue;
    }
    if (it->got < sizeof(Hello)) {
      ++it;
      continue;
    }
    auto comm = std::make_unique<Comm>(false);
    comm->socket = std::move(it->socket);
    l->pending.erase(it);
    *recvComm = comm.release();
    return ncclSuccess;
  }
  return ncclSuccess;
}

ncclResult_t socketRegMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  if (comm == nullptr || mhandle == nullptr) return fail(ncclInternalError, "regMr: null pointer");
  if (type != kPtrHost) {
    return fail(ncclInternalError,
                "regMr: this network reads and writes host memory only (ptrSupport HOST); "
                "asked to register memory of type " +
                    std::to_string(type));
  }
  *mhandle = new Memory{data, size};
  return ncclSuccess;
}

ncclResult_t socketRegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle) {
  return fail(ncclInternalError, "regMrDmaBuf: this network does not take dma-bufs (ptrSupport HOST)");
}

ncclResult_t socketDeregMr(void* comm, void* mhandle) {
  delete static_cast<Memory*>(mhandle);
  return ncclSuccess;
}

// isend of [prefix | data] as one message of prefixBytes + size bytes.
ncclResult_t isendParts(void* sendComm, const void* prefix, size_t prefixBytes, void* data, size_t size, int tag,
                        void** request) {
  if (sendComm == nullptr || request == nullptr) return fail(ncclInternalError, "isend: null pointer");
  *request = nullptr;
  Comm* c = static_cast<Comm*>(sendComm);
  if (!c->send) return fail(ncclInternalError, "isend on a receiving connection");
  if (c->failed != ncclSuccess) return c->failed;
  if (prefixBytes + size > kMaxMessageBytes || (size > 0 && data == nullptr) ||
      (prefixBytes > 0 && prefix == nullptr)) {
    return fail(ncclInternalError,
                "isend of " + std::to_string(prefixBytes + size) + " bytes from " +
                    (data == nullptr || (prefixBytes > 0 && prefix == nullptr) ? "a null pointer" : "one buffer") +
                    " (at most 1 GiB per message)");
  }
  Request* r = freeRequest(c);
  if (r == nullptr) return ncclSuccess;  // 32 in flight: try again later
  *r = Request{};
  r->comm = c;
  r->used = true;
  r->prefix = static_cast<const char*>(prefix);
  r->prefixBytes = prefixBytes;
  r->data = static_cast<char*>(data);
  r->header = Header{kHeaderMagic, tag, prefixBytes + size};
  c->queue.push_back(r);
  *request = r;
  return progress(c);
}

ncclResult_t socketIsend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                         void** request) {
  return isendParts(sendComm, nullptr, 0, data, size, tag, request);
}

ncclResult_t socketIrecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
                         void** request) {
  if (recvComm == nullptr || request == nullptr) return fail(ncclInternalError, "irecv: null pointer");
  *request = nullptr;
  Comm* c = static_cast<Comm*>(recvComm);
  if (c->send) return fail(ncclInternalError, "irecv on a sending connection");
  if (n != 1) {
    return fail(ncclInternalError, "irecv of " + std::to_string(n) + " buffers: this network's maxRecvs is 1");
  }
  if (data == nullptr || sizes == nullptr || tags == nullptr) return fail(ncclInternalError, "irecv: null array");
  if (c->failed != ncclSuccess) return c->failed;
  if (sizes[0] > kMaxMessageBytes || (sizes[0] > 0 && data[0] == nullptr)) {
    return fail(ncclInternalError, "irecv into " + std::to_string(sizes[0]) + " bytes at " +
                                       (data[0] == nullptr ? "a null pointer" : "one buffer") +
                                       " (at most 1 GiB per message)");
  }
  Request* r = freeRequest(c);
  if (r == nullptr) return ncclSuccess;
  *r = Request{};
  r->comm = c;
  r->used = true;
  r->data = static_cast<char*>(data[0]);
  r->capacity = sizes[0];
  r->postedTag = tags[0];
  c->queue.push_back(r);
  *request = r;
  return ncclSuccess;  // read by test (a system call here would mostly find nothing yet)
}

ncclResult_t socketIflush(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request) {
  // Host memory needs no flush: no request, nothing to wait for.
  if (request == nullptr) return fail(ncclInternalError, "iflush: null pointer");
  *request = nullptr;
  return ncclSuccess;
}

ncclResult_t socketTest(void* request, int* done, int* sizes) {
  if (request == nullptr || done == nullptr) return fail(ncclInternalError, "test: null pointer");
  Request* r = static_cast<Request*>(request);
  *done = 0;
  if (!r->used) return fail(ncclInternalError, "test of a request that is not in flight");
  ncclResult_t result = progress(r->comm, r);
  if (!r->done) return result;
  *done = 1;
  if (sizes != nullptr) sizes[0] = static_cast<int>(r->header.size);
  r->used = false;
  return ncclSuccess;
}

ncclResult_t socketClose(void* comm) {
  delete static_cast<Comm*>(comm);
  return ncclSuccess;
}

ncclResult_t socketCloseListen(void* listenComm) {
  delete static_cast<ListenComm*>(listenComm);
  return ncclSuccess;
}

ncclResult_t socketFinalize(void* ctx) {
  delete static_cast<Context*>(ctx);
  return ncclSuccess;
}

ncclResult_t socketSetNetAttr(void* ctx, NetAttr* netAttr) { return ncclSuccess; }

const NetV11 kSocketNetwork = {
    "BraidSocket",  socketInit,       socketDevices,     socketGetProperties, socketListen,      socketConnect,
    socketAccept,   socketRegMr,      socketRegMrDmaBuf, socketDeregMr,       socketIsend,       socketIrecv,
    socketIflush,   socketTest,       socketClose,       socketClose,         socketCloseListen,
    nullptr,  // getDeviceMr: no device offload
    nullptr,  // irecvConsumed
    nullptr,  // makeVDevice: no virtual NICs
    socketFinalize, socketSetNetAttr,
};

}  // namespace

const NetV11& socketNetwork() { return kSocketNetwork; }

std::string socketNetDeviceAddress(int dev) { return socketnet::deviceAddress(dev); }

int socketNetFd(void* comm) {
  if (comm == nullptr) return -1;
  Kind kind;
  std::memcpy(&kind, comm, sizeof(kind));
  if (kind == Kind::kSend || kind == Kind::kRecv) return static_cast<Comm*>(comm)->socket.fd();
  if (kind == Kind::kListen) return static_cast<ListenComm*>(comm)->socket.fd();
  return -1;
}

ncclResult_t socketNetIsendParts(void* sendComm, const void* first, size_t firstBytes, const void* second,
                                 size_t secondBytes, int tag, void** request) {
  if (sendComm != nullptr && static_cast<Comm*>(sendComm)->kind != Kind::kSend) {
    return fail(ncclInternalError, "isend of two parts on something that is not a send connection");
  }
  return isendParts(sendComm, first, firstBytes, const_cast<void*>(second), secondBytes, tag, request);
}

bool socketNetPeerClosed(void* sendComm) {
  Comm* c = static_cast<Comm*>(sendComm);
  if (c == nullptr || c->kind != Kind::kSend) return false;
  if (c->failed != ncclSuccess) return true;
  char byte = 0;
  ssize_t n = ::recv(c->socket.fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

std::string socketNetPeer(void* comm) {
  if (comm == nullptr) return std::string();
  Kind kind;
  std::memcpy(&kind, comm, sizeof(kind));
  return kind == Kind::kSend || kind == Kind::kRecv ? static_cast<Comm*>(comm)->socket.peer() : std::string();
}

}  // namespace braid::network
