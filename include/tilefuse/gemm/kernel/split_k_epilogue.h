// Parallel split-K, second pass: sums the fp32 partials of every split and applies the epilogue tree,
// 8 consecutive columns per output vector, exactly as the GEMM kernel's own epilogue does.
//
// A small output with many splits (wgrad: 64 x 64 filters summed over 131 splits) has too few vectors
// to fill the GPU one thread each, and one thread summing 131 splits in turn waits on 131 loads. So
// split_k_lanes() consecutive lanes of a warp share a vector: lane j sums splits j, j + lanes, ...
// with two 16-byte loads per split where the row allows, the group adds its sums with shuffles, and
// its first lane applies the tree. Both the host launch and the kernel derive the lane count from the
// problem alone, so a host that packs the parameters as bytes (the Python JIT) needs no extra field.
#pragma once

#include <tilefuse/core/coord.h>
#include <tilefuse/epilogue/evt.h>

namespace tilefuse::gemm {

template <class Epilogue>
struct SplitKEpilogueParams {
  GemmCoord problem;
  int split_k = 1;
  float const* partials = nullptr;  // [split][batch][m][n]
  typename Epilogue::Params epilogue;
};

// Threads that share one output vector: a power of two up to 32 (one warp), no more than the splits
// need, and no more than it takes to reach about 2^17 threads in all (enough to fill an H100 / H200).
TILEFUSE_HOST_DEVICE constexpr int split_k_lanes(index_t vectors, int split_k) {
  int lanes = 1;
  while (lanes < 32 && lanes < split_k && vectors * lanes < (index_t{1} << 17)) lanes *= 2;
  return lanes;
}

// Threads per block of the pass (a multiple of 32, so no lane group crosses a warp).
inline constexpr int kSplitKEpilogueThreads = 256;

template <class Epilogue>
__global__ void split_k_epilogue_kernel(__grid_constant__ SplitKEpilogueParams<Epilogue> const p) {
  index_t const vectors_per_row = (p.problem.n + 7) / 8;
  index_t const total = p.problem.batch * p.problem.m * vectors_per_row;
  index_t const split_stride = p.problem.batch * p.problem.m * p.problem.n;
  int const lanes = split_k_lanes(total, p.split_k);
  int const lane = static_cast<int>(threadIdx.x) % lanes;
  // The lanes of this thread's group within its warp (lanes divides 32).
  unsigned const group_mask =
      lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1u) << ((threadIdx.x % 32) / lanes * lanes);
  // Two float4 loads per split when every row starts 16-byte aligned (the device operations refuse a
  // workspace that is not; checked here too, so that a misaligned one is slow, never a fault).
  bool const rows_aligned =
      p.problem.n % 4 == 0 && reinterpret_cast<unsigned long long>(p.partials) % 16 == 0;
  index_t const stride = index_t{gridDim.x} * blockDim.x / lanes;
  for (index_t v = (index_t{blockIdx.x} * blockDim.x + threadIdx.x) / lanes; v < total; v += stride) {
    epilogue::Fragment<8> f;
    f.col = (v % vectors_per_row) * 8;
    f.row = (v / vectors_per_row) % p.problem.m;
    f.batch = v / (vectors_per_row * p.problem.m);
    f.valid = p.problem.n - f.col < 8 ? static_cast<int>(p.problem.n - f.col) : 8;
    float const* in = p.partials + (f.batch * p.problem.m + f.row) * p.problem.n + f.col;
    float sum[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    if (rows_aligned && f.valid == 8) {
#pragma unroll 4
      for (int s = lane; s < p.split_k; s += lanes) {
        float4 const lo = *reinterpret_cast<float4 const*>(in + s * split_stride);
        float4 const hi = *reinterpret_cast<float4 const*>(in + s * split_stride + 4);
        sum[0] += lo.x, sum[1] += lo.y, sum[2] += lo.z, sum[3] += lo.w;
        sum[4] += hi.x, sum[5] += hi.y, sum[6] += hi.z, sum[7] += hi.w;
      }
    } else {
      for (int s = lane; s < p.split_k; s += lanes) {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          if (i < f.valid) sum[i] += in[s * split_stride + i];
        }
      }
    }
    for (int offset = lanes / 2; offset > 0; offset /= 2) {
#pragma unroll
      for (int i = 0; i < 8; ++i) sum[i] += __shfl_xor_sync(group_mask, sum[i], offset);
    }
    if (lane == 0) {
#pragma unroll
      for (int i = 0; i < 8; ++i) f.acc[i] = sum[i];
      epilogue::evaluate<Epilogue>(p.epilogue, f);
    }
  }
}

}  // namespace tilefuse::gemm
