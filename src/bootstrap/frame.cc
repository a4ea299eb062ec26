#include "bootstrap/frame.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace braid::bootstrap {
namespace {

// Little cursor over a payload of known size (the header check made sure of the size).
class Writer {
 public:
  explicit Writer(size_t reserve) { bytes_.reserve(reserve); }
  template <class T>
  void put(T value) {
    const auto* p = reinterpret_cast<const unsigned char*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void putAddress(const SocketAddress& a) {
    unsigned char wire[kWireAddressBytes];
    encodeAddress(a, wire);
    bytes_.insert(bytes_.end(), wire, wire + kWireAddressBytes);
  }
  std::vector<unsigned char> take() { return std::move(bytes_); }

 private:
  std::vector<unsigned char> bytes_;
};

class Reader {
 public:
  explicit Reader(const std::vector<unsigned char>& bytes) : bytes_(bytes) {}
  template <class T>
  T get() {
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  Status getAddress(SocketAddress* out) {
    Status st = decodeAddress(bytes_.data() + pos_, out);
    pos_ += kWireAddressBytes;
    return st;
  }

 private:
  const std::vector<unsigned char>& bytes_;
  size_t pos_ = 0;
};

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%016" PRIx64, v);
  return buf;
}

Status checkSize(const std::vector<unsigned char>& payload, size_t expected, const char* what) {
  if (payload.size() != expected) {
    return invalidArgument(std::string(what) + " payload of " + std::to_string(payload.size()) + " bytes (expected " +
                           std::to_string(expected) + ")");
  }
  return Status::ok();
}

}  // namespace

const char* frameTypeName(uint32_t type) {
  switch (static_cast<FrameType>(type)) {
    case FrameType::kHello: return "Hello";
    case FrameType::kRing: return "Ring";
    case FrameType::kError: return "Error";
    case FrameType::kRingHello: return "RingHello";
    case FrameType::kMessage: return "Message";
    case FrameType::kData: return "Data";
  }
  return "unknown";
}

FrameHeader makeHeader(uint64_t magic, FrameType type, uint64_t length) {
  return FrameHeader{magic, static_cast<uint32_t>(type), kProtocolVersion, length};
}

Status checkFrameHeader(const FrameHeader& h, uint64_t magic, uint32_t allowedTypes) {
  if (h.magic != magic) {
    return invalidArgument("wrong magic " + hex(h.magic) + " (expected " + hex(magic) +
                           "): not a peer of this communicator (another job, a stale id, or not braid)");
  }
  if (h.version != kProtocolVersion) {
    return invalidArgument("protocol version " + std::to_string(h.version) + " (this is version " +
                           std::to_string(kProtocolVersion) + "; are all ranks running the same braid?)");
  }
  if (h.type < static_cast<uint32_t>(FrameType::kHello) || h.type > static_cast<uint32_t>(FrameType::kData)) {
    return invalidArgument("unknown frame type " + std::to_string(h.type));
  }
  if ((allowedTypes & (1u << h.type)) == 0) {
    return invalidArgument(std::string("unexpected ") + frameTypeName(h.type) + " frame on this connection");
  }
  if (h.length > kMaxFrameBytes) {
    return invalidArgument(std::string(frameTypeName(h.type)) + " frame claims " + std::to_string(h.length) +
                           " payload bytes (limit " + std::to_string(kMaxFrameBytes) + ")");
  }
  uint64_t exact = 0, atLeast = 0, atMost = kMaxFrameBytes;
  switch (static_cast<FrameType>(h.type)) {
    case FrameType::kHello: exact = kHelloBytes; break;
    case FrameType::kRing: exact = kRingBytes; break;
    case FrameType::kRingHello: exact = kRingHelloBytes; break;
    case FrameType::kError:
      atLeast = 8;
      atMost = 8 + kMaxErrorTextBytes;
      break;
    case FrameType::kMessage: atLeast = kMessageHeadBytes; break;
    case FrameType::kData: break;
  }
  if (exact != 0 && h.length != exact) {
    return invalidArgument(std::string(frameTypeName(h.type)) + " frame of " + std::to_string(h.length) +
                           " bytes (expected exactly " + std::to_string(exact) + ")");
  }
  if (h.length < atLeast || h.length > atMost) {
    return invalidArgument(std::string(frameTypeName(h.type)) + " frame of " + std::to_string(h.length) +
                           " bytes (expected " + std::to_string(atLeast) + ".." + std::to_string(atMost) + ")");
  }
  return Status::ok();
}

std::vector<unsigned char> encodeHello(const Hello& hello) {
  Writer w(kHelloBytes);
  w.put<int32_t>(hello.rank);
  w.put<int32_t>(hello.nranks);
  w.put<int64_t>(hello.timeoutMs);
  w.putAddress(hello.listener);
  return w.take();
}

Status decodeHello(const std::vector<unsigned char>& payload, Hello* out) {
  BRAID_RETURN_IF_ERROR(checkSize(payload, kHelloBytes, "Hello"));
  Reader r(payload);
  out->rank = r.get<int32_t>();
  out->nranks = r.get<int32_t>();
  out->timeoutMs = r.get<int64_t>();
  BRAID_RETURN_IF_ERROR(r.getAddress(&out->listener).withContext("Hello"));
  if (out->nranks < 1 || out->rank < 0 || out->rank >= out->nranks) {
    return invalidArgument("Hello from rank " + std::to_string(out->rank) + " of " + std::to_string(out->nranks) +
                           ": rank out of range");
  }
  if (out->timeoutMs <= 0) return invalidArgument("Hello with timeout " + std::to_string(out->timeoutMs) + " ms");
  if (out->listener.empty()) return invalidArgument("Hello without a listener address");
  return Status::ok();
}

std::vector<unsigned char> encodeRing(const RingInfo& ring) {
  Writer w(kRingBytes);
  w.put<int32_t>(ring.nextRank);
  w.put<int32_t>(ring.nranks);
  w.putAddress(ring.next);
  return w.take();
}

Status decodeRing(const std::vector<unsigned char>& payload, RingInfo* out) {
  BRAID_RETURN_IF_ERROR(checkSize(payload, kRingBytes, "Ring"));
  Reader r(payload);
  out->nextRank = r.get<int32_t>();
  out->nranks = r.get<int32_t>();
  BRAID_RETURN_IF_ERROR(r.getAddress(&out->next).withContext("Ring"));
  if (out->nranks < 1 || out->nextRank < 0 || out->nextRank >= out->nranks || out->next.empty()) {
    return invalidArgument("Ring frame names rank " + std::to_string(out->nextRank) + " of " +
                           std::to_string(out->nranks) + " at " + out->next.toString());
  }
  return Status::ok();
}

std::vector<unsigned char> encodeRingHello(const RingHello& hello) {
  Writer w(kRingHelloBytes);
  w.put<int32_t>(hello.rank);
  w.put<int32_t>(hello.nranks);
  return w.take();
}

Status decodeRingHello(const std::vector<unsigned char>& payload, RingHello* out) {
  BRAID_RETURN_IF_ERROR(checkSize(payload, kRingHelloBytes, "RingHello"));
  Reader r(payload);
  out->rank = r.get<int32_t>();
  out->nranks = r.get<int32_t>();
  return Status::ok();
}

std::vector<unsigned char> encodeMessageHead(const MessageHead& head) {
  Writer w(kMessageHeadBytes);
  w.put<int32_t>(head.from);
  w.put<uint32_t>(head.tag);
  w.put<uint64_t>(head.seq);
  return w.take();
}

MessageHead decodeMessageHead(const std::vector<unsigned char>& payload) {
  Reader r(payload);
  MessageHead head;
  head.from = r.get<int32_t>();
  head.tag = r.get<uint32_t>();
  head.seq = r.get<uint64_t>();
  return head;
}

std::vector<unsigned char> encodeError(const Status& status) {
  std::string text = status.message().substr(0, kMaxErrorTextBytes);
  Writer w(8 + text.size());
  w.put<uint32_t>(static_cast<uint32_t>(status.code()));
  w.put<uint32_t>(0);
  std::vector<unsigned char> bytes = w.take();
  bytes.insert(bytes.end(), text.begin(), text.end());
  return bytes;
}

Status decodeError(const std::vector<unsigned char>& payload) {
  if (payload.size() < 8) return remoteError("malformed error frame from the bootstrap root");
  Reader r(payload);
  auto code = static_cast<Code>(r.get<uint32_t>());
  std::string text(payload.begin() + 8, payload.end());
  bool known = code >= Code::kCudaError && code <= Code::kTimeout;
  return Status(known ? code : Code::kRemoteError, text.empty() ? "the bootstrap root reported an error" : text);
}

Status sendFrame(Socket& socket, uint64_t magic, FrameType type, const void* head, size_t headBytes, const void* body,
                 size_t bodyBytes, const Deadline& deadline, PollClient* also) {
  FrameHeader header = makeHeader(magic, type, headBytes + bodyBytes);
  std::vector<unsigned char> first(sizeof(header) + headBytes);
  std::memcpy(first.data(), &header, sizeof(header));
  if (headBytes != 0) std::memcpy(first.data() + sizeof(header), head, headBytes);
  BRAID_RETURN_IF_ERROR(socket.sendAll(first.data(), first.size(), deadline, also));
  return socket.sendAll(body, bodyBytes, deadline, also);
}

Status sendFrame(Socket& socket, uint64_t magic, FrameType type, const std::vector<unsigned char>& payload,
                 const Deadline& deadline, PollClient* also) {
  return sendFrame(socket, magic, type, payload.data(), payload.size(), nullptr, 0, deadline, also);
}

Status recvFrame(Socket& socket, uint64_t magic, uint32_t allowedTypes, const Deadline& deadline, FrameHeader* header,
                 std::vector<unsigned char>* payload, PollClient* also) {
  BRAID_RETURN_IF_ERROR(socket.recvAll(header, sizeof(*header), deadline, also));
  Status st = checkFrameHeader(*header, magic, allowedTypes);
  if (!st.isOk()) return remoteError("bad frame from " + socket.peer() + ": " + st.message());
  payload->resize(header->length);
  return socket.recvAll(payload->data(), payload->size(), deadline, also);
}

}  // namespace braid::bootstrap
