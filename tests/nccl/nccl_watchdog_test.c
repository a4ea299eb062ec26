/* The progress watchdog through braid's nccl.h, as PyTorch meets it: two forked host processes make
 * a non-blocking communicator (ncclCommInitRankConfig with blocking = 0, then ncclCommGetAsyncError
 * polled until ncclSuccess); rank 0 all-reduces while rank 1 never calls. With BRAID_TIMEOUT=1 (set
 * by ctest) rank 0's call must return ncclSystemError within the timeout + 2 s, ncclGetLastError
 * must name rank 1 as not having reached the call, and ncclCommGetAsyncError must say
 * ncclSystemError too. Exit 0 when both ranks see what they should. (BRAID_DEVICE=cpu.) */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int fail(int rank, const char* what, ncclComm_t comm) {
  fprintf(stderr, "rank %d: %s (%s)\n", rank, what, ncclGetLastError(comm));
  return 1;
}

static int runRank(int rank, ncclUniqueId id) {
  ncclComm_t comm = NULL;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ncclResult_t state = ncclInProgress;
  float data[64];
  int i;
  config.blocking = 0;
  ncclResult_t r = ncclCommInitRankConfig(&comm, 2, id, rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) return fail(rank, "non-blocking init failed", comm);
  for (i = 0; i < 30000 && state == ncclInProgress; ++i) {
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return fail(rank, "ncclCommGetAsyncError failed", comm);
    if (state == ncclInProgress) usleep(1000);
  }
  if (state != ncclSuccess) return fail(rank, "the non-blocking init did not succeed", comm);
  for (i = 0; i < 64; ++i) data[i] = (float)i;
  if (rank == 1) { /* alive and answering the watchdog, but never in the call */
    sleep(4);
    ncclCommAbort(comm);
    return 0;
  }
  double t0 = now();
  r = ncclAllReduce(data, data, 64, ncclFloat, ncclSum, comm, NULL);
  double took = now() - t0;
  int bad = 0;
  if (r != ncclSystemError) {
    fprintf(stderr, "rank 0: the stalled all-reduce returned %s, not ncclSystemError\n", ncclGetErrorString(r));
    ++bad;
  }
  if (took > 1.0 + 2.0) {
    fprintf(stderr, "rank 0: the report came %.1f s after the call began (timeout 1 s)\n", took);
    ++bad;
  }
  if (strstr(ncclGetLastError(comm), "rank 1 has not reached allreduce #1") == NULL) {
    fprintf(stderr, "rank 0: the error does not name rank 1: %s\n", ncclGetLastError(comm));
    ++bad;
  }
  if (ncclCommGetAsyncError(comm, &state) != ncclSuccess || state != ncclSystemError) {
    fprintf(stderr, "rank 0: ncclCommGetAsyncError gave %s, not ncclSystemError\n", ncclGetErrorString(state));
    ++bad;
  }
  ncclCommAbort(comm);
  return bad == 0 ? 0 : 1;
}

int main(void) {
  int pipes[2][2], rank, bad = 0, status;
  for (rank = 0; rank < 2; ++rank) {
    if (pipe(pipes[rank]) != 0) return 1;
  }
  for (rank = 0; rank < 2; ++rank) {
    pid_t pid = fork();
    if (pid == 0) {
      ncclUniqueId id;
      if (rank == 0) {
        if (ncclGetUniqueId(&id) != ncclSuccess || write(pipes[1][1], &id, sizeof(id)) != (ssize_t)sizeof(id)) _exit(1);
      } else if (read(pipes[1][0], &id, sizeof(id)) != (ssize_t)sizeof(id)) {
        _exit(1);
      }
      _exit(runRank(rank, id));
    }
  }
  for (rank = 0; rank < 2; ++rank) {
    if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++bad;
  }
  printf("%d of 2 ranks saw the watchdog's timeout through the NCCL API\n", 2 - bad);
  return bad == 0 ? 0 : 1;
}
