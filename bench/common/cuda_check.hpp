// Error handling and device memory for the benchmark: every CUDA, cuBLAS and cuBLASLt call is checked,
// and a failure becomes a BenchError naming the call, so one bad row is reported instead of timed.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include <cuda_runtime.h>

namespace tilefuse::bench {

class BenchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void throw_cuda_error(cudaError_t error, char const* expr, char const* file, int line) {
  // NOTES: clears the runtime's last error, or a non-sticky failure (an allocation that did not fit) would
  // be reported again by the next cudaGetLastError() after an unrelated launch.
  (void)cudaGetLastError();
  throw BenchError(std::string(expr) + " failed: " + cudaGetErrorName(error) + " (" + cudaGetErrorString(error) +
                   ") at " + file + ":" + std::to_string(line));
}

[[noreturn]] inline void throw_library_error(int status, char const* library, char const* expr, char const* file,
                                             int line) {
  throw BenchError(std::string(expr) + " failed: " + library + " status " + std::to_string(status) + " at " + file +
                   ":" + std::to_string(line));
}

// True when the error leaves the CUDA context unusable (every later call would fail too).
inline bool is_sticky(cudaError_t error) {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

}  // namespace tilefuse::bench

#define BENCH_CUDA_CHECK(expr)                                                            \
  do {                                                                                    \
    cudaError_t const bench_error_ = (expr);                                              \
    if (bench_error_ != cudaSuccess) {                                                    \
      ::tilefuse::bench::throw_cuda_error(bench_error_, #expr, __FILE__, __LINE__);       \
    }                                                                                     \
  } while (0)

// For cuBLAS and cuBLASLt: both return 0 (CUBLAS_STATUS_SUCCESS) on success.
#define BENCH_BLAS_CHECK(expr)                                                                         \
  do {                                                                                                 \
    int const bench_status_ = static_cast<int>(expr);                                                  \
    if (bench_status_ != 0) {                                                                          \
      ::tilefuse::bench::throw_library_error(bench_status_, "cuBLAS", #expr, __FILE__, __LINE__);      \
    }                                                                                                  \
  } while (0)

namespace tilefuse::bench {

// An owning device allocation (cudaMalloc: 256-byte aligned, which cuBLASLt's heuristics assume).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0) BENCH_CUDA_CHECK(cudaMalloc(&data_, bytes));
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(DeviceBuffer const&) = delete;
  DeviceBuffer& operator=(DeviceBuffer const&) = delete;
  ~DeviceBuffer() { release(); }

  void* get() const { return data_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void release() {
    if (data_ != nullptr) cudaFree(data_);  // NOTES: no check: a destructor must not throw
    data_ = nullptr;
    bytes_ = 0;
  }
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace tilefuse::bench
