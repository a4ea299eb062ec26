// One collective call as it travels from the API to an engine, in one record: what the caller asked
// (the collective, count and root in the shape; the buffers, type, op and stream) and, once the
// tuner planned it (tune::Tuner::plan, in place), how it runs (the shape's algorithm, channels,
// chunk and post-op; the protocol). The engines take it as it is: the GPU engine's CudaCall is one,
// with what the launch adds; the kernels' parameters are made from it (exec/cuda_launch.cc).
#pragma once

#include <cstdint>

#include "algo/common.h"
#include "algo/geometry.h"
#include "braid/braid.h"

namespace braid::algo {

struct Call : CallShape {
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  braidDataType_t type = braidFloat32;
  braidRedOp_t op = braidSum;
  void* stream = nullptr;  // cudaStream_t of a GPU communicator's call
  // A pre-multiplied sum (braidRedOpCreatePreMulSum): op is braidSum, and the input is multiplied
  // by the scalar first: `preMulValue` (read at creation) or, when null, `*preMulPointer` as the
  // call runs.
  bool preMul = false;
  uint64_t preMulValue = 0;
  const void* preMulPointer = nullptr;
  // Planned with the shape's algorithm.
  Proto proto = Proto::kSimple;
  // Every rank's buffers are registered and reached by their addresses (a GPU communicator's
  // direct kernels, device/direct.cuh): decided before the plan, which then plans the direct kernel.
  bool direct = false;
};

}  // namespace braid::algo
