#include "tune/tuner.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/log.h"
#include "core/param.h"
#include "tune/constants.h"
#include "tune/fit.h"

namespace braid::tune {
namespace {

const char* collNameAt(int c) { return algo::collName(static_cast<algo::Coll>(c)); }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}

// Applies `text` to a [collective][name] table of `n` names. `nameOf(i)` gives name i.
template <class NameOf>
Status restrict(const std::string& text, const char* what, int n, NameOf nameOf, bool (*table)[8]) {
  if (text.empty()) return Status::ok();
  std::vector<bool> set[kNumColls];
  for (const std::string& rawEntry : split(lower(text), ';')) {
    std::string entry = rawEntry;
    int only = -1;  // the collective this entry names, or -1 for all
    size_t colon = entry.find(':');
    if (colon != std::string::npos) {
      std::string coll = entry.substr(0, colon);
      for (int c = 0; c < kNumColls; ++c) {
        if (coll == collNameAt(c)) only = c;
      }
      if (only < 0) {
        return invalidArgument(std::string(what) + "='" + text + "': unknown collective '" + coll +
                               "' (allreduce, broadcast, reduce, allgather, reducescatter)");
      }
      entry = entry.substr(colon + 1);
    }
    bool exclude = !entry.empty() && entry[0] == '^';
    if (exclude) entry = entry.substr(1);
    if (entry.empty()) return invalidArgument(std::string(what) + "='" + text + "': an empty list");
    std::vector<bool> listed(n, false);
    for (const std::string& name : split(entry, ',')) {
      int found = -1;
      for (int i = 0; i < n; ++i) {
        if (name == nameOf(i)) found = i;
      }
      if (found < 0) {
        std::string known;
        for (int i = 0; i < n; ++i) known += std::string(i ? ", " : "") + nameOf(i);
        return invalidArgument(std::string(what) + "='" + text + "': unknown name '" + name + "' (known: " + known +
                               ")");
      }
      listed[found] = true;
    }
    std::vector<bool> result(n);
    for (int i = 0; i < n; ++i) result[i] = listed[i] != exclude;
    for (int c = 0; c < kNumColls; ++c) {
      if (only < 0 || only == c) set[c] = result;
    }
  }
  for (int c = 0; c < kNumColls; ++c) {
    if (set[c].empty()) continue;
    for (int i = 0; i < n; ++i) table[c][i] = table[c][i] && set[c][i];
  }
  return Status::ok();
}

Status ctasParam(param::Id id, const char* name, int* out) {
  std::string text = param::getString(id);
  if (text.empty()) return Status::ok();
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (*end != '\0' || v < 1 || v > 64) return invalidArgument(std::string(name) + "='" + text + "' must be in 1..64");
  *out = static_cast<int>(v);
  return Status::ok();
}

}  // namespace

Allowed::Allowed() {
  for (auto& row : algo) std::fill(std::begin(row), std::end(row), true);
  for (auto& row : proto) std::fill(std::begin(row), std::end(row), true);
}

static_assert(kNumAlgos <= 8 && kNumProtos <= 8, "restrict() tables hold 8 names");

Status restrictAlgorithms(const std::string& text, const char* what, Allowed* allowed) {
  bool table[kNumColls][8];
  for (int c = 0; c < kNumColls; ++c) std::copy(allowed->algo[c], allowed->algo[c] + kNumAlgos, table[c]);
  BRAID_RETURN_IF_ERROR(restrict(
      text, what, kNumAlgos, [](int i) { return std::string(algo::algoName(static_cast<algo::Algo>(i))); }, table));
  for (int c = 0; c < kNumColls; ++c) std::copy(table[c], table[c] + kNumAlgos, allowed->algo[c]);
  return Status::ok();
}

Status restrictProtocols(const std::string& text, const char* what, Allowed* allowed) {
  bool table[kNumColls][8];
  for (int c = 0; c < kNumColls; ++c) std::copy(allowed->proto[c], allowed->proto[c] + kNumProtos, table[c]);
  BRAID_RETURN_IF_ERROR(restrict(
      text, what, kNumProtos, [](int i) { return std::string(protoName(static_cast<Proto>(i))); }, table));
  for (int c = 0; c < kNumColls; ++c) std::copy(table[c], table[c] + kNumProtos, allowed->proto[c]);
  return Status::ok();
}

