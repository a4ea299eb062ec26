// A training step in the shape of PyTorch DDP's backward pass, on GPUs: cuBLAS GEMMs produce one
// gradient per layer on a compute stream, last layer first; gradients are grouped into buckets
// (--bucket-mb, 25 by default like DDP's bucket_cap_mb), and as soon as a bucket's last gradient is
// written a braid all-reduce of that bucket starts on a second stream, overlapping the GEMMs still
// to come. The step ends when both streams are done.
//
//   ddp_step [--layers 16] [--hidden 4096] [--bucket-mb 25] [--ctas 0] [--steps 20]
//
// One process per GPU, forked here (before any CUDA call), or one per process under torchrun /
// mpirun (braidCommInitFromEnv). Prints, on rank 0, the median step time and, for comparison, the
// GEMMs alone and the all-reduces alone (each timed the same way), so the overlap shows: an ideal
// step takes max(GEMMs, all-reduces); a step with no overlap takes their sum. Each rank scales its
// GEMM inputs by (rank + 1), so after the all-reduce every gradient must be n(n+1)/2 times rank 0's
// own: checked on a sample of every bucket.
#include <braid/braid.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_ranks.h"

namespace {

struct Options {
  int layers = 16;
  int hidden = 4096;
  double bucketMb = 25;
  int ctas = 0;  // 0: braid chooses
  int steps = 20;
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    double v = std::atof(argv[i + 1]);
    if (k == "--layers")
      o->layers = static_cast<int>(v);
    else if (k == "--hidden")
      o->hidden = static_cast<int>(v);
    else if (k == "--bucket-mb")
      o->bucketMb = v;
    else if (k == "--ctas")
      o->ctas = static_cast<int>(v);
    else if (k == "--steps")
      o->steps = static_cast<int>(v);
    else
      return false;
  }
  return (argc % 2) == 1 && o->layers > 0 && o->hidden >= 64 && o->bucketMb > 0 && o->steps > 0;
}

__global__ void fillScaled(__nv_bfloat16* p, size_t n, float scale, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u + seed;
    float v = static_cast<float>(h % 17) / 16.0f - 0.5f;  // exact in bf16
    p[i] = __float2bfloat16(v * scale);
  }
}

