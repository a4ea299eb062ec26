// A CUDA runtime call's result as a Status naming the call (the error is cleared). For the GPU
// transports and the CUDA engine, built with CUDA only.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "core/status.h"

namespace braid::transport {

inline Status cudaCheck(const std::string& what, cudaError_t err) {
  if (err == cudaSuccess) return Status::ok();
  (void)cudaGetLastError();
  return Status(Code::kCudaError, what + ": " + cudaGetErrorString(err));
}

}  // namespace braid::transport
