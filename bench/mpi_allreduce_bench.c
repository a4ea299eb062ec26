/* mpi-allreduce-bench: MPI_Allreduce (float sum) over the sizes braid-perf sweeps, for the
 * side-by-side table in bench/NOTES.md. Not part of braid: it exists to measure the baseline.
 *
 *   mpirun -np 2 mpi-allreduce-bench [minBytes=8] [maxBytes=128M] [factor=16] [iters=20]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  size_t minBytes = argc > 1 ? strtoull(argv[1], NULL, 10) : 8;
  size_t maxBytes = argc > 2 ? strtoull(argv[2], NULL, 10) : (size_t)128 << 20;
  size_t factor = argc > 3 ? strtoull(argv[3], NULL, 10) : 16;
  int iters = argc > 4 ? atoi(argv[4]) : 20;
  float* in = malloc(maxBytes);
  float* out = malloc(maxBytes);
  for (size_t i = 0; i < maxBytes / sizeof(float); ++i) in[i] = (float)((rank + i) % 4);
  if (rank == 0) printf("# MPI_Allreduce float sum, %d processes\n# %10s %10s %8s\n", n, "size(B)", "time(us)", "busbw");
  for (size_t bytes = minBytes; bytes <= maxBytes; bytes *= factor) {
    int count = (int)(bytes / sizeof(float));
    for (int i = 0; i < 3; ++i) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double us = (MPI_Wtime() - t0) * 1e6 / iters, sum = 0;
    MPI_Allreduce(&us, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    us = sum / n;
    if (rank == 0) printf("  %10zu %10.2f %8.3f\n", bytes, us, bytes / us / 1e3 * 2.0 * (n - 1) / n);
    if (factor < 2) break;
  }
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