// One rank: the model, the buckets, the streams, and the timed steps.
int runRank(const Options& o, braidComm_t comm, int rank, int nranks) {
  const size_t h = o.hidden, perLayer = h * h;  // gradient elements per layer (fp32)
  cublasHandle_t blas;
  cudaStream_t compute, comms;
  if (!braid_examples::computeAndComms(rank, &blas, &compute, &comms)) return 1;

  // Activations and upstream gradients (bf16), scaled by rank + 1; gradients (fp32) in one flat
  // buffer, layer L-1 first: the order backward produces them, so buckets are contiguous.
  __nv_bfloat16 *act, *up;
  float* grads;
  CHECK_CUDA(cudaMalloc(&act, perLayer * sizeof(__nv_bfloat16)));
  CHECK_CUDA(cudaMalloc(&up, perLayer * sizeof(__nv_bfloat16)));
  CHECK_CUDA(cudaMalloc(&grads, perLayer * o.layers * sizeof(float)));
  fillScaled<<<1024, 256, 0, compute>>>(act, perLayer, static_cast<float>(rank + 1), 1);
  fillScaled<<<1024, 256, 0, compute>>>(up, perLayer, 1.0f, 2);

  // Buckets: runs of whole layers of at most bucketMb (at least one layer each).
  const size_t bucketLayers =
      std::max<size_t>(1, static_cast<size_t>(o.bucketMb * 1024 * 1024 / (perLayer * sizeof(float))));
  std::vector<cudaEvent_t> ready;
  for (int l = 0; l < o.layers; ++l) {
    cudaEvent_t e;
    CHECK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    ready.push_back(e);
  }
  cudaEvent_t start, stop, joined;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));

  const float one = 1.0f, zero = 0.0f;
  // mode 0: GEMMs and all-reduces overlapped (the step); 1: GEMMs alone; 2: all-reduces alone.
  auto step = [&](int mode) {
    CHECK_CUDA(cudaEventRecord(start, compute));
    CHECK_CUDA(cudaStreamWaitEvent(comms, start, 0));
    size_t bucketStart = 0;
    for (int l = 0; l < o.layers; ++l) {
      float* g = grads + static_cast<size_t>(l) * perLayer;
      if (mode != 2) {
        // dW = up^T x act, in fp32 from bf16 inputs.
        cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_T, o.hidden, o.hidden, o.hidden, &one, act, CUDA_R_16BF, o.hidden, up,
                     CUDA_R_16BF, o.hidden, &zero, g, CUDA_R_32F, o.hidden, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      }
      const bool last = static_cast<size_t>(l + 1) - bucketStart == bucketLayers || l + 1 == o.layers;
      if (last && mode != 1) {
        CHECK_CUDA(cudaEventRecord(ready[l], compute));
        CHECK_CUDA(cudaStreamWaitEvent(comms, ready[l], 0));
        float* b = grads + bucketStart * perLayer;
        size_t count = (static_cast<size_t>(l + 1) - bucketStart) * perLayer;
        CHECK_BRAID(braidAllReduce(b, b, count, braidFloat32, braidSum, comm, comms));
      }
      if (last) bucketStart = l + 1;
    }
    CHECK_CUDA(cudaEventRecord(joined, comms));
    CHECK_CUDA(cudaStreamWaitEvent(compute, joined, 0));
    CHECK_CUDA(cudaEventRecord(stop, compute));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    return static_cast<double>(ms);
  };

  // Check: the all-reduced gradients are n(n+1)/2 times the rank-1-scaled ones.
  step(1);  // GEMMs alone: this rank's own gradients
  std::vector<float> own(16), got(16);
  auto sample = [&](std::vector<float>* out) {
    for (int k = 0; k < 16; ++k) {
      size_t at = (static_cast<size_t>(k) * 7919 * perLayer / 16 + k) % (perLayer * o.layers);
      CHECK_CUDA(cudaMemcpy(&(*out)[k], grads + at, sizeof(float), cudaMemcpyDeviceToHost));
    }
  };
  sample(&own);
  step(0);
  sample(&got);
  int wrong = 0;
  const double factor = nranks * (nranks + 1) / 2.0 / (rank + 1);
  for (int k = 0; k < 16; ++k) {
    if (std::fabs(got[k] - own[k] * factor) > 1e-3 * std::fabs(own[k] * factor) + 1e-3) ++wrong;
  }

  std::vector<double> times[3];
  for (int s = 0; s < o.steps; ++s) {
    for (int mode = 0; mode < 3; ++mode) times[mode].push_back(step(mode));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  if (rank == 0) {
    double both = median(times[0]), gemm = median(times[1]), ar = median(times[2]);
    std::printf("ddp_step: %d ranks, %d layers of %dx%d (fp32 grads %.1f MB each), buckets of %zu layer(s), CTAs %s\n",
                nranks, o.layers, o.hidden, o.hidden, perLayer * 4 / 1e6, bucketLayers,
                o.ctas > 0 ? std::to_string(o.ctas).c_str() : "braid's choice");
    std::printf("  step (overlapped)  %8.3f ms\n  GEMMs alone        %8.3f ms\n  all-reduces alone  %8.3f ms\n", both,
                gemm, ar);
    std::printf("  ideal max(...)     %8.3f ms   no overlap (sum) %8.3f ms   overlap hides %.0f%% of the all-reduces\n",
                std::max(gemm, ar), gemm + ar, ar > 0 ? 100.0 * (gemm + ar - both) / ar : 0);
  }
  std::printf("rank %d: %s\n", rank, wrong == 0 ? "gradients check OK" : "gradients WRONG");
  cublasDestroy(blas);
  return wrong == 0 ? 0 : 1;
}

int rankMain(const Options& o, const braidUniqueId* id, int rank, int nranks) {
  braidComm_t comm = braid_examples::initComm(id, o.ctas, &rank, &nranks);
  int status = runRank(o, comm, rank, nranks);
  braidCommDestroy(comm);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    std::fprintf(stderr, "usage: ddp_step [--layers n] [--hidden n] [--bucket-mb mb] [--ctas n] [--steps n]\n");
    return 2;
  }
  // One process per GPU (rank r on GPU r), or one rank per process under a launcher.
  return braid_examples::runRanks(0, "ddp_step",
                                  [&](const braidUniqueId* id, int r, int n) { return rankMain(o, id, r, n); });
}
