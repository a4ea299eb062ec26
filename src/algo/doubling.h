// Recursive-doubling all-reduce: log2 steps in which pairs of ranks swap their partial results.
//
// n = 6 ranks. P = 4 (the largest power of two <= n); ranks 4 and 5 are "extra": each folds its
// input into rank r-P first and gets the result back at the end.
//
//   fold      4 -> 0, 5 -> 1       out0 = x4+x0    out1 = x5+x1    out2 = x2       out3 = x3
//   step 0    0 <-> 1, 2 <-> 3     out0 = out1 = (x5+x1)+(x4+x0)   out2 = out3 = x3+x2
//   step 1    0 <-> 2, 1 <-> 3     every out = (x3+x2)+((x5+x1)+(x4+x0))
//   unfold    0 -> 4, 1 -> 5
//
// Sequential steps: log2(P), plus 1 or 2 when n is not a power of two (the fold overlaps the first
// exchanges of the ranks that take no extra; the unfold adds one; src/tune/cost.cc computes the
// exact depth), against the ring's 2(n-1); but
// every step moves the whole buffer, so it suits messages of a few KB (the tuner decides). At each
// step both partners combine the same two partial results, in opposite operand order; every braid
// reduction is commutative bit for bit (IEEE add and multiply, NaN-ignoring min/max, integers), so
// all ranks end with identical bits, as the ring and trees guarantee.
//
// A rank whose input is not folded sends its input at step 0 and reduces straight into the output
// (no copy); later steps keep the partial result in the output (sendOutput, recvReduceOutput). Each
// chunk of the channel's range runs the whole sequence before the next starts.
#pragma once

#include "algo/prims.h"
#include "algo/work.h"

namespace braid::algo {

/// The largest power of two <= n (n >= 1).
BRAID_HOST_DEVICE inline int powerOfTwoBelow(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

/// all-reduce: output[i] = op over ranks of input[i], i < count.
template <class Backend>
BRAID_HOST_DEVICE void doublingAllReduce(Backend& b, const WorkArgs& w) {
  const int n = w.nranks, r = w.rank;
  const int P = powerOfTwoBelow(n);
  const Range range = channelRange(w.count, w.channel, w.nChannels);
  if (r >= P) {  // extra: hand the input over, get the result back
    int low = r - P;
    auto p = b.open(&low, 1, &low, 1, kConnDoubling);
    for (size_t o = range.begin; o < range.end; o += w.chunkElems) {
      size_t len = minSize(w.chunkElems, range.end - o);
      p.send(o, len);
      p.recv(o, len);
    }
    return;
  }
  const bool folds = r + P < n;  // this rank takes an extra rank's input
  int extra = r + P;
  auto fold = folds ? b.open(&extra, 1, &extra, 1, kConnDoubling) : b.open(nullptr, 0, nullptr, 0, kConnDoubling);
  for (size_t o = range.begin; o < range.end; o += w.chunkElems) {
    size_t len = minSize(w.chunkElems, range.end - o);
    bool inOutput = false;  // whether the partial result is in the output yet
    if (folds) {
      fold.recvReduceCopy(o, o, len, false);
      inOutput = true;
    } else if (P == 1) {
      fold.copy(o, o, len, w.postOp);  // a single rank
    }
    for (int bit = 1; bit < P; bit *= 2) {
      int partner = r ^ bit;
      bool last = bit * 2 == P;
      auto p = b.open(&partner, 1, &partner, 1, kConnDoubling);
      if (inOutput) {
        p.sendOutput(o, len);
        p.recvReduceOutput(o, len, last && w.postOp);
      } else {
        p.send(o, len);
        p.recvReduceCopy(o, o, len, last && w.postOp);
        inOutput = true;
      }
    }
    if (folds) fold.sendOutput(o, len);
  }
}

}  // namespace braid::algo
