// braid-overlap: compute and communication at once, braid and NCCL side by side. N pairs of a bf16
// GEMM (M x M x M, cuBLAS) on a compute stream and an all-reduce of S bytes on a second,
// higher-priority stream, as a data-parallel backward pass overlaps them. For each library it
// times the GEMMs alone, the all-reduces alone and the pairs overlapped, and prints:
//   - the total of the overlapped pairs, against the ideal max(GEMMs, all-reduces) and the sum;
//   - the GEMMs' slowdown: how much longer they took beside the all-reduces (the SMs and memory
//     bandwidth the collective took from them);
//   - the all-reduces' time overlapped, against alone.
//
//   braid-overlap [--ranks n] [--pairs 20] [--gemm 8192] [--bytes 256M] [--ctas 0] [--iters 5]
//                 [--compare nccl] [--nccl-lib libnccl.so.2]
//
// One process per rank, forked here (rank r on GPU r % GPUs: --ranks 2 on one GPU shares it), or
// one per process under torchrun / mpirun. --ctas pins both libraries' CTA count (braid's config,
// NCCL_MIN_CTAS / NCCL_MAX_CTAS); 0 leaves each its own choice. Every all-reduce sums inputs of
// rank + 1, so its output must be n(n+1)/2 everywhere: a sample of each library's output is checked
// and the program exits 1 on a wrong value. NCCL is loaded at run time (bench/nccl_loader.h), and
// its unique id travels over braid's own communicator.
#include <braid/braid.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "../examples/gpu_ranks.h"
#include "core/byte_size.h"
#include "nccl_loader.h"

namespace {

namespace nccl = braid::perf::nccl;

struct Options {
  int ranks = 0;  // 0: one per GPU
  int pairs = 20;
  int gemm = 8192;
  size_t bytes = size_t{256} << 20;
  int ctas = 0;
  int iters = 5;
  bool compareNccl = false;
  std::string ncclLib = "libnccl.so.2";
};

bool parse(int argc, char** argv, Options* o, std::string* why) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--compare") {
      if (i + 1 >= argc || std::strcmp(argv[i + 1], "nccl") != 0) return *why = "--compare takes nccl", false;
      o->compareNccl = true;
      ++i;
      continue;
    }
    if (i + 1 >= argc) return *why = k + " needs a value", false;
    const char* v = argv[++i];
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);
    const bool whole = end != v && *end == '\0';
    if (k == "--nccl-lib") {
      o->ncclLib = v;
    } else if (k == "--bytes") {
      if (!braid::core::parseByteSize(v, &o->bytes) || o->bytes < 4) return *why = "--bytes " + std::string(v), false;
    } else if (k == "--ranks" || k == "--pairs" || k == "--gemm" || k == "--ctas" || k == "--iters") {
      const bool zeroOk = k == "--ranks" || k == "--ctas";
      if (!whole || n < (zeroOk ? 0 : 1) || n > (1 << 20)) return *why = k + " " + v + " is not a count", false;
      int* field = k == "--ranks"   ? &o->ranks
                   : k == "--pairs" ? &o->pairs
                   : k == "--gemm"  ? &o->gemm
                   : k == "--ctas"  ? &o->ctas
                                    : &o->iters;
      *field = static_cast<int>(n);
    } else {
      return *why = "unknown option " + k, false;
    }
  }
  return true;
}

__global__ void fill(__nv_bfloat16* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    p[i] = __float2bfloat16(static_cast<float>((static_cast<unsigned>(i) * 2654435761u + seed) % 17) / 16.0f - 0.5f);
  }
}

__global__ void fillValue(float* p, size_t n, float v) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) p[i] = v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One library's all-reduce on the comm stream: out = sum of every rank's in.
using AllReduce = std::function<bool(const float* in, float* out, size_t count, cudaStream_t stream)>;

struct Timing {
  std::vector<double> gemms, allreduces, total, gemmsBeside, allreducesBeside;
};

