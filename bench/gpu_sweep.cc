// braid-perf's GPU mode. Each thread drives its ranks (o.gpus of them) through the same steps: buffers,
// stream and events on the rank's device, then the communicator (and NCCL's twin with --compare), then
// per row and placement: a checked call, warm-up calls, the timed calls, a barrier. Several ranks of one
// thread are issued inside a group, since each rank's call may wait for the others.
//
// No call here may synchronize a whole device while the sweep runs (cudaFree, cudaMallocHost, a
// legacy-stream copy): when several ranks share a GPU, one rank's kernel waits for a peer whose thread
// would be stuck in that synchronization. So every allocation happens before the communicator exists,
// copies are asynchronous on the rank's own non-blocking stream, and teardown waits for every thread.
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
#include "nccl_loader.h"
#include "perf_check.h"
#include "perf_report.h"

namespace braid::perf {
namespace {

// A stream that has not drained after this long holds a collective that will not finish.
constexpr int kHangSeconds = 300;

// Every step returns "" or what went wrong; the first failure ends the thread's sweep.
using Error = std::string;
#define PERF_TRY(expr)       \
  do {                       \
    Error perfErr_ = (expr); \
    if (!perfErr_.empty()) { \
      return perfErr_;       \
    }                        \
  } while (0)

Error cudaCheck(cudaError_t e, const char* what) {
  return e == cudaSuccess ? "" : std::string(what) + ": " + cudaGetErrorString(e);
}

Error braidCheck(braidResult_t rc, const char* what) {
  return rc == braidSuccess ? "" : std::string(what) + ": " + braidGetLastError();
}

Error ncclCheck(const nccl::Api* api, nccl::ncclResult_t rc, const char* what) {
  return rc == nccl::ncclSuccess ? "" : std::string("NCCL ") + what + ": " + api->getErrorString(rc);
}

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

enum class Lib { kBraid, kNccl };

// One rank this thread drives, with everything it owns.
struct GpuRank {
  int rank = 0;  // global
  int device = 0;
  braidComm_t comm = nullptr;
  nccl::ncclComm_t ncclComm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  char* send = nullptr;    // device: the largest input
  char* recv = nullptr;    // device: the largest input or output (in place uses it for both)
  float* one = nullptr;    // device: the barrier's element
  char* id = nullptr;      // device: NCCL's unique id on its way through braid's broadcast
  double* sums = nullptr;  // device: the report's doubles on their way through braid's all-reduce
  size_t sumsCount = 0;
  RankResult res;
};

// The ranks of one thread and the steps of their sweep.
class Sweeper {
 public:
  Sweeper(const Options& o, const nccl::Api* api, int n, std::vector<GpuRank>* ranks)
      : o_(o), api_(api), n_(n), ranks_(*ranks), es_(core::typeSize(o.type)) {}

