// Checks that a pointer handed to a device operation is device (or managed) memory, so a host pointer
// is refused with a sentence instead of faulting inside a kernel.
#pragma once

#include <cuda_runtime_api.h>

#include <tilefuse/core/status.hpp>

namespace tilefuse {

// op: the operation's name for the message ("gemm", "conv2d fprop"); name: the argument's name.
inline Status check_device_pointer(char const* op, char const* name, void const* data) {
  if (data == nullptr) return invalid_argument(op, ": ", name, " is a null pointer; pass device memory");
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, data) != cudaSuccess) {
    (void)cudaGetLastError();
    return invalid_argument(op, ": ", name, " = ", data, " is not a pointer CUDA knows; pass device memory (cudaMalloc)");
  }
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged) {
    return invalid_argument(op, ": ", name, " = ", data, " is host memory; copy it to the device first");
  }
  return {};
}

}  // namespace tilefuse
