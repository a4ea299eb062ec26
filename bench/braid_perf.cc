// braid-perf: an nccl-tests-style sweep of one collective over message sizes.
//
//   braid-perf -C allreduce -t 4 -b 8 -e 128M -f 2 -c 1          4 ranks as threads
//   braid-perf -C allreduce -p 2 -b 8 -e 128M -f 2               2 forked processes (shared memory)
//   mpirun -np 4 -x BRAID_COMM_ID=127.0.0.1:29500 braid-perf     one rank per launched process
//   braid-perf -g 1 -t 2 -b 8 -e 256M -f 2                       2 GPU ranks as threads, device memory
//   braid-perf -g 1 -p 2 -G 1 --compare nccl                     2 GPU processes, CUDA graphs, NCCL beside
//
// Every rank times its own calls between two barriers (a one-element all-reduce); the printed time
// is the mean over ranks (or rank 0's, the min, the max: -a), combined with braid's own all-reduce.
// Columns as nccl-tests prints them: size, count, type, redop, root, then for out-of-place and
// in-place: time (us), algbw and busbw (GB/s), and #wrong (output elements that differ from a plain
// loop's answer, checked once per size with -c 1). JSON with -J. Exit status 1 on any wrong element.
//
// With -g n the ranks are CUDA communicators (gpu_sweep.cc): a thread drives n ranks, each on its own
// device and stream, timed with CUDA events around eager calls or one CUDA graph launch (-G 1).
// --compare nccl loads the system NCCL (nccl_loader.cc) and runs the same rows through it on the same
// buffers and streams, adding NCCL's out-of-place time, busbw, #wrong and braid's busbw ratio to it.
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
#include "core/machine.h"
#include "gpu_sweep.h"
#include "perf_check.h"
#include "perf_options.h"
#include "perf_report.h"

