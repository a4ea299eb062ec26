#include "transport/transport.h"

#include <cstdio>

namespace braid::transport {
namespace {

bool sameHost(const PeerIdentity& a, const PeerIdentity& b) { return a.host == b.host; }
bool sameProcess(const PeerIdentity& a, const PeerIdentity& b) { return sameHost(a, b) && a.pid == b.pid; }

// The selection table: a peer gets the first transport whose test passes; the network reaches
// everyone.
struct Row {
  Kind kind;
  const char* name;
  bool (*reaches)(const PeerIdentity& me, const PeerIdentity& peer, const SelectFacts& f);
};
constexpr Row kTable[] = {
    {Kind::kLoopback, "loopback",
     [](const PeerIdentity& me, const PeerIdentity& peer, const SelectFacts& f) {
       return !f.gpu && sameProcess(me, peer);
     }},
    {Kind::kP2p, "P2P",
     [](const PeerIdentity& me, const PeerIdentity& peer, const SelectFacts& f) {
       return f.gpu && !f.hostMemory && sameHost(me, peer);
     }},
    {Kind::kShm, "SHM",
     [](const PeerIdentity& me, const PeerIdentity& peer, const SelectFacts& f) {
       return sameHost(me, peer) && (f.gpu ? f.hostMemory : !f.shmDisabled);
     }},
    {Kind::kNet, "NET", [](const PeerIdentity&, const PeerIdentity&, const SelectFacts&) { return true; }},
};
static_assert(sizeof(kTable) / sizeof(kTable[0]) == kNumKinds, "one row per transport");

}  // namespace

const char* kindName(Kind kind) { return kTable[static_cast<int>(kind)].name; }

Kind selectTransport(const PeerIdentity& me, const PeerIdentity& peer, const SelectFacts& facts) {
  for (const Row& row : kTable) {
    if (row.reaches(me, peer, facts)) return row.kind;
  }
  return Kind::kNet;
}

std::string describePeer(int peer, const PeerIdentity& id) {
  char text[128];
  std::snprintf(text, sizeof(text), "rank %d (host %016llx, pid %lld", peer, static_cast<unsigned long long>(id.host),
                static_cast<long long>(id.pid));
  std::string s = text;
  if (id.device >= 0) s += ", device " + std::to_string(id.device);
  return s + ")";
}

}  // namespace braid::transport
