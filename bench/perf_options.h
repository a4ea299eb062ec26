// braid-perf's command line: nccl-tests' options where they exist, braid's own otherwise.
#pragma once

#include <braid/braid.h>

#include <cstddef>
#include <string>

namespace braid::perf {

enum class Coll { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };

struct Options {
  Coll coll = Coll::kAllReduce;
  size_t minBytes = 32 * 1024 * 1024;  // -b
  size_t maxBytes = 32 * 1024 * 1024;  // -e
  double stepFactor = 1;               // -f (used when > 1)
  size_t stepBytes = 1024 * 1024;      // -i (used when -f is not given)
  bool useFactor = false;
  int opIndex = braidSum;               // -o, or -1 for all ops
  braidDataType_t type = braidFloat32;  // -d
  int iters = 20;                       // -n
  int warmup = 5;                       // -w
  bool check = true;                    // -c
  int average = 1;                      // -a: 0 rank 0, 1 mean, 2 min, 3 max over ranks
  bool blocking = true;                 // -z 1: wait for each call (host calls always complete before returning)
  int threads = 1;                      // -t: ranks as threads of each process
  int processes = 1;                    // -p: processes forked by braid-perf (each with -t threads)
  int gpus = 0;                         // -g: GPU ranks per thread (0: host-memory communicators)
  int root = 0;                         // -r
  std::string json;                     // -J file
  std::string plot;                     // --plot file.png: busbw against size, drawn by braid-plot
  std::string algorithm;                // -A: config->algorithm (empty: the library chooses)
  std::string protocol;                 // -P: config->protocol (GPU only; empty: the library chooses)
  int ctas = 0;                         // -m: config->minCTAs = maxCTAs (GPU only; 0: the library chooses)
  bool graph = false;                   // -G 1: time the iterations as one CUDA graph launch (GPU only)
  int registered = 0;                   // -R: 1 braidCommRegister the buffers, 2 windows (nccl-tests' -R; GPU only)
  bool compareNccl = false;             // --compare nccl: the same rows through NCCL too (GPU only)
  int agg = 1;                          // --agg: calls per iteration, issued in one group (GPU only)
  int hosts = 0;                        // --hosts: pretended hosts the ranks are split into (0: none)
  bool percentiles = false;             // --percentiles 1: each call timed, p50/p99/max printed (host only)
  // --nccl-lib: the NCCL library --compare dlopens (the loader's search path applies).
  std::string ncclLib = "libnccl.so.2";
};

/// --hosts: the pretended host of global rank `rank` of `n` ("" without --hosts): consecutive
/// ranks, n / hosts a host.
std::string pretendedHost(const Options& o, int rank, int n);

/// Parses argv; on error prints usage to stderr and returns false.
bool parseOptions(int argc, char** argv, Options* out);

const char* collName(Coll c);
/// busbw = algbw x this (the nccl-tests convention).
double busFactor(Coll c, int nranks);
/// Elements per rank for a "size" of `bytes`, as nccl-tests counts them.
size_t countFor(Coll c, size_t bytes, size_t typeSize, int nranks);

}  // namespace braid::perf
