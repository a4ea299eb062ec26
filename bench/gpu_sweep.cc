// braid-perf's GPU mode: the devices, the communicators (and NCCL's twins with --compare) and one
// thread per o.threads, each driving its ranks (o.gpus of them) through a Sweeper (gpu_sweeper.h).
// Several ranks of one thread are issued inside a group, since each rank's call may wait for the
// others.
#include "gpu_sweep.h"

#include <cuda_runtime.h>

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
#include "gpu_sweeper.h"
#include "nccl_loader.h"
#include "perf_check.h"
#include "perf_report.h"

namespace braid::perf {
namespace {

using namespace gpusweep;  // the sweep's steps and types

int deviceCount(std::string* why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    return 0;
  }
  if (n == 0) *why = "cudaGetDeviceCount found none";
  return n;
}

// The launcher's local rank (torchrun, Open MPI, Slurm), which picks this process's device as
// braidCommInitFromEnv does.
int launcherLocalRank() {
  for (const char* name : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return 0;
}

// "8 x NVIDIA H200" for this process's devices (names of consecutive equal devices counted).
std::string describeDevices(int count) {
  std::string out;
  std::string last;
  int same = 0;
  auto flush = [&] {
    if (same > 0) out += (out.empty() ? "" : ", ") + std::to_string(same) + " x " + last;
  };
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop;
    std::string name = cudaGetDeviceProperties(&prop, d) == cudaSuccess ? prop.name : "device " + std::to_string(d);
    if (name != last) {
      flush();
      last = name;
      same = 0;
    }
    ++same;
  }
  flush();
  return out;
}

std::string versionString(int v) {
  // NCCL 2.9 on: major * 10000 + minor * 100 + patch; before: major * 1000 + minor * 100 + patch.
  int major = v >= 10000 ? v / 10000 : v / 1000, minor = v >= 10000 ? v % 10000 / 100 : v % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

braidConfig_t configFor(const Options& o) {
  braidConfig_t c = BRAID_CONFIG_INITIALIZER;
  c.deviceKind = braidDeviceCuda;
  if (!o.algorithm.empty()) c.algorithm = o.algorithm.c_str();
  if (!o.protocol.empty()) c.protocol = o.protocol.c_str();
  if (o.ctas > 0) c.minCTAs = c.maxCTAs = o.ctas;
  return c;
}

// Creates the braid communicators of one thread's ranks: on the calling thread for one rank, else one
// short-lived thread per rank, since an init returns only when every rank has joined.
Error initComms(const Options& o, const braidUniqueId* id, int n, bool fromEnv, std::vector<GpuRank>* ranks) {
  std::vector<Error> errors(ranks->size());
  auto init = [&](size_t j) {
    GpuRank& g = (*ranks)[j];
    braidConfig_t c = configFor(o);
    // The communicator takes the current device: set it on the thread that calls init.
    Error err = cudaCheck(cudaSetDevice(g.device), "cudaSetDevice");
    if (err.empty()) {
      braid::core::setThreadHostIdentity(fromEnv ? "" : pretendedHost(o, g.rank, n));
      braidResult_t rc =
          fromEnv ? braidCommInitFromEnv(&g.comm, &c) : braidCommInitRankConfig(&g.comm, n, *id, g.rank, &c);
      err = braidCheck(rc, "init");
    }
    int device = -1;
    if (err.empty() && fromEnv) braidCommUserRank(g.comm, &g.rank);
    if (err.empty() && braidCommCuDevice(g.comm, &device) == braidSuccess && device != g.device) {
      err = "the communicator chose device " + std::to_string(device) + ", braid-perf's buffers are on device " +
            std::to_string(g.device);
    }
    errors[j] = err;
  };
  if (ranks->size() == 1) {
    init(0);
  } else {
    std::vector<std::thread> threads;
    for (size_t j = 0; j < ranks->size(); ++j) threads.emplace_back(init, j);
    for (std::thread& t : threads) t.join();
  }
  for (const Error& e : errors) PERF_TRY(e);
  return "";
}

// What one thread of the process ended with.
struct ThreadOutcome {
  std::vector<GpuRank> ranks;
  Error error;
  double wrong = 0;
  bool hung = false;
};

}  // namespace

const char* gpuModeUnavailable() { return nullptr; }

int runGpuRanks(const Options& o, const braidUniqueId* id, int firstRank, int n, bool fromEnv, const char* how) {
  const int perThread = fromEnv ? 1 : o.gpus, threadCount = fromEnv ? 1 : o.threads;
  // Processes forked by braid-perf meet the same conditions as the first: it alone says what failed.
  const bool speak = fromEnv || firstRank == 0;
  if (o.root >= n) {
    if (speak) std::fprintf(stderr, "braid-perf: root %d is not a rank (there are %d)\n", o.root, n);
    return 1;
  }
  std::string why;
  const int devices = deviceCount(&why);
  if (devices == 0) {
    if (speak) std::fprintf(stderr, "braid-perf: -g: no CUDA device here (%s)\n", why.c_str());
    return kNoDeviceExit;
  }
  const nccl::Api* api = nullptr;
  if (o.compareNccl && (api = nccl::load(o.ncclLib, &why)) == nullptr) {
    if (speak) std::fprintf(stderr, "braid-perf: --compare nccl: %s\n", why.c_str());
    return 2;
  }
  const std::vector<Row> rows = rowsFor(o, n);
  // The report's packed reduction: 3 doubles per measurement (see report in perf_report.cc).
  const size_t reportDoubles = 3 * (2 * rows.size() + (api != nullptr ? rows.size() : 0));

  std::vector<ThreadOutcome> outcomes(threadCount);
  for (int i = 0; i < threadCount; ++i) {
    for (int j = 0; j < perThread; ++j) {
      GpuRank g;
      // Under a launcher the rank is known after init; the device comes from the local rank.
      g.rank = fromEnv ? 0 : firstRank + i * perThread + j;
      g.device = (fromEnv ? launcherLocalRank() : g.rank) % devices;
      outcomes[i].ranks.push_back(g);
    }
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < threadCount; ++i) {
    threads.emplace_back([&, i] {
      ThreadOutcome& out = outcomes[i];
      Sweeper s(o, api, n, &out.ranks);
      out.error = [&]() -> Error {
        PERF_TRY(s.allocate(reportDoubles));
        PERF_TRY(initComms(o, id, n, fromEnv, &out.ranks));
        for (GpuRank& g : out.ranks) {  // the report prints on global rank 0 only
          if (braidCommUserRank(g.comm, &g.rank) != braidSuccess) return std::string(braidGetLastError());
          g.res.rank = g.rank;
        }
        PERF_TRY(s.registerBuffers());
        if (api != nullptr) {
          Error err = s.startNccl();
          if (!err.empty() && n > devices && !fromEnv)
            err += " (NCCL takes one rank per GPU: use at most " + std::to_string(devices) + " ranks)";
          PERF_TRY(err);
        }
        for (const GpuRank& g : out.ranks) {
          if (g.rank != 0) continue;
          std::vector<std::string> notes;
          notes.push_back(
              std::string(fromEnv ? "device of a rank: launcher's local rank % " : "device of rank r: r % ") +
              std::to_string(devices) + "; one stream per rank; " +
              (o.graph ? "times of one CUDA graph launch of " : "times of ") + std::to_string(o.iters) +
              (o.graph ? " calls" : " eager calls") + " between CUDA events, per call" +
              (o.agg > 1 ? " (each of them a group of " + std::to_string(o.agg) + " calls)" : ""));
          if (n > devices && !fromEnv) {
            notes.push_back(std::to_string(n) + " ranks share " + std::to_string(devices) +
                            " GPU(s): each rank is its own communicator with its own buffers, their kernels run "
                            "side by side on one GPU's SMs, and the bytes move through its memory, not over a link");
          }
          notes.push_back("config: algorithm " + (o.algorithm.empty() ? "(library's choice)" : o.algorithm) +
                          ", protocol " + (o.protocol.empty() ? "(library's choice)" : o.protocol) + ", CTAs " +
                          (o.ctas > 0 ? std::to_string(o.ctas) : "(library's choice)") +
                          (o.registered == 1   ? "; braid's buffers registered (braidCommRegister)"
                           : o.registered == 2 ? "; braid's buffers registered as windows (braidCommWindowRegister)"
                                               : ""));
          if (api != nullptr) {
            notes.push_back("NCCL " + versionString(api->version) + " (" + api->path +
                            "); ratio = braid busbw / NCCL busbw, out of place (above 1: braid is faster)");
          }
          std::string perThreadNote = perThread > 1 ? ", " + std::to_string(perThread) + " GPU ranks per thread" : "";
          printHeader(o, n, (std::string(how) + perThreadNote).c_str(),
                      "GPU (" + describeDevices(devices) + "), " + (o.graph ? "CUDA graph" : "eager"), notes);
        }
        PERF_TRY(s.sweep(rows));
        std::vector<RankResult> mine;
        for (const GpuRank& g : out.ranks) mine.push_back(g.res);
        Error combineErr;
        Combine combine = [&](const std::vector<double*>& vals, size_t k, braidRedOp_t op) {
          combineErr = s.combine(vals, k, op);
          return combineErr.empty();
        };
        if (!report(o, rows, mine, combine, n)) return "report: " + combineErr;
        for (const RankResult& r : mine) {
          for (double w : r.wrong) out.wrong += w;
          for (double w : r.ncclWrong) out.wrong += w;
        }
        return "";
      }();
      out.hung = s.hung();
    });
  }
  for (std::thread& t : threads) t.join();

  // Teardown once every thread is done (cudaFree synchronizes the device: see the top of the file).
  int status = 0;
  bool hung = false;
  for (ThreadOutcome& out : outcomes) {
    if (!out.error.empty()) {
      std::fprintf(stderr, "braid-perf: rank %d: %s\n", out.ranks[0].rank, out.error.c_str());
      status = 1;
    }
    if (out.wrong > 0) status = 1;
    hung = hung || out.hung;
  }
  for (ThreadOutcome& out : outcomes) {
    for (GpuRank& g : out.ranks) {
      cudaSetDevice(g.device);
      // A hung collective keeps its kernels spinning: abort (they give up) and leave the memory to exit.
      if (hung) {
        if (g.comm != nullptr) braidCommAbort(g.comm);
        continue;
      }
      if (g.ncclComm != nullptr) api->commDestroy(g.ncclComm);
      if (g.comm != nullptr) braidCommDestroy(g.comm);
      if (g.start != nullptr) cudaEventDestroy(g.start);
      if (g.stop != nullptr) cudaEventDestroy(g.stop);
      if (g.stream != nullptr) cudaStreamDestroy(g.stream);
      for (void* p : {static_cast<void*>(g.send), static_cast<void*>(g.recv), static_cast<void*>(g.one),
                      static_cast<void*>(g.id), static_cast<void*>(g.sums)}) {
        if (p != nullptr) cudaFree(p);
      }
    }
  }
  return status;
}

}  // namespace braid::perf
