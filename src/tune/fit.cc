#include "tune/fit.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "tune/constants.h"

namespace braid::tune {
namespace {

// The number after `"key": ` in `line`, or false.
bool numberAfter(const std::string& line, const std::string& key, size_t from, double* out) {
  size_t at = line.find("\"" + key + "\":", from);
  if (at == std::string::npos) return false;
  const char* start = line.c_str() + at + key.size() + 3;
  char* end = nullptr;
  *out = std::strtod(start, &end);
  return end != start;
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

}  // namespace

Status readPerfJson(const std::string& text, const std::string& collective, std::vector<Point>* out, int* ranks) {
  std::istringstream in(text);
  std::string line;
  int lineNo = 0;
  out->clear();
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.find("\"collective\": \"" + collective + "\"") == std::string::npos) continue;
    Point p;
    double n = 0;
    size_t oop = line.find("\"out_of_place\"");
    if (!numberAfter(line, "bytes", 0, &p.bytes) || !numberAfter(line, "ranks", 0, &n) || oop == std::string::npos ||
        !numberAfter(line, "time_us", oop, &p.us)) {
      return invalidArgument("braid-perf JSON line " + std::to_string(lineNo) + ": no bytes, ranks or time_us");
    }
    // (A rank count outside int's range was undefined behaviour here: found by fuzz_tune_file.)
    if (!(n >= 1 && n <= 1 << 24) || n != static_cast<double>(static_cast<int>(n))) {
      return invalidArgument("braid-perf JSON line " + std::to_string(lineNo) + ": ranks " + std::to_string(n) +
                             " is not a rank count");
    }
    if (p.us > 0) out->push_back(p);
    *ranks = static_cast<int>(n);
  }
  if (out->size() < 2) {
    return invalidArgument("the braid-perf JSON has " + std::to_string(out->size()) + " timed " + collective +
                           " point(s); a fit needs at least 2");
  }
  return Status::ok();
}

LineFit fitLine(const std::vector<Point>& points) {
  // Minimise sum ((a + b x - y) / y)^2: weights 1/y^2 make every point's relative error count.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const Point& p : points) {
    double w = 1 / (p.us * p.us);
    sw += w, sx += w * p.bytes, sy += w * p.us, sxx += w * p.bytes * p.bytes, sxy += w * p.bytes * p.us;
  }
  LineFit f;
  double det = sw * sxx - sx * sx;
  if (std::fabs(det) > 0) {
    f.slope = (sw * sxy - sx * sy) / det;
    f.intercept = (sy - f.slope * sx) / sw;
  }
  for (const Point& p : points) f.relativeError.push_back((f.intercept + f.slope * p.bytes - p.us) / p.us);
  return f;
}

TuneFile tuneFromFit(const Machine& m, algo::Coll coll, algo::Algo a, Proto proto, int channels, const LineFit& fit) {
  TuneFile t;
  const int steps = stepsOn(m, coll, a), inter = interHostSteps(m, coll, a);
  const Factors f = factorsFor(m, a, proto);
  double reduce = m.reduceGBs > 0 ? reduceFactor(coll, a, m.nranks) / (m.reduceGBs * 1e3) : 0;
  double linkSlope = fit.slope - reduce;
  if (inter > 0) {
    // Across hosts: the steps inside hosts cost the machine's hop; the rest of the intercept is the
    // steps between them, and the slope is the network's (the busiest host's bytes over its NICs).
    const double inside = (steps - inter) * (m.intraHopUs * f.hopFactor + f.hopExtraUs);
    t.interHopUs = std::max(0.0, ((fit.intercept - m.baseUs - inside) / inter - f.hopExtraUs) / f.hopFactor);
    const double factor = hostLinkFactor(m, coll, a);
    if (linkSlope > 0 && factor > 0) t.netGBs = factor / (linkSlope * 1e3);
    return t;
  }
  if (steps > 0) t.hopUs = std::max(0.0, ((fit.intercept - m.baseUs) / steps - f.hopExtraUs) / f.hopFactor);
  double factor = busiestRankFactor(coll, a, m.nranks);
  if (linkSlope > 0 && factor > 0) t.channelGBs = factor / (linkSlope * 1e3 * std::max(1, channels) * f.efficiency);
  return t;
}

