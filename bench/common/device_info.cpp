// Device facts for the report header (see device_info.hpp).
#include "device_info.hpp"

#include <cuda_runtime.h>

#include "cublas_gemm.hpp"
#include "cublaslt_gemm.hpp"
#include "cuda_check.hpp"

#ifndef TILEFUSE_BENCH_CUDA_ARCHS
#define TILEFUSE_BENCH_CUDA_ARCHS "unknown"
#endif

namespace tilefuse::bench {
namespace {

int attribute(cudaDeviceAttr what, int device) {
  int value = 0;
  BENCH_CUDA_CHECK(cudaDeviceGetAttribute(&value, what, device));
  return value;
}

}  // namespace

std::string cuda_version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

DeviceInfo query_device(int device) {
  DeviceInfo info;
  int count = 0;
  if (cudaError_t const counted = cudaGetDeviceCount(&count); counted != cudaSuccess) {
    (void)cudaGetLastError();
    throw BenchError(std::string("no usable CUDA GPU here (cudaGetDeviceCount: ") + cudaGetErrorName(counted) + ", " +
                     cudaGetErrorString(counted) + "); run tilefuse-bench on a machine with an NVIDIA GPU and driver");
  }
  if (device < 0 || device >= count) {
    throw BenchError("device " + std::to_string(device) + " does not exist (" + std::to_string(count) +
                     " CUDA devices)");
  }
  BENCH_CUDA_CHECK(cudaSetDevice(device));
  info.device = device;
  cudaDeviceProp prop{};
  BENCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  info.name = prop.name;
  info.total_memory_bytes = static_cast<std::int64_t>(prop.totalGlobalMem);
  char bus_id[64] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device) == cudaSuccess) info.pci_bus_id = bus_id;
  info.cc_major = attribute(cudaDevAttrComputeCapabilityMajor, device);
  info.cc_minor = attribute(cudaDevAttrComputeCapabilityMinor, device);
  info.sm_count = attribute(cudaDevAttrMultiProcessorCount, device);
  info.sm_clock_khz = attribute(cudaDevAttrClockRate, device);
  info.memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, device);
  info.memory_bus_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, device);
  info.l2_bytes = attribute(cudaDevAttrL2CacheSize, device);
  BENCH_CUDA_CHECK(cudaDriverGetVersion(&info.driver_version));
  BENCH_CUDA_CHECK(cudaRuntimeGetVersion(&info.runtime_version));
  info.cublas_version = CublasGemm::version();
  info.cublaslt_version = CublasLtGeluBias::version();
  info.built_archs = TILEFUSE_BENCH_CUDA_ARCHS;
  return info;
}

}  // namespace tilefuse::bench
