// braid-perf: an nccl-tests-style sweep of one collective over message sizes.
//
//   braid-perf -C allreduce -t 4 -b 8 -e 128M -f 2 -c 1          4 ranks as threads
//   braid-perf -C allreduce -p 2 -b 8 -e 128M -f 2               2 forked processes (shared memory)
//   mpirun -np 4 -x BRAID_COMM_ID=127.0.0.1:29500 braid-perf     one rank per launched process
//
// Every rank times its own calls between two barriers (a one-element all-reduce); the printed time
// is the mean over ranks (or rank 0's, the min, the max: -a), combined with braid's own all-reduce.
// Columns as nccl-tests prints them: size, count, type, redop, root, then for out-of-place and
// in-place: time (us), algbw and busbw (GB/s), and #wrong (output elements that differ from a plain
// loop's answer, checked once per size with -c 1). JSON with -J. Exit status 1 on any wrong element.
#include <braid/braid.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/datatype.h"
#include "perf_check.h"
#include "perf_options.h"

namespace braid::perf {
namespace {

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

// One row of the table: a size and an op.
struct Row {
  size_t bytes, count;
  braidRedOp_t op;
};

// One rank's sweep: per row the time of out-of-place and in-place calls and #wrong, or an error.
struct RankResult {
  std::vector<double> us;     // 2 per row; -1: not applicable
  std::vector<double> wrong;  // 2 per row
  std::string error;
};

void barrier(braidComm_t comm) {
  float x = 0;
  braidAllReduce(&x, &x, 1, braidFloat32, braidSum, comm, nullptr);
}

RankResult sweepRank(const Options& o, const std::vector<Row>& rows, braidComm_t comm, int r, int n) {
  RankResult res;
  size_t es = core::typeSize(o.type);
  size_t maxElems = countFor(o.coll, o.maxBytes, es, n) * n + 1;
  std::vector<char> send(maxElems * es), recv(maxElems * es);
  for (const Row& row : rows) {
    size_t count = row.count;
    size_t inElems = (o.coll == Coll::kReduceScatter || o.coll == Coll::kAllToAll) ? count * n : count;
    for (int place = 0; place < 2; ++place) {
      // A send and a receive of one buffer in one group race: send/recv has no in-place form.
      if (place == 1 && o.coll == Coll::kSendRecv) {
        res.us.push_back(-1);
        res.wrong.push_back(0);
        continue;
      }
      // In place: all-gather's input is its slot of the output, reduce-scatter's output its slot of the input.
      char* out = recv.data();
      char* in = place == 0 ? send.data() : recv.data();
      if (place == 1 && o.coll == Coll::kAllGather) in = recv.data() + r * count * es;
      if (place == 1 && o.coll == Coll::kReduceScatter) out = recv.data() + r * count * es;
      double wrong = 0;
      if (o.check) {
        fillInput(in, inElems, o.type, row.op, r, n);
        barrier(comm);
        if (runOnce(o.coll, in, out, count, o.type, row.op, o.root, r, n, comm) != braidSuccess) {
          res.error = braidGetLastError();
          return res;
        }
        wrong = static_cast<double>(countWrong(out, o.coll, count, o.type, row.op, o.root, r, n));
      }
      for (int i = 0; i < o.warmup; ++i) runOnce(o.coll, in, out, count, o.type, row.op, o.root, r, n, comm);
      barrier(comm);
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < o.iters; ++i) runOnce(o.coll, in, out, count, o.type, row.op, o.root, r, n, comm);
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
      res.us.push_back(us / o.iters);
      res.wrong.push_back(wrong);
      barrier(comm);
    }
  }
  return res;
}

// Combines every rank's results with braid's all-reduce; global rank 0 prints them.
void report(const Options& o, const std::vector<Row>& rows, const RankResult& mine, braidComm_t comm, int r, int n) {
  size_t k = mine.us.size();
  std::vector<double> sum(mine.us), lo(mine.us), hi(mine.us), first(k, 0), wrong(mine.wrong);
  if (r == 0) first = mine.us;
  braidAllReduce(sum.data(), sum.data(), k, braidFloat64, braidSum, comm, nullptr);
  braidAllReduce(lo.data(), lo.data(), k, braidFloat64, braidMin, comm, nullptr);
  braidAllReduce(hi.data(), hi.data(), k, braidFloat64, braidMax, comm, nullptr);
  braidAllReduce(first.data(), first.data(), k, braidFloat64, braidSum, comm, nullptr);
  braidAllReduce(wrong.data(), wrong.data(), k, braidFloat64, braidSum, comm, nullptr);
  if (r != 0) return;

  std::FILE* json = o.json.empty() ? nullptr : std::fopen(o.json.c_str(), "w");
  if (json != nullptr) std::fprintf(json, "[\n");
  double busSum = 0, wrongTotal = 0;
  int measured = 0;
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
    }
    for (int place = 0; place < 2; ++place) {
      size_t j = 2 * i + place;
      if (sum[j] < 0) {  // not applicable
        std::printf("   %9s %8s %8s %6s", "N/A", "N/A", "N/A", "N/A");
        continue;
      }
      double us = o.average == 0 ? first[j] : o.average == 2 ? lo[j] : o.average == 3 ? hi[j] : sum[j] / n;
      double algbw = us > 0 ? row.bytes / us / 1e3 : 0, busbw = algbw * busFactor(o.coll, n);
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
    std::printf("\n");
    if (json != nullptr) std::fprintf(json, "}");
  }
  if (json != nullptr) {
    std::fprintf(json, "\n]\n");
    std::fclose(json);
  }
  std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(wrongTotal),
              wrongTotal == 0 ? "OK" : "FAILED");
  std::printf("# Avg bus bandwidth    : %.4f\n#\n", measured ? busSum / measured : 0);
  std::fflush(stdout);
}

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