int runRank(const Options& o, braidComm_t comm, int rank, int nranks) {
  cublasHandle_t blas;
  cudaStream_t compute, comms;
  if (!braid_examples::computeAndComms(rank, &blas, &compute, &comms)) return 1;
  const size_t m = static_cast<size_t>(o.gemm), count = o.bytes / sizeof(float);
  __nv_bfloat16 *a, *b, *c;
  float *in, *out;
  CHECK_CUDA(cudaMalloc(&a, m * m * sizeof(__nv_bfloat16)));
  CHECK_CUDA(cudaMalloc(&b, m * m * sizeof(__nv_bfloat16)));
  CHECK_CUDA(cudaMalloc(&c, m * m * sizeof(__nv_bfloat16)));
  CHECK_CUDA(cudaMalloc(&in, count * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&out, count * sizeof(float)));
  fill<<<1024, 256, 0, compute>>>(a, m * m, 1);
  fill<<<1024, 256, 0, compute>>>(b, m * m, 2);
  fillValue<<<1024, 256, 0, compute>>>(in, count, static_cast<float>(rank + 1));
  CHECK_CUDA(cudaStreamSynchronize(compute));

  // The libraries: braid always, NCCL with --compare nccl (its id broadcast over braid).
  std::vector<std::string> names = {"braid"};
  std::vector<AllReduce> libs;
  libs.push_back([&](const float* x, float* y, size_t n, cudaStream_t s) {
    return braidAllReduce(x, y, n, braidFloat32, braidSum, comm, s) == braidSuccess;
  });
  const nccl::Api* api = nullptr;
  nccl::ncclComm_t ncclComm = nullptr;
  if (o.compareNccl) {
    std::string why;
    api = nccl::load(o.ncclLib, &why);
    if (api == nullptr) {
      std::fprintf(stderr, "rank %d: %s\n", rank, why.c_str());
      return 1;
    }
    nccl::ncclUniqueId id{};
    if (rank == 0 && api->getUniqueId(&id) != nccl::ncclSuccess) {
      std::fprintf(stderr, "rank 0: ncclGetUniqueId failed\n");
      return 1;
    }
    char* wire;
    CHECK_CUDA(cudaMalloc(&wire, sizeof(id)));
    CHECK_CUDA(cudaMemcpy(wire, &id, sizeof(id), cudaMemcpyHostToDevice));
    CHECK_BRAID(braidBroadcast(wire, wire, sizeof(id), braidInt8, 0, comm, compute));
    CHECK_CUDA(cudaStreamSynchronize(compute));
    CHECK_CUDA(cudaMemcpy(&id, wire, sizeof(id), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaFree(wire));
    nccl::ncclResult_t r = api->commInitRank(&ncclComm, nranks, id, rank);
    if (r != nccl::ncclSuccess) {
      std::fprintf(stderr, "rank %d: ncclCommInitRank: %s\n", rank, api->getErrorString(r));
      return 1;
    }
    names.push_back("NCCL " + std::to_string(api->version / 10000) + "." + std::to_string(api->version / 100 % 100) +
                    "." + std::to_string(api->version % 100));
    libs.push_back([&](const float* x, float* y, size_t n, cudaStream_t s) {
      return api->allReduce(x, y, n, nccl::ncclFloat32, nccl::ncclSum, ncclComm, s) == nccl::ncclSuccess;
    });
  }

  cudaEvent_t start, gemmsDone, allreducesDone, joined;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&gemmsDone));
  CHECK_CUDA(cudaEventCreate(&allreducesDone));
  CHECK_CUDA(cudaEventCreate(&joined));
  const float one = 1.0f, zero = 0.0f;
  auto gemm = [&] {
    cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, o.gemm, o.gemm, o.gemm, &one, a, CUDA_R_16BF, o.gemm, b, CUDA_R_16BF,
                 o.gemm, &zero, c, CUDA_R_16BF, o.gemm, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  auto elapsed = [](cudaEvent_t from, cudaEvent_t to) {
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, from, to));
    return static_cast<double>(ms);
  };
  // GEMMs alone, all-reduces alone, or both (each stream's last work marked, then joined).
  auto run = [&](const AllReduce& allReduce, bool gemms, bool allreduces, Timing* t) {
    CHECK_CUDA(cudaEventRecord(start, compute));
    CHECK_CUDA(cudaStreamWaitEvent(comms, start, 0));
    for (int p = 0; p < o.pairs; ++p) {
      if (gemms) gemm();
      if (allreduces && !allReduce(in, out, count, comms)) return false;
    }
    CHECK_CUDA(cudaEventRecord(gemmsDone, compute));
    CHECK_CUDA(cudaEventRecord(allreducesDone, comms));
    CHECK_CUDA(cudaStreamWaitEvent(compute, allreducesDone, 0));
    CHECK_CUDA(cudaEventRecord(joined, compute));
    CHECK_CUDA(cudaEventSynchronize(joined));
    if (gemms && !allreduces) t->gemms.push_back(elapsed(start, gemmsDone));
    if (allreduces && !gemms) t->allreduces.push_back(elapsed(start, allreducesDone));
    if (gemms && allreduces) {
      t->total.push_back(elapsed(start, joined));
      t->gemmsBeside.push_back(elapsed(start, gemmsDone));
      t->allreducesBeside.push_back(elapsed(start, allreducesDone));
    }
    return true;
  };

  auto failed = [&](size_t l) {
    std::fprintf(stderr, "rank %d: %s's all-reduce failed%s%s\n", rank, names[l].c_str(), l == 0 ? ": " : "",
                 l == 0 ? braidGetLastError() : "");
    return 1;
  };
  int wrong = 0;
  std::vector<Timing> timing(libs.size());
  for (size_t l = 0; l < libs.size(); ++l) {  // a warm-up of each, then its output checked
    CHECK_CUDA(cudaMemsetAsync(out, 0, count * sizeof(float), comms));
    if (!run(libs[l], true, true, &timing[l])) return failed(l);
    timing[l] = Timing{};
    const float want = static_cast<float>(nranks) * (nranks + 1) / 2;
    for (int k = 0; k < 16; ++k) {
      float v = 0;
      CHECK_CUDA(cudaMemcpy(&v, out + (static_cast<size_t>(k) * 104729) % count, sizeof(v), cudaMemcpyDeviceToHost));
      if (v != want) {
        if (wrong++ == 0) std::fprintf(stderr, "rank %d: %s: %g where %g\n", rank, names[l].c_str(), v, want);
      }
    }
  }
  // The libraries take turns in every iteration, so drifts (clocks, heat) touch both alike.
  for (int it = 0; it < o.iters; ++it) {
    for (size_t l = 0; l < libs.size(); ++l) {
      if (!run(libs[l], true, false, &timing[l]) || !run(libs[l], false, true, &timing[l]) ||
          !run(libs[l], true, true, &timing[l])) {
        return failed(l);
      }
    }
  }
  if (rank == 0) {
    cudaDeviceProp prop;
    int dev = 0;
    CHECK_CUDA(cudaGetDevice(&dev));
    CHECK_CUDA(cudaGetDeviceProperties(&prop, dev));
    std::printf(
        "# braid-overlap: %d ranks (%s), %d pairs of a %dx%dx%d bf16 GEMM and a %.1f MB float32 all-reduce, "
        "CTAs %s, medians of %d\n",
        nranks, prop.name, o.pairs, o.gemm, o.gemm, o.gemm, o.bytes / 1e6,
        o.ctas > 0 ? std::to_string(o.ctas).c_str() : "each library's choice", o.iters);
    std::printf("# %-12s %10s %10s %10s %10s %10s %10s %10s %8s\n", "library", "GEMMs", "allreduce", "overlapped",
                "ideal", "sum", "GEMMs|ovl", "AR|ovl", "GEMM x");
    std::printf("# %-12s %10s %10s %10s %10s %10s %10s %10s %8s\n", "", "(ms)", "(ms)", "(ms)", "(ms)", "(ms)", "(ms)",
                "(ms)", "slower");
    for (size_t l = 0; l < libs.size(); ++l) {
      const Timing& t = timing[l];
      const double g = median(t.gemms), ar = median(t.allreduces), both = median(t.total);
      std::printf("  %-12s %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %8.3f\n", names[l].c_str(), g, ar, both,
                  std::max(g, ar), g + ar, median(t.gemmsBeside), median(t.allreducesBeside),
                  median(t.gemmsBeside) / g);
    }
  }
  std::printf("rank %d: %s\n", rank, wrong == 0 ? "all-reduce outputs check OK" : "all-reduce outputs WRONG");
  if (ncclComm != nullptr) api->commDestroy(ncclComm);
  cublasDestroy(blas);
  return wrong == 0 ? 0 : 1;
}

