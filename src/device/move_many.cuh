// directMove: a reduction of several sources into several destinations through Moves, which take at
// most kMaxSrcs and kMaxDsts (the direct kernels, direct.cuh, and the copy-engine reducer, ce.cuh).
#pragma once

#include "device/moves.cuh"

namespace braid::device {

// Reduces srcs[0..n) into dsts[0..m) (a copy when n is 1), at most three of each per pass: the
// result builds up in dsts[0], then goes from there to the others. Every thread of the CTA calls
// it (a pass may read what another thread wrote in the one before: a barrier stands between).
__device__ __forceinline__ void directMove(const char* const* srcs, int n, char* const* dsts, int m, size_t elems,
                                           int type, int op, int postDivisor, const LaneCtx& lane) {
  Moves mv;
  mv.n = elems;
  int s = 0;
  do {
    mv.nSrc = 0;
    if (s > 0) mv.src[mv.nSrc++] = dsts[0];
    while (mv.nSrc < kMaxSrcs && s < n) mv.src[mv.nSrc++] = srcs[s++];
    const bool last = s == n;
    mv.nDst = 0;
    mv.dst[mv.nDst++] = dsts[0];
    for (int d = 1; last && d < m && mv.nDst < kMaxDsts; ++d) mv.dst[mv.nDst++] = dsts[d];
    mv.postDivisor = last ? postDivisor : 0;
    for (int j = 0; j < mv.nSrc; ++j) mv.srcFlag[j] = 0;
    for (int j = 0; j < mv.nDst; ++j) mv.dstFlag[j] = 0;
    moveData<Proto::kSimple>(mv, type, op, lane);
    if (s < n) __syncthreads();  // the next pass reads dsts[0], maybe through other threads
  } while (s < n);
  // The outputs the last pass had no room for, copied from the first.
  for (int d = kMaxDsts; d < m; d += kMaxDsts) {
    __syncthreads();
    mv.nSrc = 1;
    mv.src[0] = dsts[0];
    mv.srcFlag[0] = 0;
    mv.nDst = 0;
    for (int k = d; k < m && mv.nDst < kMaxDsts; ++k) {
      mv.dstFlag[mv.nDst] = 0;
      mv.dst[mv.nDst++] = dsts[k];
    }
    mv.postDivisor = 0;
    moveData<Proto::kSimple>(mv, type, op, lane);
  }
}

}  // namespace braid::device
