// allreduce: a complete braid program, one rank per process, started by any launcher:
//
//   mpirun -np 4 -x BRAID_COMM_ID=127.0.0.1:29500 ./braid_allreduce
//   torchrun --nproc-per-node 4 --no-python ./braid_allreduce
//   srun -n 4 ./braid_allreduce               (with MASTER_ADDR and MASTER_PORT set)
//
// Every rank sums a million floats with every other rank, in place, and checks the answer.
#include <braid/braid.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

// Every braid call returns a braidResult_t; braidGetLastError() says what went wrong and where.
#define CHECK(call)                                                                                      \
  do {                                                                                                   \
    braidResult_t r_ = (call);                                                                           \
    if (r_ != braidSuccess) {                                                                            \
      std::fprintf(stderr, "%s failed: %s (%s)\n", #call, braidGetErrorString(r_), braidGetLastError()); \
      std::exit(1);                                                                                      \
    }                                                                                                    \
  } while (0)

int main() {
  // 1. Join the communicator described by the launcher's variables (rank, size, rendezvous).
  //    Host memory: this example needs no GPU.
  braidConfig_t config = BRAID_CONFIG_INITIALIZER;
  config.deviceKind = braidDeviceHost;
  braidComm_t comm;
  CHECK(braidCommInitFromEnv(&comm, &config));
  int rank = 0, nranks = 0;
  CHECK(braidCommUserRank(comm, &rank));
  CHECK(braidCommCount(comm, &nranks));

  // 2. Each rank contributes rank + (i % 7) at element i.
  const size_t count = 1 << 20;
  std::vector<float> data(count);
  for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>(rank + i % 7);

  // 3. Sum across ranks, in place (send buffer == receive buffer). A host call returns when done.
  CHECK(braidAllReduce(data.data(), data.data(), count, braidFloat32, braidSum, comm, nullptr));

  // 4. Check: sum over ranks q of (q + i % 7) = n(n-1)/2 + n (i % 7).
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    float want = static_cast<float>(nranks * (nranks - 1) / 2 + nranks * static_cast<int>(i % 7));
    wrong += data[i] != want;
  }
  std::printf("rank %d of %d: all-reduce of %zu floats %s\n", rank, nranks, count, wrong == 0 ? "correct" : "WRONG");

  // 5. Clean up.
  CHECK(braidCommDestroy(comm));
  return wrong == 0 ? 0 : 1;
}
