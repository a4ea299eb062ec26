// braid-perf: an nccl-tests-style sweep of one collective over message sizes.
//
//   braid-perf -C allreduce -t 4 -b 8 -e 128M -f 2 -c 1
//
// Ranks run as threads of this process on host memory (-t); every rank times its own calls
// between two barriers, and the printed time is the mean (or rank 0's, min, max: -a) over ranks.
// Columns as nccl-tests prints them: size, count, type, redop, root, then for out-of-place and
// in-place: time (us), algbw and busbw (GB/s), and #wrong (output elements that differ from a plain
// loop's answer, checked once per size with -c 1). JSON with -J.
#include <braid/braid.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/datatype.h"
#include "perf_check.h"
#include "perf_options.h"

namespace braid::perf {
namespace {

// A reusable barrier for the rank threads.
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    int gen = gen_;
    if (++count_ == n_) {
      count_ = 0;
      ++gen_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return gen != gen_; });
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_, count_ = 0, gen_ = 0;
};

struct Result {
  double us[2] = {0, 0};  // out-of-place, in-place
  size_t wrong[2] = {0, 0};
};

braidResult_t runOnce(Coll c, void* send, void* recv, size_t count, braidDataType_t t, braidRedOp_t op, int root,
                      int rank, int n, braidComm_t comm) {
  switch (c) {
    case Coll::kAllReduce: return braidAllReduce(send, recv, count, t, op, comm, nullptr);
    case Coll::kBroadcast: return braidBroadcast(send, recv, count, t, root, comm, nullptr);
    case Coll::kReduce: return braidReduce(send, recv, count, t, op, root, comm, nullptr);
    case Coll::kAllGather: return braidAllGather(send, recv, count, t, comm, nullptr);
    case Coll::kReduceScatter: return braidReduceScatter(send, recv, count, t, op, comm, nullptr);
    case Coll::kAllToAll: return braidAllToAll(send, recv, count, t, comm, nullptr);
    case Coll::kSendRecv: {
      braidGroupStart();
      braidSend(send, count, t, (rank + 1) % n, comm, nullptr);
      braidRecv(recv, count, t, (rank + n - 1) % n, comm, nullptr);
      return braidGroupEnd();
    }
  }
  return braidInvalidArgument;
}

bool reduces(Coll c) { return c == Coll::kAllReduce || c == Coll::kReduce || c == Coll::kReduceScatter; }

struct Sweep {
  const Options& o;
  int n;
  std::vector<braidComm_t> comms;
  std::vector<size_t> sizes;
  std::vector<braidRedOp_t> ops;
  std::vector<std::vector<Result>> perRank;  // [rank][row]
  Barrier barrier;
  std::vector<std::string> errors;

  Sweep(const Options& opts, int ranks)
      : o(opts), n(ranks), comms(ranks), perRank(ranks), barrier(ranks), errors(ranks) {}

  void rank(int r) {
    size_t es = core::typeSize(o.type);
    size_t maxElems = countFor(o.coll, o.maxBytes, es, n) * n + 1;
    std::vector<char> send(maxElems * es), recv(maxElems * es);
    for (size_t bytes : sizes) {
      size_t count = countFor(o.coll, bytes, es, n);
      size_t inElems = (o.coll == Coll::kReduceScatter || o.coll == Coll::kAllToAll) ? count * n : count;
      for (braidRedOp_t op : ops) {
        Result res;
        for (int place = 0; place < 2; ++place) {
          // A send and a receive of one buffer in one group race: send/recv has no in-place form.
          if (place == 1 && o.coll == Coll::kSendRecv) {
            res.us[1] = -1;
            continue;
          }
          // In place: all-gather's input is its slot of the output, reduce-scatter's output its slot of the input.
          char* out = recv.data();
          char* in = place == 0 ? send.data() : recv.data();
          if (place == 1 && o.coll == Coll::kAllGather) in = recv.data() + r * count * es;
          if (place == 1 && o.coll == Coll::kReduceScatter) out = recv.data() + r * count * es;
          if (o.check) {
            fillInput(in, inElems, o.type, op, r, n);
            barrier.wait();
            braidResult_t rc = runOnce(o.coll, in, out, count, o.type, op, o.root, r, n, comms[r]);
            if (rc != braidSuccess) errors[r] = braidGetLastError();
            res.wrong[place] = countWrong(out, o.coll, count, o.type, op, o.root, r, n);
          }
          for (int i = 0; i < o.warmup; ++i) runOnce(o.coll, in, out, count, o.type, op, o.root, r, n, comms[r]);
          barrier.wait();
          auto start = std::chrono::steady_clock::now();
          for (int i = 0; i < o.iters; ++i) runOnce(o.coll, in, out, count, o.type, op, o.root, r, n, comms[r]);
          double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
          res.us[place] = us / o.iters;
          barrier.wait();
        }
        perRank[r].push_back(res);
      }
    }
  }
};

