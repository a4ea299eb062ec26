#include "perf_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/datatype.h"

namespace braid::perf {

bool reduces(Coll c) { return c == Coll::kAllReduce || c == Coll::kReduce || c == Coll::kReduceScatter; }

std::vector<Row> rowsFor(const Options& o, int n) {
  std::vector<braidRedOp_t> ops;
  if (!reduces(o.coll))
    ops = {braidSum};
  else if (o.opIndex < 0)
    ops = {braidSum, braidProd, braidMax, braidMin, braidAvg};
  else
    ops = {static_cast<braidRedOp_t>(o.opIndex)};
  size_t es = core::typeSize(o.type);
  std::vector<Row> rows;
  for (size_t b = o.minBytes; b <= o.maxBytes;) {
    size_t count = countFor(o.coll, b, es, n);
    bool whole = o.coll == Coll::kAllGather || o.coll == Coll::kReduceScatter || o.coll == Coll::kAllToAll;
    for (braidRedOp_t op : ops) rows.push_back(Row{count * es * (whole ? n : 1), count, op});
    size_t next = o.useFactor ? static_cast<size_t>(b * o.stepFactor) : b + o.stepBytes;
    if (next <= b) break;
    b = next;
  }
  return rows;
}

size_t inElems(Coll c, size_t count, int n) {
  return (c == Coll::kReduceScatter || c == Coll::kAllToAll) ? count * n : count;
}

size_t outElems(Coll c, size_t count, int n) {
  return (c == Coll::kAllGather || c == Coll::kAllToAll) ? count * n : count;
}

void placeBuffers(Coll c, int place, char* send, char* recv, int rank, size_t count, size_t es, char** in, char** out) {
  *out = recv;
  *in = place == 0 ? send : recv;
  if (place == 1 && c == Coll::kAllGather) *in = recv + rank * count * es;
  if (place == 1 && c == Coll::kReduceScatter) *out = recv + rank * count * es;
}

braidResult_t runOnce(Coll c, void* send, void* recv, size_t count, braidDataType_t t, braidRedOp_t op, int root,
                      int rank, int n, braidComm_t comm, braidStream_t stream) {
  switch (c) {
    case Coll::kAllReduce: return braidAllReduce(send, recv, count, t, op, comm, stream);
    case Coll::kBroadcast: return braidBroadcast(send, recv, count, t, root, comm, stream);
    case Coll::kReduce: return braidReduce(send, recv, count, t, op, root, comm, stream);
    case Coll::kAllGather: return braidAllGather(send, recv, count, t, comm, stream);
    case Coll::kReduceScatter: return braidReduceScatter(send, recv, count, t, op, comm, stream);
    case Coll::kAllToAll: return braidAllToAll(send, recv, count, t, comm, stream);
    case Coll::kSendRecv: {
      braidGroupStart();
      braidSend(send, count, t, (rank + 1) % n, comm, stream);
      braidRecv(recv, count, t, (rank + n - 1) % n, comm, stream);
      return braidGroupEnd();
    }
  }
  return braidInvalidArgument;
}

void printHeader(const Options& o, int n, const char* how, const std::string& where,
                 const std::vector<std::string>& notes) {
  std::printf("# braid-perf: %s, %d rank(s) %s, %s\n", collName(o.coll), n, how, where.c_str());
  if (o.hosts > 0) std::printf("# ranks split into %d pretended hosts (--hosts): sockets between them\n", o.hosts);
  for (const std::string& note : notes) std::printf("# %s\n", note.c_str());
  std::printf("#\n");
  // With --compare nccl a third block, NCCL's out-of-place call: the columns need a label above them.
  if (o.compareNccl) {
    std::printf("# %46s   %-34s   %-34s   %s\n", "", "braid, out of place", "braid, in place", "NCCL, out of place");
  }
  std::printf("# %10s %12s %9s %6s %5s   %9s %8s %8s %6s   %9s %8s %8s %6s", "size", "count", "type", "redop", "root",
              "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  if (o.compareNccl) std::printf("   %9s %8s %6s %6s", "time", "busbw", "#wrong", "ratio");
  std::printf("\n# %10s %12s %9s %6s %5s   %9s %8s %8s %6s   %9s %8s %8s %6s", "(B)", "(elements)", "", "", "", "(us)",
              "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  if (o.compareNccl) std::printf("   %9s %8s %6s %6s", "(us)", "(GB/s)", "", "(b/n)");
  std::printf("\n");
  std::fflush(stdout);
}

namespace {

void append(std::vector<double>* to, const std::vector<double>& from) {
  to->insert(to->end(), from.begin(), from.end());
}

// The printed time of one measurement from its combined sum, rank 0's value, min and max (-a).
double pick(const Options& o, double sum, double first, double lo, double hi, int n) {
  return o.average == 0 ? first : o.average == 2 ? lo : o.average == 3 ? hi : sum / n;
}

}  // namespace

void appendPercentiles(std::vector<double> us, std::vector<double>* tail) {
  if (us.empty()) us.push_back(0);
  std::sort(us.begin(), us.end());
  const size_t last = us.size() - 1;
  tail->push_back(us[last / 2]);
  // Nearest rank: the smallest time that at least 99 % of the calls do not exceed.
  const size_t rank99 = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(us.size())));
  tail->push_back(us[std::min(last, rank99 > 0 ? rank99 - 1 : 0)]);
  tail->push_back(us[last]);
}

bool report(const Options& o, const std::vector<Row>& rows, const std::vector<RankResult>& mine, const Combine& combine,
            int n) {
  // Three reductions of packed arrays: sums of [us | rank 0's us | wrong | nccl us | rank 0's nccl us |
  // nccl wrong], mins and maxes of [us | nccl us]. Every rank has the same k and m.
  const size_t k = mine[0].us.size(), m = mine[0].ncclUs.size();
  const size_t nr = mine.size();
  std::vector<std::vector<double>> sums(nr), lows(nr), highs(nr);
  std::vector<double*> sumPtrs, lowPtrs, highPtrs;
  for (size_t j = 0; j < nr; ++j) {
    const RankResult& res = mine[j];
    const bool zero = res.rank == 0;
    append(&sums[j], res.us);
    append(&sums[j], zero ? res.us : std::vector<double>(k, 0));
    append(&sums[j], res.wrong);
    append(&sums[j], res.ncclUs);
    append(&sums[j], zero ? res.ncclUs : std::vector<double>(m, 0));
    append(&sums[j], res.ncclWrong);
    append(&lows[j], res.us);
    append(&lows[j], res.ncclUs);
    highs[j] = lows[j];
    sumPtrs.push_back(sums[j].data());
    lowPtrs.push_back(lows[j].data());
    highPtrs.push_back(highs[j].data());
  }
  if (!combine(sumPtrs, 3 * (k + m), braidSum) || !combine(lowPtrs, k + m, braidMin) ||
      !combine(highPtrs, k + m, braidMax)) {
    return false;
  }
  // --percentiles: the median, 99th percentile and slowest call, each the largest over the ranks.
  std::vector<std::vector<double>> tails(nr);
  std::vector<double*> tailPtrs;
  for (size_t j = 0; j < nr; ++j) {
    tails[j] = mine[j].tail;
    tailPtrs.push_back(tails[j].data());
  }
  const size_t t = mine[0].tail.size();
  if (t > 0 && !combine(tailPtrs, t, braidMax)) return false;
  size_t me = nr;
  for (size_t j = 0; j < nr; ++j) {
    if (mine[j].rank == 0) me = j;
  }
  if (me == nr) return true;  // global rank 0 prints
  const double* sum = sums[me].data();
  const double* first = sum + k;
  const double* wrong = sum + 2 * k;
  const double* ncclSum = sum + 3 * k;
  const double* ncclFirst = ncclSum + m;
  const double* ncclWrong = ncclSum + 2 * m;
  const double* lo = lows[me].data();
  const double* hi = highs[me].data();

  std::FILE* json = o.json.empty() ? nullptr : std::fopen(o.json.c_str(), "w");
  if (json != nullptr) std::fprintf(json, "[\n");
  double busSum = 0, wrongTotal = 0, ncclBusSum = 0, ncclWrongTotal = 0;
  int measured = 0, ncclMeasured = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    bool rooted = o.coll == Coll::kBroadcast || o.coll == Coll::kReduce;
    std::printf("  %10zu %12zu %9s %6s %5d", row.bytes, row.count, core::typeName(o.type),
                reduces(o.coll) ? core::opName(row.op) : "none", rooted ? o.root : -1);
    if (json != nullptr) {
      std::fprintf(json,
                   "%s  {\"collective\": \"%s\", \"type\": \"%s\", \"op\": \"%s\", \"bytes\": %zu, \"count\": %zu, "
                   "\"ranks\": %d",
                   i ? ",\n" : "", collName(o.coll), core::typeName(o.type), core::opName(row.op), row.bytes, row.count,
                   n);
      if (o.gpus > 0) std::fprintf(json, ", \"memory\": \"cuda\", \"graph\": %s", o.graph ? "true" : "false");
    }
    double oopBusbw = 0;
    for (int place = 0; place < 2; ++place) {
      size_t j = 2 * i + place;
      if (sum[j] < 0) {  // not applicable
        std::printf("   %9s %8s %8s %6s", "N/A", "N/A", "N/A", "N/A");
        continue;
      }
      double us = pick(o, sum[j], first[j], lo[j], hi[j], n);
      double algbw = us > 0 ? row.bytes / us / 1e3 : 0, busbw = algbw * busFactor(o.coll, n);
      if (place == 0) oopBusbw = busbw;
      busSum += busbw;
      wrongTotal += wrong[j];
      ++measured;
      std::printf("   %9.2f %8.3f %8.3f %6s", us, algbw, busbw,
                  o.check ? std::to_string(static_cast<long long>(wrong[j])).c_str() : "N/A");
      if (json != nullptr) {
        std::fprintf(json, ", \"%s\": {\"time_us\": %.3f, \"algbw\": %.4f, \"busbw\": %.4f, \"wrong\": %lld}",
                     place == 0 ? "out_of_place" : "in_place", us, algbw, busbw, static_cast<long long>(wrong[j]));
      }
    }
    if (m > 0) {
      double us = pick(o, ncclSum[i], ncclFirst[i], lo[k + i], hi[k + i], n);
      double algbw = us > 0 ? row.bytes / us / 1e3 : 0, busbw = algbw * busFactor(o.coll, n);
      double ratio = busbw > 0 ? oopBusbw / busbw : 0;  // = NCCL's time / braid's: the sizes are the same
      ncclBusSum += busbw;
      ncclWrongTotal += ncclWrong[i];
      ++ncclMeasured;
      std::printf("   %9.2f %8.3f %6s %6.2f", us, busbw,
                  o.check ? std::to_string(static_cast<long long>(ncclWrong[i])).c_str() : "N/A", ratio);
      if (json != nullptr) {
        std::fprintf(json,
                     ", \"nccl\": {\"time_us\": %.3f, \"algbw\": %.4f, \"busbw\": %.4f, \"wrong\": %lld}, "
                     "\"ratio\": %.4f",
                     us, algbw, busbw, static_cast<long long>(ncclWrong[i]), ratio);
      }
    }
    std::printf("\n");
    if (t > 0) {
      const double* q = tails[me].data() + 6 * i;
      std::printf("#   per call, max over ranks (us): out of place p50 %.2f p99 %.2f max %.2f", q[0], q[1], q[2]);
      if (sum[2 * i + 1] >= 0) std::printf("; in place p50 %.2f p99 %.2f max %.2f", q[3], q[4], q[5]);
      std::printf("\n");
      if (json != nullptr) {
        std::fprintf(json, ", \"per_call_us\": {\"out_of_place\": [%.3f, %.3f, %.3f], \"in_place\": ", q[0], q[1],
                     q[2]);
        if (sum[2 * i + 1] >= 0) {
          std::fprintf(json, "[%.3f, %.3f, %.3f]}", q[3], q[4], q[5]);
        } else {
          std::fprintf(json, "null}");  // N/A in the table (send/recv has no in-place form)
        }
      }
    }
    if (json != nullptr) std::fprintf(json, "}");
  }
  if (json != nullptr) {
    std::fprintf(json, "\n]\n");
    std::fclose(json);
  }
  std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(wrongTotal),
              wrongTotal == 0 ? "OK" : "FAILED");
  std::printf("# Avg bus bandwidth    : %.4f\n", measured ? busSum / measured : 0);
  if (m > 0) {
    // Worded unlike braid's line so that a test matching "Out of bounds values : 0 OK" reads braid's.
    std::printf("# NCCL wrong values    : %lld %s\n", static_cast<long long>(ncclWrongTotal),
                ncclWrongTotal == 0 ? "OK" : "FAILED");
    std::printf("# NCCL avg bus bandwidth (out of place) : %.4f\n", ncclMeasured ? ncclBusSum / ncclMeasured : 0);
  }
  std::printf("#\n");
  std::fflush(stdout);
  return true;
}

}  // namespace braid::perf