int rankMain(const Options& o, const braidUniqueId* id, int rank, int nranks) {
  if (o.ctas > 0) {  // NCCL reads these at its init
    setenv("NCCL_MIN_CTAS", std::to_string(o.ctas).c_str(), 1);
    setenv("NCCL_MAX_CTAS", std::to_string(o.ctas).c_str(), 1);
  }
  int devices = 0;
  CHECK_CUDA(cudaGetDeviceCount(&devices));
  // NCCL refuses two ranks on one GPU in a host: forked ranks sharing one (--ranks above the GPUs)
  // count as separate hosts to it, so its numbers are then its network's, not a comparison.
  if (id != nullptr && nranks > devices) setenv("NCCL_HOSTID", ("braid-overlap-" + std::to_string(rank)).c_str(), 1);
  braidComm_t comm = braid_examples::initComm(id, o.ctas, &rank, &nranks);
  int status = runRank(o, comm, rank, nranks);
  braidCommDestroy(comm);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string why;
  if (!parse(argc, argv, &o, &why)) {
    std::fprintf(stderr,
                 "braid-overlap: %s\nusage: braid-overlap [--ranks n] [--pairs 20] [--gemm 8192] [--bytes 256M] "
                 "[--ctas 0] [--iters 5] [--compare nccl] [--nccl-lib libnccl.so.2]\n",
                 why.c_str());
    return 2;
  }
  // One process per rank (rank r on GPU r % GPUs), or one rank per process under a launcher.
  return braid_examples::runRanks(o.ranks, "braid-overlap",
                                  [&](const braidUniqueId* id, int r, int n) { return rankMain(o, id, r, n); });
}