double combine(const std::vector<std::vector<Result>>& all, size_t row, int place, int how) {
  double v = all[0][row].us[place];
  double sum = 0, lo = v, hi = v;
  for (const auto& rank : all) {
    double x = rank[row].us[place];
    sum += x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  switch (how) {
    case 0: return v;
    case 2: return lo;
    case 3: return hi;
    default: return sum / all.size();
  }
}

int run(const Options& o) {
  if (o.gpus > 0) {
    std::fprintf(stderr, "braid-perf: -g: collectives on GPUs are not available yet in this version of braid\n");
    return 2;
  }
  const int n = o.threads;
  Sweep s(o, n);
  for (size_t b = o.minBytes; b <= o.maxBytes;) {
    s.sizes.push_back(b);
    size_t next = o.useFactor ? static_cast<size_t>(b * o.stepFactor) : b + o.stepBytes;
    if (next <= b) break;
    b = next;
  }
  if (o.opIndex < 0) {
    s.ops = {braidSum, braidProd, braidMax, braidMin, braidAvg};
  } else {
    s.ops = {static_cast<braidRedOp_t>(o.opIndex)};
  }
  if (!reduces(o.coll)) s.ops = {braidSum};

  braidUniqueId id;
  if (braidGetUniqueId(&id) != braidSuccess) {
    std::fprintf(stderr, "braid-perf: %s\n", braidGetLastError());
    return 1;
  }
  std::vector<std::thread> threads;
  std::vector<braidResult_t> rc(n);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      braidConfig_t c = BRAID_CONFIG_INITIALIZER;
      c.deviceKind = braidDeviceHost;
      rc[r] = braidCommInitRankConfig(&s.comms[r], n, id, r, &c);
      if (rc[r] != braidSuccess) s.errors[r] = braidGetLastError();
    });
  }
  for (auto& t : threads) t.join();
  threads.clear();
  for (int r = 0; r < n; ++r) {
    if (rc[r] != braidSuccess) {
      std::fprintf(stderr, "braid-perf: rank %d: %s\n", r, s.errors[r].c_str());
      return 1;
    }
  }

  std::printf("# braid-perf: %s, %d rank(s) as threads of one process, host memory\n#\n", collName(o.coll), n);
  std::printf("# %10s %12s %9s %6s %5s   %9s %8s %8s %6s   %9s %8s %8s %6s\n", "size", "count", "type", "redop", "root",
              "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  std::printf("# %10s %12s %9s %6s %5s   %9s %8s %8s %6s   %9s %8s %8s %6s\n", "(B)", "(elements)", "", "", "", "(us)",
              "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  std::fflush(stdout);
  for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { s.rank(r); });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    if (!s.errors[r].empty()) {
      std::fprintf(stderr, "braid-perf: rank %d: %s\n", r, s.errors[r].c_str());
      return 1;
    }
  }

  std::FILE* json = o.json.empty() ? nullptr : std::fopen(o.json.c_str(), "w");
  if (json != nullptr) std::fprintf(json, "[\n");
  double busSum = 0;
  size_t rows = 0, wrongTotal = 0;
  size_t es = core::typeSize(o.type);
  for (size_t si = 0; si < s.sizes.size(); ++si) {
    for (size_t oi = 0; oi < s.ops.size(); ++oi) {
      size_t row = si * s.ops.size() + oi;
      size_t count = countFor(o.coll, s.sizes[si], es, n);
      size_t bytes =
          count * es *
          ((o.coll == Coll::kAllGather || o.coll == Coll::kReduceScatter || o.coll == Coll::kAllToAll) ? n : 1);
      bool rooted = o.coll == Coll::kBroadcast || o.coll == Coll::kReduce;
      std::printf("  %10zu %12zu %9s %6s %5d", bytes, count, core::typeName(o.type),
                  reduces(o.coll) ? core::opName(s.ops[oi]) : "none", rooted ? o.root : -1);
      if (json != nullptr) {
        std::fprintf(json,
                     "%s  {\"collective\": \"%s\", \"type\": \"%s\", \"op\": \"%s\", \"bytes\": %zu, \"count\": %zu, "
                     "\"ranks\": %d",
                     row ? ",\n" : "", collName(o.coll), core::typeName(o.type), core::opName(s.ops[oi]), bytes, count,
                     n);
      }
      for (int place = 0; place < 2; ++place) {
        double us = combine(s.perRank, row, place, o.average);
        size_t wrong = 0;
        for (int r = 0; r < n; ++r) wrong += s.perRank[r][row].wrong[place];
        if (us < 0) {  // not applicable
          std::printf("   %9s %8s %8s %6s", "N/A", "N/A", "N/A", "N/A");
          continue;
        }
        double algbw = us > 0 ? bytes / us / 1e3 : 0, busbw = algbw * busFactor(o.coll, n);
        busSum += busbw;
        wrongTotal += wrong;
        ++rows;
        std::printf("   %9.2f %8.3f %8.3f %6s", us, algbw, busbw, o.check ? std::to_string(wrong).c_str() : "N/A");
        if (json != nullptr) {
          const char* p = place == 0 ? "out_of_place" : "in_place";
          std::fprintf(json, ", \"%s\": {\"time_us\": %.3f, \"algbw\": %.4f, \"busbw\": %.4f, \"wrong\": %zu}", p, us,
                       algbw, busbw, wrong);
        }
      }
      std::printf("\n");
      if (json != nullptr) std::fprintf(json, "}");
    }
  }
  if (json != nullptr) {
    std::fprintf(json, "\n]\n");
    std::fclose(json);
  }
  std::printf("# Out of bounds values : %zu %s\n", wrongTotal, wrongTotal == 0 ? "OK" : "FAILED");
  std::printf("# Avg bus bandwidth    : %.4f\n#\n", rows ? busSum / rows : 0);
  for (braidComm_t c : s.comms) braidCommDestroy(c);
  return wrongTotal == 0 ? 0 : 1;
}

}  // namespace
}  // namespace braid::perf

int main(int argc, char** argv) {
  braid::perf::Options o;
  if (!braid::perf::parseOptions(argc, argv, &o)) return 2;
  return braid::perf::run(o);
}
