#include "core/call_check.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "algo/collectives.h"
#include "core/datatype.h"

namespace braid::core {
namespace {

// Pair mismatches listed in one message; a wholly wrong group (say a transposed all-to-all) would
// otherwise produce one line per pair of ranks.
constexpr size_t kMaxReportedPairs = 4;

bool isColl(int32_t kind) { return kind >= 0 && kind < static_cast<int32_t>(algo::Coll::kNumColls); }

bool usesOp(algo::Coll coll) {
  return coll == algo::Coll::kAllReduce || coll == algo::Coll::kReduce || coll == algo::Coll::kReduceScatter;
}

bool usesRoot(algo::Coll coll) { return coll == algo::Coll::kBroadcast || coll == algo::Coll::kReduce; }

// Fields are grouped by value as uint64_t; the 32-bit ones go through int64_t so that they come back intact.
uint64_t key(int32_t v) { return static_cast<uint64_t>(static_cast<int64_t>(v)); }
int32_t fromKey(uint64_t k) { return static_cast<int32_t>(static_cast<int64_t>(k)); }

std::string showNumber(uint64_t v) { return std::to_string(v); }
std::string showInt(uint64_t v) { return std::to_string(fromKey(v)); }
std::string showType(uint64_t v) { return typeName(static_cast<braidDataType_t>(fromKey(v))); }
std::string showOp(uint64_t v) { return opName(static_cast<braidRedOp_t>(fromKey(v))); }
std::string showKind(uint64_t v) {
  int32_t kind = fromKey(v);
  if (kind == kSendRecvKind) return "send/recv group";
  if (isColl(kind)) return algo::collName(static_cast<algo::Coll>(kind));
  return "unknown (" + std::to_string(kind) + ")";
}

// "rank 2", "ranks 0,1,3", "ranks 0-61,63": runs of three or more are shortened, so that the odd
// rank out of a large job stays easy to see.
std::string rankList(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size();) {
    size_t last = i;
    while (last + 1 < ranks.size() && ranks[last + 1] == ranks[last] + 1) ++last;
    if (i > 0) out += ",";
    out += std::to_string(ranks[i]);
    if (last - i >= 2) {
      out += "-" + std::to_string(ranks[last]);
      i = last + 1;
    } else {
      ++i;
    }
  }
  return out;
}

// "count is 1024 on ranks 0,1,3 but 1000 on rank 2"; empty when every rank has the same value. The
// most common value comes first: it is usually the intended one.
std::string differingField(const char* field, const std::vector<uint64_t>& values, std::string (*show)(uint64_t)) {
  std::map<uint64_t, std::vector<int>> byValue;
  for (size_t r = 0; r < values.size(); ++r) byValue[values[r]].push_back(static_cast<int>(r));
  if (byValue.size() <= 1) return "";
  std::vector<std::pair<uint64_t, std::vector<int>>> groups(byValue.begin(), byValue.end());
  std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    if (a.second.size() != b.second.size()) return a.second.size() > b.second.size();
    return a.second.front() < b.second.front();
  });
  std::string out = std::string(field) + " is";
  for (size_t g = 0; g < groups.size(); ++g) {
    out += g == 0 ? " " : g == 1 ? " but " : ", ";
    out += show(groups[g].first) + " on " + rankList(groups[g].second);
  }
  return out;
}

std::string bytesText(uint64_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }
std::string messagesText(size_t n) { return std::to_string(n) + (n == 1 ? " message" : " messages"); }

