// How many clusters of a kernel a device holds at once: a persistent grid of clusters must be resident
// together (not every SM pairs up). Host code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include <tilefuse/core/status.hpp>

namespace tilefuse {

// Clusters of `cluster` blocks (threads each, smem_bytes of dynamic shared memory) of `kernel` that the current
// device holds at once; `op` names the caller in errors. Gives the kernel its shared memory first.
inline Status max_resident_clusters(char const* op, void const* kernel, int cluster, int threads, int smem_bytes,
                                    int* clusters) {
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return not_supported(op, ": cannot give the kernel ", smem_bytes, " bytes of shared memory");
  }
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(cluster), 1, 1);
  config.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  config.dynamicSmemBytes = static_cast<std::size_t>(smem_bytes);
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(cluster);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  int count = 0;
  if (cudaOccupancyMaxActiveClusters(&count, kernel, &config) != cudaSuccess || count < 1) {
    (void)cudaGetLastError();
    return not_supported(op, ": the device cannot hold a cluster of ", cluster,
                         " blocks of this kernel; use a config without Sm90Multicast");
  }
  *clusters = count;
  return {};
}

}  // namespace tilefuse
