// Small CUDA runtime helpers for the GPU tests: error checks that throw (GoogleTest reports a thrown
// exception as a failure of the running test), RAII device memory and streams.
//
// Everything here is host code that calls only the CUDA runtime, so the test sources compile with any
// host compiler as well as with nvcc; no test source launches a kernel of its own.
#pragma once

#include <stdexcept>
#include <string_view>

#include <tilefuse/conv/device/conv2d_plan.hpp>

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

// The conv planner's overrides the tests force (tile, source, split reduction), set for a scope and
// copied into every conv::Conv2d Arguments the tests build (test_conv_overrides()).
enum class ConvOverride { kTile, kSource, kReduction };
inline conv::ConvOverrides& test_conv_overrides() {
  static conv::ConvOverrides overrides;
  return overrides;
}
class ScopedConvOverride {
 public:
  // value: a tile name of conv::name_of(ConvSm90Tile), "gather", or "kernel" / "pass".
  ScopedConvOverride(ConvOverride field, char const* value) : old_(test_conv_overrides()) {
    conv::ConvOverrides& o = test_conv_overrides();
    std::string_view const v(value);
    switch (field) {
      case ConvOverride::kTile: o.sm90_tile = conv::conv_sm90_tile_named(v); break;
      case ConvOverride::kSource: o.sm90_source = conv::ConvSource::kGather; break;
      case ConvOverride::kReduction:
        o.split_reduction = v == "kernel" ? conv::SplitReduction::kInKernel : conv::SplitReduction::kPass;
        break;
    }
    if (field == ConvOverride::kTile && !o.sm90_tile) throw std::invalid_argument(std::string("no tile ") + value);
  }
  ~ScopedConvOverride() { test_conv_overrides() = old_; }
  ScopedConvOverride(ScopedConvOverride const&) = delete;
  ScopedConvOverride& operator=(ScopedConvOverride const&) = delete;

 private:
  conv::ConvOverrides old_;
};

}  // namespace tilefuse::gpu_test
