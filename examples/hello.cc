// hello: starts N local ranks (processes), bootstraps a communicator, splits it into even and odd
// ranks, and prints what each rank learned.
//
//   braid_hello [nranks]        (default 4)
//
// The parent makes the unique id and sends it to each child through a pipe: any channel works
// (MPI, a file, a socket), braid only needs the 128 bytes to reach every rank.
#include <braid/braid.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                                      \
  do {                                                                                                   \
    braidResult_t r_ = (call);                                                                           \
    if (r_ != braidSuccess) {                                                                            \
      std::fprintf(stderr, "%s failed: %s (%s)\n", #call, braidGetErrorString(r_), braidGetLastError()); \
      std::exit(1);                                                                                      \
    }                                                                                                    \
  } while (0)

static int runRank(int rank, int nranks, int idPipe) {
  braidUniqueId id;
  if (read(idPipe, &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) return 1;
  auto start = std::chrono::steady_clock::now();
  braidComm_t comm;
  CHECK(braidCommInitRank(&comm, nranks, id, rank));
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  int count = 0, me = 0, device = 0;
  CHECK(braidCommCount(comm, &count));
  CHECK(braidCommUserRank(comm, &me));
  CHECK(braidCommCuDevice(comm, &device));

  braidComm_t half;
  CHECK(braidCommSplit(comm, rank % 2, rank, &half, nullptr));
  int halfRank = 0, halfCount = 0;
  CHECK(braidCommUserRank(half, &halfRank));
  CHECK(braidCommCount(half, &halfCount));

  char host[128] = {0};
  gethostname(host, sizeof(host) - 1);
  std::printf("rank %d of %d  pid %d on %s  %s  joined in %.1f ms  %s group: rank %d of %d\n", me, count,
              static_cast<int>(getpid()), host, device >= 0 ? "CUDA device" : "host memory", ms,
              rank % 2 ? "odd " : "even", halfRank, halfCount);
  std::fflush(stdout);
  CHECK(braidCommDestroy(half));
  CHECK(braidCommDestroy(comm));
  return 0;
}

int main(int argc, char** argv) {
  int nranks = argc > 1 ? std::atoi(argv[1]) : 4;
  if (nranks < 1 || nranks > 256) {
    std::fprintf(stderr, "usage: %s [nranks 1..256]\n", argv[0]);
    return 2;
  }
  int version = 0;
  CHECK(braidGetVersion(&version));
  std::printf("braid %d.%d.%d: bootstrapping %d local ranks\n", version / 10000, version / 100 % 100, version % 100,
              nranks);
  std::fflush(stdout);

  // Fork first (children start single-threaded), then make the id, which starts the root thread.
  std::vector<int> pipes(nranks);
  std::vector<pid_t> children;
  for (int r = 0; r < nranks; ++r) {
    int fds[2];
    if (pipe(fds) != 0) return 1;
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[1]);
      std::_Exit(runRank(r, nranks, fds[0]));
    }
    close(fds[0]);
    pipes[r] = fds[1];
    children.push_back(pid);
  }
  braidUniqueId id;
  CHECK(braidGetUniqueId(&id));
  for (int fd : pipes) {
    if (write(fd, &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) return 1;
    close(fd);
  }
  int failures = 0;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::printf("%s\n", failures ? "FAILED" : "all ranks bootstrapped");
  return failures ? 1 : 0;
}
