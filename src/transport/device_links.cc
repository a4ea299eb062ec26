#include "transport/device_links.h"

#include <string>

namespace braid::transport {

int firstRankWithoutGpuDirect(const std::vector<DeviceOffer>& offers) {
  for (size_t r = 0; r < offers.size(); ++r) {
    if (offers[r].netGdr == 0) return static_cast<int>(r);
  }
  return -1;
}

void mappedEnds(const BlockLayout& l, char* mine, char* theirs, device::PeerConn* pc) {
  pc->send.simple = theirs + l.simple;
  pc->send.ll = theirs + l.ll;
  pc->send.ll128 = theirs + l.ll128;
  pc->send.tail = reinterpret_cast<uint64_t*>(theirs + l.tail);
  pc->send.head = reinterpret_cast<uint64_t*>(mine + l.head);
  pc->recv.simple = mine + l.simple;
  pc->recv.ll = mine + l.ll;
  pc->recv.ll128 = mine + l.ll128;
  pc->recv.tail = reinterpret_cast<uint64_t*>(mine + l.tail);
  pc->recv.head = reinterpret_cast<uint64_t*>(theirs + l.head);
}

Status MappedDeviceTransport::ends(int, int, int peer, char* mine, char* theirs, device::PeerConn* pc) {
  if (theirs == nullptr) {
    return internalError(std::string(name_) + ": rank " + std::to_string(peer) + "'s arena is not mapped");
  }
  mappedEnds(layout_, mine, theirs, pc);
  return Status::ok();
}

}  // namespace braid::transport