Status Tuner::create(const Machine& machine, const TunerConfig& config, Tuner* out) {
  Tuner t;
  t.machine_ = machine;
  std::string tuneFile = param::getString(param::Id::kTuneFile);
  if (!tuneFile.empty()) {
    std::ifstream in(tuneFile);
    if (!in) return invalidArgument("BRAID_TUNE_FILE '" + tuneFile + "' cannot be read");
    std::stringstream text;
    text << in.rdbuf();
    TuneFile values;
    BRAID_RETURN_IF_ERROR(parseTuneFile(text.str(), tuneFile, &values).withContext("BRAID_TUNE_FILE"));
    applyTuneFile(values, &t.machine_);
  }
  t.hostChunkBytes_ = config.hostChunkBytes;
  BRAID_RETURN_IF_ERROR(restrictAlgorithms(param::getString(param::Id::kAlgo), "BRAID_ALGO", &t.allowed_));
  BRAID_RETURN_IF_ERROR(restrictProtocols(param::getString(param::Id::kProto), "BRAID_PROTO", &t.allowed_));
  BRAID_RETURN_IF_ERROR(restrictAlgorithms(config.algorithm, "config->algorithm", &t.allowed_));
  BRAID_RETURN_IF_ERROR(restrictProtocols(config.protocol, "config->protocol", &t.allowed_));
  int minCtas = config.minCTAs, maxCtas = config.maxCTAs;
  int envMin = 0, envMax = 0;
  BRAID_RETURN_IF_ERROR(ctasParam(param::Id::kMinCtas, "BRAID_MIN_CTAS", &envMin));
  BRAID_RETURN_IF_ERROR(ctasParam(param::Id::kMaxCtas, "BRAID_MAX_CTAS", &envMax));
  if (envMin > 0) minCtas = envMin;
  if (envMax > 0) maxCtas = envMax;
  if (minCtas > maxCtas) {
    return invalidArgument("the channel bounds cross: min " + std::to_string(minCtas) + " > max " +
                           std::to_string(maxCtas) + " (config minCTAs/maxCTAs, BRAID_MIN_CTAS/BRAID_MAX_CTAS)");
  }
  t.minChannels_ = minCtas;
  t.maxChannels_ = maxCtas;
  // Report the choices that narrow the tuner, once per communicator (rank 0 logs its table too).
  const std::pair<const char*, std::string> given[] = {{"BRAID_ALGO", param::getString(param::Id::kAlgo)},
                                                       {"BRAID_PROTO", param::getString(param::Id::kProto)},
                                                       {"config->algorithm", config.algorithm},
                                                       {"config->protocol", config.protocol},
                                                       {"BRAID_MIN_CTAS", param::getString(param::Id::kMinCtas)},
                                                       {"BRAID_MAX_CTAS", param::getString(param::Id::kMaxCtas)},
                                                       {"BRAID_TUNE_FILE", tuneFile}};
  for (const auto& g : given) {
    if (!g.second.empty()) BRAID_INFO(log::Subsys::kTune, "tuner: ", g.first, "='", g.second, "' in effect");
  }
  *out = std::move(t);
  return Status::ok();
}

void Tuner::setCopyEngine(int ctas, bool forced) {
  machine_.ceCtas = ctas > 0 ? std::min(ctas, static_cast<int>(kCeDefaultCtas.value)) : 0;
  limits_.ceCtas = ctas;
  ceForced_ = forced && ctas > 0;
  cache_.clear();
}

int Tuner::channelsFor(algo::Algo a, Proto proto, size_t bytes) const {
  // The copy-engine reducer: its own count, within the configured bounds (the user's SM budget).
  if (a == algo::Algo::kCopyEngine)
    return std::min(std::clamp(machine_.ceCtas, minChannels_, std::max(minChannels_, maxChannels_)), limits_.ceCtas);
  double perChannel = a == algo::Algo::kOneShot ? machine_.oneShot.bytesPerChannel
                                                : machine_.protos[static_cast<int>(proto)].bytesPerChannel;
  int wanted = static_cast<int>(std::ceil(static_cast<double>(bytes) / perChannel));
  int found = std::max(1, a == algo::Algo::kOneShot ? machine_.oneShotChannels
                          : a == algo::Algo::kRing  ? std::max(machine_.ringChannels, machine_.channels)
                                                    : machine_.channels);
  int channels = std::clamp(std::min(wanted, found), minChannels_, std::max(minChannels_, maxChannels_));
  // What the executor has is the last word (the configured minimum cannot ask for FIFOs it lacks).
  const int engine = a == algo::Algo::kOneShot ? 0 : a == algo::Algo::kRing ? limits_.ringChannels : limits_.channels;
  return engine > 0 ? std::min(channels, engine) : channels;
}

double Tuner::plan(algo::Call* call, size_t elemBytes) const {
  const Decision d = decide(call->coll, algo::messageElems(call->coll, call->count, machine_.nranks) * elemBytes);
  call->algo = d.algo;
  call->nChannels = d.channels;
  call->chunkElems = std::max<size_t>(1, d.chunkBytes / elemBytes);
  call->postOp = call->op == braidAvg;
  call->proto = d.proto;
  if (call->direct) {
    constexpr size_t kBytesPerCta = 256 * 1024;  // a CTA streams this much per call at least
    const size_t wanted = (call->count * elemBytes + kBytesPerCta - 1) / kBytesPerCta;
    call->algo = algo::Algo::kOneShot;
    call->nChannels = static_cast<int>(
        std::max<size_t>(1, std::min(wanted, static_cast<size_t>(std::max(1, limits_.directChannels)))));
    call->proto = Proto::kSimple;
  }
  return d.predictedUs;
}