  // Everything allocated before the communicators exist (see the top of the file).
  Error allocate(size_t reportDoubles) {
    const size_t maxCount = countFor(o_.coll, o_.maxBytes, es_, n_);
    const size_t inBytes = inElems(o_.coll, maxCount, n_) * es_, outBytes = outElems(o_.coll, maxCount, n_) * es_;
    hostIn_.resize(inBytes);
    hostOut_.resize(outBytes);
    for (GpuRank& g : ranks_) {
      PERF_TRY(cudaCheck(cudaSetDevice(g.device), "cudaSetDevice"));
      PERF_TRY(cudaCheck(cudaMalloc(&g.send, std::max<size_t>(inBytes, 256)), "cudaMalloc (send buffer)"));
      PERF_TRY(cudaCheck(cudaMalloc(&g.recv, std::max<size_t>(std::max(inBytes, outBytes), 256)),
                         "cudaMalloc (receive buffer)"));
      PERF_TRY(cudaCheck(cudaMalloc(&g.one, sizeof(float)), "cudaMalloc"));
      PERF_TRY(cudaCheck(cudaMalloc(&g.id, sizeof(nccl::ncclUniqueId)), "cudaMalloc"));
      g.sumsCount = std::max<size_t>(reportDoubles, 1);
      PERF_TRY(cudaCheck(cudaMalloc(&g.sums, g.sumsCount * sizeof(double)), "cudaMalloc"));
      PERF_TRY(cudaCheck(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"));
      PERF_TRY(cudaCheck(cudaEventCreate(&g.start), "cudaEventCreate"));
      PERF_TRY(cudaCheck(cudaEventCreate(&g.stop), "cudaEventCreate"));
      PERF_TRY(cudaCheck(cudaMemsetAsync(g.one, 0, sizeof(float), g.stream), "cudaMemsetAsync"));
    }
    return waitAll();
  }

  // NCCL's communicators beside braid's: rank 0 makes the id, braid broadcasts it (staged through
  // device memory: a CUDA communicator takes no host buffers), every rank joins on its own device.
  Error startNccl() {
    nccl::ncclUniqueId id;
    std::memset(&id, 0, sizeof(id));
    for (GpuRank& g : ranks_) {
      if (g.rank == 0) PERF_TRY(ncclCheck(api_, api_->getUniqueId(&id), "ncclGetUniqueId"));
    }
    for (GpuRank& g : ranks_) {
      PERF_TRY(cudaCheck(cudaSetDevice(g.device), "cudaSetDevice"));
      PERF_TRY(cudaCheck(cudaMemcpyAsync(g.id, &id, sizeof(id), cudaMemcpyHostToDevice, g.stream), "cudaMemcpyAsync"));
    }
    PERF_TRY(braidAll([&](GpuRank& g) {
      return braidCheck(braidBroadcast(g.id, g.id, sizeof(id), braidUint8, 0, g.comm, g.stream), "braidBroadcast");
    }));
    PERF_TRY(waitAll());
    PERF_TRY(cudaCheck(cudaMemcpyAsync(&id, ranks_[0].id, sizeof(id), cudaMemcpyDeviceToHost, ranks_[0].stream),
                       "cudaMemcpyAsync"));
    PERF_TRY(waitAll());
    // Several ranks of one thread join together (NCCL's rule, as for its collectives).
    if (ranks_.size() > 1) api_->groupStart();
    Error err;
    for (GpuRank& g : ranks_) {
      if (err.empty()) err = cudaCheck(cudaSetDevice(g.device), "cudaSetDevice");
      if (err.empty()) err = ncclCheck(api_, api_->commInitRank(&g.ncclComm, n_, id, g.rank), "ncclCommInitRank");
    }
    if (ranks_.size() > 1) {
      Error end = ncclCheck(api_, api_->groupEnd(), "ncclGroupEnd (ncclCommInitRank)");
      if (err.empty()) err = end;
    }
    return err;
  }

  Error sweep(const std::vector<Row>& rows) {
    for (const Row& row : rows) {
      for (int place = 0; place < 2; ++place) {
        // A send and a receive of one buffer in one group race: send/recv has no in-place form; braid
        // does not run all-to-all in place on GPUs yet.
        if (place == 1 && (o_.coll == Coll::kSendRecv || o_.coll == Coll::kAllToAll)) {
          for (GpuRank& g : ranks_) {
            g.res.us.push_back(-1);
            g.res.wrong.push_back(0);
          }
          continue;
        }
        PERF_TRY(measure(Lib::kBraid, row, place));
      }
      if (api_ != nullptr) PERF_TRY(measure(Lib::kNccl, row, 0));  // NCCL: out of place only
    }
    return "";
  }

  // The report's reduction: the doubles go through device memory and braid's all-reduce on each
  // rank's stream.
  Error combine(const std::vector<double*>& vals, size_t k, braidRedOp_t op) {
    if (k == 0) return "";
    if (k > ranks_[0].sumsCount) return "report: " + std::to_string(k) + " doubles do not fit the staging buffer";
    for (size_t j = 0; j < ranks_.size(); ++j) {
      GpuRank& g = ranks_[j];
      PERF_TRY(cudaCheck(cudaSetDevice(g.device), "cudaSetDevice"));
      PERF_TRY(cudaCheck(cudaMemcpyAsync(g.sums, vals[j], k * sizeof(double), cudaMemcpyHostToDevice, g.stream),
                         "cudaMemcpyAsync"));
    }
    PERF_TRY(braidAll([&](GpuRank& g) {
      return braidCheck(braidAllReduce(g.sums, g.sums, k, braidFloat64, op, g.comm, g.stream), "braidAllReduce");
    }));
    for (size_t j = 0; j < ranks_.size(); ++j) {
      GpuRank& g = ranks_[j];
      PERF_TRY(cudaCheck(cudaSetDevice(g.device), "cudaSetDevice"));
      PERF_TRY(cudaCheck(cudaMemcpyAsync(vals[j], g.sums, k * sizeof(double), cudaMemcpyDeviceToHost, g.stream),
                         "cudaMemcpyAsync"));
    }
    return waitAll();
  }

  // Waits for every rank's stream, up to kHangSeconds; `hung()` tells a timeout from other errors.
  Error waitAll() {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kHangSeconds);
    for (GpuRank& g : ranks_) {
      PERF_TRY(cudaCheck(cudaSetDevice(g.device), "cudaSetDevice"));
      cudaError_t e;
      while ((e = cudaStreamQuery(g.stream)) == cudaErrorNotReady) {
        if (std::chrono::steady_clock::now() > deadline) {
          hung_ = true;
          return "rank " + std::to_string(g.rank) + "'s stream did not finish within " + std::to_string(kHangSeconds) +
                 " s (a collective hung: a rank failed or never called it)";
        }
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
      PERF_TRY(cudaCheck(e, "stream"));
    }
    return "";
  }

  bool hung() const { return hung_; }

 private:
  // Runs `call` for every rank; inside a braid group when the thread drives several, since each
  // rank's call may wait for the others. The group is closed even when a call fails.
  template <class F>
  Error braidAll(F call) {
    const bool group = ranks_.size() > 1;
    if (group) braidGroupStart();
    Error err;
    for (GpuRank& g : ranks_) {
      if (err.empty() && group) err = cudaCheck(cudaSetDevice(g.device), "cudaSetDevice");
      if (err.empty()) err = call(g);
    }
    if (group) {
      Error end = braidCheck(braidGroupEnd(), "braidGroupEnd");
      if (err.empty()) err = end;
    }
    return err;
  }

  // The same with NCCL's group.
  template <class F>
  Error ncclAll(F call) {
    const bool group = ranks_.size() > 1;
    if (group) api_->groupStart();
    Error err;
    for (GpuRank& g : ranks_) {
      if (err.empty() && group) err = cudaCheck(cudaSetDevice(g.device), "cudaSetDevice");
      if (err.empty()) err = call(g);
    }
    if (group) {
      Error end = ncclCheck(api_, api_->groupEnd(), "ncclGroupEnd");
      if (err.empty()) err = end;
    }
    return err;
  }

  // A one-element all-reduce on every rank's stream, then wait: every rank has finished what it
  // queued before.
  Error barrier() {
    PERF_TRY(braidAll([&](GpuRank& g) {
      return braidCheck(braidAllReduce(g.one, g.one, 1, braidFloat32, braidSum, g.comm, g.stream), "barrier");
    }));
    return waitAll();
  }

  void buffers(const GpuRank& g, const Row& row, int place, char** in, char** out) const {
    placeBuffers(o_.coll, place, g.send, g.recv, g.rank, row.count, es_, in, out);
  }

  // One call of `lib`'s collective for rank g (no group around it: the caller's).
  Error issue(Lib lib, GpuRank& g, const Row& row, int place) {
    char *in, *out;
    buffers(g, row, place, &in, &out);
    if (lib == Lib::kBraid) {
      return braidCheck(runOnce(o_.coll, in, out, row.count, o_.type, row.op, o_.root, g.rank, n_, g.comm, g.stream),
                        collName(o_.coll));
    }
    return ncclCheck(api_, ncclCall(g, in, out, row), collName(o_.coll));
  }

  nccl::ncclResult_t ncclCall(GpuRank& g, char* in, char* out, const Row& row) {
    const nccl::ncclDataType_t t = nccl::toNccl(o_.type);
    const nccl::ncclRedOp_t op = nccl::toNccl(row.op);
    const size_t count = row.count;
    switch (o_.coll) {
      case Coll::kAllReduce: return api_->allReduce(in, out, count, t, op, g.ncclComm, g.stream);
      case Coll::kBroadcast: return api_->broadcast(in, out, count, t, o_.root, g.ncclComm, g.stream);
      case Coll::kReduce: return api_->reduce(in, out, count, t, op, o_.root, g.ncclComm, g.stream);
      case Coll::kAllGather: return api_->allGather(in, out, count, t, g.ncclComm, g.stream);
      case Coll::kReduceScatter: return api_->reduceScatter(in, out, count, t, op, g.ncclComm, g.stream);
      case Coll::kAllToAll:
      case Coll::kSendRecv: {
        // All-to-all as nccl-tests runs it: a block to and from every peer, in one group.
        api_->groupStart();
        nccl::ncclResult_t rc = nccl::ncclSuccess;
        if (o_.coll == Coll::kSendRecv) {
          rc = api_->send(in, count, t, (g.rank + 1) % n_, g.ncclComm, g.stream);
          if (rc == nccl::ncclSuccess) rc = api_->recv(out, count, t, (g.rank + n_ - 1) % n_, g.ncclComm, g.stream);
        }
        for (int q = 0; o_.coll == Coll::kAllToAll && q < n_ && rc == nccl::ncclSuccess; ++q) {
          rc = api_->send(in + q * count * es_, count, t, q, g.ncclComm, g.stream);
          if (rc == nccl::ncclSuccess) rc = api_->recv(out + q * count * es_, count, t, q, g.ncclComm, g.stream);
        }
        nccl::ncclResult_t end = api_->groupEnd();
        return rc != nccl::ncclSuccess ? rc : end;
      }
    }
    return 4;  // ncclInvalidArgument
  }

  // One call on every rank of the thread.
  Error issueAll(Lib lib, const Row& row, int place) {
    auto one = [&](GpuRank& g) { return issue(lib, g, row, place); };
    return lib == Lib::kBraid ? braidAll(one) : ncclAll(one);
  }

  // Check (-c 1), warm-up, timing and the closing barrier of one row and placement; appends to every
  // rank's results.
  Error measure(Lib lib, const Row& row, int place) {
    std::vector<double> wrong(ranks_.size(), 0), us(ranks_.size(), 0);
    if (o_.check) PERF_TRY(check(lib, row, place, &wrong));
    // At least one eager call before a capture: a first call may set things up (connections,
    // registrations) that cannot happen inside a graph.
    const int warmup = o_.graph ? std::max(1, o_.warmup) : o_.warmup;
    for (int i = 0; i < warmup; ++i) PERF_TRY(issueAll(lib, row, place));
    PERF_TRY(o_.graph ? timeGraph(lib, row, place, &us) : timeEager(lib, row, place, &us));
    PERF_TRY(barrier());
    for (size_t j = 0; j < ranks_.size(); ++j) {
      RankResult& res = ranks_[j].res;
      (lib == Lib::kBraid ? res.us : res.ncclUs).push_back(us[j]);
      (lib == Lib::kBraid ? res.wrong : res.ncclWrong).push_back(wrong[j]);
    }
    return "";
  }

  // Uploads each rank's input over a poisoned output (0xFF bytes: NaN or an integer no check
  // expects, so that a call that writes nothing is caught), runs one call, counts the wrong
  // elements of each rank's output.
  Error check(Lib lib, const Row& row, int place, std::vector<double>* wrong) {
    const size_t inBytes = inElems(o_.coll, row.count, n_) * es_, outBytes = outElems(o_.coll, row.count, n_) * es_;
    for (GpuRank& g : ranks_) {
      char *in, *out;
      buffers(g, row, place, &in, &out);
      fillInput(hostIn_.data(), inElems(o_.coll, row.count, n_), o_.type, row.op, g.rank, n_);
      PERF_TRY(cudaCheck(cudaSetDevice(g.device), "cudaSetDevice"));
      PERF_TRY(cudaCheck(cudaMemsetAsync(out, 0xFF, outBytes, g.stream), "cudaMemsetAsync"));
      // From pageable memory the copy returns once hostIn_ is staged: the next rank may refill it.
      PERF_TRY(
          cudaCheck(cudaMemcpyAsync(in, hostIn_.data(), inBytes, cudaMemcpyHostToDevice, g.stream), "cudaMemcpyAsync"));
    }
    PERF_TRY(barrier());
    PERF_TRY(issueAll(lib, row, place));
    PERF_TRY(waitAll());
    for (size_t j = 0; j < ranks_.size(); ++j) {
      GpuRank& g = ranks_[j];
      char *in, *out;
      buffers(g, row, place, &in, &out);
      PERF_TRY(cudaCheck(cudaSetDevice(g.device), "cudaSetDevice"));
      PERF_TRY(cudaCheck(cudaMemcpyAsync(hostOut_.data(), out, outBytes, cudaMemcpyDeviceToHost, g.stream),
                         "cudaMemcpyAsync"));
      PERF_TRY(cudaCheck(cudaStreamSynchronize(g.stream), "cudaStreamSynchronize"));
      (*wrong)[j] =
          static_cast<double>(countWrong(hostOut_.data(), o_.coll, row.count, o_.type, row.op, o_.root, g.rank, n_));
    }
    return "";
  }

  // Per rank: the time between events on its stream around `iters` calls, divided by iters.
  Error elapsed(std::vector<double>* us) {
    for (size_t j = 0; j < ranks_.size(); ++j) {
      float ms = 0;
      PERF_TRY(cudaCheck(cudaEventElapsedTime(&ms, ranks_[j].start, ranks_[j].stop), "cudaEventElapsedTime"));
      (*us)[j] = ms * 1e3 / o_.iters;
    }
    return "";
  }

  Error record(bool start) {
    for (GpuRank& g : ranks_) {
      PERF_TRY(cudaCheck(cudaSetDevice(g.device), "cudaSetDevice"));
      PERF_TRY(cudaCheck(cudaEventRecord(start ? g.start : g.stop, g.stream), "cudaEventRecord"));
    }
    return "";
  }

  Error timeEager(Lib lib, const Row& row, int place, std::vector<double>* us) {
    PERF_TRY(barrier());
    PERF_TRY(record(true));
    for (int i = 0; i < o_.iters; ++i) PERF_TRY(issueAll(lib, row, place));
    PERF_TRY(record(false));
    PERF_TRY(waitAll());
    return elapsed(us);
  }

  // The iters calls captured into one CUDA graph per rank, launched once to warm up, then timed.
  Error timeGraph(Lib lib, const Row& row, int place, std::vector<double>* us) {
    std::vector<cudaGraphExec_t> execs(ranks_.size(), nullptr);
    Error err = captureGraphs(lib, row, place, &execs);
    auto launchAll = [&]() -> Error {
      for (size_t j = 0; j < ranks_.size(); ++j) {
        PERF_TRY(cudaCheck(cudaSetDevice(ranks_[j].device), "cudaSetDevice"));
        PERF_TRY(cudaCheck(cudaGraphLaunch(execs[j], ranks_[j].stream), "cudaGraphLaunch"));
      }
      return "";
    };
    if (err.empty()) err = launchAll();
    if (err.empty()) err = barrier();
    if (err.empty()) err = record(true);
    if (err.empty()) err = launchAll();
    if (err.empty()) err = record(false);
    if (err.empty()) err = waitAll();
    if (err.empty()) err = elapsed(us);
    if (!hung_) {  // a hung graph is still running: leave it be
      for (size_t j = 0; j < ranks_.size(); ++j) {
        if (execs[j] == nullptr) continue;
        cudaSetDevice(ranks_[j].device);
        cudaGraphExecDestroy(execs[j]);
      }
    }
    return err;
  }

  // braid: each rank's stream captured alone, one after the other (a braid call only enqueues, so
  // it does not wait for its peers). NCCL: every stream captured at once around grouped calls, as
  // nccl-tests does, since NCCL wants several ranks of one thread grouped.
  Error captureGraphs(Lib lib, const Row& row, int place, std::vector<cudaGraphExec_t>* execs) {
    const size_t nr = ranks_.size();
    std::vector<cudaGraph_t> graphs(nr, nullptr);
    std::vector<bool> capturing(nr, false);
    auto begin = [&](size_t j) -> Error {
      PERF_TRY(cudaCheck(cudaSetDevice(ranks_[j].device), "cudaSetDevice"));
      PERF_TRY(cudaCheck(cudaStreamBeginCapture(ranks_[j].stream, cudaStreamCaptureModeThreadLocal),
                         "cudaStreamBeginCapture"));
      capturing[j] = true;
      return "";
    };
    auto end = [&](size_t j) -> Error {
      cudaSetDevice(ranks_[j].device);
      capturing[j] = false;
      return cudaCheck(cudaStreamEndCapture(ranks_[j].stream, &graphs[j]), "cudaStreamEndCapture");
    };
    Error err;
    if (lib == Lib::kBraid) {
      for (size_t j = 0; j < nr && err.empty(); ++j) {
        err = begin(j);
        for (int i = 0; i < o_.iters && err.empty(); ++i) err = issue(lib, ranks_[j], row, place);
        if (capturing[j]) {
          Error e = end(j);
          if (err.empty()) err = e;
        }
      }
    } else {
      for (size_t j = 0; j < nr && err.empty(); ++j) err = begin(j);
      for (int i = 0; i < o_.iters && err.empty(); ++i) err = issueAll(lib, row, place);
      for (size_t j = 0; j < nr; ++j) {
        if (!capturing[j]) continue;
        Error e = end(j);
        if (err.empty()) err = e;
      }
    }
    for (size_t j = 0; j < nr; ++j) {
      if (graphs[j] == nullptr) continue;
      cudaSetDevice(ranks_[j].device);
      if (err.empty()) {
        err = cudaCheck(cudaGraphInstantiateWithFlags(&(*execs)[j], graphs[j], 0), "cudaGraphInstantiate");
      }
      cudaGraphDestroy(graphs[j]);
    }
    return err;
  }

  const Options& o_;
  const nccl::Api* api_;  // null without --compare nccl
  const int n_;
  std::vector<GpuRank>& ranks_;
  const size_t es_;
  std::vector<char> hostIn_, hostOut_;  // host staging of the check
  bool hung_ = false;
};

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
              (o.graph ? " calls" : " eager calls") + " between CUDA events, per call");
          notes.push_back("config: algorithm " + (o.algorithm.empty() ? "(library's choice)" : o.algorithm) +
                          ", protocol " + (o.protocol.empty() ? "(library's choice)" : o.protocol) + ", CTAs " +
                          (o.ctas > 0 ? std::to_string(o.ctas) : "(library's choice)"));
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
