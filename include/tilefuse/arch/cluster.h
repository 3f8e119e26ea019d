// Thread block clusters (sm_90): a CTA's rank in its cluster, the cluster's index and count along x,
// a cluster-wide barrier, and arriving on a peer CTA's mbarrier (distributed shared memory). Thin
// wrappers over CCCL's cuda::ptx and the runtime's __cluster_map_shared_rank.
//
// Every function compiles on any arch (NVRTC checks the headers for sm_80); the bodies exist only on
// sm_90 and later, where the kernels that call them run.
#pragma once

#include <cuda/std/cstdint>
#include <cuda/ptx>

#include <tilefuse/core/platform.h>

namespace tilefuse::arch {

TILEFUSE_DEVICE inline int cluster_rank() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  return static_cast<int>(cuda::ptx::get_sreg_cluster_ctarank());
#else
  return 0;
#endif
}

TILEFUSE_DEVICE inline int cluster_id_x() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  return static_cast<int>(cuda::ptx::get_sreg_clusterid_x());
#else
  return 0;
#endif
}

TILEFUSE_DEVICE inline int cluster_count_x() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  return static_cast<int>(cuda::ptx::get_sreg_nclusterid_x());
#else
  return 1;
#endif
}

// Every thread of every CTA of the cluster arrives, then waits for all of them (release / acquire:
// barrier initialisation before it is visible to the peers after it).
TILEFUSE_DEVICE inline void cluster_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::barrier_cluster_arrive();
  cuda::ptx::barrier_cluster_wait();
#endif
}

// One arrival on the mbarrier at the same shared-memory offset as `bar`, in the CTA of rank `rank` of
// this cluster (mapa, then mbarrier.arrive on the shared::cluster address, default .release.cta).
// NOTES: CCCL's form is .release.cluster, a cluster-scope fence per arrival: with one arrival per
// consumer warp and k-tile, the multicast kernels ran at 40% of the plain ones (docs/notes/gemm_sm90.md,
// 2-CTA clusters).
TILEFUSE_DEVICE inline void mbarrier_arrive_cluster(cuda::std::uint64_t* bar, int rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  auto const local = static_cast<cuda::std::uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(local),
      "r"(static_cast<cuda::std::uint32_t>(rank))
      : "memory");
#else
  (void)bar, (void)rank;
#endif
}

}  // namespace tilefuse::arch