// The first way in which the messages from rank `from` to rank `to` disagree; empty when they agree.
std::string pairMismatch(int from, int to, const std::vector<uint64_t>& sent, const std::vector<uint64_t>& received) {
  const std::string f = "rank " + std::to_string(from), t = "rank " + std::to_string(to);
  for (size_t i = 0; i < std::min(sent.size(), received.size()); ++i) {
    if (sent[i] == received[i]) continue;
    std::string which = std::max(sent.size(), received.size()) > 1
                            ? " (message " + std::to_string(i + 1) + " from " + f + " to " + t + ")"
                            : "";
    return f + " sends " + bytesText(sent[i]) + " to " + t + ", which receives " + bytesText(received[i]) + " from " +
           f + which;
  }
  if (sent.size() == received.size()) return "";
  if (received.empty()) {
    return f + " sends " + (sent.size() == 1 ? bytesText(sent[0]) : messagesText(sent.size())) + " to " + t +
           ", which posts no receive from " + f;
  }
  if (sent.empty()) {
    return t + " receives " + (received.size() == 1 ? bytesText(received[0]) : messagesText(received.size())) +
           " from " + f + ", which posts no send to " + t;
  }
  return f + " sends " + messagesText(sent.size()) + " to " + t + ", which receives " + messagesText(received.size()) +
         " from " + f;
}

Status exchangeFingerprints(bootstrap::Bootstrap& bootstrap, const CallFingerprint& mine,
                            std::vector<CallFingerprint>* all) {
  all->assign(static_cast<size_t>(bootstrap.nranks()), CallFingerprint{});
  (*all)[static_cast<size_t>(bootstrap.rank())] = mine;
  return bootstrap.allGather(all->data(), sizeof(CallFingerprint))
      .withContext("BRAID_CHECK: exchanging call fingerprints");
}

}  // namespace

CallFingerprint collFingerprint(const CollRequest& request, uint64_t seq) {
  CallFingerprint f;
  f.kind = static_cast<int32_t>(request.coll);
  f.type = static_cast<int32_t>(request.type);
  f.op = static_cast<int32_t>(request.op);
  f.root = request.root;
  f.count = request.count;
  f.seq = seq;
  return f;
}

CallFingerprint sendRecvFingerprint(size_t requests, uint64_t seq) {
  CallFingerprint f;
  f.kind = kSendRecvKind;
  f.count = requests;
  f.seq = seq;
  return f;
}

std::vector<P2pFingerprint> p2pFingerprints(const std::vector<P2pRequest>& requests) {
  std::vector<P2pFingerprint> out;
  out.reserve(requests.size());
  for (const P2pRequest& r : requests) {
    P2pFingerprint f;
    f.peer = r.peer;
    f.isSend = r.isSend ? 1 : 0;
    f.bytes = r.count * typeSize(r.type);
    out.push_back(f);
  }
  return out;
}

Status compareCalls(const std::vector<CallFingerprint>& calls) {
  if (calls.empty()) return Status::ok();
  std::vector<std::string> diffs;
  auto compare = [&](const char* field, uint64_t (*get)(const CallFingerprint&), std::string (*show)(uint64_t)) {
    std::vector<uint64_t> values;
    for (const CallFingerprint& c : calls) values.push_back(get(c));
    std::string diff = differingField(field, values, show);
    if (!diff.empty()) diffs.push_back(diff);
  };
  compare(
      "collective", [](const CallFingerprint& c) { return key(c.kind); }, showKind);
  compare(
      "call number", [](const CallFingerprint& c) { return c.seq; }, showNumber);
  // The other fields only mean something when everyone runs the same collective.
  const int32_t kind = calls[0].kind;
  bool sameKind = std::all_of(calls.begin(), calls.end(), [&](const CallFingerprint& c) { return c.kind == kind; });
  if (sameKind && isColl(kind)) {
    auto coll = static_cast<algo::Coll>(kind);
    compare(
        "count", [](const CallFingerprint& c) { return c.count; }, showNumber);
    compare(
        "datatype", [](const CallFingerprint& c) { return key(c.type); }, showType);
    if (usesOp(coll))
      compare(
          "op", [](const CallFingerprint& c) { return key(c.op); }, showOp);
    if (usesRoot(coll))
      compare(
          "root", [](const CallFingerprint& c) { return key(c.root); }, showInt);
  }
  if (diffs.empty()) return Status::ok();

  const uint64_t seq = calls[0].seq;
  bool sameSeq = std::all_of(calls.begin(), calls.end(), [&](const CallFingerprint& c) { return c.seq == seq; });
  std::string message = sameSeq ? "call " + std::to_string(seq) + " does not match" : "calls do not match";
  message += " across ranks: ";
  for (size_t i = 0; i < diffs.size(); ++i) message += (i > 0 ? "; " : "") + diffs[i];
  return invalidUsage(message);
}

