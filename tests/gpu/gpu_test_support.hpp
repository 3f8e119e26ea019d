// Small CUDA runtime helpers for the GPU tests: error checks that throw (GoogleTest reports a thrown
// exception as a failure of the running test), RAII device memory and streams.
//
// Everything here is host code that calls only the CUDA runtime, so the test sources compile with any
// host compiler as well as with nvcc; no test source launches a kernel of its own.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdlib>
#include <optional>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace tilefuse::gpu_test {

// Throws std::runtime_error naming the call, file and line when a CUDA runtime call fails.
inline void check_cuda(cudaError_t error, char const* call, char const* file, int line) {
  if (error != cudaSuccess) {
    throw std::runtime_error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                             cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")");
  }
}

#define TILEFUSE_CUDA_CHECK(call) ::tilefuse::gpu_test::check_cuda((call), #call, __FILE__, __LINE__)

// A cudaMalloc'ed block of bytes, freed when the owner goes away. Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) TILEFUSE_CUDA_CHECK(cudaMalloc(&data_, bytes_));
  }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer const&) = delete;
  DeviceBuffer& operator=(DeviceBuffer const&) = delete;
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

  void* get() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }

  // Host -> device and device -> host copies of the whole buffer, ordered on `stream`; both wait for
  // the stream, so the host memory may be reused as soon as they return.
  void upload(void const* host, cudaStream_t stream) const {
    if (bytes_ == 0) return;
    TILEFUSE_CUDA_CHECK(cudaMemcpyAsync(data_, host, bytes_, cudaMemcpyHostToDevice, stream));
    TILEFUSE_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  void download(void* host, cudaStream_t stream) const {
    if (bytes_ == 0) return;
    TILEFUSE_CUDA_CHECK(cudaMemcpyAsync(host, data_, bytes_, cudaMemcpyDeviceToHost, stream));
    TILEFUSE_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  // Every byte set to `value` (0xff: a NaN in every floating-point type), ordered on `stream`.
  void fill_bytes(std::uint8_t value, cudaStream_t stream) const {
    if (bytes_ == 0) return;
    TILEFUSE_CUDA_CHECK(cudaMemsetAsync(data_, value, bytes_, stream));
  }

 private:
  void release() noexcept {
    if (data_ != nullptr) cudaFree(data_);  // nothing useful to do with an error in a destructor
    data_ = nullptr;
    bytes_ = 0;
  }

  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// A non-blocking stream: work on it is not ordered with the legacy default stream, so a kernel that
// ignores the stream it was given is not rescued by implicit synchronisation.
class Stream {
 public:
  Stream() { TILEFUSE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  Stream(Stream const&) = delete;
  Stream& operator=(Stream const&) = delete;

  cudaStream_t get() const { return stream_; }
  // Waits for the stream and reports any error a kernel on it raised (including asynchronous ones).
  void synchronize() const {
    TILEFUSE_CUDA_CHECK(cudaStreamSynchronize(stream_));
    TILEFUSE_CUDA_CHECK(cudaGetLastError());
  }

 private:
  cudaStream_t stream_ = nullptr;
};

// Sets an environment variable for its lifetime (restoring the old value): forces the Hopper conv's
// source of x or its tile (TILEFUSE_CONV_SM90_SOURCE, TILEFUSE_CONV_SM90_TILE).
class ScopedEnv {
 public:
  ScopedEnv(char const* name, char const* value) : name_(name) {
    if (char const* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(ScopedEnv const&) = delete;
  ScopedEnv& operator=(ScopedEnv const&) = delete;

 private:
  char const* name_;
  std::optional<std::string> old_;
};

}  // namespace tilefuse::gpu_test
