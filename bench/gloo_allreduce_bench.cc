// gloo-allreduce-bench: Gloo's all-reduce (ring, TCP on 127.0.0.1, float sum) over the sizes braid-perf
// sweeps, for the side-by-side table in bench/NOTES.md. Not part of braid: it exists to measure the
// baseline, and braid never links Gloo.
//
//   mpirun -np 2 gloo-allreduce-bench [minBytes=8] [maxBytes=128M] [factor=16] [iters=20]
//
// mpirun is only the launcher (no MPI calls): rank and size come from OMPI_COMM_WORLD_RANK / _SIZE
// (without them: one rank). The ranks meet through a gloo FileStore in $GLOO_BENCH_STORE_DIR (kept;
// only this job's keys are removed) or else in /tmp/gloo-allreduce-bench.<job id> (removed at the end),
// the job id being OMPI_MCA_ess_base_jobid or PMIX_NAMESPACE.
// Columns: size, mean time over ranks (us), busbw = bytes/time x 2(n-1)/n (GB/s), and the number of
// wrong elements (all ranks) in the first call of each size.
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace {

int envInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

std::string jobId() {
  for (const char* name : {"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return v;
  }
  return "pid" + std::to_string(getpid());  // a lone process
}

// The reduction for float buffers (gloo::sum<float> is overloaded, so pick the 4-argument one).
void sumFloat(void* c, const void* a, const void* b, size_t n) { gloo::sum<float>(c, a, b, n); }
void sumDouble(void* c, const void* a, const void* b, size_t n) { gloo::sum<double>(c, a, b, n); }

void barrier(const std::shared_ptr<gloo::Context>& context) {
  gloo::BarrierOptions opts(context);
  opts.setTag(2);
  gloo::barrier(opts);
}

}  // namespace

int main(int argc, char** argv) {
  const int rank = envInt("OMPI_COMM_WORLD_RANK", 0);
  const int n = envInt("OMPI_COMM_WORLD_SIZE", 1);
  size_t minBytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 8;
  size_t maxBytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : size_t{128} << 20;
  size_t factor = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 16;
  int iters = argc > 4 ? std::atoi(argv[4]) : 20;
  if (minBytes < sizeof(float) || maxBytes < minBytes || iters < 1) {
    std::fprintf(stderr, "usage: %s [minBytes=8] [maxBytes=128M] [factor=16] [iters=20]\n", argv[0]);
    return 2;
  }

  // Rendezvous: a file store in a directory of this job, keys prefixed with the job id.
  const std::string job = jobId();
  const char* dirEnv = std::getenv("GLOO_BENCH_STORE_DIR");
  const bool ownDir = dirEnv == nullptr || *dirEnv == '\0';
  const std::string dir = ownDir ? "/tmp/gloo-allreduce-bench." + job : std::string(dirEnv);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "gloo-allreduce-bench: mkdir %s: %s\n", dir.c_str(), std::strerror(errno));
    return 1;
  }
  gloo::rendezvous::FileStore fileStore(dir);
  gloo::rendezvous::PrefixStore store(job, fileStore);
  gloo::transport::tcp::attr attr("127.0.0.1");
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, n);
  context->connectFullMesh(store, dev);

  std::vector<float> in(maxBytes / sizeof(float)), out(maxBytes / sizeof(float));
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((rank + i) % 4);
  if (rank == 0)
    std::printf("# Gloo allreduce (ring, TCP 127.0.0.1) float sum, %d processes\n# %10s %10s %8s %8s\n", n, "size(B)",
                "time(us)", "busbw", "#wrong");
  for (size_t bytes = minBytes; bytes <= maxBytes; bytes *= factor) {
    const size_t count = bytes / sizeof(float);
    // One set of options per size, as a caller that keeps its buffers would: each call below reuses it.
    gloo::AllreduceOptions opts(context);
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    opts.setInput(in.data(), count);
    opts.setOutput(out.data(), count);
    opts.setReduceFunction(&sumFloat);
    opts.setTag(0);

    // Warm-up; the first call's result is checked against sum over ranks r of (r + i) % 4.
    std::memset(out.data(), 0xff, count * sizeof(float));  // NaN: a skipped element never matches
    gloo::allreduce(opts);
    double wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      float expected = 0;
      for (int r = 0; r < n; ++r) expected += static_cast<float>((r + i) % 4);
      if (out[i] != expected) ++wrong;
    }
    for (int i = 0; i < 2; ++i) gloo::allreduce(opts);

    barrier(context);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) gloo::allreduce(opts);
    const auto t1 = std::chrono::steady_clock::now();
    double stats[2] = {std::chrono::duration<double, std::micro>(t1 - t0).count() / iters, wrong};

    gloo::AllreduceOptions statOpts(context);
    statOpts.setOutput(stats, 2);  // in place
    statOpts.setReduceFunction(&sumDouble);
    statOpts.setTag(1);
    gloo::allreduce(statOpts);
    const double us = stats[0] / n;
    if (rank == 0)
      std::printf("  %10zu %10.2f %8.3f %8.0f\n", bytes, us, bytes / us / 1e3 * 2.0 * (n - 1) / n, stats[1]);
    std::fflush(stdout);
    if (factor < 2) break;
  }

  // Every rank finished its rendezvous long ago (the collectives above needed all of them connected):
  // each drops its own keys, then rank 0 removes the directory if it made it.
  barrier(context);
  for (const std::string& path : fileStore.getAllKeyFilePaths()) std::remove(path.c_str());
  barrier(context);
  if (ownDir && rank == 0) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  return 0;
}
