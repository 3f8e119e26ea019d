// How many clusters of a Hopper kernel the current device holds at once: a persistent grid of clusters
// must be resident at once, and not every SM pairs up (gemm_sm90.md v24: 66 clusters of 2 launched on
// 132 SMs ran 2.5x slower). Shared by the GEMM and the conv fprop.
#pragma once

#include <cuda_runtime_api.h>

#include <tilefuse/core/status.hpp>
#include <tilefuse/gemm/kernel/sm90_gemm.h>

namespace tilefuse::gemm::detail {

// Kernel: an sm90::GemmKernel with kClusterM > 1. Cached per device; `op` names the caller in
// messages.
template <class Kernel>
Status max_active_clusters(char const* op, int* clusters) {
  constexpr int kClusterM = Kernel::kClusterM;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return not_supported(op, ": no CUDA device is available");
  }
  static int cached[64] = {};
  if (device >= 0 && device < 64 && cached[device] > 0) {
    *clusters = cached[device];
    return {};
  }
  auto const* kernel = reinterpret_cast<void const*>(&sm90::sm90_gemm_kernel<Kernel>);
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Kernel::kSmemBytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return not_supported(op, ": cannot give the kernel ", Kernel::kSmemBytes, " bytes of shared memory");
  }
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(kClusterM, 1, 1);
  config.blockDim = dim3(Kernel::kThreads, 1, 1);
  config.dynamicSmemBytes = Kernel::kSmemBytes;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = kClusterM;
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  int count = 0;
  if (cudaOccupancyMaxActiveClusters(&count, kernel, &config) != cudaSuccess || count < 1) {
    (void)cudaGetLastError();
    return not_supported(op, ": the device cannot hold a cluster of ", kClusterM, " blocks of this kernel");
  }
  if (device >= 0 && device < 64) cached[device] = count;
  *clusters = count;
  return {};
}

}  // namespace tilefuse::gemm::detail
