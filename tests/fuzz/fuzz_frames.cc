// Bootstrap frames as they arrive from anyone who connects to a rank's or the root's listener: the
// header check (every type, the input's own magic and another) and every payload decoder, the
// Hello the root reads first among them.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "bootstrap/frame.h"

using namespace braid::bootstrap;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= sizeof(FrameHeader)) {
    FrameHeader h;
    std::memcpy(&h, data, sizeof(h));
    checkFrameHeader(h, h.magic, ~0u).ignore();
    checkFrameHeader(h, 0x6272616964ull, typeBit(FrameType::kHello)).ignore();
  }
  const std::vector<unsigned char> payload(data, data + size);
  Hello hello;
  decodeHello(payload, &hello).ignore();
  RingInfo ring;
  decodeRing(payload, &ring).ignore();
  RingHello ringHello;
  decodeRingHello(payload, &ringHello).ignore();
  if (payload.size() >= kMessageHeadBytes) decodeMessageHead(payload);
  decodeError(payload).ignore();
  if (size >= kWireAddressBytes) {
    SocketAddress address;
    braid::net::decodeAddress(data, &address).ignore();
  }
  return 0;
}
