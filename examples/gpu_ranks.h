// What the GPU examples and benchmarks share: checks that stop the program with the failed call's
// words, and one process per rank, forked from main before any CUDA call (a CUDA context does not
// survive fork): the first child counts the GPUs, rank 0 (this process) makes the unique id and
// hands it to the others through pipes. Public API and POSIX only.
#pragma once

#include <braid/braid.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_CUDA(x)                                                                          \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

#define CHECK_BRAID(x)                                                                      \
  do {                                                                                      \
    if ((x) != braidSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, braidGetLastError()); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

namespace braid_examples {

/// This rank's GPU and communicator: from `id` (a forked rank: GPU rank % GPUs), or from the
/// launcher's variables (torchrun / mpirun: GPU LOCAL_RANK % GPUs) when `id` is null, which also
/// sets *rank and *nranks. `ctas` > 0 pins braid's CTAs per call. Exits with the failed call's words.
inline braidComm_t initComm(const braidUniqueId* id, int ctas, int* rank, int* nranks) {
  braidConfig_t config = BRAID_CONFIG_INITIALIZER;
  config.deviceKind = braidDeviceCuda;
  if (ctas > 0) config.minCTAs = config.maxCTAs = ctas;
  int devices = 0;
  CHECK_CUDA(cudaGetDeviceCount(&devices));
  braidComm_t comm;
  if (id == nullptr) {
    const char* local = std::getenv("LOCAL_RANK");
    if (local == nullptr) local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    CHECK_CUDA(cudaSetDevice((local ? std::atoi(local) : 0) % devices));
    CHECK_BRAID(braidCommInitFromEnv(&comm, &config));
    CHECK_BRAID(braidCommUserRank(comm, rank));
    CHECK_BRAID(braidCommCount(comm, nranks));
  } else {
    CHECK_CUDA(cudaSetDevice(*rank % devices));
    CHECK_BRAID(braidCommInitRankConfig(&comm, *nranks, *id, *rank, &config));
  }
  return comm;
}

/// A compute stream (lowest priority) with cuBLAS on it, and a communication stream of the highest
/// priority, as PyTorch gives its NCCL calls. False if cuBLAS cannot start.
inline bool computeAndComms(int rank, cublasHandle_t* blas, cudaStream_t* compute, cudaStream_t* comms) {
  if (cublasCreate(blas) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "rank %d: cublasCreate failed\n", rank);
    return false;
  }
  int lo = 0, hi = 0;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  CHECK_CUDA(cudaStreamCreateWithPriority(compute, cudaStreamNonBlocking, lo));
  CHECK_CUDA(cudaStreamCreateWithPriority(comms, cudaStreamNonBlocking, hi));
  cublasSetStream(*blas, *compute);
  return true;
}

/// Runs the ranks: under a launcher (WORLD_SIZE, or Open MPI's OMPI_COMM_WORLD_SIZE) this process
/// is one of them, rankMain(nullptr, 0, 0) (initComm reads the rest); otherwise rankMain(&id, rank, n)
/// in n forked processes: `ranks`, or one per GPU when 0. Returns 0 when every rank returned 0, 77
/// (a skip for ctest) when there is no GPU, 1 otherwise.
template <class RankMain>
int runRanks(int ranks, const char* name, RankMain rankMain) {
  if (std::getenv("WORLD_SIZE") != nullptr || std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr) {
    return rankMain(nullptr, 0, 0) == 0 ? 0 : 1;
  }
  int fds[2];
  if (pipe(fds) != 0) return 1;
  pid_t counter = fork();
  if (counter == 0) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    if (write(fds[1], &n, sizeof(n)) != static_cast<ssize_t>(sizeof(n))) _exit(1);
    _exit(0);
  }
  int gpus = 0;
  if (read(fds[0], &gpus, sizeof(gpus)) != static_cast<ssize_t>(sizeof(gpus))) gpus = 0;
  waitpid(counter, nullptr, 0);
  close(fds[0]);
  close(fds[1]);
  if (gpus == 0) {
    std::fprintf(stderr, "%s: no CUDA device\n", name);
    return 77;
  }
  const int n = ranks > 0 ? ranks : gpus;
  std::vector<pid_t> children;
  std::vector<int> pipes;
  for (int r = 1; r < n; ++r) {
    int p[2];
    if (pipe(p) != 0) return 1;
    pid_t pid = fork();
    if (pid == 0) {
      close(p[1]);
      braidUniqueId id;
      if (read(p[0], &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) _exit(1);
      _exit(rankMain(&id, r, n));
    }
    close(p[0]);
    pipes.push_back(p[1]);
    children.push_back(pid);
  }
  braidUniqueId id;
  if (braidGetUniqueId(&id) != braidSuccess) {
    std::fprintf(stderr, "%s: braidGetUniqueId: %s\n", name, braidGetLastError());
    return 1;
  }
  for (int fd : pipes) {
    if (write(fd, &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) return 1;
    close(fd);
  }
  int status = rankMain(&id, 0, n);
  for (pid_t pid : children) {
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) status = 1;
  }
  return status == 0 ? 0 : 1;
}

}  // namespace braid_examples
