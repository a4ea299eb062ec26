// The watchdog's report (stallReport): what every rank is doing and the diagnosis, built from the
// states the peers answered. Pure: the unit tests feed it states directly.
#include <cstdio>
#include <string>
#include <vector>

#include "algo/collectives.h"
#include "core/watchdog.h"

namespace braid::core {
namespace {

std::string callOf(const WatchState& s, std::string (*describeTag)(const transport::CallTag&)) {
  std::string what = describeTag != nullptr ? describeTag(s.tag) : std::string("a call");
  return what + " [call " + std::to_string(s.seq) + "]";
}

}  // namespace

std::string stallReport(int self, double stalledSeconds, const std::vector<PeerState>& ranks,
                        std::string (*describeTag)(const transport::CallTag&), bool onRequest,
                        const std::string& selfDetail) {
  const WatchState& me = ranks[self].state;
  const bool meP2p = me.tag.kind == exec::kP2pTagKind;
  const std::string mine = callOf(me, describeTag);
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%.1f", stalledSeconds);
  std::string out = "braid watchdog: rank " + std::to_string(self) + " of " + std::to_string(ranks.size()) +
                    " made no progress for " + secs + " s in " + mine + "\n";
  if (onRequest) {
    out = "braid watchdog, on request (SIGUSR1): rank " + std::to_string(self) + " of " + std::to_string(ranks.size()) +
          (me.inCall != 0 ? " in " + mine + ", no step for " + secs + " s\n"
           : me.seq == 0  ? std::string(", no call yet\n")
                          : ", idle after " + mine + "\n");
    if (me.inCall == 0) {
      for (size_t r = 0; r < ranks.size(); ++r) {
        const WatchState& s = ranks[r].state;
        out += "  rank " + std::to_string(r) + ": " +
               (ranks[r].kind == PeerState::Kind::kNotResponding ? std::string("not responding")
                : ranks[r].kind == PeerState::Kind::kExited      ? std::string("exited")
                : ranks[r].kind == PeerState::Kind::kNoWatchdog  ? std::string("runs without the watchdog")
                : s.seq == 0                                     ? std::string("has made no call yet")
                             : std::string(s.inCall != 0 ? "in " : "idle after ") + callOf(s, describeTag)) +
               "\n";
      }
      return out + "  diagnosis: this rank is between calls";
    }
  }
  // Collectives are compared by their number (every rank makes each one); send/recv groups only
  // by whether a rank is in one (ranks make different numbers of them).
  std::vector<std::string> behind, finished, gone, silent, other, idlePeer, notBegun;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const PeerState& p = ranks[r];
    const WatchState& s = p.state;
    const std::string name = std::to_string(r);
    std::string line = "  rank " + name + (static_cast<int>(r) == self ? " (this rank)" : "") + ": ";
    if (p.kind == PeerState::Kind::kNotResponding) {
      out += line + "not responding\n";
      silent.push_back(name);
      continue;
    }
    if (p.kind == PeerState::Kind::kExited) {
      out += line + "exited (its communicator is gone)\n";
      gone.push_back(name);
      continue;
    }
    if (p.kind == PeerState::Kind::kNoWatchdog) {
      out += line + "runs without the watchdog (BRAID_TIMEOUT unset there)\n";
      continue;
    }
    if (s.seq == 0) {
      line += "has made no call yet";
    } else {
      line += std::string(s.inCall != 0 ? "in " : "idle after ") + callOf(s, describeTag);
      if (s.inCall != 0 && s.gpu == 2) {
        line += ", its kernel has not begun";
        notBegun.push_back(name);
      } else if (s.inCall != 0 && s.gpu == 1) {
        line += s.waitingOn >= 0 ? ", its kernel waits for rank " + std::to_string(s.waitingOn) + " (count " +
                                       std::to_string(s.steps) + ")"
                                 : std::string(", its kernel runs");
      } else if (s.inCall != 0) {
        if (s.algorithm >= 0 && s.algorithm < static_cast<int>(algo::Algo::kNumAlgos)) {
          line += std::string(", ") + algo::algoName(static_cast<algo::Algo>(s.algorithm));
        }
        if (s.channel >= 0) line += ", channel " + std::to_string(s.channel);
        line += ", " + std::to_string(s.steps) + " step(s)";
        if (s.waitingOn >= 0) {
          line += ", waiting for rank " + std::to_string(s.waitingOn) +
                  (s.sending != 0 ? " to free a slot it sends to" : " to send a slot");
        }
      }
    }
    out += line + "\n";
    if (static_cast<int>(r) == self && !selfDetail.empty()) out += "    " + selfDetail + "\n";
    if (static_cast<int>(r) == self) continue;
    const bool inP2p = s.inCall != 0 && s.tag.kind == exec::kP2pTagKind;
    const bool inColl = s.inCall != 0 && !inP2p;
    if (meP2p) {
      if (inColl) other.push_back(name);
      if (s.inCall == 0 && static_cast<int>(r) == me.waitingOn) idlePeer.push_back(name);
    } else if (s.collectives < me.collectives) {
      (inP2p ? other : behind).push_back(name);
    } else if (s.collectives == me.collectives) {
      if (s.tag.kind != exec::kP2pTagKind && s.tag != me.tag) {
        other.push_back(name);
      } else if (s.inCall == 0 || inP2p) {
        finished.push_back(name);
      }
    } else {
      other.push_back(name);  // past this collective: it made one more than this rank
    }
  }
  auto list = [](const std::vector<std::string>& v) {
    std::string s = v.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < v.size(); ++i) s += (i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") + v[i];
    return s;
  };
  const std::string myCall = describeTag != nullptr ? describeTag(me.tag) : std::string("this call");
  std::string why;
  if (!notBegun.empty()) {
    why += list(notBegun) + (notBegun.size() == 1 ? "'s kernel has" : "' kernels have") +
           " not begun on the GPU: its stream waits for earlier work (a kernel or event before it, or a "
           "stream sharing its hardware queue); ";
  }
  if (!gone.empty()) why += list(gone) + " exited; ";
  if (!silent.empty()) why += list(silent) + " did not answer (stopped, or its host is gone); ";
  if (!behind.empty()) why += list(behind) + (behind.size() == 1 ? " has" : " have") + " not reached " + myCall + "; ";
  if (!finished.empty()) {
    why += list(finished) + (finished.size() == 1 ? " has" : " have") + " finished " + myCall +
           " while this rank waits in it; ";
  }
  if (!other.empty()) {
    why += "mismatched calls: " + list(other) + (other.size() == 1 ? " is" : " are") + " in another call than " + mine +
           "; ";
  }
  if (!idlePeer.empty()) why += list(idlePeer) + ", which this rank waits for, is in no call; ";
  if (why.empty()) {
    why = meP2p ? "every rank it waits for is in send/recv: the sends and receives do not pair up (or a bug in braid); "
                : "every rank is in this call and none moves: a bug in braid (please report it with this); ";
  }
  why.erase(why.size() - 2);
  return out + "  diagnosis: " + why;
}

}  // namespace braid::core
