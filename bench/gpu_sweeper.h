// braid-perf's GPU sweep of one thread's ranks: the Sweeper runs the same steps for every rank it
// drives (buffers, stream and events on the rank's device, then per row and placement a checked
// call, warm-up calls, the timed calls and a barrier), through braid and, with --compare nccl,
// through NCCL. Included by gpu_sweep.cc only, which makes the communicators and the threads.
//
// No call here may synchronize a whole device while the sweep runs (cudaFree, cudaMallocHost, a
// legacy-stream copy, a pageable copy queued behind a kernel): when several ranks share a GPU, one
// rank's kernel waits for a peer whose thread would be stuck in that synchronization. So every allocation happens
// before the communicator exists, copies are asynchronous on the rank's own non-blocking stream, and teardown waits for
// every thread.
#pragma once

#include <braid/braid.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/datatype.h"
#include "nccl_loader.h"
#include "perf_check.h"
#include "perf_options.h"
#include "perf_report.h"

namespace braid::perf::gpusweep {

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

inline Error cudaCheck(cudaError_t e, const char* what) {
  return e == cudaSuccess ? "" : std::string(what) + ": " + cudaGetErrorString(e);
}

inline Error braidCheck(braidResult_t rc, const char* what) {
  return rc == braidSuccess ? "" : std::string(what) + ": " + braidGetLastError();
}

inline Error ncclCheck(const nccl::Api* api, nccl::ncclResult_t rc, const char* what) {
  return rc == nccl::ncclSuccess ? "" : std::string("NCCL ") + what + ": " + api->getErrorString(rc);
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

  // -R 1: each rank's send and receive buffers registered with its braid communicator (they end
  // with it); -R 2: as windows, each rank on a thread of its own (across processes registering a
  // window is a collective).
  Error registerBuffers() {
    if (o_.registered == 0) return "";
    const size_t maxCount = countFor(o_.coll, o_.maxBytes, es_, n_);
    const size_t inBytes = inElems(o_.coll, maxCount, n_) * es_, outBytes = outElems(o_.coll, maxCount, n_) * es_;
    const size_t sendBytes = std::max<size_t>(inBytes, 256),
                 recvBytes = std::max<size_t>(std::max(inBytes, outBytes), 256);
    if (o_.registered == 1) {
      for (GpuRank& g : ranks_) {
        void* handle = nullptr;
        PERF_TRY(braidCheck(braidCommRegister(g.comm, g.send, sendBytes, &handle), "braidCommRegister (send buffer)"));
        PERF_TRY(
            braidCheck(braidCommRegister(g.comm, g.recv, recvBytes, &handle), "braidCommRegister (receive buffer)"));
      }
      return "";
    }
    std::vector<Error> errors(ranks_.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < ranks_.size(); ++i) {
      threads.emplace_back([&, i] {
        GpuRank& g = ranks_[i];
        braidWindow_t win = nullptr;
        if (cudaSetDevice(g.device) != cudaSuccess) {
          errors[i] = "cudaSetDevice";
          return;
        }
        errors[i] = braidCheck(braidCommWindowRegister(g.comm, g.send, sendBytes, &win, 0),
                               "braidCommWindowRegister (send buffer)");
        if (errors[i].empty())
          errors[i] = braidCheck(braidCommWindowRegister(g.comm, g.recv, recvBytes, &win, 0),
                                 "braidCommWindowRegister (receive buffer)");
      });
    }
    for (std::thread& t : threads) t.join();
    for (const Error& e : errors) PERF_TRY(e);
    return "";
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
    // The downloads go to pageable memory only once the all-reduce is done: a pageable copy queued
    // behind a kernel holds this thread, and the driver's pageable copies of every other thread of
    // the process, until the kernel ends; a peer whose upload waits there never launches its part
    // of the all-reduce (a hang of thread ranks across pretended hosts, bench/NOTES.md).
    PERF_TRY(waitAll());
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

  // `calls` calls of `lib`'s collective for rank g on the same buffers: one without a group (the
  // caller's applies), several in a group of their own (--agg).
  Error issue(Lib lib, GpuRank& g, const Row& row, int place, int calls) {
    char *in, *out;
    buffers(g, row, place, &in, &out);
    const bool group = calls > 1;
    Error err;
    if (lib == Lib::kBraid) {
      if (group) braidGroupStart();
      for (int k = 0; k < calls && err.empty(); ++k) {
        err = braidCheck(runOnce(o_.coll, in, out, row.count, o_.type, row.op, o_.root, g.rank, n_, g.comm, g.stream),
                         collName(o_.coll));
      }
      Error end = group ? braidCheck(braidGroupEnd(), "braidGroupEnd") : "";
      return err.empty() ? end : err;
    }
    if (group) api_->groupStart();
    for (int k = 0; k < calls && err.empty(); ++k) err = ncclCheck(api_, ncclCall(g, in, out, row), collName(o_.coll));
    Error end = group ? ncclCheck(api_, api_->groupEnd(), "ncclGroupEnd") : "";
    return err.empty() ? end : err;
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

  // One iteration (--agg calls, or `calls`) on every rank of the thread.
  Error issueAll(Lib lib, const Row& row, int place, int calls = 0) {
    auto one = [&](GpuRank& g) { return issue(lib, g, row, place, calls > 0 ? calls : o_.agg); };
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
    // With --agg, the group out of place (each call writes the same result); in place one call,
    // since each call would reduce the previous one's result again.
    PERF_TRY(issueAll(lib, row, place, place == 1 ? 1 : o_.agg));
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

  // Per rank: the time between events on its stream around `iters` iterations, per call.
  Error elapsed(std::vector<double>* us) {
    for (size_t j = 0; j < ranks_.size(); ++j) {
      float ms = 0;
      PERF_TRY(cudaCheck(cudaEventElapsedTime(&ms, ranks_[j].start, ranks_[j].stop), "cudaEventElapsedTime"));
      (*us)[j] = ms * 1e3 / (static_cast<double>(o_.iters) * o_.agg);
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
        for (int i = 0; i < o_.iters && err.empty(); ++i) err = issue(lib, ranks_[j], row, place, o_.agg);
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

}  // namespace braid::perf::gpusweep