namespace {

// Where the protocol-model value `name` lives in `m`; null for a name that is none of them.
double* modelValue(Machine& m, const std::string& name) {
  static const char* const protos[] = {"simple", "ll", "ll128"};
  for (int p = 0; p < static_cast<int>(Proto::kNumProtos); ++p) {
    const std::string prefix = std::string(protos[p]) + "_";
    if (name == prefix + "hop_factor") return &m.protos[p].hopFactor;
    if (name == prefix + "hop_extra_us") return &m.protos[p].hopExtraUs;
    if (name == prefix + "efficiency") return &m.protos[p].efficiency;
    if (name == prefix + "bytes_per_channel") return &m.protos[p].bytesPerChannel;
  }
  if (name == "oneshot_efficiency") return &m.oneShot.efficiency;
  if (name == "oneshot_bytes_per_channel") return &m.oneShot.bytesPerChannel;
  return nullptr;
}

}  // namespace

Status parseTuneFile(const std::string& text, const std::string& source, TuneFile* out) {
  TuneFile f;
  std::istringstream in(text);
  std::string line;
  int lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    size_t eq = line.find('=');
    std::string where = source + ":" + std::to_string(lineNo) + ": ";
    if (eq == std::string::npos) return invalidArgument(where + "expected 'name = value'");
    std::string name = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !(v >= 0))
      return invalidArgument(where + "'" + value + "' is not a non-negative number");
    double* slot = name == "base_us"        ? &f.baseUs
                   : name == "hop_us"       ? &f.hopUs
                   : name == "inter_hop_us" ? &f.interHopUs
                   : name == "channel_gbs"  ? &f.channelGBs
                   : name == "net_gbs"      ? &f.netGBs
                   : name == "reduce_gbs"   ? &f.reduceGBs
                                            : nullptr;
    Machine probe;
    const bool model = slot == nullptr && modelValue(probe, name) != nullptr;
    if (slot == nullptr && !model) {
      return invalidArgument(
          where + "unknown name '" + name +
          "' (base_us, hop_us, inter_hop_us, channel_gbs, net_gbs, reduce_gbs, or a protocol model's "
          "<simple|ll|ll128>_<hop_factor|hop_extra_us|efficiency|bytes_per_channel>, "
          "oneshot_<efficiency|bytes_per_channel>)");
    }
    const bool positive = name == "channel_gbs" || name == "net_gbs" || name == "reduce_gbs" ||
                          name.find("efficiency") != std::string::npos ||
                          name.find("bytes_per_channel") != std::string::npos;
    if (positive && v == 0) return invalidArgument(where + name + " must be > 0");
    if (model) {
      f.model[name] = v;
    } else {
      *slot = v;
    }
  }
  *out = f;
  return Status::ok();
}

std::string writeTuneFile(const TuneFile& f) {
  std::ostringstream out;
  out << "# braid tune file (BRAID_TUNE_FILE): values fitted by braid-tune --fit\n";
  auto put = [&](const char* name, double v) {
    if (v < 0) return;
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%s = %.6g\n", name, v);
    out << buf;
  };
  put("base_us", f.baseUs);
  put("hop_us", f.hopUs);
  put("inter_hop_us", f.interHopUs);
  put("channel_gbs", f.channelGBs);
  put("net_gbs", f.netGBs);
  put("reduce_gbs", f.reduceGBs);
  for (const auto& [name, v] : f.model) put(name.c_str(), v);
  return out.str();
}

void applyTuneFile(const TuneFile& f, Machine* m) {
  if (f.baseUs >= 0) m->baseUs = f.baseUs;
  if (f.hopUs >= 0) m->intraHopUs = f.hopUs;
  if (f.interHopUs >= 0) m->interHopUs = f.interHopUs;
  if (f.channelGBs > 0) m->channelGBs = f.channelGBs;
  if (f.netGBs > 0 && m->hosts > 1) m->netGBs = f.netGBs;
  if (f.reduceGBs > 0) m->reduceGBs = f.reduceGBs;
  for (const auto& [name, v] : f.model) {
    if (double* slot = modelValue(*m, name)) *slot = v;
  }
}

}  // namespace braid::tune
