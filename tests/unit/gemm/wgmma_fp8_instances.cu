// Instantiates every FP8 wgmma wrapper of arch/wgmma_fp8.h: 4 type pairs x N = 64, 128, 256. Not a
// runnable test: tests/unit/gemm/check_wgmma_fp8_ptx.cmake compiles it to sm_90a PTX and checks that each
// of the 12 wgmma.mma_async forms is there (and builds it for sm_80, where the wrappers are empty).
#include <tilefuse/arch/wgmma.h>
#include <tilefuse/arch/wgmma_fp8.h>

namespace tilefuse::wgmma_fp8_check {

// One 64 x N x 32 step of a warpgroup, with the accumulators read from and written back to memory so
// that nothing is optimized away. scale_d arrives at run time: the predicate must not fold.
template <class ElementA, class ElementB, int N>
__global__ void wgmma_fp8_step(float* acc, cuda::std::uint64_t desc_a, cuda::std::uint64_t desc_b, int scale_d) {
  float d[N / 2];
  float* mine = acc + threadIdx.x * (N / 2);
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = mine[i];
  arch::wgmma_fence();
  arch::wgmma_m64k32<ElementA, ElementB, N>(d, desc_a, desc_b, scale_d);
  arch::wgmma_commit();
  arch::wgmma_wait<0>();
  arch::fence_operands(d);
#pragma unroll
  for (int i = 0; i < N / 2; ++i) mine[i] = d[i];
}

using E4 = float_e4m3_t;
using E5 = float_e5m2_t;
using U64 = cuda::std::uint64_t;

template __global__ void wgmma_fp8_step<E4, E4, 64>(float*, U64, U64, int);
template __global__ void wgmma_fp8_step<E4, E5, 64>(float*, U64, U64, int);
template __global__ void wgmma_fp8_step<E5, E4, 64>(float*, U64, U64, int);
template __global__ void wgmma_fp8_step<E5, E5, 64>(float*, U64, U64, int);
template __global__ void wgmma_fp8_step<E4, E4, 128>(float*, U64, U64, int);
template __global__ void wgmma_fp8_step<E4, E5, 128>(float*, U64, U64, int);
template __global__ void wgmma_fp8_step<E5, E4, 128>(float*, U64, U64, int);
template __global__ void wgmma_fp8_step<E5, E5, 128>(float*, U64, U64, int);
template __global__ void wgmma_fp8_step<E4, E4, 256>(float*, U64, U64, int);
template __global__ void wgmma_fp8_step<E4, E5, 256>(float*, U64, U64, int);
template __global__ void wgmma_fp8_step<E5, E4, 256>(float*, U64, U64, int);
template __global__ void wgmma_fp8_step<E5, E5, 256>(float*, U64, U64, int);

}  // namespace tilefuse::wgmma_fp8_check