void printHeader(const Options& o, int n, const char* how) {
  std::printf("# braid-perf: %s, %d rank(s) %s, host memory\n#\n", collName(o.coll), n, how);
  std::printf("# %10s %12s %9s %6s %5s   %9s %8s %8s %6s   %9s %8s %8s %6s\n", "size", "count", "type", "redop", "root",
              "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  std::printf("# %10s %12s %9s %6s %5s   %9s %8s %8s %6s   %9s %8s %8s %6s\n", "(B)", "(elements)", "", "", "", "(us)",
              "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  std::fflush(stdout);
}

// Runs `threads` ranks of this process, global ranks firstRank.., of an n-rank communicator.
// Returns 0 when every check passed.
int runRanks(const Options& o, const braidUniqueId* id, int firstRank, int n, bool fromEnv) {
  const int t = fromEnv ? 1 : o.threads;
  std::vector<braidComm_t> comms(t, nullptr);
  std::vector<std::string> errors(t);
  std::vector<std::thread> threads;
  std::vector<Row> rows = rowsFor(o, n);
  std::vector<double> wrongs(t, 0);
  for (int i = 0; i < t; ++i) {
    threads.emplace_back([&, i] {
      braidConfig_t c = BRAID_CONFIG_INITIALIZER;
      c.deviceKind = braidDeviceHost;
      if (!o.algorithm.empty()) c.algorithm = o.algorithm.c_str();
      braidResult_t rc =
          fromEnv ? braidCommInitFromEnv(&comms[i], &c) : braidCommInitRankConfig(&comms[i], n, *id, firstRank + i, &c);
      if (rc != braidSuccess) {
        errors[i] = std::string("init: ") + braidGetLastError();
        return;
      }
      int r = 0;
      braidCommUserRank(comms[i], &r);
      if (o.root >= n) {
        errors[i] = "root " + std::to_string(o.root) + " is not a rank (there are " + std::to_string(n) + ")";
        return;
      }
      RankResult res = sweepRank(o, rows, comms[i], r, n);
      if (!res.error.empty()) {
        errors[i] = res.error;
        return;
      }
      for (double w : res.wrong) wrongs[i] += w;
      report(o, rows, res, comms[i], r, n);
    });
  }
  for (auto& th : threads) th.join();
  int status = 0;
  for (int i = 0; i < t; ++i) {
    if (!errors[i].empty()) {
      std::fprintf(stderr, "braid-perf: rank %d: %s\n", firstRank + i, errors[i].c_str());
      status = 1;
    }
    if (wrongs[i] > 0) status = 1;
    if (comms[i] != nullptr) braidCommDestroy(comms[i]);
  }
  return status;
}

bool launchedByLauncher() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("WORLD_SIZE") != nullptr ||
         std::getenv("SLURM_NTASKS") != nullptr;
}

int run(const Options& o) {
  if (o.gpus > 0) {
    std::fprintf(stderr, "braid-perf: -g: collectives on GPUs are not available yet in this version of braid\n");
    return 2;
  }
  if (launchedByLauncher()) {
    if (o.threads != 1 || o.processes != 1) {
      std::fprintf(stderr, "braid-perf: under a launcher each process is one rank: drop -t and -p\n");
      return 2;
    }
    const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (size == nullptr) size = std::getenv("WORLD_SIZE");
    if (size == nullptr) size = std::getenv("SLURM_NTASKS");
    const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
    if (rank == nullptr) rank = std::getenv("RANK");
    if (rank == nullptr) rank = std::getenv("SLURM_PROCID");
    int n = std::atoi(size);
    if (rank != nullptr && std::atoi(rank) == 0) printHeader(o, n, "as launched processes");
    return runRanks(o, nullptr, 0, n, true);
  }
  const int n = o.processes * o.threads;
  printHeader(o, n, o.processes > 1 ? "as forked processes (x threads)" : "as threads of one process");
  // Fork first (children start single-threaded), then make the id and hand it to them by pipe.
  std::vector<pid_t> children;
  std::vector<int> pipes;
  for (int p = 1; p < o.processes; ++p) {
    int fds[2];
    if (pipe(fds) != 0) return 1;
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[1]);
      braidUniqueId id;
      if (read(fds[0], &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) std::_Exit(1);
      std::_Exit(runRanks(o, &id, p * o.threads, n, false));
    }
    close(fds[0]);
    pipes.push_back(fds[1]);
    children.push_back(pid);
  }
  braidUniqueId id;
  if (braidGetUniqueId(&id) != braidSuccess) {
    std::fprintf(stderr, "braid-perf: %s\n", braidGetLastError());
    return 1;
  }
  for (int fd : pipes) {
    if (write(fd, &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) return 1;
    close(fd);
  }
  int status = runRanks(o, &id, 0, n, false);
  for (pid_t pid : children) {
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) status = 1;
  }
  return status;
}

}  // namespace
}  // namespace braid::perf

int main(int argc, char** argv) {
  braid::perf::Options o;
  if (!braid::perf::parseOptions(argc, argv, &o)) return 2;
  return braid::perf::run(o);
}
