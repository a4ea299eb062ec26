// Frames: the only thing ever sent on a bootstrap connection.
//
//   0         8       12        16        24
//   +---------+-------+---------+---------+--------------------------+
//   |  magic  | type  | version | length  | payload (length bytes)   |
//   +---------+-------+---------+---------+--------------------------+
//
// The magic comes from the unique id, so a frame from another job (or from anything that is not a
// braid peer) is recognized in its first 8 bytes. A receiver checks the header before it reserves
// any memory for the payload: the type must be one it expects on that connection, and the length
// must be the exact size where the type fixes it, and never more than kMaxFrameBytes.
//
// Connections and their frames:
//
//   rank -> root         Hello                      the root answers on the same connection:
//   root -> rank         Ring | Error               next rank's listener, or why the rendezvous failed
//   rank -> next rank    RingHello, then Data ...   the ring; Data frames carry all-gather slots
//   rank -> any rank     Message                    one connection per send(), closed afterwards
//
// Integers are in the byte order of the sender (braid's ranks share one architecture); addresses
// use the fixed wire form of socket_address.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/net.h"
#include "core/status.h"

namespace braid::bootstrap {

constexpr uint32_t kProtocolVersion = 1;
/// No frame is larger: a bootstrap carries addresses and small tables, not data.
constexpr uint64_t kMaxFrameBytes = uint64_t{256} << 20;
constexpr size_t kMaxErrorTextBytes = 64 * 1024;

enum class FrameType : uint32_t {
  kHello = 1,      // rank -> root: rank, nranks, timeout, listener address
  kRing = 2,       // root -> rank: next rank and its listener address
  kError = 3,      // root -> rank: code and text of a failed rendezvous
  kRingHello = 4,  // rank -> next rank: who is connecting
  kMessage = 5,    // rank -> rank: from, tag, payload
  kData = 6,       // ring all-gather slot
};

constexpr uint32_t typeBit(FrameType type) { return 1u << static_cast<uint32_t>(type); }
const char* frameTypeName(uint32_t type);

struct FrameHeader {
  uint64_t magic;
  uint32_t type;
  uint32_t version;
  uint64_t length;
};
static_assert(sizeof(FrameHeader) == 24, "the header is sent as it is laid out");

FrameHeader makeHeader(uint64_t magic, FrameType type, uint64_t length);

/// Why a header must be rejected (wrong magic, version, a type not in `allowedTypes`, a length
/// over the limit or not the size its type fixes); ok for an acceptable one.
Status checkFrameHeader(const FrameHeader& header, uint64_t magic, uint32_t allowedTypes);

struct Hello {
  int32_t rank = -1;
  int32_t nranks = 0;
  int64_t timeoutMs = 0;  // the root's deadline runs this long after the first Hello
  SocketAddress listener;
};
constexpr size_t kHelloBytes = 16 + kWireAddressBytes;

struct RingInfo {
  int32_t nextRank = -1;
  int32_t nranks = 0;
  SocketAddress next;
};
constexpr size_t kRingBytes = 8 + kWireAddressBytes;

struct RingHello {
  int32_t rank = -1;
  int32_t nranks = 0;
};
constexpr size_t kRingHelloBytes = 8;

/// The fixed part in front of a Message payload. `seq` counts the messages from `from` to this
/// receiver (each travels on its own connection, so they can complete out of order).
struct MessageHead {
  int32_t from = -1;
  uint32_t tag = 0;
  uint64_t seq = 0;
};
constexpr size_t kMessageHeadBytes = 16;

std::vector<unsigned char> encodeHello(const Hello& hello);
/// Checks the fields (1 <= nranks, 0 <= rank < nranks, timeout > 0, a listener address).
Status decodeHello(const std::vector<unsigned char>& payload, Hello* out);

std::vector<unsigned char> encodeRing(const RingInfo& ring);
Status decodeRing(const std::vector<unsigned char>& payload, RingInfo* out);

std::vector<unsigned char> encodeRingHello(const RingHello& hello);
Status decodeRingHello(const std::vector<unsigned char>& payload, RingHello* out);

std::vector<unsigned char> encodeMessageHead(const MessageHead& head);
/// Reads the head from the front of a Message payload (at least kMessageHeadBytes long).
MessageHead decodeMessageHead(const std::vector<unsigned char>& payload);

/// An Error frame's payload carries a Status (code and text, the text cut at kMaxErrorTextBytes).
std::vector<unsigned char> encodeError(const Status& status);
/// The Status an Error frame carries (never ok).
Status decodeError(const std::vector<unsigned char>& payload);

/// Sends one frame whose payload is `head` followed by `body`.
Status sendFrame(Socket& socket, uint64_t magic, FrameType type, const void* head, size_t headBytes, const void* body,
                 size_t bodyBytes, const Deadline& deadline, PollClient* also = nullptr);
Status sendFrame(Socket& socket, uint64_t magic, FrameType type, const std::vector<unsigned char>& payload,
                 const Deadline& deadline, PollClient* also = nullptr);

/// Receives one whole frame of one of `allowedTypes` from a connection that carries nothing else
/// while this runs (the root's answer); a bad header is an error naming the peer.
Status recvFrame(Socket& socket, uint64_t magic, uint32_t allowedTypes, const Deadline& deadline, FrameHeader* header,
                 std::vector<unsigned char>* payload, PollClient* also = nullptr);

}  // namespace braid::bootstrap
