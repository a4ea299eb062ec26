#include "perf_options.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/byte_size.h"
#include "core/datatype.h"

namespace braid::perf {
namespace {

const char* kUsage =
    "usage: braid-perf [options]\n"
    "  -C coll    allreduce (default), broadcast, reduce, allgather, reducescatter, alltoall, sendrecv\n"
    "  -b bytes   smallest size (K, M, G suffixes)      -e bytes   largest size\n"
    "  -f factor  multiply the size by this per step     -i bytes   add this per step (without -f)\n"
    "  -o op      sum, prod, max, min, avg, or all       -d type    float, double, half, bfloat16, int8,\n"
    "                                                               uint8, int32, uint32, int64, uint64,\n"
    "                                                               fp8e4m3, fp8e5m2\n"
    "  -n iters   timed iterations (20)                  -w iters   warm-up iterations (5)\n"
    "  -c 0|1     check results (1)                      -a 0..3    time of rank 0, mean, min, max (1)\n"
    "  -z 0|1     blocking calls (1; host only)          -r root    root of broadcast/reduce (0)\n"
    "  -t n       ranks as threads of each process (1)   -g n       GPU ranks per thread (0: host memory)\n"
    "  -p n       fork n processes on this host (1)      -J file    also write the results as JSON\n"
    "  -A algos   allowed algorithms (config->algorithm): ring, tree, dbtree, doubling, hier, a list, ^ excludes\n"
    "GPU mode (-g n): each rank is one CUDA device (global rank r on device r % devices; under a launcher\n"
    "LOCAL_RANK % devices), buffers in device memory, calls on one stream per rank, timed with CUDA events.\n"
    "  -P protos  allowed protocols (config->protocol): simple, ll, a list, ^ excludes\n"
    "  -m n       pin the CTA count: config->minCTAs = maxCTAs = n (0: the library chooses)\n"
    "  -G 0|1     time the iterations captured into one CUDA graph (0: eager calls)\n"
    "  -R 0|1|2   register the send and receive buffers: 1 with braidCommRegister, 2 as windows\n"
    "             (braidCommWindowRegister, which reach ranks of other processes of the host) (braid only)\n"
    "  --compare nccl   run every row through NCCL too (loaded with dlopen) and print the ratio\n"
    "  --nccl-lib path  the NCCL library to load (libnccl.so.2)\n"
    "  --agg n          issue n calls per iteration in one group (nccl-tests' -m); times are per call\n"
    "  --plot file.png  draw busbw against size (braid-plot, gnuplot; NCCL beside braid with --compare)\n"
    "  --hosts n        split the ranks into n pretended hosts (consecutive ranks; sockets between them,\n"
    "                   even between threads of one process): cross-host algorithms on one machine\n"
    "  --percentiles 1  time every call too (host memory only): a line per row with the median, 99th\n"
    "                   percentile and slowest call (each the largest over the ranks), where a mean hides a slow tail\n"
    "Under mpirun, torchrun or srun (one rank per process, -t 1) the ranks meet through the launcher's\n"
    "variables (docs/bootstrap.md); under mpirun and srun through their PMIx server, nothing to set.\n";

bool parseInt(const char* s, int lo, int hi, int* out) {
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

struct Named {
  const char* name;
  int value;
};

bool lookup(const char* s, const Named* table, int n, int* out) {
  for (int i = 0; i < n; ++i) {
    if (std::strcmp(s, table[i].name) == 0) {
      *out = table[i].value;
      return true;
    }
  }
  return false;
}

const Named kColls[] = {{"allreduce", 0},     {"broadcast", 1}, {"reduce", 2},  {"allgather", 3},
                        {"reducescatter", 4}, {"alltoall", 5},  {"sendrecv", 6}};
const Named kOps[] = {{"sum", braidSum}, {"prod", braidProd}, {"max", braidMax},
                      {"min", braidMin}, {"avg", braidAvg},   {"all", -1}};
const Named kTypes[] = {{"float", braidFloat32},     {"double", braidFloat64},     {"half", braidFloat16},
                        {"bfloat16", braidBfloat16}, {"int8", braidInt8},          {"uint8", braidUint8},
                        {"int32", braidInt32},       {"uint32", braidUint32},      {"int64", braidInt64},
                        {"uint64", braidUint64},     {"fp8e4m3", braidFloat8e4m3}, {"fp8e5m2", braidFloat8e5m2}};

// The long options: --compare, --nccl-lib, --agg, --plot and --hosts. False when `flag` is none of them or `v` is
// wrong.
bool parseLong(const char* flag, const char* v, Options* o) {
  if (std::strcmp(flag, "--compare") == 0) {
    o->compareNccl = std::strcmp(v, "nccl") == 0;  // the one library to compare with
    return o->compareNccl;
  }
  if (std::strcmp(flag, "--agg") == 0) return parseInt(v, 1, 1024, &o->agg);
  if (std::strcmp(flag, "--hosts") == 0) return parseInt(v, 1, 1024, &o->hosts);
  if (std::strcmp(flag, "--percentiles") == 0) {
    int on = 0;
    if (!parseInt(v, 0, 1, &on)) return false;
    o->percentiles = on == 1;
    return true;
  }
  if (std::strcmp(flag, "--plot") == 0) {
    o->plot = v;
    return *v != '\0';
  }
  if (std::strcmp(flag, "--nccl-lib") == 0) {
    o->ncclLib = v;
    return *v != '\0';
  }
  return false;
}

}  // namespace

std::string pretendedHost(const Options& o, int rank, int n) {
  if (o.hosts <= 0) return "";
  return "braid-perf-host-" + std::to_string(static_cast<long>(rank) * o.hosts / n);
}

bool parseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const char* flag = argv[i];
    bool isLong = std::strncmp(flag, "--", 2) == 0;
    if ((!isLong && (std::strlen(flag) != 2 || flag[0] != '-')) || i + 1 >= argc) {
      std::fprintf(stderr, "braid-perf: bad or incomplete option '%s'\n%s", flag, kUsage);
      return false;
    }
    const char* v = argv[++i];
    int n = 0;
    bool ok = true;
    switch (isLong ? '-' : flag[1]) {
      case '-': ok = parseLong(flag, v, o); break;
      case 'C': ok = lookup(v, kColls, 7, &n), o->coll = static_cast<Coll>(n); break;
      case 'b': ok = braid::core::parseByteSize(v, &o->minBytes); break;
      case 'e': ok = braid::core::parseByteSize(v, &o->maxBytes); break;
      case 'f': ok = (o->stepFactor = std::atof(v)) > 1, o->useFactor = true; break;
      case 'i': ok = braid::core::parseByteSize(v, &o->stepBytes) && o->stepBytes > 0; break;
      case 'o': ok = lookup(v, kOps, 6, &o->opIndex); break;
      case 'd': ok = lookup(v, kTypes, 12, &n), o->type = static_cast<braidDataType_t>(n); break;
      case 'n': ok = parseInt(v, 1, 1 << 30, &o->iters); break;
      case 'w': ok = parseInt(v, 0, 1 << 30, &o->warmup); break;
      case 'c': ok = parseInt(v, 0, 1, &n), o->check = n == 1; break;
      case 'a': ok = parseInt(v, 0, 3, &o->average); break;
      case 'z': ok = parseInt(v, 0, 1, &n), o->blocking = n == 1; break;
      case 't': ok = parseInt(v, 1, 1024, &o->threads); break;
      case 'p': ok = parseInt(v, 1, 1024, &o->processes); break;
      case 'g': ok = parseInt(v, 0, 64, &o->gpus); break;
      case 'r': ok = parseInt(v, 0, 1 << 20, &o->root); break;
      case 'J': o->json = v; break;
      case 'A': o->algorithm = v; break;
      case 'P': o->protocol = v; break;
      case 'm': ok = parseInt(v, 0, 64, &o->ctas); break;
      case 'G': ok = parseInt(v, 0, 1, &n), o->graph = n == 1; break;
      case 'R': ok = parseInt(v, 0, 2, &n), o->registered = n; break;
      default: ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "braid-perf: bad value '%s' for %s\n%s", v, flag, kUsage);
      return false;
    }
  }
  if (o->maxBytes < o->minBytes) {
    std::fprintf(stderr, "braid-perf: -e (%zu) is smaller than -b (%zu)\n", o->maxBytes, o->minBytes);
    return false;
  }
  // GPU calls are timed by CUDA events over all the iterations, not one by one.
  if (o->gpus > 0 && o->percentiles) {
    std::fprintf(
        stderr,
        "braid-perf: --percentiles times host calls one by one: drop -g (GPU calls are timed by CUDA events)\n");
    return false;
  }
  // Host communicators have no protocols, CTAs, graphs or NCCL twin: say so rather than ignore the option.
  if (o->gpus == 0 &&
      (!o->protocol.empty() || o->ctas > 0 || o->graph || o->registered || o->compareNccl || o->agg > 1)) {
    std::fprintf(stderr, "braid-perf: -P, -m, -G, -R, --compare and --agg apply to GPU communicators only: add -g 1\n");
    return false;
  }

  return true;
}

const char* collName(Coll c) {
  for (const Named& n : kColls) {
    if (n.value == static_cast<int>(c)) return n.name;
  }
  return "?";
}

double busFactor(Coll c, int n) {
  switch (c) {
    case Coll::kAllReduce: return 2.0 * (n - 1) / n;
    case Coll::kAllGather:
    case Coll::kReduceScatter:
    case Coll::kAllToAll: return static_cast<double>(n - 1) / n;
    default: return 1;
  }
}

size_t countFor(Coll c, size_t bytes, size_t typeSize, int n) {
  size_t elems = bytes / typeSize;
  // all-gather and reduce-scatter sizes are the whole (gathered or scattered) buffer; all-to-all's
  // is one rank's send buffer, cut into n blocks.
  if (c == Coll::kAllGather || c == Coll::kReduceScatter || c == Coll::kAllToAll) return elems / n;
  return elems;
}

}  // namespace braid::perf