namespace braid::perf {
namespace {

void barrier(braidComm_t comm) {
  float x = 0;
  braidAllReduce(&x, &x, 1, braidFloat32, braidSum, comm, nullptr);
}

braidResult_t hostCall(const Options& o, void* send, void* recv, size_t count, braidRedOp_t op, int r, int n,
                       braidComm_t comm) {
  return runOnce(o.coll, send, recv, count, o.type, op, o.root, r, n, comm, nullptr);
}

RankResult sweepRank(const Options& o, const std::vector<Row>& rows, braidComm_t comm, int r, int n) {
  RankResult res;
  res.rank = r;
  size_t es = core::typeSize(o.type);
  size_t maxElems = countFor(o.coll, o.maxBytes, es, n) * n + 1;
  std::vector<char> send(maxElems * es), recv(maxElems * es);
  for (const Row& row : rows) {
    size_t count = row.count;
    for (int place = 0; place < 2; ++place) {
      // A send and a receive of one buffer in one group race: send/recv has no in-place form.
      if (place == 1 && o.coll == Coll::kSendRecv) {
        res.us.push_back(-1);
        res.wrong.push_back(0);
        if (o.percentiles) appendPercentiles({}, &res.tail);
        continue;
      }
      char *in, *out;
      placeBuffers(o.coll, place, send.data(), recv.data(), r, count, es, &in, &out);
      double wrong = 0;
      if (o.check) {
        fillInput(in, inElems(o.coll, count, n), o.type, row.op, r, n);
        barrier(comm);
        if (hostCall(o, in, out, count, row.op, r, n, comm) != braidSuccess) {
          res.error = braidGetLastError();
          return res;
        }
        wrong = static_cast<double>(countWrong(out, o.coll, count, o.type, row.op, o.root, r, n));
      }
      for (int i = 0; i < o.warmup; ++i) hostCall(o, in, out, count, row.op, r, n, comm);
      barrier(comm);
      std::vector<double> each;  // --percentiles: every call's time
      if (o.percentiles) each.reserve(static_cast<size_t>(o.iters));
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < o.iters; ++i) {
        if (!o.percentiles) {
          hostCall(o, in, out, count, row.op, r, n, comm);
          continue;
        }
        auto begin = std::chrono::steady_clock::now();
        hostCall(o, in, out, count, row.op, r, n, comm);
        each.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - begin).count());
      }
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
      if (o.percentiles) appendPercentiles(std::move(each), &res.tail);
      res.us.push_back(us / o.iters);
      res.wrong.push_back(wrong);
      barrier(comm);
    }
  }
  return res;
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
      braid::core::setThreadHostIdentity(pretendedHost(o, firstRank + i, n));
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
      // Host communicators reduce host memory directly.
      Combine combine = [&](const std::vector<double*>& vals, size_t k, braidRedOp_t op) {
        return braidAllReduce(vals[0], vals[0], k, braidFloat64, op, comms[i], nullptr) == braidSuccess;
      };
      if (!report(o, rows, {res}, combine, n)) errors[i] = std::string("report: ") + braidGetLastError();
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
  if (o.gpus > 0 && gpuModeUnavailable() != nullptr) {
    std::fprintf(stderr, "braid-perf: -g: %s\n", gpuModeUnavailable());
    return 2;
  }
  if (launchedByLauncher()) {
    if (o.threads != 1 || o.processes != 1 || o.gpus > 1) {
      std::fprintf(stderr, "braid-perf: under a launcher each process is one rank: drop -t and -p, use -g 1 at most\n");
      return 2;
    }
    if (o.hosts > 0) {
      std::fprintf(stderr,
                   "braid-perf: --hosts splits braid-perf's own ranks; under a launcher give each process "
                   "its host with BRAID_HOSTID\n");
      return 2;
    }
    const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (size == nullptr) size = std::getenv("WORLD_SIZE");
    if (size == nullptr) size = std::getenv("SLURM_NTASKS");
    const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
    if (rank == nullptr) rank = std::getenv("RANK");
    if (rank == nullptr) rank = std::getenv("SLURM_PROCID");
    int n = std::atoi(size);
    if (o.gpus > 0) return runGpuRanks(o, nullptr, 0, n, true, "as launched processes");
    if (rank != nullptr && std::atoi(rank) == 0) printHeader(o, n, "as launched processes", "host memory");
    return runRanks(o, nullptr, 0, n, true);
  }
  const int perProcess = o.threads * std::max(1, o.gpus);
  const int n = o.processes * perProcess;
  const char* how = o.processes > 1 ? "as forked processes (x threads)" : "as threads of one process";
  // GPU mode prints its header from global rank 0 once it has looked at its devices: no CUDA call
  // may happen in this process before the fork.
  if (o.gpus == 0) printHeader(o, n, how, "host memory");
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
      std::_Exit(o.gpus > 0 ? runGpuRanks(o, &id, p * perProcess, n, false, how)
                            : runRanks(o, &id, p * perProcess, n, false));
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
  int status = o.gpus > 0 ? runGpuRanks(o, &id, 0, n, false, how) : runRanks(o, &id, 0, n, false);
  for (pid_t pid : children) {
    int st = 0;
    waitpid(pid, &st, 0);
    // The worst wins: 2 (cannot run here, e.g. no GPU or no NCCL) over 1 (an error or a wrong element).
    status = std::max(status, WIFEXITED(st) ? WEXITSTATUS(st) : 1);
  }
  return status;
}

}  // namespace
}  // namespace braid::perf

namespace braid::perf {
namespace {

// --plot: the JSON the reporting rank wrote, drawn by braid-plot (beside this executable, else
// on PATH). Non-zero if it could not be drawn.
int drawPlot(const Options& o) {
  if (access(o.json.c_str(), R_OK) != 0) return 0;  // not the reporting process
  char self[4096] = {0};
  ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string dir = len > 0 ? std::string(self, static_cast<size_t>(len)) : std::string();
  dir = dir.substr(0, dir.rfind('/') + 1);
  std::string script = access((dir + "braid-plot").c_str(), X_OK) == 0 ? dir + "braid-plot" : "braid-plot";
  std::string command = "'" + script + "' '" + o.plot + "' '=" + o.json + "'";
  int status = std::system(command.c_str());
  if (status != 0) std::fprintf(stderr, "braid-perf: --plot: %s failed (status %d)\n", script.c_str(), status);
  return status == 0 ? 0 : 1;
}

}  // namespace
}  // namespace braid::perf

int main(int argc, char** argv) {
  braid::perf::Options o;
  if (!braid::perf::parseOptions(argc, argv, &o)) return 2;
  const bool ownJson = !o.plot.empty() && o.json.empty();
  if (ownJson) o.json = "/tmp/braid-perf-" + std::to_string(getpid()) + ".json";
  // Several GPU ranks in this process (the one-GPU demo: thread ranks sharing it): each rank's
  // stream needs a hardware queue of its own, asked for before the first CUDA call (docs/gpu.md).
  if (o.threads * o.gpus > 1) setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  int status = braid::perf::run(o);
  if (!o.plot.empty()) status = std::max(status, braid::perf::drawPlot(o));
  if (ownJson) std::remove(o.json.c_str());
  return status;
}