Status compareSendRecv(uint64_t seq, const std::vector<std::vector<P2pFingerprint>>& perRank) {
  const int n = static_cast<int>(perRank.size());
  std::vector<std::string> problems;
  // Per ordered pair (from, to), in posting order: the bytes of each send from `from` to `to`, and
  // of each receive that `to` posted for a message from `from`.
  std::map<std::pair<int, int>, std::vector<uint64_t>> sent, received;
  std::set<std::pair<int, int>> pairs;
  for (int r = 0; r < n; ++r) {
    for (const P2pFingerprint& e : perRank[r]) {
      if (e.peer < 0 || e.peer >= n) {
        problems.push_back("rank " + std::to_string(r) + (e.isSend ? " sends to" : " receives from") + " rank " +
                           std::to_string(e.peer) + ", which is not in the communicator");
        continue;
      }
      std::pair<int, int> pair = e.isSend ? std::make_pair(r, e.peer) : std::make_pair(e.peer, r);
      (e.isSend ? sent : received)[pair].push_back(e.bytes);
      pairs.insert(pair);
    }
  }
  for (const auto& pair : pairs) {
    std::string problem = pairMismatch(pair.first, pair.second, sent[pair], received[pair]);
    if (!problem.empty()) problems.push_back(problem);
  }
  if (problems.empty()) return Status::ok();

  std::string message = "send/recv group (call " + std::to_string(seq) + ") does not match across ranks: ";
  for (size_t i = 0; i < std::min(problems.size(), kMaxReportedPairs); ++i)
    message += (i > 0 ? "; " : "") + problems[i];
  if (problems.size() > kMaxReportedPairs) {
    message += "; and " + std::to_string(problems.size() - kMaxReportedPairs) + " more";
  }
  return invalidUsage(message);
}

Status checkCollective(bootstrap::Bootstrap& bootstrap, const CollRequest& request, uint64_t seq) {
  std::vector<CallFingerprint> calls;
  BRAID_RETURN_IF_ERROR(exchangeFingerprints(bootstrap, collFingerprint(request, seq), &calls));
  return compareCalls(calls);
}

Status checkSendRecv(bootstrap::Bootstrap& bootstrap, const std::vector<P2pRequest>& requests, uint64_t seq) {
  std::vector<P2pFingerprint> mine = p2pFingerprints(requests);
  std::vector<CallFingerprint> calls;
  BRAID_RETURN_IF_ERROR(exchangeFingerprints(bootstrap, sendRecvFingerprint(mine.size(), seq), &calls));
  BRAID_RETURN_IF_ERROR(compareCalls(calls));

  // Every rank derives the same slot size from the table it just agreed on; shorter lists are padded.
  size_t longest = 0;
  for (const CallFingerprint& c : calls) longest = std::max(longest, static_cast<size_t>(c.count));
  std::vector<P2pFingerprint> table(calls.size() * longest);
  std::copy(mine.begin(), mine.end(),
            table.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(bootstrap.rank()) * longest));
  BRAID_RETURN_IF_ERROR(bootstrap.allGather(table.data(), longest * sizeof(P2pFingerprint))
                            .withContext("BRAID_CHECK: exchanging send/recv lists"));
  std::vector<std::vector<P2pFingerprint>> perRank(calls.size());
  for (size_t r = 0; r < calls.size(); ++r) {
    auto first = table.begin() + static_cast<std::ptrdiff_t>(r * longest);
    perRank[r].assign(first, first + static_cast<std::ptrdiff_t>(calls[r].count));
  }
  return compareSendRecv(seq, perRank);
}

}  // namespace braid::core