Decision Tuner::decide(algo::Coll coll, size_t bytes) const {
  Decision d;
  if (cache_.find(coll, bytes, &d)) return d;
  d = evaluate(coll, bytes);
  cache_.store(coll, bytes, d);
  return d;
}

Decision Tuner::evaluate(algo::Coll coll, size_t bytes) const {
  const int c = static_cast<int>(coll);
  Decision best;
  bool any = false;
  const int ce = static_cast<int>(algo::Algo::kCopyEngine);
  if (ceForced_ && allowed_.algo[c][ce] && algorithmApplies(machine_, coll, algo::Algo::kCopyEngine)) {
    best.algo = algo::Algo::kCopyEngine;
    best.channels = channelsFor(best.algo, Proto::kSimple, bytes);
    best.predictedUs = predict(machine_, coll, best.algo, Proto::kSimple, bytes, best.channels).us;
    best.chunkBytes = limits_.slotBytes[static_cast<int>(Proto::kSimple)];
    best.note = "BRAID_CE=1";
    return best;
  }
  for (int a = 0; a < kNumAlgos; ++a) {
    auto alg = static_cast<algo::Algo>(a);
    if (!allowed_.algo[c][a] || !algorithmApplies(machine_, coll, alg)) continue;
    for (int p = 0; p < kNumProtos; ++p) {
      auto proto = static_cast<Proto>(p);
      if (!allowed_.proto[c][p] || !protocolApplies(machine_, proto) || !sizeApplies(machine_, coll, alg, proto, bytes))
        continue;
      int channels = channelsFor(alg, proto, bytes);
      Prediction pred = predict(machine_, coll, alg, proto, bytes, channels);
      if (!any || pred.us < best.predictedUs - 1e-12) {
        best.algo = alg;
        best.proto = proto;
        best.channels = channels;
        best.predictedUs = pred.us;
        any = true;
      }
    }
  }
  if (!any) {
    // Nothing allowed runs this collective here: the ring with the first allowed (else Simple) protocol.
    best.algo = algo::Algo::kRing;
    best.proto = Proto::kSimple;
    for (int p = kNumProtos - 1; p >= 0; --p) {
      if (allowed_.proto[c][p] && protocolApplies(machine_, static_cast<Proto>(p))) best.proto = static_cast<Proto>(p);
    }
    best.channels = channelsFor(best.algo, best.proto, bytes);
    best.predictedUs = predict(machine_, coll, best.algo, best.proto, bytes, best.channels).us;
    best.note = "nothing allowed implements " + std::string(algo::collName(coll)) + " here: ring";
  }
  best.chunkBytes = machine_.gpu ? limits_.slotBytes[static_cast<int>(best.proto)] : hostChunkBytes_;
  return best;
}

std::string describe(const Decision& d) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%s/%s %dch %.2fus", algo::algoName(d.algo), protoName(d.proto), d.channels,
                d.predictedUs);
  return d.note.empty() ? buf : std::string(buf) + " (" + d.note + ")";
}

std::string Tuner::table(size_t maxBytes) const {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof(line), "%12s", "bytes");
  out << line;
  for (int c = 0; c < kNumColls; ++c) {
    std::snprintf(line, sizeof(line), "  %-30s", collNameAt(c));
    out << line;
  }
  out << "\n";
  for (size_t bytes = 8; bytes <= maxBytes; bytes *= 4) {
    std::snprintf(line, sizeof(line), "%12zu", bytes);
    out << line;
    for (int c = 0; c < kNumColls; ++c) {
      std::snprintf(line, sizeof(line), "  %-30s", describe(decide(static_cast<algo::Coll>(c), bytes)).c_str());
      out << line;
    }
    out << "\n";
    if (bytes > maxBytes / 4) break;
  }
  return out.str();
}

std::vector<std::string> Tuner::crossovers(algo::Coll coll, size_t maxBytes) const {
  std::vector<std::string> out;
  Decision prev = decide(coll, 8);
  for (size_t bytes = 16; bytes <= maxBytes; bytes *= 2) {
    Decision d = decide(coll, bytes);
    if (d.algo != prev.algo || d.proto != prev.proto) {
      out.push_back(std::to_string(bytes) + " B: " + algo::algoName(prev.algo) + "/" + protoName(prev.proto) + " -> " +
                    algo::algoName(d.algo) + "/" + protoName(d.proto));
    }
    prev = d;
    if (bytes > maxBytes / 2) break;
  }
  return out;
}

}  // namespace braid::tune
