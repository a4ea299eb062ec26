/* A plain C program built against braid's nccl.h and linked with braid's -lnccl: 4 forked host
 * processes run every collective, gather/scatter and a send/recv ring through the NCCL API and
 * check each result against values every rank can compute. Exit 0 when all 4 ranks pass.
 * (Host memory: run with BRAID_DEVICE=cpu; streams are ignored there.) */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 4
#define COUNT 1001

static int failures = 0;

static void check(int ok, int rank, const char* what, size_t i, double got, double want) {
  if (!ok && failures++ < 5) fprintf(stderr, "rank %d %s: element %zu is %g, expected %g\n", rank, what, i, got, want);
}

static float in(int rank, size_t i) { return (float)((rank * 7 + (int)i) % 11); }

#define CALL(x)                                                                                             \
  do {                                                                                                      \
    ncclResult_t r_ = (x);                                                                                  \
    if (r_ != ncclSuccess) {                                                                                \
      fprintf(stderr, "rank %d: %s failed: %s (%s)\n", rank, #x, ncclGetErrorString(r_), ncclGetLastError(comm)); \
      return 1;                                                                                             \
    }                                                                                                       \
  } while (0)

static int runRank(int rank, ncclUniqueId id) {
  ncclComm_t comm = NULL;
  float* send = malloc(sizeof(float) * COUNT * N);
  float* recv = malloc(sizeof(float) * COUNT * N);
  size_t i;
  int q, count = 0, me = -1;
  for (i = 0; i < (size_t)COUNT * N; ++i) send[i] = in(rank, i);
  /* Configs not made from the initializer, and no ids at all, are refused before any rendezvous. */
  {
    ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
    bad.magic = 0;
    if (ncclCommInitRankConfig(&comm, N, id, rank, &bad) != ncclInvalidArgument ||
        strstr(ncclGetLastError(NULL), "NCCL_CONFIG_INITIALIZER") == NULL) {
      fprintf(stderr, "rank %d: a bad config was not refused clearly: %s\n", rank, ncclGetLastError(NULL));
      ++failures;
    }
    if (ncclCommInitRankScalable(&comm, N, rank, 0, &id, NULL) != ncclInvalidArgument) {
      fprintf(stderr, "rank %d: nId = 0 was not refused\n", rank);
      ++failures;
    }
  }
  CALL(ncclCommInitRank(&comm, N, id, rank));
  CALL(ncclCommCount(comm, &count));
  CALL(ncclCommUserRank(comm, &me));
  check(count == N && me == rank, rank, "count/rank", 0, count, N);

  CALL(ncclAllReduce(send, recv, COUNT, ncclFloat, ncclSum, comm, NULL));
  for (i = 0; i < COUNT; ++i) {
    float want = 0;
    for (q = 0; q < N; ++q) want += in(q, i);
    check(recv[i] == want, rank, "allreduce", i, recv[i], want);
  }
  CALL(ncclBroadcast(send, recv, COUNT, ncclFloat, 2, comm, NULL));
  for (i = 0; i < COUNT; ++i) check(recv[i] == in(2, i), rank, "broadcast", i, recv[i], in(2, i));
  memset(recv, 0, sizeof(float) * COUNT);
  CALL(ncclReduce(send, recv, COUNT, ncclFloat, ncclMax, 1, comm, NULL));
  if (rank == 1) {
    for (i = 0; i < COUNT; ++i) {
      float want = 0;
      for (q = 0; q < N; ++q) want = in(q, i) > want ? in(q, i) : want;
      check(recv[i] == want, rank, "reduce", i, recv[i], want);
    }
  }
  CALL(ncclAllGather(send, recv, COUNT, ncclFloat, comm, NULL));
  for (i = 0; i < (size_t)COUNT * N; ++i) check(recv[i] == in((int)(i / COUNT), i % COUNT), rank, "allgather", i, recv[i], in((int)(i / COUNT), i % COUNT));
  CALL(ncclReduceScatter(send, recv, COUNT, ncclFloat, ncclSum, comm, NULL));
  for (i = 0; i < COUNT; ++i) {
    float want = 0;
    for (q = 0; q < N; ++q) want += in(q, rank * COUNT + i);
    check(recv[i] == want, rank, "reducescatter", i, recv[i], want);
  }
  CALL(ncclAlltoAll(send, recv, COUNT, ncclFloat, comm, NULL));
  for (i = 0; i < (size_t)COUNT * N; ++i) {
    float want = in((int)(i / COUNT), rank * COUNT + i % COUNT);
    check(recv[i] == want, rank, "alltoall", i, recv[i], want);
  }
  CALL(ncclGather(send, recv, COUNT, ncclFloat, 3, comm, NULL));
  if (rank == 3) {
    for (i = 0; i < (size_t)COUNT * N; ++i) check(recv[i] == in((int)(i / COUNT), i % COUNT), rank, "gather", i, recv[i], in((int)(i / COUNT), i % COUNT));
  }
  CALL(ncclScatter(send, recv, COUNT, ncclFloat, 0, comm, NULL));
  for (i = 0; i < COUNT; ++i) check(recv[i] == in(0, rank * COUNT + i), rank, "scatter", i, recv[i], in(0, rank * COUNT + i));
  CALL(ncclGroupStart());
  CALL(ncclSend(send, COUNT, ncclFloat, (rank + 1) % N, comm, NULL));
  CALL(ncclRecv(recv, COUNT, ncclFloat, (rank + N - 1) % N, comm, NULL));
  CALL(ncclGroupEnd());
  for (i = 0; i < COUNT; ++i) check(recv[i] == in((rank + N - 1) % N, i), rank, "sendrecv", i, recv[i], in((rank + N - 1) % N, i));
  /* A pre-multiplied sum (PyTorch's gradient scaling): each rank's input times its own scalar. */
  {
    ncclRedOp_t premul;
    float scalar = 0.5f * (float)(rank + 1);
    CALL(ncclRedOpCreatePreMulSum(&premul, &scalar, ncclFloat, ncclScalarHostImmediate, comm));
    CALL(ncclAllReduce(send, recv, COUNT, ncclFloat, premul, comm, NULL));
    for (i = 0; i < COUNT; ++i) {
      float want = 0;
      for (q = 0; q < N; ++q) want += 0.5f * (float)(q + 1) * in(q, i);
      check(recv[i] == want, rank, "premulsum allreduce", i, recv[i], want);
    }
    CALL(ncclRedOpDestroy(premul, comm));
    if (ncclRedOpDestroy(premul, comm) != ncclInvalidArgument) {
      fprintf(stderr, "rank %d: destroying an op twice was not refused\n", rank);
      ++failures;
    }
  }
  /* A simulated group runs nothing and reports the cost model's estimate. */
  {
    ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
    for (i = 0; i < COUNT; ++i) recv[i] = -1;
    CALL(ncclGroupStart());
    CALL(ncclAllReduce(send, recv, COUNT, ncclFloat, ncclSum, comm, NULL));
    CALL(ncclGroupSimulateEnd(&info));
    check(info.estimatedTime > 0, rank, "simulated estimate", 0, info.estimatedTime, 1);
    for (i = 0; i < COUNT; ++i) check(recv[i] == -1, rank, "simulated group ran", i, recv[i], -1);
  }
  /* Registration: the same buffer twice is one handle needing two deregistrations; a call on the
     registered buffer is correct; a third deregistration is an error with a message. */
  {
    void* handle = NULL;
    void* again = NULL;
    ncclWindow_t win = NULL;
    CALL(ncclCommRegister(comm, send, COUNT * sizeof(float), &handle));
    CALL(ncclCommRegister(comm, send, COUNT * sizeof(float), &again));
    check(handle == again, rank, "the same buffer's second handle", 0, 0, 0);
    CALL(ncclCommWindowRegister(comm, recv, COUNT * sizeof(float), &win, NCCL_WIN_COLL_SYMMETRIC));
    for (i = 0; i < COUNT; ++i) send[i] = (float)(rank + i % 3);
    CALL(ncclAllReduce(send, recv, COUNT, ncclFloat, ncclSum, comm, NULL));
    for (i = 0; i < COUNT; ++i) {
      float want = (float)(N * (N - 1) / 2 + N * (i % 3));
      check(recv[i] == want, rank, "all-reduce on registered buffers", i, recv[i], want);
    }
    CALL(ncclCommWindowDeregister(comm, win));
    CALL(ncclCommDeregister(comm, handle));
    CALL(ncclCommDeregister(comm, handle));
    if (ncclCommDeregister(comm, handle) != ncclInvalidArgument ||
        strstr(ncclGetLastError(comm), "not a live buffer registration") == NULL) {
      fprintf(stderr, "rank %d: a third ncclCommDeregister did not fail with a message\n", rank);
      ++failures;
    }
  }
  CALL(ncclCommDestroy(comm));
  free(send);
  free(recv);
  return failures == 0 ? 0 : 1;
}

int main(void) {
  int version = 0, rank, bad = 0, status;
  int pipes[N][2];
  if (ncclGetVersion(&version) != ncclSuccess || version != NCCL_VERSION_CODE) {
    fprintf(stderr, "ncclGetVersion gave %d\n", version);
    return 1;
  }
  /* Rank 0 makes the id (its process serves the rendezvous) and hands it to the others through
   * pipes; the parent only waits, so no child inherits a parent's braid threads. */
  for (rank = 0; rank < N; ++rank) {
    if (pipe(pipes[rank]) != 0) return 1;
  }
  for (rank = 0; rank < N; ++rank) {
    pid_t pid = fork();
    if (pid == 0) {
      ncclUniqueId id;
      if (rank == 0) {
        if (ncclGetUniqueId(&id) != ncclSuccess) {
          fprintf(stderr, "ncclGetUniqueId failed: %s\n", ncclGetLastError(NULL));
          _exit(1);
        }
        for (int q = 1; q < N; ++q) {
          if (write(pipes[q][1], &id, sizeof(id)) != (ssize_t)sizeof(id)) _exit(1);
        }
      } else if (read(pipes[rank][0], &id, sizeof(id)) != (ssize_t)sizeof(id)) {
        _exit(1);
      }
      _exit(runRank(rank, id));
    }
  }
  for (rank = 0; rank < N; ++rank) {
    if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++bad;
  }
  printf("%d of %d ranks passed every collective through the NCCL API\n", N - bad, N);
  return bad == 0 ? 0 : 1;
}
