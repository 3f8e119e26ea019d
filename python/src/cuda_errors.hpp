// How tilefuse._C's sources turn a failed CUDA call or a tilefuse::Status into a Python exception: a CUDA error
// raises RuntimeError with the runtime's own error name; a Status, RuntimeError for CUDA failures and ValueError
// for the rest.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include <tilefuse/core/status.hpp>

inline void check_cuda(cudaError_t error, char const* what) {
  if (error == cudaSuccess) return;
  (void)cudaGetLastError();
  throw std::runtime_error(std::string("tilefuse: ") + what + " failed with " + cudaGetErrorName(error) + " (" +
                           cudaGetErrorString(error) + ")");
}

inline void raise_status(tilefuse::Status const& s) {
  if (s.ok()) return;
  if (s.code() == tilefuse::StatusCode::kCudaError) throw std::runtime_error("tilefuse: " + s.message());
  throw std::invalid_argument("tilefuse: " + s.message());
}
